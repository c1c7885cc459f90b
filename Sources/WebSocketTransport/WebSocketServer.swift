import CLibWebSockets
import Foundation

/// What the server asks of its owner. Every method about a connection or a request runs on its
/// *home* thread (the service thread `homeThread(forPath:threads:)` names for its path; the first
/// one unless the delegate says otherwise), whichever thread serves it, in order per connection,
/// except the three that must answer inside a libwebsockets callback: `refusal(of:)`, `claims` and
/// `homeThread` run on the thread that serves the request, possibly several at once, and must be
/// safe to call from any thread.
public protocol WebSocketServerDelegate: AnyObject {
    /// Which of the `threads` service threads (0 ..< threads) is home to a connection or request on
    /// `path`: where the delegate hears of it and acts on it. A pure function of the path (the hub's
    /// owner of a room). Any service thread. The default is 0: one home for everything.
    func homeThread(forPath path: String, threads: Int) -> Int
    /// An upgrade to WebSocket: nil accepts it; a refusal is answered with its HTTP status and reason
    /// (instead of `101 Switching Protocols`), and the socket closed. Any service thread.
    func refusal(of request: UpgradeRequest) -> UpgradeRefusal?
    /// Whether `handle` will take a plain HTTP request (decided from its method and path alone, so
    /// another service thread can leave a file request to itself and hand the rest over). Any
    /// service thread.
    func claims(_ request: HTTPRequest) -> Bool
    /// A connection is open (after `refusal(of:)` let it in).
    func didOpen(_ connection: WebSocketConnection)
    /// A whole message arrived (fragments already reassembled).
    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool)
    /// A message over `limits.maxMessageBytes` arrived; it was dropped unread.
    func didReceiveOversized(_ connection: WebSocketConnection, bytes: Int)
    /// A connection closed, for whatever reason. It is not used again.
    func didClose(_ connection: WebSocketConnection)
    /// A connection's send queue overflowed; it is being closed with 1008.
    func didOverflow(_ connection: WebSocketConnection)
    /// A plain HTTP request, body read: take it (true; answer through the exchange, now or later) or
    /// leave it (false) to be served a file from the web root (or 404). A request read on another
    /// service thread that `claims` took and `handle` leaves is answered 404.
    func handle(_ exchange: any HTTPExchange) -> Bool
}

extension WebSocketServerDelegate {
    public func homeThread(forPath path: String, threads: Int) -> Int { 0 }
}

/// Why an upgrade is refused: the HTTP status the client gets and a sentence saying why (the body).
public struct UpgradeRefusal: Sendable, Hashable {
    public var status: Int
    public var reason: String

    public init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }
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

/// The WebSocket and HTTP server on one port, built on libwebsockets.
///
/// `serviceThreads` lws contexts, each with its own service thread (Debian's libwebsockets is built
/// for one thread per context). With one, its lws context listens. With several, an `Acceptor`
/// thread listens and deals the sockets it accepts to the contexts in turn, each adopting its own
/// (lws 4.1.6 cannot let several contexts listen on one port; see `Acceptor`). Only a context's own
/// thread touches its connections. Each connection and request also has a *home* thread, which the
/// delegate picks from its path (`homeThread(forPath:threads:)`): the delegate is called there. A
/// context serving a connection whose home is another hands its events to the home thread (in order
/// per connection), and the home thread hands each send, close and deadline back to the connection's
/// own thread (`WebSocketConnection`); an encoded message is one shared, immutable buffer whichever
/// threads write it. With one service thread there is no handing over at all. Other threads reach
/// a context's thread with `perform` (`contexts[i].perform`).
///
/// Serves WebSocket upgrades on any path (the delegate decides), files under `webRoot` for other
/// GETs, and whatever the delegate answers for the rest.
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
        /// lws contexts, each with its own service thread (at least 1; with more, an acceptor thread
        /// listens and deals the sockets to them).
        public var serviceThreads: Int
        /// How each service thread waits for its sockets (`.poll` also where libev's cannot be had).
        public var eventLoop: LWSEventLoop
        /// How long an HTTP request's body may take to arrive after its head: a body that is still
        /// coming then (a few bytes now and then, each in time for lws's 5-second pause limit) is
        /// cut off, its connection closed unanswered. 1 MiB in 30 s is 35 KB/s.
        public var bodySeconds: Double

        public init(host: String = "127.0.0.1", port: Int = 8080, webRoot: String? = nil,
                    limits: WebSocketLimits = WebSocketLimits(), permessageDeflate: Bool = false,
                    pingIntervalSeconds: Int = 30, tlsCertFile: String? = nil, tlsKeyFile: String? = nil,
                    serviceThreads: Int = 1, eventLoop: LWSEventLoop = .epoll, bodySeconds: Double = 30) {
            self.bodySeconds = bodySeconds
            self.serviceThreads = max(1, serviceThreads)
            self.eventLoop = eventLoop
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
    /// Every context of the server, the first first; made with the server, started by `start`.
    public var contexts: [WebSocketServer] { group.map(\.context) }
    /// The other contexts, owned by the first (empty on those contexts themselves).
    private var siblings: [WebSocketServer] = []
    /// `contexts` as each context sees them, without owning them (the first owns its siblings, and
    /// whoever made the server owns the first): no context keeps itself alive.
    private var group: [ContextReference] = []

    private struct ContextReference {
        unowned(unsafe) let context: WebSocketServer
    }
    /// With several service threads: the listening socket and the thread that deals what it accepts.
    private var acceptor: Acceptor?
    /// The context's vhost, which adopts the sockets the acceptor deals it (its own thread).
    private var vhost: OpaquePointer?
    /// Service thread only.
    private var draining = false
    /// Service thread only: while draining, every context has closed its last connection, so none
    /// will hand this one anything more and it may stop.
    private var mayStop = false
    /// While draining: this context has no connection left.
    private let emptied = Stopped()
    /// While draining: HTTP requests still being read or answered no longer hold the drain up (set
    /// `httpDrainSeconds` after it began).
    private var httpDrainOver = false
    /// How long a drain waits for HTTP requests already taken (a write waiting for its commit, an
    /// import being checked) to be answered and their answers written.
    public static let httpDrainSeconds = 10
    /// Where each HTTP connection's request stands, by wsi: one stage at a time (service thread only).
    private var http: [OpaquePointer: HTTPStage] = [:]
    /// POSTs with `Content-Length: 0` whose BODY_COMPLETION is still to come: lws 4.1 calls it right
    /// after the head for those, and it is theirs, not the sign of a pipeline (which closed the
    /// connection after every such answer).
    private var zeroLengthPost: Set<OpaquePointer> = []
    private let webRootURL: URL?

    public init(configuration: Configuration, delegate: WebSocketServerDelegate) {
        self.configuration = configuration
        self.delegate = delegate
        self.webRootURL = configuration.webRoot.map { URL(fileURLWithPath: $0).standardizedFileURL }
        super.init(protocolName: "peoplekeeper")
        siblings = (1..<max(1, configuration.serviceThreads)).map { _ in WebSocketServer(sibling: self) }
        let group = ([self] + siblings).map(ContextReference.init)
        for (index, reference) in group.enumerated() {
            reference.context.group = group
            reference.context.serviceThreadIndex = index
        }
    }

    /// Another context of `first`'s: it does not listen; it adopts the sockets the acceptor deals it.
    private init(sibling first: WebSocketServer) {
        configuration = first.configuration
        delegate = first.delegate
        webRootURL = first.webRootURL
        super.init(protocolName: "peoplekeeper")
    }

    /// Creates the contexts, binds the port and starts the service threads. Returns the port.
    @discardableResult
    public func start() throws -> Int {
        guard configuration.serviceThreads > 1 else {
            port = try startContext(port: configuration.port, index: 0)
            return port
        }
        let acceptor = try Acceptor(host: configuration.host, port: configuration.port)
        var started: [WebSocketServer] = []
        do {
            for (index, context) in contexts.enumerated() {
                _ = try context.startContext(port: Int(CONTEXT_PORT_NO_LISTEN_SERVER), index: index)
                started.append(context)
            }
        } catch {
            for context in started { context.stopNow() }
            acceptor.stop()
            throw error
        }
        let dealer = Dealer(group)
        do {
            try acceptor.start { fd in
                let context = dealer.next()
                if !context.inbox.post({ context.adopt(fd) }) { close(fd) }
            }
        } catch {
            for context in started { context.stopNow() }
            acceptor.stop()
            throw error
        }
        self.acceptor = acceptor
        port = acceptor.port
        return port
    }

    /// The loop the service threads run (after `start`): `.poll` when `.epoll` was asked for and libev's
    /// plugin (Debian's `libwebsockets-evlib-ev`) could not be loaded.
    public var eventLoopInUse: LWSEventLoop { servedBy }

    /// The contexts in turn (the acceptor's thread only).
    private final class Dealer: @unchecked Sendable {
        let group: [ContextReference]
        var turn = 0
        init(_ group: [ContextReference]) { self.group = group }
        func next() -> WebSocketServer {
            defer { turn = (turn + 1) % group.count }
            return group[turn].context
        }
    }

    /// Creates this context and starts its service thread; returns the port it listens on (the
    /// first, with one service thread), or nothing of use (the others).
    private func startContext(port: Int, index: Int) throws -> Int {
        let configuration = configuration
        let listenPort = Box(0)
        serviceThreadIndex = index
        eventLoop = configuration.eventLoop
        try startLoop(name: "lws-server-\(index)", configure: { [self] info in
            info.port = Int32(port)
            let anyHost = ["", "0.0.0.0", "*", "::"].contains(configuration.host)
            if !anyHost { info.iface = keep(configuration.host) }
            // lws allocates this much per connection (its rx buffer) and hands frames over in pieces of
            // at most this, which `WebSocketConnection` reassembles. Client frames here are mostly one
            // to three hundred bytes (a control frame's payload is at most 125); 4096 cost 3.5 KiB more
            // per idle connection, 512 a quarter of a KiB more than this (docs/PERFORMANCE.md).
            info.protocols = UnsafePointer(makeProtocols(rxBufferSize: 256))
            if configuration.permessageDeflate { info.extensions = UnsafePointer(makeExtensions()) }
            var options = pk_option_validate_utf8 | pk_option_fail_unable_to_bind
            if configuration.host.contains(".") || configuration.host == "0.0.0.0" { options |= pk_option_disable_ipv6 }
            if let cert = configuration.tlsCertFile, let key = configuration.tlsKeyFile {
                // libwebsockets' OpenSSL support: every connection on the port is TLS.
                options |= pk_option_do_ssl_global_init
                info.ssl_cert_filepath = keep(cert)
                info.ssl_private_key_filepath = keep(key)
                // HTTP/1.1 only: lws offered h2 too, and over h2 the page's files (their headers
                // written as HTTP/1 bytes) reached browsers empty (ERR_HTTP2_COMPRESSION_ERROR) and
                // the API refused the page's own origin. WebSockets upgrade over HTTP/1.1 as before.
                info.alpn = keep("http/1.1")
                // TLS 1.2 with forward secrecy and AEAD only (ECDHE with AES-GCM or ChaCha20-Poly1305,
                // Mozilla's "intermediate" list without DHE); OpenSSL's default also took static-RSA
                // and CBC suites (AES128-SHA). Nothing older than TLS 1.2 has these, so 1.0 and 1.1 are
                // refused too. TLS 1.3's suites (all forward secret) are OpenSSL's.
                info.ssl_cipher_list = keep(Self.tls12Ciphers)
            }
            info.options = options
            info.pt_serv_buf_size = 32 * 1024
            // A request's headers may take up to this (lws's default is 4 KB, which an HTTP caller's
            // token with a few hundred room patterns passes). Held only while a request's head is read.
            info.max_http_header_data = UInt16(Self.maxHeaderBytes)
            if configuration.pingIntervalSeconds > 0 {
                info.retry_and_idle_policy = UnsafePointer(makeIdlePolicy(
                    pingSeconds: configuration.pingIntervalSeconds, hangupSeconds: configuration.pingIntervalSeconds * 2 + 10))
            }
            info.vhost_name = keep("default")
        }, created: { [self] context in
            // On epoll, asking for POLLOUT and dropping it again is a syscall each way per message:
            // a connection whose queue was empty is written at the end of the round instead (lws
            // keeps what the socket does not take). Not with permessage-deflate, whose frames lws may
            // have to finish over several WRITEABLE callbacks.
            writesAtTurnEnd = servedBy == .epoll && !configuration.permessageDeflate
            vhost = lws_get_vhost_by_name(context, "default")
            listenPort.value = Int(lws_get_vhost_listen_port(vhost))
        })
        return listenPort.value
    }

    /// A certificate and a key that do not belong together fail the context too (lws says only
    /// "lws_context_init_server_ssl failed").
    override var contextFailureHint: String {
        configuration.tlsCertFile != nil ? " Or, with TLS: is tls.keyFile the private key of tls.certFile?" : ""
    }

    /// This context's thread: serves a socket the acceptor dealt it, as lws serves one it accepted.
    private func adopt(_ fd: Int32) {
        guard !draining, let vhost else { close(fd); return }
        var descriptor = lws_sock_file_fd_type()
        descriptor.sockfd = fd
        var type = LWS_ADOPT_SOCKET.rawValue | LWS_ADOPT_HTTP.rawValue
        if configuration.tlsCertFile != nil && configuration.tlsKeyFile != nil { type |= LWS_ADOPT_ALLOW_SSL.rawValue }
        // On failure lws closes the descriptor itself.
        _ = lws_adopt_descriptor_vhost(vhost, lws_adoption_type(rawValue: type), descriptor, nil, nil)
    }

    /// Stops accepting, closes every WebSocket with `code` after its queued messages, and ends the
    /// loops when all are closed (or after lws's 5-second close timeout). No context stops before
    /// every context has closed its last connection: until then any of them may still hear of a
    /// connection it is home to. Returns when all have stopped.
    public func drain(code: UInt16 = 1001, reason: String = "server going away") async {
        acceptor?.stop()
        var running: [WebSocketServer] = []
        for context in contexts {
            let posted = context.perform { [context] in
                context.draining = true
                for connection in context.connections.values {
                    connection.closeHere(code: code, reason: reason, discardQueued: false)
                }
                context.serviceTick()
            }
            if posted { running.append(context) }
        }
        // HTTP requests already taken are answered first, for a while: an acknowledged write or an
        // import is not cut off without its answer.
        let draining = running
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Self.httpDrainSeconds)) {
            for context in draining {
                context.perform { [context] in
                    context.httpDrainOver = true
                    context.serviceTick()
                }
            }
        }
        for context in running { await context.emptied.wait() }
        // Posted after everything the contexts handed each other while closing: heard first.
        for context in running {
            context.perform { [context] in
                context.mayStop = true
                context.serviceTick()
            }
        }
        for context in running { await context.waitUntilStopped() }
    }

    /// Ends every loop without draining (any thread).
    public override func stopNow() {
        acceptor?.stop()
        for sibling in siblings { sibling.stopNow() }
        super.stopNow()
    }

    override func serviceTick() {
        guard draining, connections.isEmpty else { return }
        guard httpDrainOver || !http.values.contains(where: \.holdsUpDrain) else { return }
        emptied.signal()
        if mayStop { stopRequested = true }
    }

    /// A loop that ended some other way (`stopNow`, an lws failure) holds up no drain.
    override func loopEnded() { emptied.signal() }

    /// The context that is home to a connection or request on `path` (any service thread).
    private func home(forPath path: String) -> WebSocketServer {
        guard group.count > 1, let delegate else { return group.first?.context ?? self }
        let index = delegate.homeThread(forPath: path, threads: group.count)
        return group[min(max(index, 0), group.count - 1)].context
    }

    /// Calls the delegate on `home`'s thread, from this context's thread: now when they are the
    /// same, else handed over, after everything this thread handed over there before.
    private func call(at home: LWSEndpoint, _ call: @escaping (WebSocketServerDelegate) -> Void) {
        guard let delegate else { return }
        guard home !== self else { return call(delegate) }
        let handover = UncheckedSendable((call, delegate))
        post({ handover.value.0(handover.value.1) }, to: home)
    }

    /// A frame for the delegate. Handed over from another thread, it counts against the connection's
    /// frames waiting at home, so that a client cannot make this thread read ahead of its home
    /// (`WebSocketConnection.handingFrameToHome`).
    private func frameToHome(_ connection: WebSocketConnection, _ call: @escaping (WebSocketServerDelegate) -> Void) {
        guard connection.home !== self else { return self.call(at: self, call) }
        connection.handingFrameToHome()
        self.call(at: connection.home) { delegate in
            call(delegate)
            connection.frameHandledAtHome()
        }
    }

    override func sendQueueOverflowed(_ connection: WebSocketConnection) {
        call(at: connection.home) { delegate in
            connection.closingSeenAtHome = true
            delegate.didOverflow(connection)
        }
    }

    override func callback(wsi: OpaquePointer, reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
                           input: UnsafeMutableRawPointer?, length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
            return draining ? -1 : 0

        case LWS_CALLBACK_RAW_ADOPT, LWS_CALLBACK_RAW_RX:
            // lws turns a `CONNECT` request into a raw socket for this protocol, with no timeout: it
            // sat open forever, outside `limits.maxConnections`. This server speaks HTTP and
            // WebSocket only: such a connection is closed at once.
            return -1

        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            // `Upgrade: h2c` on a plain-HTTP request: lws would switch the connection to HTTP/2, over
            // which this server's answers break (the page's files came back empty; a review found it
            // after ALPN stopped offering h2 over TLS). The upgrade is ignored, as HTTP/1.1 lets a
            // server do, and the request answered in HTTP/1.1: lws compares the name again after this
            // callback, in its own copy, so its first letter becomes one no upgrade name has.
            if let input, strcasecmp(input.assumingMemoryBound(to: CChar.self), "h2c") == 0 {
                input.assumingMemoryBound(to: CChar.self).pointee = CChar(UInt8(ascii: "-"))
            }
            return 0

        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
            guard !draining, let delegate else {
                return refuseUpgrade(wsi, UpgradeRefusal(status: 503, reason: "the server is shutting down"))
            }
            let request = UpgradeRequest(
                path: header(wsi, WSI_TOKEN_GET_URI) ?? "/", query: header(wsi, WSI_TOKEN_HTTP_URI_ARGS) ?? "",
                origin: header(wsi, WSI_TOKEN_ORIGIN), peer: peerAddress(wsi), host: header(wsi, WSI_TOKEN_HOST))
            if let refusal = delegate.refusal(of: request) { return refuseUpgrade(wsi, refusal) }
            http[wsi] = .upgrading(request)
            return 0

        case LWS_CALLBACK_ESTABLISHED:
            guard case .upgrading(let request)? = http.removeValue(forKey: wsi) else { return -1 }
            let connection = WebSocketConnection(
                id: nextID(), wsi: wsi, path: request.path, query: request.query, peer: request.peer,
                origin: request.origin, isClient: false, limits: configuration.limits, owner: self,
                home: home(forPath: request.path))
            // Offered permessage-deflate may be in use: then every frame goes through lws's extension.
            connection.mayCoalesce = !(configuration.permessageDeflate
                && (header(wsi, WSI_TOKEN_EXTENSIONS)?.contains("permessage-deflate") ?? false))
            attach(connection, to: wsi)
            call(at: connection.home) { $0.didOpen(connection) }
            return 0

        case LWS_CALLBACK_RECEIVE:
            guard let connection = connection(of: wsi) else { return -1 }
            connection.lastReadTurn = turn
            received(connection, wsi: wsi, input: input, length: length) { connection, result, binary in
                switch result {
                case .message(let bytes): frameToHome(connection) { $0.didReceive(connection, message: bytes, binary: binary) }
                case .oversized(let total): frameToHome(connection) { $0.didReceiveOversized(connection, bytes: total) }
                case .partial: break
                }
            }
            return 0

        case LWS_CALLBACK_SERVER_WRITEABLE:
            guard let connection = connection(of: wsi) else { return -1 }
            return connection.writeQueued()

        case LWS_CALLBACK_TIMER:
            connection(of: wsi)?.deadlinePassed()
            return 0


        case LWS_CALLBACK_CLOSED:
            if let connection = detach(wsi: wsi) {
                call(at: connection.home) { delegate in
                    connection.closingSeenAtHome = true
                    delegate.didClose(connection)
                }
            }
            return 0

        case LWS_CALLBACK_HTTP:
            // The path's bytes as lws decoded them (checked in startHTTP before they become a String).
            let path = input.map { Array(UnsafeRawBufferPointer(start: $0, count: strlen($0.assumingMemoryBound(to: CChar.self)))) }
                ?? Array("/".utf8)
            return startHTTP(wsi: wsi, path: path)

        case LWS_CALLBACK_HTTP_BODY:
            guard case .readingBody(var read)? = http[wsi] else { return 0 }
            if ContinuousClock.now >= read.deadline {
                http[wsi] = nil
                return -1  // a body trickling past the deadline: the connection is closed unanswered
            }
            if read.request.body.count + length > configuration.limits.maxMessageBytes {
                return respond(wsi: wsi, Self.tooLarge(configuration.limits.maxMessageBytes))
            }
            if read.request.body.isEmpty, let input, Self.isOwnRequestLine(UnsafeRawBufferPointer(start: input, count: length),
                                                                          method: read.request.method) {
                // lws 4.1 read this request from bytes a client pipelined behind another, and hands
                // the request's own head as its body: it cannot be read right on this connection.
                // Closed unanswered, as HTTP/1.1 lets a server do to a pipeline (the client sends it
                // again on a new connection), rather than answered 400 for a body it never sent.
                http[wsi] = nil
                return -1
            }
            if let input, length > 0 {
                http[wsi] = nil  // the body is appended to in place, not copied
                read.request.body.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length))
            }
            http[wsi] = .readingBody(read)
            return 0

        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            switch http[wsi] {
            case .readingBody(let read)?:
                http[wsi] = nil
                return dispatch(wsi: wsi, read.request, closeAfter: false, afterBody: true)
            case .writing(var out)?:
                if zeroLengthPost.remove(wsi) != nil { return 0 }  // a POST's own (empty) body: no pipeline
                // Called again for a body already read: lws 4.1 holds bytes past it (a client's next
                // request, pipelined, after a request it had read from those it held) and hands them to
                // the callback as the end of this body, over and over, consuming nothing: the service
                // thread spun at 100 % CPU and never wrote the answer (an integrator's pass). The rest
                // of the answer is handed to lws whole now (it keeps what the socket does not take,
                // and sends it before it closes: written piece by piece, an answer longer than the
                // socket took at once was cut short) and the connection closed: what the client
                // pipelined after it is not read (RFC 9112 §9.3.2: it sends those again on a new
                // connection; a write's idempotency key makes that safe).
                out.response.closeAfter = true
                http[wsi] = .writing(out)
                _ = writeResponse(wsi: wsi, whole: true)
                http[wsi] = nil
                return -1
            case .flushing?:
                // The same, once the answer is all handed to lws and part of it is still in its buffer
                // (a slow reader): the thread spun until the client read it. Closed once it is out.
                http[wsi] = nil
                return -1
            case .awaitingAnswer(let exchange, _)?:
                if zeroLengthPost.remove(wsi) != nil { return 0 }
                http[wsi] = .awaitingAnswer(exchange, closeAfter: true)
                holdPipelined(wsi)
                return 0
            default:
                zeroLengthPost.remove(wsi)
                return 0
            }

        case LWS_CALLBACK_HTTP_WRITEABLE:
            guard case .writing? = http[wsi] else {
                return lws_callback_http_dummy(wsi, reason, user, input, length)
            }
            return writeResponse(wsi: wsi)

        case LWS_CALLBACK_HTTP_FILE_COMPLETION:
            return lws_http_transaction_completed(wsi) != 0 ? -1 : 0

        case LWS_CALLBACK_WSI_DESTROY, LWS_CALLBACK_CLOSED_HTTP:
            forgetHTTP(wsi, upgrade: reason == LWS_CALLBACK_WSI_DESTROY)
            return lws_callback_http_dummy(wsi, reason, user, input, length)

        default:
            return super.callback(wsi: wsi, reason: reason, user: user, input: input, length: length)
        }
    }

    /// Answers a refused upgrade with its status and reason, now (lws closes the socket when the filter
    /// callback returns nonzero, so the answer cannot wait for a writable callback; a fresh socket takes
    /// a few hundred bytes at once): the reason in a small HTML page. Written whole by us rather than by
    /// `lws_return_http_status`, whose status line says `HTTP/1.0` at this stage (and has no reason
    /// phrase for 429), which WebSocket libraries that expect `HTTP/1.1` (Python's `websockets`) take
    /// for an invalid answer instead of reading the status.
    private func refuseUpgrade(_ wsi: OpaquePointer, _ refusal: UpgradeRefusal) -> Int32 {
        let escaped = refusal.reason.replacingOccurrences(of: "&", with: "&amp;")
            .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        let body = Array("<html><body><h1>\(refusal.status)</h1>\(escaped)</body></html>\n".utf8)
        return answerAndClose(wsi, status: refusal.status, contentType: "text/html; charset=utf-8", body: body)
    }

    /// Writes a whole answer now and closes the connection (returns -1 for the callback to give lws):
    /// for a refused upgrade, and for a request whose body cannot be framed, where bytes after the
    /// head must not be read as another request.
    private func answerAndClose(_ wsi: OpaquePointer, status: Int, contentType: String, body: [UInt8]) -> Int32 {
        let head = "HTTP/1.1 \(status) \(Self.reasonPhrase(status))\r\n"
            + "content-type: \(contentType)\r\ncontent-length: \(body.count)\r\nconnection: close\r\n\r\n"
        var bytes = [UInt8](repeating: 0, count: pk_lws_pre) + Array(head.utf8) + body
        bytes.withUnsafeMutableBufferPointer { buffer in
            _ = lws_write(wsi, buffer.baseAddress! + pk_lws_pre, buffer.count - pk_lws_pre, pk_lws_write_raw)
        }
        return -1
    }

    private static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 411: "Length Required"
        case 429: "Too Many Requests"
        case 503: "Service Unavailable"
        default: "Refused"
        }
    }

    // MARK: HTTP

    /// One HTTP connection's request, from its head to the last byte of its answer.
    private enum HTTPStage {
        /// A WebSocket upgrade the delegate accepted in FILTER_PROTOCOL_CONNECTION, until ESTABLISHED
        /// (the header table may be gone by then) or the wsi is destroyed.
        case upgrading(UpgradeRequest)
        /// The head is read; the body is coming.
        case readingBody(BodyRead)
        /// Handed to the delegate (on this thread or the request's home), not answered yet.
        /// `closeAfter`: the answer closes the connection (a write sent without `Content-Length`).
        case awaitingAnswer(ServerHTTPExchange, closeAfter: Bool)
        /// The answer being written.
        case writing(OutgoingResponse)
        /// The answer is all handed to lws, part of it still in lws's own buffer (the socket did not
        /// take it): lws completes the request when it is sent. Gone at the next request's head.
        case flushing

        /// A drain waits for requests taken (up to `httpDrainSeconds`), not for upgrades: those
        /// become connections, which it waits for anyway.
        var holdsUpDrain: Bool {
            switch self {
            case .upgrading, .flushing: false  // an answer written whole: lws sends it before it closes
            default: true
            }
        }
    }

    /// A request whose body is being read.
    private struct BodyRead {
        var request: HTTPRequest
        /// When the body must be in (`Configuration.bodySeconds` after the head).
        let deadline: ContinuousClock.Instant
    }

    /// An answer being written: the head first, then the body in pieces while the socket takes them.
    private struct OutgoingResponse {
        var response: HTTPResponse
        /// A `HEAD` request's answer: the head a `GET` would get (its `content-length` too), no body.
        var headOnly = false
        var headSent = false
        var offset = 0
    }

    private static let methods: [(lws_token_indexes, String)] = [
        (WSI_TOKEN_GET_URI, "GET"), (WSI_TOKEN_POST_URI, "POST"), (WSI_TOKEN_PUT_URI, "PUT"),
        (WSI_TOKEN_DELETE_URI, "DELETE"), (WSI_TOKEN_PATCH_URI, "PATCH"), (WSI_TOKEN_OPTIONS_URI, "OPTIONS"),
        (WSI_TOKEN_HEAD_URI, "HEAD"),
    ]

    private static let headerTokens: [(lws_token_indexes, String)] = [
        (WSI_TOKEN_HTTP_AUTHORIZATION, "authorization"), (WSI_TOKEN_HTTP_ACCEPT, "accept"),
        (WSI_TOKEN_HTTP_CONTENT_TYPE, "content-type"), (WSI_TOKEN_ORIGIN, "origin"), (WSI_TOKEN_HOST, "host"),
    ]

    /// The TLS 1.2 cipher suites a TLS port accepts (OpenSSL names).
    static let tls12Ciphers = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    /// The most a request's headers may take (lws closes a connection whose headers are longer).
    public static let maxHeaderBytes = 16 * 1024

    static func tooLarge(_ limit: Int) -> HTTPResponse {
        var response = HTTPResponse(status: 413, contentType: "application/json", body: errorBody(
            "too-large", "the body is over \(limit) bytes (limits.maxMessageBytes)"))
        response.closeAfter = true  // the rest of the body is not read
        return response
    }

    /// Reads a request's head; a body follows in LWS_CALLBACK_HTTP_BODY unless there is none. A body is
    /// framed by one `Content-Length` only: lws does not decode a chunked request body, and a length
    /// that is not one plain number (or is given twice) would let the body be read as another request,
    /// so both are answered at once and the connection closed (411 `length-required`, 400
    /// `bad-message`).
    private func startHTTP(wsi: OpaquePointer, path pathBytes: [UInt8]) -> Int32 {
        let method: String = Self.methods.first(where: { lws_hdr_total_length(wsi, $0.0) > 0 }).map { $0.1 } ?? "GET"
        if lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0 {
            return answerAndClose(wsi, status: 411, contentType: "application/json", body: Self.errorBody(
                "length-required", "send the body with a Content-Length header (Transfer-Encoding is not read)"))
        }
        var declared = 0
        let hasLength = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0
        if hasLength {
            guard lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH, 1) <= 0,
                  let length = header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH).flatMap(Self.contentLength) else {
                return answerAndClose(wsi, status: 400, contentType: "application/json", body: Self.errorBody(
                    "bad-message", "Content-Length must be given once, as a number of bytes"))
            }
            declared = length
        }
        let arguments = queryArguments(wsi)
        if let problem = ([pathBytes] + arguments).lazy.compactMap(Self.targetProblem).first {
            return answerAndClose(wsi, status: 400, contentType: "application/json", body: Self.errorBody("bad-message", problem))
        }
        let path = String(decoding: pathBytes, as: UTF8.self)
        var headers: [String: String] = [:]
        for (token, name) in Self.headerTokens { if let value = header(wsi, token) { headers[name] = value } }
        let request = HTTPRequest(method: method, path: path, query: arguments.map(Self.queryItem), headers: headers,
                                  peer: peerAddress(wsi))
        if declared > configuration.limits.maxMessageBytes {
            return respond(wsi: wsi, Self.tooLarge(configuration.limits.maxMessageBytes))
        }
        if case .flushing? = http[wsi] { http[wsi] = nil }  // the answer before this request is out
        zeroLengthPost.remove(wsi)
        if hasLength && declared == 0 && method == "POST" { zeroLengthPost.insert(wsi) }
        if declared > 0 {
            http[wsi] = .readingBody(BodyRead(
                request: request, deadline: .now + .milliseconds(Int(configuration.bodySeconds * 1000))))
            return 0
        }
        // No length: no body (RFC 9112), but lws then reads what follows on the connection as this
        // request's body, so a request sent after it would never be answered. Answered, then closed.
        let closeAfter = !hasLength && !["GET", "HEAD", "OPTIONS", "DELETE"].contains(method)
        return dispatch(wsi: wsi, request, closeAfter: closeAfter)
    }

    /// Whether a body starts as a request line of `method` does (`POST /v1/…`): what lws 4.1 hands as
    /// the body of a request it parsed from pipelined bytes (its own head). No JSON or CSV body starts
    /// so.
    static func isOwnRequestLine(_ bytes: UnsafeRawBufferPointer, method: String) -> Bool {
        let prefix = Array((method + " /").utf8)
        return bytes.count >= prefix.count && zip(bytes, prefix).allSatisfy { $0 == $1 }
    }

    /// A `Content-Length` value: digits only (spaces around allowed), at most 18 of them.
    static func contentLength(_ text: String) -> Int? {
        let digits = text.trimmingCharacters(in: .whitespaces)
        guard !digits.isEmpty, digits.count <= 18, digits.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return Int(digits)
    }

    static func errorBody(_ code: String, _ message: String) -> [UInt8] {
        Array("{\"error\":{\"code\":\"\(code)\",\"message\":\"\(message)\"}}".utf8)
    }

    /// The query's arguments (`name=value`), percent-decoded by lws, as bytes.
    private func queryArguments(_ wsi: OpaquePointer) -> [[UInt8]] {
        var arguments: [[UInt8]] = []
        var index: Int32 = 0
        while true {
            let length = Int(lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, index))
            guard length > 0 else { break }
            var buffer = [CChar](repeating: 0, count: length + 1)
            guard lws_hdr_copy_fragment(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_HTTP_URI_ARGS, index) >= 0 else { break }
            arguments.append(buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) })
            index += 1
        }
        return arguments
    }

    /// One query argument (checked by `targetProblem`) as a name and a value (`""` when it has no `=`).
    static func queryItem(_ argument: [UInt8]) -> HTTPRequest.QueryItem {
        let text = String(decoding: argument, as: UTF8.self)
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        return .init(name: String(parts[0]), value: parts.count > 1 ? String(parts[1]) : "")
    }

    /// Why the decoded bytes of a request's path or of one query argument are refused (`400
    /// bad-message`), or nil: a control character (`%01`-`%1F`, `%7F`), or bytes that are not UTF-8,
    /// which a lossy reading would turn into U+FFFD (so that `?user=%FF` and `?user=%FE` were one
    /// user). lws itself ends the request line at a decoded `%0A` or `%0D` and drops `%00`
    /// (docs/SECURITY.md); what it hands over is checked here.
    static func targetProblem(_ bytes: [UInt8]) -> String? {
        if bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            return "the request's path or query holds a control character (an escape from %01 to %1F, or %7F)"
        }
        if String(validating: bytes, as: UTF8.self) == nil {
            return "the request's path or query is not UTF-8 once its %-escapes are decoded"
        }
        return nil
    }

    /// Hands a whole request to the delegate; what it leaves is a file under the web root, or 404.
    /// On another context than the request's home, a request the delegate claims is handed to the
    /// home thread (and answered from there through the exchange); the rest is served here.
    private func dispatch(wsi: OpaquePointer, _ request: HTTPRequest, closeAfter: Bool, afterBody: Bool = false) -> Int32 {
        // A HEAD's answer is the head alone, its errors too (a body after it would be read as the
        // start of the next answer on the connection).
        let headOnly = request.method == "HEAD"
        guard let delegate else {
            return respond(wsi: wsi, HTTPResponse(status: 503, text: "stopping\n"), headOnly: headOnly, closeAfter: closeAfter)
        }
        let home = home(forPath: request.path)
        if home === self || delegate.claims(request) {
            let exchange = ServerHTTPExchange(request: request, wsi: wsi, server: self, home: home)
            http[wsi] = .awaitingAnswer(exchange, closeAfter: closeAfter)
            if home !== self {
                lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0)
                holdPipelined(wsi)
                call(at: home) { delegate in
                    if !delegate.handle(exchange) { exchange.respond(HTTPResponse(status: 404, text: "not found\n")) }
                }
                return 0
            }
            if delegate.handle(exchange) {
                // Answered now or later (a long poll, a commit): lws must not time the request out meanwhile.
                if awaitedCloseAfter(exchange) != nil {
                    lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0)
                    holdPipelined(wsi)
                }
                return 0
            }
            if awaitedCloseAfter(exchange) != nil { http[wsi] = nil }
        }
        if ["GET", "HEAD"].contains(request.method), let file = staticFile(for: request.path) {
            if afterBody {
                // A GET that came with a body: lws 4.1 would hand bytes pipelined behind it to
                // BODY_COMPLETION over and over while it sends the file (a thread spinning for as long
                // as a slow reader takes). From memory instead, as any answer (the web client's files
                // are small), which that case writes whole before it closes the connection.
                guard let bytes = FileManager.default.contents(atPath: file.path) else { return -1 }
                return respond(wsi: wsi, HTTPResponse(status: 200, contentType: file.mime, body: [UInt8](bytes),
                                                      headers: Self.staticFileHeaderList),
                               headOnly: headOnly, closeAfter: true)
            }
            let result = Self.staticFileHeaders.withCString { headers in
                lws_serve_http_file(wsi, file.path, file.mime, headers, Int32(Self.staticFileHeaders.utf8.count))
            }
            if result < 0 { return -1 }
            if result > 0 { return lws_http_transaction_completed(wsi) != 0 ? -1 : 0 }
            return 0
        }
        if request.path == "/v1" || request.path.hasPrefix("/v1/") {
            // The API's errors are JSON, a path no route has included.
            return respond(wsi: wsi, HTTPResponse(status: 404, contentType: "application/json",
                                                  body: Self.errorBody("not-found", "no route has this path")),
                           headOnly: headOnly, closeAfter: closeAfter)
        }
        return respond(wsi: wsi, HTTPResponse(status: 404, text: "not found\n"), headOnly: headOnly, closeAfter: closeAfter)
    }

    /// While `exchange` is its connection's request still waiting for an answer (not answered, and its
    /// connection not gone: a wsi's address is reused by a later connection), whether the answer closes
    /// the connection; else nil.
    private func awaitedCloseAfter(_ exchange: ServerHTTPExchange) -> Bool? {
        guard case .awaitingAnswer(let current, let closeAfter)? = http[exchange.wsi], current === exchange else { return nil }
        return closeAfter
    }

    /// An exchange's answer (service thread): written when the socket can take it.
    func answer(_ exchange: ServerHTTPExchange, _ response: HTTPResponse) {
        guard let closeAfter = awaitedCloseAfter(exchange) else { return }
        _ = respond(wsi: exchange.wsi, response, headOnly: exchange.request.method == "HEAD", closeAfter: closeAfter)
    }

    private func respond(wsi: OpaquePointer, _ response: HTTPResponse, headOnly: Bool = false, closeAfter: Bool = false) -> Int32 {
        var response = response
        if closeAfter { response.closeAfter = true }
        http[wsi] = .writing(OutgoingResponse(response: response, headOnly: headOnly))
        // lws 4.1 serves no POLLOUT to an HTTP connection whose reading is held (`holdPipelined`).
        lws_rx_flow_control(wsi, 1)
        lws_callback_on_writable(wsi)
        return 0
    }

    /// While a request waits for its answer (a commit, a long poll, another thread), lws reads nothing
    /// more from its connection: bytes it already holds past the request are the client's next one
    /// (HTTP/1.1 pipelining), which lws 4.1 would otherwise go back to on every turn of its loop,
    /// consuming nothing (after a body, as the end of that body: BODY_COMPLETION, the other requests
    /// never answered and a stop that never ended, an integrator's pass; behind a long poll, a loop
    /// that never waits: a service thread at 100 % CPU for the poll's whole `wait`, a code review).
    /// `respond` lets it read again (the callback's BODY_COMPLETION case closes a pipeline behind a
    /// body after the answer). A client that goes away meanwhile is seen when the answer is written
    /// (a long poll's, within its `wait`, at most 60 s).
    private func holdPipelined(_ wsi: OpaquePointer) {
        lws_rx_flow_control(wsi, 0)
    }

    /// The connection's HTTP part is over (CLOSED_HTTP) or the wsi is gone (`upgrade`: WSI_DESTROY, which
    /// also ends an upgrade that never reached ESTABLISHED). A handler still working is told.
    private func forgetHTTP(_ wsi: OpaquePointer, upgrade: Bool) {
        switch http[wsi] {
        case .upgrading?: if upgrade { http[wsi] = nil }
        case .awaitingAnswer(let exchange, _)?:
            http[wsi] = nil
            exchange.clientGone()
        case .readingBody?, .writing?, .flushing?: http[wsi] = nil
        case nil: break
        }
        zeroLengthPost.remove(wsi)
    }

    /// On every answer the server writes (the API's, `/healthz`, `/metrics`, errors): none is to be
    /// kept by a cache (they are per caller and per moment), nor read as another type than it says.
    static let answerHeaders: [HTTPResponse.Header] = [
        .init("cache-control", "no-store"), .init("x-content-type-options", "nosniff"),
    ]

    /// On the web client's files: not read as another type, and the page is not to be framed by
    /// another site (clickjacking its edit controls).
    /// As a file answered from memory has them (beside `answerHeaders`, which has `nosniff`).
    static let staticFileHeaderList: [HTTPResponse.Header] = [
        .init("x-frame-options", "DENY"), .init("content-security-policy", "frame-ancestors 'none'"),
    ]
    /// The same, as lws's file server takes them, `nosniff` first.
    static let staticFileHeaders = ([.init("x-content-type-options", "nosniff")] + staticFileHeaderList)
        .map { "\($0.name): \($0.value)\r\n" }.joined()

    /// The reason phrases (RFC 9110's) of the codes this server sends that lws's table has none for:
    /// its status line was `HTTP/1.1 201 ` (allowed, RFC 9112 §4, but logs and people read the phrase).
    static let reasonPhrases: [Int: String] = [
        201: "Created", 204: "No Content", 422: "Unprocessable Content", 429: "Too Many Requests",
    ]

    /// What lws's `lws_add_http_common_headers` writes (the status line as lws makes it, the type, the
    /// length), with two differences: a reason phrase where lws's table has none (`reasonPhrases`),
    /// and a `204` carries neither `content-length` nor `content-type` (it has no content; RFC 9110
    /// §8.6: a server must not send `content-length` with a 204; it said `content-length: 0` until
    /// session 42). True if the head does not fit.
    private static func addStatusAndLength(wsi: OpaquePointer, _ response: HTTPResponse, start: UnsafeMutablePointer<UInt8>,
                                           _ position: inout UnsafeMutablePointer<UInt8>?, end: UnsafeMutablePointer<UInt8>) -> Bool {
        if lws_add_http_header_status(wsi, UInt32(response.status), &position, end) != 0 { return true }
        if let phrase = reasonPhrases[response.status], let at = position {
            // lws wrote "HTTP/1.x 201 \r\n" and nothing after it (no server or vhost headers here):
            // the phrase goes before the line's end. Anything else is left as lws wrote it.
            let line = Array(UnsafeBufferPointer(start: start, count: at - start))
            let bare = Array(" \(response.status) \r\n".utf8)
            if line.count > bare.count, Array(line.suffix(bare.count)) == bare,
               line.dropLast(2).firstIndex(of: 0x0D) == nil {
                let ending = Array((phrase + "\r\n").utf8)
                guard at - 2 + ending.count < end else { return true }
                (at - 2).update(from: ending, count: ending.count)
                position = at - 2 + ending.count
            }
        }
        if response.status == 204 { return false }
        let type = Array(response.contentType.utf8)
        if lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE, type, Int32(type.count), &position, end) != 0 {
            return true
        }
        return lws_add_http_header_content_length(wsi, lws_filepos_t(response.body.count), &position, end) != 0
    }

    /// Writes the pending answer's head, then as much of its body as the socket takes (16 KiB pieces);
    /// the rest goes on the next WRITEABLE. After the last piece the connection waits for the next
    /// request (keep-alive), or closes when the answer says so.
    private func writeResponse(wsi: OpaquePointer, whole: Bool = false) -> Int32 {
        guard case .writing(var out)? = http[wsi] else { return 0 }
        let response = out.response
        if !out.headSent {
            var head = [UInt8](repeating: 0, count: pk_lws_pre + 2048)
            let failed: Bool = head.withUnsafeMutableBufferPointer { buffer in
                let start = buffer.baseAddress! + pk_lws_pre
                var position: UnsafeMutablePointer<UInt8>? = start
                let end = buffer.baseAddress! + buffer.count - 1
                if Self.addStatusAndLength(wsi: wsi, response, start: start, &position, end: end) { return true }
                for header in response.headers + Self.answerHeaders {
                    let name = Array((header.name + ":").utf8), value = Array(header.value.utf8)
                    if lws_add_http_header_by_name(wsi, name + [0], value, Int32(value.count), &position, end) != 0 {
                        return true
                    }
                }
                if response.closeAfter {
                    let name = Array("connection:".utf8) + [0], value = Array("close".utf8)
                    if lws_add_http_header_by_name(wsi, name, value, Int32(value.count), &position, end) != 0 {
                        return true
                    }
                }
                return lws_finalize_write_http_header(wsi, start, &position, end) != 0
            }
            if failed { return -1 }
            out.headSent = true
        }
        if out.headOnly { out.offset = response.body.count }
        // `whole`: the rest in one write, whatever the socket takes (lws keeps the remainder).
        let piece = whole ? response.body.count : 16 * 1024
        while out.offset < response.body.count && (whole || lws_send_pipe_choked(wsi) == 0) {
            let end = min(response.body.count, out.offset + piece)
            let last = end == response.body.count
            var buffer = [UInt8](repeating: 0, count: pk_lws_pre)
            buffer.append(contentsOf: response.body[out.offset..<end])
            let written = buffer.withUnsafeMutableBufferPointer { b in
                lws_write(wsi, b.baseAddress! + pk_lws_pre, end - out.offset, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP)
            }
            if written < 0 { return -1 }
            out.offset = end
        }
        if out.offset < response.body.count {
            http[wsi] = .writing(out)
            lws_callback_on_writable(wsi)
            return 0
        }
        http[wsi] = nil
        if response.closeAfter { return -1 }
        if lws_http_transaction_completed(wsi) != 0 { return -1 }
        // The last piece only partly sent: lws completes the request once it has sent the rest.
        if lws_partial_buffered(wsi) != 0 { http[wsi] = .flushing }
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
