import WebSocketTransport

/// The transport's callbacks, on its service thread: each goes to the hub's entry point for any
/// `ClientConnection` (Sessions/Hub+Sessions.swift), which the in-process tests call directly.
extension Hub: WebSocketServerDelegate {
    public func didOpen(_ connection: WebSocketConnection) { didOpen(connection as any ClientConnection) }

    public func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        didReceive(connection as any ClientConnection, message: message, binary: binary)
    }

    public func didReceiveOversized(_ connection: WebSocketConnection, bytes: Int) {
        didReceiveOversized(connection as any ClientConnection, bytes: bytes)
    }

    public func didClose(_ connection: WebSocketConnection) { didClose(connection as any ClientConnection) }

    public func didOverflow(_ connection: WebSocketConnection) { didOverflow(connection as any ClientConnection) }
}
