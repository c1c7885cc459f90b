import Foundation
import PeopleCore
import WebSocketTransport

/// A protocol client for integration tests, on the transport's lws client role.
///
/// Frames arrive on the client's service thread and wait in an inbox; `next()` takes them in order, and
/// `next(_:match)` takes the first frame that matches, dropping the ones before it.
final class TestClient: WebSocketClientDelegate, @unchecked Sendable {
    let user: String
    private let lock = NSLock()
    private var inbox: [ServerMessage] = []
    private var connection: WebSocketConnection?
    /// Frames sent before the handshake completed; the service thread sends them as it completes.
    private var early: [OutboundMessage] = []
    private var connected = false
    private(set) var closed = false
    private(set) var closeCode: UInt16?
    private(set) var closeError: String?
    private let client: WebSocketClient
    private(set) var welcome: ServerMessage.Welcome?
    private var seq = 0
    private let created = Date()
    private var closedAt: Date?

    /// Connects to `url` (waits for the handshake; throws if it fails). `first` is sent by the client's
    /// service thread as soon as the handshake completes, whatever the test's tasks are doing (a hello
    /// that waited for a busy cooperative pool could miss the hub's hello timeout).
    init(_ url: String, user: String, on client: WebSocketClient, first: String? = nil) async throws {
        self.user = user
        self.client = client
        if let first { early.append(OutboundMessage(first)) }
        try client.connect(url: url, delegate: self)
        try await until("connected to \(url)") { $0.connected || $0.closed }
        if !lock.withLock({ connected }) {
            throw HubTestError("could not connect to \(url): \(lock.withLock { closeError } ?? "closed")")
        }
    }

    /// Connects and says hello; returns after the welcome.
    static func joined(_ url: String, user: String, on client: WebSocketClient, resume: String? = nil,
                       since: Int? = nil) async throws -> TestClient {
        var fields: [String: Any] = ["type": "hello", "protocol": 1, "user": user, "client": "swift-tests/1"]
        if let resume { fields["resume"] = resume }
        if let since { fields["since"] = since }
        let c = try await TestClient(url, user: user, on: client, first: Self.text(fields))
        guard case .welcome(let welcome) = try await c.next("welcome") else { throw HubTestError("no welcome") }
        c.lock.withLock { c.welcome = welcome }
        return c
    }

    // MARK: Sending

    func send(text: String) {
        send(OutboundMessage(text))
    }

    /// Sends raw bytes as a text frame (may be invalid UTF-8, for tests of the hub's validation).
    func send(bytes: [UInt8]) {
        send(OutboundMessage(text: bytes))
    }

    private func send(_ message: OutboundMessage) {
        client.perform { [self] in
            let open: WebSocketConnection? = lock.withLock {
                if connection == nil && !closed { early.append(message) }
                return connection
            }
            open?.send(message)
        }
    }

    func send(json fields: [String: Any]) {
        send(text: Self.text(fields))
    }

    static func text(_ fields: [String: Any]) -> String {
        let data = try! JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    func send(_ message: ClientMessage) {
        send(text: message.json.text)
    }

    /// The next seq of this connection.
    func nextSeq() -> Int { lock.withLock { seq += 1; return seq } }

    /// Continues a resumed session's seq counter after `last`.
    func continueSeq(after last: Int) { lock.withLock { seq = max(seq, last) } }

    func submit(_ ops: [Diff], base: Int, label: String? = nil, coalesce: String? = nil, seq: Int? = nil) -> Int {
        let seq = seq ?? nextSeq()
        send(.submit(.init(seq: seq, base: base, ops: ops, label: label, coalesce: coalesce)))
        return seq
    }

    func close() {
        client.perform { [self] in lock.withLock { connection }?.close(code: 1000) }
    }

    // MARK: Receiving

    /// The next frame (of any type), waiting up to `timeout` seconds.
    func next(_ what: String = "a frame", timeout: Double = 15) async throws -> ServerMessage {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let message = lock.withLock({ inbox.isEmpty ? nil : inbox.removeFirst() }) { return message }
            if lock.withLock({ closed }) {
                let (code, error, at) = lock.withLock { (closeCode, closeError, closedAt) }
                let after = at.map { String(format: "%.3f s", $0.timeIntervalSince(created)) } ?? "?"
                throw HubTestError("\(user): connection closed (code \(code.map(String.init) ?? "none"), \(error ?? "no error"), \(after) after connecting) while waiting for \(what)")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw HubTestError("\(user): timed out waiting for \(what)")
    }

    /// The next frame for which `match` returns a value, skipping the others (presence, history…).
    func next<T>(_ what: String, timeout: Double = 15, _ match: (ServerMessage) -> T?) async throws -> T {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let message = try await next(what, timeout: max(0.01, deadline.timeIntervalSinceNow))
            if let value = match(message) { return value }
        }
    }

    func ack(seq: Int) async throws -> ServerMessage.Ack {
        try await next("ack \(seq)") { if case .ack(let a) = $0, a.seq == seq { a } else { nil } }
    }

    func undone(seq: Int) async throws -> ServerMessage.UndoResult {
        try await next("undone/redone \(seq)") {
            switch $0 {
            case .undone(let r) where r.seq == seq, .redone(let r) where r.seq == seq: r
            default: nil
            }
        }
    }

    func error(seq: Int? = nil) async throws -> ServerMessage.ErrorMessage {
        try await next("error") { if case .error(let e) = $0, seq == nil || e.seq == seq { e } else { nil } }
    }

    func ops(rev: Int) async throws -> ServerMessage.Ops {
        try await next("ops \(rev)") { if case .ops(let o) = $0, o.rev == rev { o } else { nil } }
    }

    /// Frames not yet taken.
    var pending: [ServerMessage] { lock.withLock { inbox } }

    /// Waits until `condition` holds for this client's state.
    func until(_ what: String, timeout: Double = 15, _ condition: (TestClient) -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !lock.withLock({ condition(self) }) {
            if Date() > deadline { throw HubTestError("\(user): timed out waiting until \(what)") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Waits for the connection to close; returns the close code the hub sent.
    func closedCode(timeout: Double = 15) async throws -> UInt16? {
        try await until("closed", timeout: timeout) { $0.closed }
        return lock.withLock { closeCode }
    }

    // MARK: WebSocketClientDelegate (service thread)

    func didConnect(_ connection: WebSocketConnection) {
        let early = lock.withLock {
            self.connection = connection
            connected = true
            defer { self.early = [] }
            return self.early
        }
        for message in early { connection.send(message) }
    }

    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        let text = String(decoding: message, as: UTF8.self)
        let decoded = ServerMessage.decode(message)
        lock.withLock {
            switch decoded {
            case .success(let m): inbox.append(m)
            case .failure(let e): inbox.append(.error(.init(code: .serverError, message: "undecodable from hub: \(e): \(text)")))
            }
        }
    }

    func didClose(_ connection: WebSocketConnection, error: String?) {
        lock.withLock {
            closed = true
            closedAt = Date()
            closeCode = connection.peerCloseCode
            closeError = error
            self.connection = nil
        }
    }
}
