import CLibWebSockets
import Foundation

/// What the server asks of its owner. Every method runs on the lws service thread.
public protocol WebSocketServerDelegate: AnyObject {
    /// An upgrade to WebSocket: accept it or refuse it (the client sees the handshake fail).
    func shouldAccept(_ request: UpgradeRequest) -> Bool
    /// A connection is open (after `shouldAccept`).
    func didOpen(_ connection: WebSocketConnection)
    /// A whole message arrived (fragments already reassembled).
    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool)
    /// A message over `limits.maxMessageBytes` arrived; it was dropped unread.
    func didReceiveOversized(_ connection: WebSocketConnection, bytes: Int)
    /// A connection closed, for whatever reason. It is not used again.
    func didClose(_ connection: WebSocketConnection)
    /// A connection's send queue overflowed; it is being closed with 1008.
    func didOverflow(_ connection: WebSocketConnection)
    /// A plain HTTP request: answer it, or return nil to serve a file from the web root (or 404).
    func response(for request: HTTPRequest) -> HTTPResponse?
}

/// The facts of a WebSocket upgrade request.
public struct UpgradeRequest: Sendable, Hashable {
    public var path: String
    public var query: String
    public var origin: String?
    public var peer: String
    /// The `Host` header (`host:port`), to tell a same-origin page.
    public var host: String?
}

/// A plain HTTP request (method and path only: the server answers GETs).
public struct HTTPRequest: Sendable, Hashable {
    public var path: String
}

/// A complete HTTP response with a body.
public struct HTTPResponse: Sendable, Hashable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]

    public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    public init(status: Int, text: String) {
        self.init(status: status, body: Array(text.utf8))
    }
}

/// The WebSocket and HTTP server on one port, built on libwebsockets.
///
/// One service thread owns the lws context and every connection; the delegate is called there.
/// Other threads reach it with `perform`. Serves WebSocket upgrades on any path (the delegate
/// decides), files under `webRoot` for other GETs, and whatever the delegate answers for the rest.
/// Options: permessage-deflate (off unless asked for, like the hub's `transport.permessageDeflate`:
/// libwebsockets 4.1's inflate can abort the process on hostile input), UTF-8 validation (an invalid
/// text frame closes with 1007), reassembly up to `limits.maxMessageBytes`, bounded send queues.
public final class WebSocketServer: LWSEndpoint, @unchecked Sendable {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        public var webRoot: String?
        public var limits: WebSocketLimits
        public var permessageDeflate: Bool
        /// Seconds between pings on idle connections (a missing pong closes them); 0 for none.
        public var pingIntervalSeconds: Int
        /// PEM certificate (chain) and private key: with both, the port speaks TLS only (https, wss).
        public var tlsCertFile: String?
        public var tlsKeyFile: String?

        public init(host: String = "127.0.0.1", port: Int = 8080, webRoot: String? = nil,
                    limits: WebSocketLimits = WebSocketLimits(), permessageDeflate: Bool = false,
                    pingIntervalSeconds: Int = 30, tlsCertFile: String? = nil, tlsKeyFile: String? = nil) {
            self.tlsCertFile = tlsCertFile
            self.tlsKeyFile = tlsKeyFile
            self.host = host
            self.port = port
            self.webRoot = webRoot
            self.limits = limits
            self.permessageDeflate = permessageDeflate
            self.pingIntervalSeconds = pingIntervalSeconds
        }
    }

    public let configuration: Configuration
    private weak var delegate: WebSocketServerDelegate?
    /// The port actually listened on (the configured one, or the kernel's pick for 0).
    public private(set) var port: Int = 0
    /// Service thread only.
    private var draining = false
    private var pendingHTTP: [OpaquePointer: HTTPResponse] = [:]
    /// Upgrade requests accepted in FILTER_PROTOCOL_CONNECTION, until ESTABLISHED (the header table may
    /// be gone by then) or the wsi is destroyed.
    private var upgrades: [OpaquePointer: UpgradeRequest] = [:]
    private let webRootURL: URL?

    public init(configuration: Configuration, delegate: WebSocketServerDelegate) {
        self.configuration = configuration
        self.delegate = delegate
        self.webRootURL = configuration.webRoot.map { URL(fileURLWithPath: $0).standardizedFileURL }
        super.init(protocolName: "peoplekeeper")
    }

    /// Creates the context, binds the port and starts the service thread. Returns the port.
    @discardableResult
    public func start() throws -> Int {
        let configuration = configuration
        let listenPort = Box(0)
        try startLoop(name: "lws-server", configure: { [self] info in
            info.port = Int32(configuration.port)
            let anyHost = ["", "0.0.0.0", "*", "::"].contains(configuration.host)
            if !anyHost { info.iface = keep(configuration.host) }
            info.protocols = UnsafePointer(makeProtocols(rxBufferSize: 4096))
            if configuration.permessageDeflate { info.extensions = UnsafePointer(makeExtensions()) }
            var options = pk_option_validate_utf8 | pk_option_fail_unable_to_bind
            if configuration.host.contains(".") || configuration.host == "0.0.0.0" { options |= pk_option_disable_ipv6 }
            if let cert = configuration.tlsCertFile, let key = configuration.tlsKeyFile {
                // libwebsockets' OpenSSL support: every connection on the port is TLS.
                options |= pk_option_do_ssl_global_init
                info.ssl_cert_filepath = keep(cert)
                info.ssl_private_key_filepath = keep(key)
            }
            info.options = options
            info.pt_serv_buf_size = 32 * 1024
            if configuration.pingIntervalSeconds > 0 {
                info.retry_and_idle_policy = UnsafePointer(makeIdlePolicy(
                    pingSeconds: configuration.pingIntervalSeconds, hangupSeconds: configuration.pingIntervalSeconds * 2 + 10))
            }
            info.vhost_name = keep("default")
        }, created: { context in
            listenPort.value = Int(lws_get_vhost_listen_port(lws_get_vhost_by_name(context, "default")))
        })
        port = listenPort.value
        return port
    }

    /// Stops accepting, closes every WebSocket with `code` after its queued messages, and ends the
    /// loop when all are closed (or after lws's 5-second close timeout). Returns when stopped.
    public func drain(code: UInt16 = 1001, reason: String = "server going away") async {
        let posted = perform { [self] in
            draining = true
            for connection in connections.values { connection.close(code: code, reason: reason) }
            if connections.isEmpty { stopRequested = true }
        }
        if posted { await waitUntilStopped() }
    }

    override func serviceTick() {
        if draining && connections.isEmpty { stopRequested = true }
    }

    override func sendQueueOverflowed(_ connection: WebSocketConnection) {
        delegate?.didOverflow(connection)
    }

    override func callback(wsi: OpaquePointer, reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
                           input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
            return draining ? -1 : 0

        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
            guard !draining, let delegate else { return -1 }
            let request = UpgradeRequest(
                path: header(wsi, WSI_TOKEN_GET_URI) ?? "/", query: header(wsi, WSI_TOKEN_HTTP_URI_ARGS) ?? "",
                origin: header(wsi, WSI_TOKEN_ORIGIN), peer: peerAddress(wsi), host: header(wsi, WSI_TOKEN_HOST))
            guard delegate.shouldAccept(request) else { return -1 }
            upgrades[wsi] = request
            return 0

        case LWS_CALLBACK_ESTABLISHED:
            guard let request = upgrades.removeValue(forKey: wsi) else { return -1 }
            let connection = WebSocketConnection(
                id: nextID(), wsi: wsi, path: request.path, query: request.query, peer: request.peer,
                origin: request.origin, isClient: false, limits: configuration.limits, owner: self)
            // Offered permessage-deflate may be in use: then every frame goes through lws's extension.
            connection.mayCoalesce = !(configuration.permessageDeflate
                && (header(wsi, WSI_TOKEN_EXTENSIONS)?.contains("permessage-deflate") ?? false))
            attach(connection, to: wsi)
            delegate?.didOpen(connection)
            return 0

        case LWS_CALLBACK_RECEIVE:
            guard let connection = connection(of: wsi) else { return -1 }
            received(connection, wsi: wsi, input: input, length: length) { connection, result, binary in
                switch result {
                case .message(let bytes): delegate?.didReceive(connection, message: bytes, binary: binary)
                case .oversized(let total): delegate?.didReceiveOversized(connection, bytes: total)
                case .partial: break
                }
            }
            return 0

        case LWS_CALLBACK_SERVER_WRITEABLE:
            guard let connection = connection(of: wsi) else { return -1 }
            return connection.writeQueued()


        case LWS_CALLBACK_CLOSED:
            if let connection = detach(wsi: wsi) { delegate?.didClose(connection) }
            return 0

        case LWS_CALLBACK_HTTP:
            let path = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "/"
            return serveHTTP(wsi: wsi, path: path)

        case LWS_CALLBACK_HTTP_WRITEABLE:
            guard let response = pendingHTTP.removeValue(forKey: wsi) else {
                return lws_callback_http_dummy(wsi, reason, user, input, length)
            }
            if !response.body.isEmpty {
                let message = OutboundMessage(text: response.body)
                if lws_write(wsi, message.payload, message.count, LWS_WRITE_HTTP_FINAL) < 0 { return -1 }
            }
            return lws_http_transaction_completed(wsi) != 0 ? -1 : 0

        case LWS_CALLBACK_HTTP_FILE_COMPLETION:
            return lws_http_transaction_completed(wsi) != 0 ? -1 : 0

        case LWS_CALLBACK_WSI_DESTROY:
            upgrades[wsi] = nil
            pendingHTTP[wsi] = nil
            return lws_callback_http_dummy(wsi, reason, user, input, length)

        case LWS_CALLBACK_CLOSED_HTTP:
            pendingHTTP[wsi] = nil
            return lws_callback_http_dummy(wsi, reason, user, input, length)

        default:
            return super.callback(wsi: wsi, reason: reason, user: user, input: input, length: length)
        }
    }

    // MARK: HTTP

    private func serveHTTP(wsi: OpaquePointer, path: String) -> Int32 {
        if let response = delegate?.response(for: HTTPRequest(path: path)) {
            return respond(wsi: wsi, response)
        }
        if let file = staticFile(for: path) {
            let result = lws_serve_http_file(wsi, file.path, file.mime, nil, 0)
            if result < 0 { return -1 }
            if result > 0 { return lws_http_transaction_completed(wsi) != 0 ? -1 : 0 }
            return 0
        }
        return respond(wsi: wsi, HTTPResponse(status: 404, text: "not found\n"))
    }

    private func respond(wsi: OpaquePointer, _ response: HTTPResponse) -> Int32 {
        var headers = [UInt8](repeating: 0, count: pk_lws_pre + 1024)
        let failed: Bool = headers.withUnsafeMutableBufferPointer { buffer in
            let start = buffer.baseAddress! + pk_lws_pre
            var position: UnsafeMutablePointer<UInt8>? = start
            let end = buffer.baseAddress! + buffer.count - 1
            if lws_add_http_common_headers(wsi, UInt32(response.status), response.contentType,
                                           lws_filepos_t(response.body.count), &position, end) != 0 {
                return true
            }
            return lws_finalize_write_http_header(wsi, start, &position, end) != 0
        }
        if failed { return -1 }
        pendingHTTP[wsi] = response
        lws_callback_on_writable(wsi)
        return 0
    }

    /// The file under the web root for a request path, or nil. `/` and paths ending in `/` mean
    /// `index.html`; hidden names and `..` are refused.
    private func staticFile(for path: String) -> (path: String, mime: String)? {
        guard let root = webRootURL else { return nil }
        var relative = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? "/"
        if relative.hasSuffix("/") { relative += "index.html" }
        let components = relative.split(separator: "/")
        guard !components.isEmpty, !components.contains(where: { $0.hasPrefix(".") }) else { return nil }
        let url = components.reduce(root) { $0.appendingPathComponent(String($1)) }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            return nil
        }
        return (url.path, Self.mimeTypes[url.pathExtension.lowercased()] ?? "application/octet-stream")
    }

    private static let mimeTypes = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "mjs": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "json": "application/json", "svg": "image/svg+xml", "png": "image/png", "ico": "image/x-icon",
        "txt": "text/plain; charset=utf-8", "webmanifest": "application/manifest+json",
    ]
}
