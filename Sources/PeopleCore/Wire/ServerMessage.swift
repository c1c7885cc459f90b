/// Who may edit: an editor, or a viewer who sees everything and may change nothing.
public enum Role: String, Hashable, Sendable, CaseIterable {
    case editor, viewer
}

/// The kind of a revision: a user's edit, an undo / redo, or a restore to an earlier revision.
public enum RevisionKind: String, Hashable, Sendable, CaseIterable {
    case edit, undo, redo, restore
}

/// A block of tags reserved for one session's inserts; both ends inclusive.
public struct TagBlock: Hashable, Sendable {
    public var from: Tag
    public var to: Tag

    public init(from: Tag, to: Tag) {
        self.from = from
        self.to = to
    }

    public func contains(_ tag: Tag) -> Bool { from <= tag && tag <= to }
}

/// A user's stacks as the user sees them.
public struct HistorySummary: Hashable, Sendable {
    public var canUndo: Bool
    public var canRedo: Bool
    public var undoLabel: String?
    public var redoLabel: String?

    public init(canUndo: Bool = false, canRedo: Bool = false, undoLabel: String? = nil, redoLabel: String? = nil) {
        self.canUndo = canUndo
        self.canRedo = canRedo
        self.undoLabel = undoLabel
        self.redoLabel = redoLabel
    }
}

/// One connection in a room, for presence.
public struct PresenceEntry: Hashable, Sendable {
    public var user: String
    public var viewing: Tag?
    public var field: String?

    public init(user: String, viewing: Tag? = nil, field: String? = nil) {
        self.user = user
        self.viewing = viewing
        self.field = field
    }
}

/// Every hub → client message of PROTOCOL.md.
public enum ServerMessage: Hashable, Sendable {
    /// Whether this is an `error` frame.
    public var isError: Bool {
        if case .error = self { true } else { false }
    }

    case welcome(Welcome)
    case ack(Ack)
    case ops(Ops)
    case undone(UndoResult)
    case redone(UndoResult)
    case history(HistorySummary)
    case presence([PresenceEntry])
    case error(ErrorMessage)
    case redirect(url: String)
    /// The answer to a `ping`: its `seq`, and *(this hub)* `time`, the hub's clock when it answered
    /// (milliseconds since the epoch), so a client can tell how far its own clock is off (`HubClock`).
    case pong(seq: Int?, time: Int64? = nil)
    case tags(TagBlock)
    case restored(Restored)
    case log(LogPage)
    case blame(Blame)

    public struct Welcome: Hashable, Sendable {
        public var session: SessionID
        public var user: String
        public var role: Role
        public var rev: Int
        /// The time of revision `rev` (nil for revision 0, or a revision from before times were kept).
        public var time: Int64?
        /// The hello's `since` (with its `sinceTime`) named a revision of another history than the
        /// room's: the hub's copy went back (restored from an older backup, or restarted without its
        /// data). `people` is the whole state; what the client had is not the room's any more.
        public var reset: Bool
        /// The whole state; nil when catching up with `since` (the missed `ops` frames follow).
        public var people: [Person]?
        public var tags: TagBlock
        public var history: HistorySummary
        public var presence: [PresenceEntry]

        public init(session: SessionID, user: String, role: Role, rev: Int, time: Int64? = nil, reset: Bool = false,
                    people: [Person]?, tags: TagBlock, history: HistorySummary, presence: [PresenceEntry]) {
            self.session = session
            self.user = user
            self.role = role
            self.rev = rev
            self.time = time
            self.reset = reset
            self.people = people
            self.tags = tags
            self.history = history
            self.presence = presence
        }
    }

    public struct Ack: Hashable, Sendable {
        public var seq: Int
        public var rev: Int
        /// The time of revision `rev` (for a batch that changed nothing, the head's); nil for revision 0.
        public var time: Int64?
        public var ops: [Diff]
        public var noop: [SkipReport]

        public init(seq: Int, rev: Int, time: Int64? = nil, ops: [Diff], noop: [SkipReport] = []) {
            self.seq = seq
            self.rev = rev
            self.time = time
            self.ops = ops
            self.noop = noop
        }
    }

    public struct Ops: Hashable, Sendable {
        public var rev: Int
        /// When the hub applied the revision (milliseconds since the epoch).
        public var time: Int64?
        public var author: String
        public var kind: RevisionKind
        public var ops: [Diff]
        public var label: String?
        /// Added by this hub (PROTOCOL.md allows added fields): set only in a catch-up frame sent to the
        /// session that made the revision, so a resuming client recognises its own in-flight request.
        public var seq: Int?

        public init(rev: Int, time: Int64? = nil, author: String, kind: RevisionKind, ops: [Diff], label: String? = nil,
                    seq: Int? = nil) {
            self.rev = rev
            self.time = time
            self.author = author
            self.kind = kind
            self.ops = ops
            self.label = label
            self.seq = seq
        }
    }

    public struct UndoResult: Hashable, Sendable {
        public var seq: Int
        public var rev: Int?
        /// The time of revision `rev`.
        public var time: Int64?
        public var ops: [Diff]
        public var label: String?
        public var skipped: [SkipReport]
        /// The id of the entry a selective undo (`undo` with `entry`) took back.
        public var entry: Int?

        public init(seq: Int, rev: Int? = nil, time: Int64? = nil, ops: [Diff] = [], label: String? = nil,
                    skipped: [SkipReport] = [], entry: Int? = nil) {
            self.seq = seq
            self.rev = rev
            self.time = time
            self.ops = ops
            self.label = label
            self.skipped = skipped
            self.entry = entry
        }
    }

    /// The answer to a `restore`: the revision it made (none when the room already was as asked).
    public struct Restored: Hashable, Sendable {
        public var seq: Int
        public var rev: Int?
        public var time: Int64?
        public var ops: [Diff]
        public var label: String

        public init(seq: Int, rev: Int? = nil, time: Int64? = nil, ops: [Diff] = [], label: String) {
            self.seq = seq
            self.rev = rev
            self.time = time
            self.ops = ops
            self.label = label
        }
    }

    /// One page of the room's timeline, newest first.
    public struct LogPage: Hashable, Sendable {
        public var seq: Int?
        public var entries: [LogEntry]
        /// Whether older matching revisions exist.
        public var more: Bool

        public init(seq: Int?, entries: [LogEntry], more: Bool) {
            self.seq = seq
            self.entries = entries
            self.more = more
        }
    }

    /// One revision in the timeline; `entry` is the asker's undo entry it belongs to, if it is live.
    public struct LogEntry: Hashable, Sendable {
        public var rev: Int
        public var time: Int64?
        public var author: String
        public var kind: RevisionKind
        public var label: String?
        public var ops: [Diff]
        public var entry: Int?
        /// Added by this hub (`"removed": {"2": "Joan"}`): the name each person this revision removed
        /// had when it removed them, so that a client can name someone gone whose name no row it read
        /// gave (one of the room's first people, removed before it came: it said "a deleted person",
        /// "tag 2 (gone)"; a black-box pass).
        public var removed: [Tag: String]

        public init(rev: Int, time: Int64?, author: String, kind: RevisionKind, label: String?, ops: [Diff],
                    entry: Int? = nil, removed: [Tag: String] = [:]) {
            self.rev = rev
            self.time = time
            self.author = author
            self.kind = kind
            self.label = label
            self.ops = ops
            self.entry = entry
            self.removed = removed
        }
    }

    /// Who last wrote each part of one person, and when.
    public struct Blame: Hashable, Sendable {
        public var seq: Int?
        public var tag: Tag
        public var record: PersonBlame

        public init(seq: Int?, tag: Tag, record: PersonBlame) {
            self.seq = seq
            self.tag = tag
            self.record = record
        }
    }

    public struct ErrorMessage: Hashable, Sendable {
        public var seq: Int?
        public var code: ErrorCode
        public var message: String

        public init(seq: Int? = nil, code: ErrorCode, message: String) {
            self.seq = seq
            self.code = code
            self.message = message
        }

        public init(seq: Int? = nil, _ error: ProtocolError) {
            self.init(seq: seq, code: error.code, message: error.message)
        }

        public var fatal: Bool { code.isFatal }
    }
}
