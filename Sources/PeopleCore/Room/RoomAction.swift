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
}
