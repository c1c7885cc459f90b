/// What the hub must do for a room, in order.
///
/// Every `send` after a `commit` waits until that revision is durable: the hub acks and broadcasts a
/// revision only after it has been made durable.
public enum RoomAction: Hashable, Sendable {
    /// Make this revision durable.
    case commit(Revision)
    /// Send one message to these sessions (encode it once).
    case send(ServerMessage, to: [SessionID])
}
