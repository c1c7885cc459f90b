import CLibWebSockets
import Foundation

/// What a client connection reports. Every method runs on the client's service thread.
public protocol WebSocketClientDelegate: AnyObject {
    /// The handshake completed.
    func didConnect(_ connection: WebSocketConnection)
    /// A whole message arrived.
    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool)
    /// The connection closed, or never opened (`error` says why). It is not used again.
    func didClose(_ connection: WebSocketConnection, error: String?)
}

/// The client role: any number of connections on one lws context and one service thread.
///
/// The terminal client uses one connection; the load generator thousands. `connect` may be called
/// from any thread; the delegates run on the service thread, and `perform` gets other threads there
/// (to `send`, for example).
public final class WebSocketClient: LWSEndpoint, @unchecked Sendable {
    private let limits: WebSocketLimits
    private let permessageDeflate: Bool
    private var delegates: [UInt64: WebSocketClientDelegate] = [:]

    /// Errors only: a refused or failed connection reaches the delegate as its `error` (lws would also
    /// print a warning on the user's terminal).
    override var lwsLogLevel: Int32 { 1 }  // LLL_ERR

    /// Starts the client's service thread.
    ///
    /// - Parameter caFile: PEM certificates to trust for `wss://` instead of the system's (a hub with
    ///   a self-signed certificate: pass that certificate).
    /// - Parameter handshakeSeconds: how long an attempt may wait for the server (its TCP connect, its
    ///   answer to the upgrade) before lws gives it up and the delegate hears `didClose`; 0: lws's own
    ///   default (5 s in libwebsockets 4.1; it seemed 30 until session 22, when lws's timers waited for
    ///   its 30-second housekeeping: shim.h `pk_ev_tick_start`).
    public init(limits: WebSocketLimits = WebSocketLimits(), permessageDeflate: Bool = false,
                caFile: String? = nil, handshakeSeconds: Int = 0) throws {
        self.limits = limits
        self.permessageDeflate = permessageDeflate
        super.init(protocolName: "peoplekeeper-client")
        try startLoop(name: "lws-client", configure: { [self] info in
            info.port = -1  // CONTEXT_PORT_NO_LISTEN
            // libwebsockets' OpenSSL client support, for wss:// (certificates checked against the
            // system's trust store, or caFile).
            info.options = pk_option_raw_origin | pk_option_do_ssl_global_init
            if let caFile { info.client_ssl_ca_filepath = keep(caFile) }
            info.protocols = UnsafePointer(makeProtocols(rxBufferSize: 4096))
            if permessageDeflate { info.extensions = UnsafePointer(makeExtensions()) }
            info.pt_serv_buf_size = 32 * 1024
            info.fd_limit_per_thread = 0
            if handshakeSeconds > 0 { info.timeout_secs = UInt32(handshakeSeconds) }
        }, created: { _ in })
    }

    /// Ends the loop, closing every connection (their delegates hear `didClose`).
    public func shutdown() async {
        stopNow()
        await waitUntilStopped()
    }

    /// Opens `url` (`ws://` or `wss://host:port/path?query`); `delegate` hears the outcome on the service thread.
    /// Host names are resolved synchronously by lws: prefer IP addresses.
    public func connect(url: String, origin: String? = nil, delegate: WebSocketClientDelegate) throws {
        guard let target = ClientTarget(url) else { throw WebSocketTransportError.badURL(url) }
        let box = UncheckedSendable(delegate)
        perform { [self] in open(target, origin: origin, delegate: box.value) }
    }

    private func open(_ target: ClientTarget, origin: String?, delegate: WebSocketClientDelegate) {
        guard let context else { return }
        let path = target.query.isEmpty ? target.path : target.path + "?" + target.query
        let connection = WebSocketConnection(
            id: nextID(), wsi: nil, path: target.path, query: target.query, peer: target.host,
            origin: origin, isClient: true, limits: limits, owner: self)
        attach(connection, to: nil)
        delegates[connection.id] = delegate
        var info = lws_client_connect_info()
        info.context = context
        info.address = keep(target.host)
        info.port = Int32(target.port)
        info.path = keep(path)
        info.host = keep("\(target.host):\(target.port)")
        info.origin = keep(origin ?? "\(target.secure ? "https" : "http")://\(target.host):\(target.port)")
        if target.secure { info.ssl_connection = Int32(LCCSCF_USE_SSL.rawValue) }
        info.ietf_version_or_minus_one = -1
        info.local_protocol_name = keep(protocolName)
        info.opaque_user_data = Unmanaged.passUnretained(connection).toOpaque()
        if lws_client_connect_via_info(&info) == nil, let gone = forget(connection) {
            delegates.removeValue(forKey: gone.id)?.didClose(gone, error: "could not start connecting")
        }
    }

    override func callback(wsi: OpaquePointer, reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
                           input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_CLIENT_ESTABLISHED:
            guard let connection = connection(of: wsi) else { return -1 }
            connection.wsi = wsi
            delegates[connection.id]?.didConnect(connection)
            if connection.queuedCount > 0 { lws_callback_on_writable(wsi) }
            return 0

        case LWS_CALLBACK_CLIENT_RECEIVE:
            guard let connection = connection(of: wsi) else { return -1 }
            received(connection, wsi: wsi, input: input, length: length) { connection, result, binary in
                if case .message(let bytes) = result {
                    delegates[connection.id]?.didReceive(connection, message: bytes, binary: binary)
                }
            }
            return 0

        case LWS_CALLBACK_CLIENT_WRITEABLE:
            guard let connection = connection(of: wsi) else { return -1 }
            return connection.writeQueued()


        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            var error = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "connection failed"
            if error.hasPrefix("connect SSL err") {
                // lws's words for a refused certificate say nothing ("error:00000001:lib(0)::reason(1)");
                // its certificate check logged why (pk_lws_emit kept it).
                let why = LWSEndpoint.takeTLSReason()
                if !why.isEmpty { error = "the hub's TLS certificate is not trusted: \(why)" }
            }
            let status = Int(lws_http_client_http_response(wsi))
            if let connection = self.connection(of: wsi), status != 0, status != 101 {
                connection.refusedStatus = status
                error = "the server answered HTTP \(status) instead of a WebSocket upgrade"
            }
            if let connection = detach(wsi: wsi) {
                delegates.removeValue(forKey: connection.id)?.didClose(connection, error: error)
            }
            return 0

        case LWS_CALLBACK_CLIENT_CLOSED:
            if let connection = detach(wsi: wsi) {
                delegates.removeValue(forKey: connection.id)?.didClose(connection, error: nil)
            }
            return 0

        case LWS_CALLBACK_WSI_DESTROY:
            // lws ends an attempt whose upgrade is never answered after its own timeout (`handshakeSeconds`) without
            // a CONNECTION_ERROR: the delegate would never hear of it (the terminal client stayed
            // "connecting" for good, no longer retrying). Whatever ends a wsi, its delegate hears once.
            if let connection = detach(wsi: wsi) {
                delegates.removeValue(forKey: connection.id)?.didClose(
                    connection, error: connection.wsi == nil ? "the hub did not answer the connection" : nil)
            }
            return 0

        default:
            return super.callback(wsi: wsi, reason: reason, user: user, input: input, length: length)
        }
    }
}

/// The parts of a `ws://` or `wss://` URL.
struct ClientTarget {
    var secure: Bool
    var host: String
    var port: Int
    var path: String
    var query: String

    init?(_ url: String) {
        if url.hasPrefix("wss://") {
            secure = true
        } else if url.hasPrefix("ws://") {
            secure = false
        } else {
            return nil
        }
        let rest = url.dropFirst(secure ? "wss://".count : "ws://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let pathAndQuery = rest[slash...].isEmpty ? "/" : String(rest[slash...])
        let parts = pathAndQuery.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = String(parts[0])
        query = parts.count > 1 ? String(parts[1]) : ""
        if let colon = authority.lastIndex(of: ":"), let port = Int(authority[authority.index(after: colon)...]) {
            host = String(authority[..<colon])
            self.port = port
        } else {
            host = String(authority)
            port = secure ? 443 : 80
        }
        guard !host.isEmpty else { return nil }
    }
}

/// Carries a non-Sendable value to the service thread, where it is used alone.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
