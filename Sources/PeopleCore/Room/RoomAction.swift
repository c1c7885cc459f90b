/// What the hub must do for a room, in order.
///
/// Every `send` after a `persist` waits until that record is durable: the hub acks and broadcasts a
/// revision (and sends a welcome with a new tag block, or any reply it will replay) only after it has
/// been made durable.
public enum RoomAction: Hashable, Sendable {
    /// Make this journal record durable.
    case persist(JournalEntry)
    /// Send one message to these sessions (encode it once).
    case send(ServerMessage, to: [SessionID])
    /// The message needs revisions older than the room's memory: read revisions `after + 1 ... through`
    /// from the store (off the service thread), then hand the message back to the room with them
    /// (`receive(_:from:now:older:log:checkpoint:)`). Hold the session's later frames until then: it is
    /// answered in order.
    case readHistory(HistoryRead)
}

/// Revisions a message needs from the store before the room can answer it.
public struct HistoryRead: Hashable, Sendable {
    public var message: ClientMessage
    public var session: SessionID
    public var after: Int
    public var through: Int
    /// A `log` page being filled: give it back with the revisions read.
    public var log: LogResume?
    /// Set when what the message needs is the model right after this revision (a restore; `after` is
    /// it): then the store's newest checkpoint at or below it and revisions `checkpoint + 1 ... modelAt`
    /// will do instead, when that is fewer revisions. Nil for a `log`, which needs the revisions.
    public var modelAt: Int? = nil
}

/// A timeline page filled so far, and the revision below which it goes on.
public struct LogResume: Hashable, Sendable {
    public var entries: [ServerMessage.LogEntry]
    public var below: Int
}
