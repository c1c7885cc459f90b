/// One change to a room's durable state, as the store journals it.
///
/// A room's durable state is its latest snapshot plus the records after it: replaying them
/// (`Room.replay`) rebuilds the model, every user's undo / redo stacks and tag blocks, and every
/// session's cached replies exactly as they were. Records carry decisions, not requests: a replayed
/// revision is applied as it was applied, never transformed again.
public enum RoomRecord: Hashable, Sendable {
    /// A new session started, with its first tag block.
    case opened(session: SessionID, user: String, role: Role, client: String?, tags: TagBlock)
    /// A session was given a new tag block (a `tags` request).
    case tags(session: SessionID, block: TagBlock)
    /// A `submit`, `undo` or `redo` was answered: the reply kept for its seq, the revision it made (if
    /// any), and what it did to the user's stacks.
    case answered(Answer)
    /// A disconnected session was dropped (its replies can no longer be replayed).
    case forgotten(session: SessionID)
    /// A revision brought in by an import (the HTTP API's `PUT` of an export with its history): applied
    /// as recorded, on nobody's undo stack.
    case imported(Revision)

    public struct Answer: Hashable, Sendable {
        public var session: SessionID
        public var seq: Int
        public var reply: ServerMessage
        public var revision: Revision?
        public var effect: StackEffect
        /// An HTTP request's idempotency key, and when it was answered (its reply is kept for the key).
        public var key: String?
        public var keyTime: Int64?

        public init(session: SessionID, seq: Int, reply: ServerMessage, revision: Revision?, effect: StackEffect) {
            self.session = session
            self.seq = seq
            self.reply = reply
            self.revision = revision
            self.effect = effect
        }
    }

    /// What an answered request did to its user's stacks.
    public enum StackEffect: Hashable, Sendable {
        /// Nothing (an error, or a batch that changed nothing).
        case none
        /// The revision was filed on the undo stack (coalescing by `key`) and the redo stack cleared.
        case edit(coalesce: String?)
        /// An undo (or redo) consumed the entries at these indices of its stack, in order, ended the
        /// user's coalescing run, and (with a revision) pushed its inverse onto the other stack.
        case revert(redo: Bool, consumed: [Int])
    }

    /// The revision this record made, if any.
    public var revision: Revision? {
        switch self {
        case .answered(let answer): answer.revision
        case .imported(let revision): revision
        default: nil
        }
    }
}

/// A record at its place in a room's journal (positions start at 1 and have no gaps).
public struct JournalEntry: Hashable, Sendable {
    public var position: Int
    public var record: RoomRecord

    public init(position: Int, record: RoomRecord) {
        self.position = position
        self.record = record
    }
}

/// A room's whole durable state at one journal position, for the store to keep (encode it off the
/// service thread: `json` walks every person, stack and session).
public struct RoomSnapshot: Sendable {
    /// The journal position it includes (records after it are replayed over it).
    public let position: Int
    public let revision: Int
    /// Revisions up to this one were out of the room's memory window when it was taken.
    public let floor: Int
    let room: Room

    init(room: Room) {
        self.room = room
        self.position = room.journalPosition
        self.revision = room.revision
        self.floor = room.oldestKeptBase
    }
}

/// A room as a store holds it: the latest snapshot, the revisions the room's memory window needs
/// from before it, the idempotency keys it kept, and the journal after it.
public struct StoredRoom: Sendable {
    /// The snapshot, encoded (`RoomSnapshot.json`).
    public var snapshot: JSON
    /// Revisions after the snapshot's floor up to its revision, oldest first.
    public var window: [Revision]
    /// The journal's `answered` entries that kept an idempotency key (`JournalEntry.keepsKey`), from
    /// the snapshot's `keysFrom` (`keyedPositions(inSnapshot:)`) up to its position, in order: the snapshot
    /// does not repeat them.
    public var keyed: [JournalEntry]
    /// Journal entries after the snapshot's position, in order.
    public var tail: [JournalEntry]

    public init(snapshot: JSON, window: [Revision], keyed: [JournalEntry] = [], tail: [JournalEntry]) {
        self.snapshot = snapshot
        self.window = window
        self.keyed = keyed
        self.tail = tail
    }

    /// The journal positions whose keyed answers a store loads with an encoded snapshot (`keyed`), or
    /// nil when it kept no key there.
    public static func keyedPositions(inSnapshot json: JSON) -> ClosedRange<Int>? {
        guard case .int(let from)? = json["keysFrom"], case .int(let position)? = json["position"], from <= position else {
            return nil
        }
        return from...position
    }
}

extension JournalEntry {
    /// Text every stored record of an answer that kept an idempotency key has, and no other record:
    /// the stores' index of keyed answers is on it (`StoredRoom.keyed`). A key or a name holding it
    /// is escaped in the record (`\"keyTime\":`), so it is found only as the record's own member.
    public static let keyMarker = #""keyTime":"#

    /// Whether this entry kept an idempotency key.
    public var keepsKey: Bool {
        if case .answered(let answer) = record { answer.key != nil } else { false }
    }
}

/// Why a stored room could not be restored (a damaged or foreign store).
public struct RestoreError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
