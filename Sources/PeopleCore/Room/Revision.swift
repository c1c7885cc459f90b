/// The place of one applied diff in the history: its revision and index in that batch.
public struct DiffRef: Hashable, Sendable {
    public var revision: Int
    public var index: Int

    public init(revision: Int, index: Int) {
        self.revision = revision
        self.index = index
    }
}

/// One revision of a room: an atomic batch as applied, with who made it and how.
public struct Revision: Hashable, Sendable {
    public let number: Int
    public let author: String
    public let kind: RevisionKind
    public let label: String?
    /// The diffs as applied, each with its exact inverse.
    public let applied: [AppliedDiff]
    /// When the hub applied it: milliseconds since the epoch, never earlier than the previous revision's.
    public let timestamp: Int64
    /// The session and seq that asked for it (for replies replayed after a reconnect).
    public let session: SessionID?
    public let seq: Int?
    /// For an undo or redo: for each applied diff, the diff it reverts (nil for an edit). Rebasing
    /// cancels such a pair when nothing on the same name lies between them, so undoⁿ redoⁿ is exact.
    public let inverts: [DiffRef?]
    /// For a revision brought in by an import: when the import made it (ms since the epoch; its
    /// `timestamp` is the exported one). Two imports of one export make revisions with the same
    /// number and time; this tells them apart (a webhook's `id`). Nil for a revision made here.
    public let importedAt: Int64?

    public init(number: Int, author: String, kind: RevisionKind, label: String?, applied: [AppliedDiff],
                timestamp: Int64, session: SessionID? = nil, seq: Int? = nil, inverts: [DiffRef?]? = nil,
                importedAt: Int64? = nil) {
        self.inverts = inverts ?? Array(repeating: nil, count: applied.count)
        self.importedAt = importedAt
        self.number = number
        self.author = author
        self.kind = kind
        self.label = label
        self.applied = applied
        self.timestamp = timestamp
        self.session = session
        self.seq = seq
    }

    public var diffs: [Diff] { applied.map(\.diff) }

    /// The broadcast frame of this revision.
    public func opsMessage(seq: Int? = nil) -> ServerMessage {
        .ops(.init(rev: number, time: timestamp, author: author, kind: kind, ops: diffs, label: label, seq: seq))
    }
}

extension Revision {
    /// The name each person this revision removed had when it removed them (a remove's inverse puts
    /// the person back whole): what a `log` entry adds as `removed`.
    var removedNames: [Tag: String] {
        var names: [Tag: String] = [:]
        for done in applied {
            if case .remove(let tag) = done.diff, case .insert(let person, _) = done.inverse { names[tag] = person.name }
        }
        return names
    }
}
