/// One revision of a room: an atomic batch as applied, with who made it and how.
public struct Revision: Hashable, Sendable {
    public let number: Int
    public let author: String
    public let kind: RevisionKind
    public let label: String?
    /// The diffs as applied, each with its exact inverse.
    public let applied: [AppliedDiff]
    /// Milliseconds since the epoch, as passed in by the caller.
    public let timestamp: Int64
    /// The session and seq that asked for it (for replies replayed after a reconnect).
    public let session: SessionID?
    public let seq: Int?

    public init(number: Int, author: String, kind: RevisionKind, label: String?, applied: [AppliedDiff],
                timestamp: Int64, session: SessionID? = nil, seq: Int? = nil) {
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
        .ops(.init(rev: number, author: author, kind: kind, ops: diffs, label: label, seq: seq))
    }
}
