import Synchronization

/// Plain HTTP on the WebSocket port: a request as the server read it (method, path, query, the headers
/// a handler needs, the whole body), the response, and the exchange that ties a request to its one
/// response, now or later.

/// A plain HTTP request, whole: the body has been read (up to the server's limit) before a handler sees it.
public struct HTTPRequest: Sendable, Hashable {
    /// `GET`, `POST`, `PUT`, `DELETE`, `PATCH`, `OPTIONS` or `HEAD`.
    public var method: String
    /// The path, percent-decoded by libwebsockets, without the query.
    public var path: String
    /// The query's arguments in order, each split at its first `=` (a bare name has an empty value).
    public var query: [QueryItem]
    /// The headers handlers read, by lower-case name: `authorization`, `accept`, `content-type`,
    /// `origin`, `host`.
    public var headers: [String: String]
    /// The peer's address (per-IP limits, loopback-only routes).
    public var peer: String
    public var body: [UInt8]

    public struct QueryItem: Sendable, Hashable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(method: String = "GET", path: String, query: [QueryItem] = [], headers: [String: String] = [:],
                peer: String = "127.0.0.1", body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.peer = peer
        self.body = body
    }

    /// The last value of a query argument.
    public func query(_ name: String) -> String? { query.last { $0.name == name }?.value }
}

/// A complete HTTP response with a body.
public struct HTTPResponse: Sendable, Hashable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]
    /// Further headers (`Retry-After`, `Location`, …), names as they are to be written.
    public var headers: [Header]
    /// Close the connection after this response instead of keeping it alive (a body left unread).
    public var closeAfter = false

    public struct Header: Sendable, Hashable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: [UInt8], headers: [Header] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }

    public init(status: Int, text: String) {
        self.init(status: status, body: Array(text.utf8))
    }
}

/// One request and the right to answer it once, now or later (after a commit, a store read, a long
/// poll). Service thread only: answer from the thread that owns the server.
public protocol HTTPExchange: AnyObject {
    var request: HTTPRequest { get }
    /// False once the client has gone (an answer would be dropped): long polls stop waiting.
    var isOpen: Bool { get }
    /// Sends the response; later calls do nothing.
    func respond(_ response: HTTPResponse)
}

/// The server's exchange: answers through the context that read the request, on that context's
/// thread (straight away when the request's home thread is that thread, else handed over in order).
final class ServerHTTPExchange: HTTPExchange, @unchecked Sendable {
    let request: HTTPRequest
    /// The connection it came on (its context's thread reads this, and only while the exchange is that
    /// connection's request: the address is reused after the connection goes).
    let wsi: OpaquePointer
    /// The context whose connection it is.
    weak var server: WebSocketServer?
    /// The context on whose thread the delegate handles it (and answers).
    weak var home: WebSocketServer?
    /// Home thread.
    private var answered = false
    /// Cleared by the serving thread when the client goes away before the answer.
    private let waiting = Atomic<Bool>(true)

    init(request: HTTPRequest, wsi: OpaquePointer, server: WebSocketServer, home: WebSocketServer) {
        self.request = request
        self.wsi = wsi
        self.server = server
        self.home = home
    }

    var isOpen: Bool { !answered && waiting.load(ordering: .acquiring) }

    /// The serving thread: the client has gone.
    func clientGone() { waiting.store(false, ordering: .releasing) }

    func respond(_ response: HTTPResponse) {
        guard !answered else { return }
        answered = true
        guard let server, let home else { return }
        guard home !== server else { return server.answer(self, response) }
        home.post({ server.answer(self, response) }, to: server)
    }
}
