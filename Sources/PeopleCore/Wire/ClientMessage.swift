/// A session id, chosen by the hub (the core never makes randomness).
public typealias SessionID = String

/// Every client → hub message of PROTOCOL.md.
public enum ClientMessage: Hashable, Sendable {
    case hello(Hello)
    case submit(Submit)
    case undo(UndoRequest)
    case redo(UndoRequest)
    case presence(PresenceUpdate)
    case ping(seq: Int?)
    case tags
    case restore(RestoreRequest)
    case log(LogRequest)
    case blame(BlameRequest)

    /// The most UTF-8 bytes of a `submit` or `restore` label, a `coalesce` key, a presence `field` and a
    /// hello's `client` (*this hub*; more is `bad-message`): a name's limit (SEMANTICS §1), for the
    /// words that name an action or a field.
    public static let maxTextBytes = 200

    public struct Hello: Hashable, Sendable {
        public var protocolVersion: Int
        public var user: String
        public var token: String?
        public var client: String?
        public var resume: SessionID?
        public var since: Int?
        /// The `time` of revision `since` as this client was told it (an addition to the product
        /// contract): a hub whose revision `since` has another time, or none, has another history
        /// (restored from an older backup, or restarted without its data) and sends the full state
        /// with `reset`.
        public var sinceTime: Int64?

        public init(protocolVersion: Int = 1, user: String, token: String? = nil, client: String? = nil,
                    resume: SessionID? = nil, since: Int? = nil, sinceTime: Int64? = nil) {
            self.protocolVersion = protocolVersion
            self.user = user
            self.token = token
            self.client = client
            self.resume = resume
            self.since = since
            self.sinceTime = sinceTime
        }
    }

    public struct Submit: Hashable, Sendable {
        public var seq: Int
        public var base: Int
        public var ops: [Diff]
        public var label: String?
        public var coalesce: String?

        public init(seq: Int, base: Int, ops: [Diff], label: String? = nil, coalesce: String? = nil) {
            self.seq = seq
            self.base = base
            self.ops = ops
            self.label = label
            self.coalesce = coalesce
        }
    }

    public struct UndoRequest: Hashable, Sendable {
        public var seq: Int
        public var scope: Tag?
        /// Selective undo: the id of the entry to take back, wherever it is on the stack (undo only).
        public var entry: Int?

        public init(seq: Int, scope: Tag? = nil, entry: Int? = nil) {
            self.seq = seq
            self.scope = scope
            self.entry = entry
        }
    }

    /// Make the room what it was right after revision `rev` (0: the seed), as one revision.
    public struct RestoreRequest: Hashable, Sendable {
        public var seq: Int
        public var rev: Int
        public var label: String?

        public init(seq: Int, rev: Int, label: String? = nil) {
            self.seq = seq
            self.rev = rev
            self.label = label
        }
    }

    /// A page of the room's timeline: at most `limit` revisions below `before`, naming `tag` if given.
    public struct LogRequest: Hashable, Sendable {
        public static let defaultLimit = 50
        public static let limits = 1...200

        public var seq: Int?
        public var before: Int?
        public var limit: Int
        public var tag: Tag?

        public init(seq: Int? = nil, before: Int? = nil, limit: Int = LogRequest.defaultLimit, tag: Tag? = nil) {
            self.seq = seq
            self.before = before
            self.limit = limit
            self.tag = tag
        }
    }

    /// Who last wrote each part of the person `tag`.
    public struct BlameRequest: Hashable, Sendable {
        public var seq: Int?
        public var tag: Tag

        public init(seq: Int? = nil, tag: Tag) {
            self.seq = seq
            self.tag = tag
        }
    }

    public struct PresenceUpdate: Hashable, Sendable {
        public var viewing: Tag?
        public var field: String?

        public init(viewing: Tag? = nil, field: String? = nil) {
            self.viewing = viewing
            self.field = field
        }
    }

    /// The `seq` of a message that has one (submit, undo, redo, ping).
    public var seq: Int? {
        switch self {
        case .submit(let s): s.seq
        case .undo(let u), .redo(let u): u.seq
        case .restore(let r): r.seq
        case .ping(let seq): seq
        case .log(let l): l.seq
        case .blame(let b): b.seq
        default: nil
        }
    }
}
