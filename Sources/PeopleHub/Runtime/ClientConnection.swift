import WebSocketTransport

/// What the hub uses of one client's connection: the transport's `WebSocketConnection`, or a test's
/// fake (the hub's in-process tests drive it through one). Service thread only.
public protocol ClientConnection: AnyObject {
    /// The peer's address (per-IP limits, logs).
    var peer: String { get }
    /// The request path, `/v1/rooms/ROOM`.
    var path: String { get }
    /// The hub's record of this connection; the transport keeps it and never reads it.
    var context: AnyObject? { get set }
    /// True once a close has begun: nothing more is read from it or sent on it.
    var isClosing: Bool { get }
    /// Frames over this many bytes are dropped unread (the hub hears `receiveOversized`).
    var maxMessageBytes: Int { get }
    /// Queues a message; false if the queue overflowed (the connection is then being closed).
    @discardableResult func send(_ message: OutboundMessage) -> Bool
    /// Starts a close with this code; what is already queued is sent first.
    func close(code: UInt16, reason: String)
    /// Closes the connection with `code` and `reason` unless the deadline is cleared (`seconds` 0)
    /// within `seconds` (the hello timeout).
    func setDeadline(seconds: Int, code: UInt16, reason: String)
}

extension WebSocketConnection: ClientConnection {
    public var maxMessageBytes: Int { limits.maxMessageBytes }

    public func close(code: UInt16, reason: String) {
        close(code: code, reason: reason, discardQueued: false)
    }
}
