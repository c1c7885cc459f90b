import Foundation
import PeopleCore
import WebSocketTransport

/// One WebSocket connection to a room, with the hub's messages waiting to be taken in order.
///
/// The delegate methods run on the client's service thread; `next(timeout:)` is how async code takes
/// what arrived. Sending goes through the client's `perform`, so it may be called from any thread.
public final class HubConnection: WebSocketClientDelegate, @unchecked Sendable {
    /// What happened on the connection, in order.
    public enum Event: Sendable {
        case message(ServerMessage)
        /// The connection closed (or never opened); the hub's close code when it sent one.
        case closed(code: UInt16?, reason: String?, error: String?)
    }

    public let url: String
    private let client: WebSocketClient
    private let lock = NSLock()
    private var connection: WebSocketConnection?
    private var opened = false
    private var finished = false
    private var buffer: [Event] = []
    private var waiter: (id: UInt64, continuation: CheckedContinuation<Event?, Never>)?
    private var waiterIDs: UInt64 = 0
    /// Frames sent before the handshake completed; sent by the service thread as it completes.
    private var early: [OutboundMessage] = []

    /// Starts connecting to `url` (`ws://host:port/v1/rooms/ROOM`). `first` is sent as soon as the
    /// handshake completes (a hello, so that it never waits for a busy task).
    public init(url: String, client: WebSocketClient, first: ClientMessage? = nil) throws {
        self.url = url
        self.client = client
        if let first { early.append(OutboundMessage(text: first.json.bytes)) }
        try client.connect(url: url, delegate: self)
    }

    /// The URL of `room` on the hub at `base` (`ws://host:port`, with or without a trailing slash).
    public static func roomURL(base: String, room: String) -> String {
        (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/v1/rooms/" + room
    }

    /// Why a `redirect` from `current` to `target` is not followed, or nil when it is: a room opened
    /// over TLS never goes on over a connection without it (an operator's pass found the client
    /// following a `wss://` node's redirect to a `ws://` one, its hello and access token in clear).
    public static func unfollowedRedirect(from current: String, to target: String) -> String? {
        guard current.lowercased().hasPrefix("wss://"), !target.lowercased().hasPrefix("wss://") else { return nil }
        return "\(current) sent this room to \(target), which is not encrypted: not followed (nothing goes over a "
            + "connection without TLS once the room was opened with wss://; that node's cluster.advertisedURL "
            + "should be a wss:// URL)"
    }

    public var isOpen: Bool { lock.withLock { opened && !finished } }

    public func send(_ message: ClientMessage) {
        let outbound = OutboundMessage(text: message.json.bytes)
        client.perform { [self] in
            let open: WebSocketConnection? = lock.withLock {
                if connection == nil && !finished { early.append(outbound) }
                return connection
            }
            open?.send(outbound)
        }
    }

    /// Closes the connection (1000); `next` then reports `.closed`.
    public func close() {
        client.perform { [self] in lock.withLock { connection }?.close(code: 1000) }
    }

    /// The next event, or nil after `timeout` seconds without one.
    public func next(timeout: Double) async -> Event? {
        let id: UInt64? = lock.withLock {
            if !buffer.isEmpty { return nil }
            waiterIDs += 1
            return waiterIDs
        }
        guard let id else { return lock.withLock { buffer.removeFirst() } }
        return await withCheckedContinuation { continuation in
            let ready: Event? = lock.withLock {
                if !buffer.isEmpty { return buffer.removeFirst() }
                waiter = (id, continuation)
                return nil
            }
            if let ready { return continuation.resume(returning: ready) }
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0, timeout)) { [self] in
                let expired: CheckedContinuation<Event?, Never>? = lock.withLock {
                    guard let waiting = waiter, waiting.id == id else { return nil }
                    waiter = nil
                    return waiting.continuation
                }
                expired?.resume(returning: nil)
            }
        }
    }

    private func deliver(_ event: Event) {
        let waiting: CheckedContinuation<Event?, Never>? = lock.withLock {
            if let waiting = waiter {
                waiter = nil
                return waiting.continuation
            }
            buffer.append(event)
            return nil
        }
        waiting?.resume(returning: event)
    }

    // MARK: WebSocketClientDelegate (service thread)

    public func didConnect(_ connection: WebSocketConnection) {
        let early = lock.withLock {
            self.connection = connection
            opened = true
            defer { self.early = [] }
            return self.early
        }
        for message in early { connection.send(message) }
    }

    public func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        switch ServerMessage.decode(message) {
        case .success(let decoded):
            deliver(.message(decoded))
        case .failure(let error):
            deliver(.message(.error(.init(code: .serverError, message: "the hub sent a frame this client cannot read: \(error)"))))
        }
    }

    public func didClose(_ connection: WebSocketConnection, error: String?) {
        lock.withLock {
            self.connection = nil
            finished = true
            early = []
        }
        let error = connection.refusedStatus.map(Self.refusal) ?? error
        deliver(.closed(code: connection.peerCloseCode, reason: connection.peerCloseReason, error: error))
    }

    /// What a hub's refused upgrade means, by its status (the hub's answers: docs/PROTOCOL.md, "The
    /// handshake").
    static func refusal(_ status: Int) -> String {
        switch status {
        case 404: "the hub refused the connection (HTTP 404): not a room path"
        case 403: "the hub refused the connection (HTTP 403): this origin may not connect"
        case 429: "the hub refused the connection (HTTP 429): too many connections from this address"
        case 503: "the hub refused the connection (HTTP 503): it is full or shutting down; try again later"
        default: "the hub refused the connection (HTTP \(status))"
        }
    }
}
