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

    public struct Hello: Hashable, Sendable {
        public var protocolVersion: Int
        public var user: String
        public var token: String?
        public var client: String?
        public var resume: SessionID?
        public var since: Int?

        public init(protocolVersion: Int = 1, user: String, token: String? = nil, client: String? = nil,
                    resume: SessionID? = nil, since: Int? = nil) {
            self.protocolVersion = protocolVersion
            self.user = user
            self.token = token
            self.client = client
            self.resume = resume
            self.since = since
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

        public init(seq: Int, scope: Tag? = nil) {
            self.seq = seq
            self.scope = scope
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
        case .ping(let seq): seq
        default: nil
        }
    }
}
