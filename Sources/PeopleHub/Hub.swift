import Foundation
import Logging
import PeopleCore
import PeopleStore
import WebSocketTransport

/// The hub: rooms and sessions over WebSocket connections. Carries out what `Room` decides.
///
/// Runs on the transport's service thread (it is the server's delegate): parses frames in
/// PROTOCOL.md's order, enforces the limits, hands messages to the room, makes revisions durable
/// through the store, and fans the encoded replies out (each message encoded once for all its
/// receivers). Other threads reach it only through the server's `perform`.
public final class Hub: WebSocketServerDelegate, @unchecked Sendable {
    public let configuration: HubConfiguration
    private let store: any PeopleStore
    /// Room ownership when several nodes share the store (PostgreSQL); nil for a single node.
    private let leases: (any RoomLeases)?
    private let logger: Logger
    private let metrics: HubMetrics
    private let clock: @Sendable () -> Int64
    private let makeSessionID: @Sendable () -> String
    /// Set by `attach(to:)`; used to come back to the service thread after an asynchronous store.
    private weak var server: WebSocketServer?
    /// Renders `/metrics` (the Prometheus registry); nil when metrics are off.
    private let renderMetrics: (@Sendable () -> String)?

    /// Rooms in memory, or being read from the store (with the hellos waiting for them).
    private var rooms: [String: RoomSlot] = [:]
    private var openConnections = 0
    /// Open connections per peer address (only kept when `limits.maxConnectionsPerIP` is set).
    private var connectionsByIP: [String: Int] = [:]
    private var draining = false
    /// Blocking store reads (loading rooms, old catch-ups) run here, never on the service thread.
    private let reads = DispatchQueue(label: "peoplekeeper.hub.store-reads", attributes: .concurrent)
    /// Lease calls, in the order the service thread makes them (a release queued when a room unloads
    /// must run before the acquire of a hello that comes right after).
    private let leaseCalls = DispatchQueue(label: "peoplekeeper.hub.leases")
    private var sweepTimer: DispatchSourceTimer?
    /// What the last store check found (nil: it answered); `/healthz` reports it. Checked every
    /// `storeCheckSeconds` from the sweep, off the service thread.
    private var storeProblem: StoreError?
    /// When the check under way started (nil: none is).
    private var storeCheckStarted: Int64?
    private var sweeps = 0
    static let storeCheckSeconds = 5

    private enum RoomSlot {
        case loading(RoomLoad)
        case loaded(RoomHost)
    }

    /// Hellos waiting for their room to come from the store.
    private final class RoomLoad {
        var waiting: [(connection: WebSocketConnection, peer: Peer, hello: ClientMessage.Hello)] = []
    }

    private func host(_ name: String) -> RoomHost? {
        if case .loaded(let host)? = rooms[name] { host } else { nil }
    }

    /// - Parameters:
    ///   - clock: milliseconds since the epoch (a parameter, so tests can drive time).
    ///   - makeSessionID: a fresh unguessable session id per call.
    public init(configuration: HubConfiguration, store: any PeopleStore, logger: Logger,
                metrics: HubMetrics = HubMetrics(), renderMetrics: (@Sendable () -> String)? = nil,
                clock: @escaping @Sendable () -> Int64 = Hub.systemMilliseconds,
                makeSessionID: @escaping @Sendable () -> String = Hub.randomSessionID) {
        var configuration = configuration
        configuration.roomPolicy.maxPeople = configuration.limits.maxPeoplePerRoom
        configuration.roomPolicy.keptSessions = configuration.limits.keptSessionsPerRoom
        self.configuration = configuration
        self.store = store
        self.leases = store as? any RoomLeases
        self.logger = logger
        self.metrics = metrics
        self.renderMetrics = renderMetrics
        self.clock = clock
        self.makeSessionID = makeSessionID
    }

    /// Connects the hub to the server whose delegate it is, and starts the once-a-second sweep that
    /// unloads idle rooms.
    public func attach(to server: WebSocketServer) {
        self.server = server
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "peoplekeeper.hub.sweep"))
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [weak self] in
            self?.server?.perform { [weak self] in self?.sweep() }
        }
        timer.resume()
        sweepTimer = timer
        leases?.onLeasesLost { [weak self] in
            self?.server?.perform { [weak self] in self?.dropAllRooms(reason: "lost the room leases") }
        }
    }

    /// Stops serving every room at once (this node may no longer own them): their connections are
    /// closed with 1012 so clients reconnect and are sent to the owner.
    private func dropAllRooms(reason: String) {
        logger.error("dropping every room", metadata: ["reason": "\(reason)"])
        for case .loaded(let host) in rooms.values { drop(host, code: 1012, reason: "room moved; reconnect") }
    }

    /// Stops serving a room: nothing held is sent any more, its connections are closed, and the next
    /// hello loads it again (from what is durable).
    private func drop(_ host: RoomHost, code: UInt16, reason: String) {
        host.broken = true
        host.held.removeAll()
        if self.host(host.room.name) === host { rooms[host.room.name] = nil }
        metrics.rooms.record(rooms.count)
        for connection in host.connections.values { connection.close(code: code, reason: reason) }
    }

    /// Stops taking messages, lets the server close every connection with 1001 and stop, then stores a
    /// snapshot of every room changed since its last one and waits for the store to finish writing.
    public func drain() async {
        guard let server else { return }
        sweepTimer?.cancel()
        server.perform { [self] in
            draining = true
            logger.info("draining: no new connections or messages; closing connections with 1001")
        }
        await server.drain(code: 1001, reason: "hub shutting down")
        // The service thread has stopped: the rooms are ours now.
        for case .loaded(let host) in rooms.values where !host.broken { saveSnapshotIfChanged(host) }
        store.close()
    }

    /// Unloads rooms nobody has been connected to for `unloadAfterSeconds` (after a snapshot, so the
    /// next load replays little); they come back from the store on the next hello.
    private func sweep() {
        sweeps += 1
        if sweeps % Self.storeCheckSeconds == 1 { checkStore() }
        let now = clock()
        let limit = Int64(configuration.unloadAfterSeconds) * 1000
        for (name, slot) in rooms {
            guard case .loaded(let host) = slot, host.connections.isEmpty, !host.isHolding, host.catchingUp == 0,
                  let idle = host.idleSince, now - idle >= limit else { continue }
            saveSnapshotIfChanged(host)
            rooms[name] = nil
            metrics.rooms.record(rooms.count)
            if let leases { leaseCalls.async { leases.release(room: name) } }
            metrics.roomUnloads.increment()
            logger.info("room unloaded (idle)", metadata: ["room": "\(name)"])
        }
    }

    /// Asks the store whether it can be reached and written (off the service thread); the answer is
    /// what `/healthz` says until the next check.
    private func checkStore() {
        if let started = storeCheckStarted {
            // A check that hangs (a database that accepts connections but never answers) is a failure too.
            let waited = (clock() - started) / 1000
            if waited >= Self.storeCheckSeconds * 2, storeProblem == nil {
                storeProblem = StoreError(.unavailable, "the store has not answered a check for \(waited) s")
                logger.error("store check failed: /healthz answers 503", metadata: ["error": "\(storeProblem!)"])
            }
            return
        }
        storeCheckStarted = clock()
        let store = store
        reads.async { [weak self] in
            var problem: StoreError?
            do { try store.check() } catch { problem = error as? StoreError ?? StoreError(.unavailable, "\(error)") }
            let found = problem
            self?.server?.perform { [weak self] in
                guard let self else { return }
                storeCheckStarted = nil
                if let found, storeProblem == nil {
                    logger.error("store check failed: /healthz answers 503", metadata: ["error": "\(found)"])
                } else if found == nil, let old = storeProblem {
                    logger.notice("store check passes again", metadata: ["was": "\(old)"])
                }
                storeProblem = found
            }
        }
    }

    private func saveSnapshotIfChanged(_ host: RoomHost) {
        guard host.room.journalPosition > host.snapshotPosition else { return }
        store.save(host.room.snapshot(), room: host.room.name)
        host.snapshotPosition = host.room.journalPosition
        host.snapshotRevision = host.room.revision
    }

    public static let systemMilliseconds: @Sendable () -> Int64 = {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }

    public static let randomSessionID: @Sendable () -> String = {
        var generator = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
    }

    // MARK: Connections

    public func shouldAccept(_ request: UpgradeRequest) -> Bool {
        guard !draining, Self.roomName(inPath: request.path) != nil else { return false }
        guard Self.originAllowed(request.origin, host: request.host, allowed: configuration.allowedOrigins) else {
            metrics.refusedOrigins.increment()
            logger.warning("refused a connection from a page of another origin (auth.allowedOrigins)",
                           metadata: ["origin": "\(request.origin ?? "")", "peer": "\(request.peer)"])
            return false
        }
        guard openConnections < configuration.limits.maxConnections else {
            metrics.refusedConnections.increment()
            logger.warning("refused a connection: at limits.maxConnections", metadata: ["peer": "\(request.peer)"])
            return false
        }
        let perIP = configuration.limits.maxConnectionsPerIP
        if perIP > 0, connectionsByIP[request.peer, default: 0] >= perIP {
            metrics.refusedConnections.increment()
            logger.debug("refused a connection: at limits.maxConnectionsPerIP", metadata: ["peer": "\(request.peer)"])
            return false
        }
        return true
    }

    public func didOpen(_ connection: WebSocketConnection) {
        openConnections += 1
        metrics.connections.record(openConnections)
        if configuration.limits.maxConnectionsPerIP > 0 { connectionsByIP[connection.peer, default: 0] += 1 }
        guard let name = Self.roomName(inPath: connection.path) else { connection.close(code: 1008); return }
        let limits = configuration.limits
        connection.context = Peer(room: name, bucket: TokenBucket(
            perSecond: limits.opsPerSecond, burst: limits.opsPerSecond * 2, now: clock()))
        connection.setDeadline(seconds: limits.helloTimeoutSeconds)
    }

    public func didClose(_ connection: WebSocketConnection) {
        openConnections -= 1
        metrics.connections.record(openConnections)
        if configuration.limits.maxConnectionsPerIP > 0, let count = connectionsByIP[connection.peer] {
            connectionsByIP[connection.peer] = count > 1 ? count - 1 : nil
        }
        guard let peer = connection.context as? Peer else { return }
        connection.context = nil
        guard let session = peer.session, let host = host(peer.room), host.connections[session] === connection else {
            return
        }
        host.connections[session] = nil
        if host.connections.isEmpty { host.idleSince = clock() }
        perform(host.room.leave(session: session), in: host)
        logger.debug("left", metadata: ["room": "\(peer.room)", "session": "\(session)", "user": "\(peer.user ?? "")"])
    }

    public func didOverflow(_ connection: WebSocketConnection) {
        metrics.sendQueueDrops.increment()
        logger.warning("closed a slow consumer (send queue full)", metadata: ["peer": "\(connection.peer)"])
    }

    public func didReceiveOversized(_ connection: WebSocketConnection, bytes: Int) {
        guard let peer = connection.context as? Peer, admit(connection, peer: peer) else { return }
        send(error: ProtocolError(.tooLarge,
            "frame of \(bytes) bytes is over limits.maxMessageBytes (\(connection.limits.maxMessageBytes))"),
            to: connection)
    }

    public func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        guard !draining, !connection.isClosing, let peer = connection.context as? Peer else { return }
        guard admit(connection, peer: peer, frame: binary ? nil : message) else { return }
        if peer.waiting != nil {
            // The hello is waiting for its room (or its catch-up) from the store: later frames wait too.
            guard peer.waiting!.count < 256 else { return connection.close(code: 1008, reason: "too many frames before welcome") }
            peer.waiting!.append((message, binary))
        } else if peer.session == nil {
            hello(message, binary: binary, on: connection, peer: peer)
        } else {
            receive(message, binary: binary, on: connection, peer: peer)
        }
    }

    /// Takes a token from the connection's bucket. Over the rate the frame is dropped: a `submit`, `undo`
    /// or `redo` is answered `rate-limited` with its seq (its client is waiting for that answer, and may
    /// resend the same seq later), any other frame once per burst (the first, then every tenth). A
    /// connection whose frames keep being dropped for more than a second, with no quiet second between,
    /// is closed (1008).
    private func admit(_ connection: WebSocketConnection, peer: Peer, frame: [UInt8]? = nil) -> Bool {
        let now = clock()
        if peer.bucket.take(now: now) {
            if let last = peer.lastRefused, now - last > 1000 { peer.refusedSince = nil; peer.refusedInARow = 0 }
            return true
        }
        peer.refusedInARow += 1
        peer.lastRefused = now
        let since = peer.refusedSince ?? now
        peer.refusedSince = since
        if now - since > 1000 {
            logger.warning("closed a connection that stayed over its rate", metadata: ["peer": "\(connection.peer)"])
            connection.close(code: 1008, reason: "rate limit")
            return false
        }
        let error = ProtocolError(.rateLimited,
            "over limits.opsPerSecond (\(configuration.limits.opsPerSecond)); frame dropped, nothing applied")
        if let frame, let json = try? JSON.parse(frame), let seq = Self.seq(of: json),
           ["submit", "undo", "redo"].contains(ClientMessage.messageType(of: json) ?? "") {
            send(error: error, seq: seq, to: connection)
        } else if peer.refusedInARow == 1 || peer.refusedInARow % 10 == 0 {
            send(error: error, to: connection)
        }
        return false
    }

    // MARK: HTTP

    public func response(for request: HTTPRequest) -> HTTPResponse? {
        switch request.path {
        case "/healthz":
            if draining { return HTTPResponse(status: 503, text: "draining\n") }
            if let storeProblem { return HTTPResponse(status: 503, text: "store unavailable: \(storeProblem)\n") }
            return HTTPResponse(status: 200, text: "ok\n")
        case "/metrics":
            guard configuration.metricsEnabled, let renderMetrics else {
                return HTTPResponse(status: 404, text: "metrics are off (metrics.enabled)\n")
            }
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                body: Array(renderMetrics().utf8))
        default:
            if request.path.hasPrefix("/v1/") {
                return HTTPResponse(status: 426, text: "this is a WebSocket endpoint: connect with ws://\n")
            }
            return nil
        }
    }

    // MARK: Frames

    private func hello(_ frame: [UInt8], binary: Bool, on connection: WebSocketConnection, peer: Peer) {
        if binary {
            return send(error: ProtocolError(.notHello, "the first frame must be a hello text frame"), to: connection)
        }
        let json: JSON
        do { json = try JSON.parse(frame) } catch {
            return send(error: ProtocolError(.badJSON, error.description), to: connection)
        }
        guard ClientMessage.messageType(of: json) == "hello" else {
            return send(error: ProtocolError(.notHello, "send hello first"), seq: Self.seq(of: json), to: connection)
        }
        let hello: ClientMessage.Hello
        do {
            guard case .hello(let decoded) = try ClientMessage(json: json) else { return }
            hello = decoded
        } catch {
            return send(error: error, to: connection)
        }
        guard !hello.user.isEmpty, hello.user.utf8.count <= 64 else {
            return send(error: ProtocolError(.badMessage, "user must be 1 to 64 bytes of UTF-8"), to: connection)
        }
        peer.waiting = []
        logger.debug("hello", metadata: ["room": "\(peer.room)", "user": "\(hello.user)", "peer": "\(connection.peer)"])
        guard let auth = configuration.auth else { return open(hello, on: connection, peer: peer) }
        guard let token = hello.token, !token.isEmpty else {
            peer.waiting = nil
            metrics.refusedTokens.increment()
            return send(error: ProtocolError(.unauthorized, "this hub needs an access token: give hello.token"), to: connection)
        }
        // Checked off the service thread (jwt-kit is async); frames that arrive meanwhile wait.
        let room = peer.room
        let box = UncheckedSendable((connection, peer, hello))
        Task { [weak self] in
            let result = await auth.check(token, user: hello.user, room: room)
            self?.server?.perform { [weak self] in
                let (connection, peer, hello) = box.value
                self?.authorized(result, hello: hello, on: connection, peer: peer)
            }
        }
    }

    /// A hello's token was checked: it joins with the token's role, or is refused (`unauthorized`,
    /// then close 1008).
    private func authorized(_ result: Result<Role, AuthFailure>, hello: ClientMessage.Hello,
                            on connection: WebSocketConnection, peer: Peer) {
        guard connection.context === peer, !connection.isClosing else { return }
        switch result {
        case .success(let role):
            peer.role = role
            open(hello, on: connection, peer: peer)
        case .failure(let failure):
            peer.waiting = nil
            metrics.refusedTokens.increment()
            logger.notice("token refused", metadata: ["room": "\(peer.room)", "user": "\(hello.user)", "why": "\(failure)"])
            send(error: ProtocolError(.unauthorized, failure.description), to: connection)
        }
    }

    /// Joins a hello to its room: at once if the room is in memory, else after loading it.
    private func open(_ hello: ClientMessage.Hello, on connection: WebSocketConnection, peer: Peer) {
        switch rooms[peer.room] {
        case .loaded(let host)?:
            join(hello, on: connection, peer: peer, host: host)
        case .loading(let load)?:
            load.waiting.append((connection, peer, hello))
        case nil:
            guard rooms.count < configuration.limits.maxRooms else {
                peer.waiting = nil
                return send(error: ProtocolError(.roomFull,
                    "the hub holds at most \(configuration.limits.maxRooms) rooms (limits.maxRooms)"), to: connection)
            }
            let load = RoomLoad()
            load.waiting.append((connection, peer, hello))
            rooms[peer.room] = .loading(load)
            startLoading(peer.room)
        }
    }

    /// Reads and rebuilds the room off the service thread, then joins the hellos that waited for it.
    /// In cluster mode the room's lease comes first (on the lease queue, in order with releases).
    private func startLoading(_ name: String) {
        let store = store
        let policy = configuration.roomPolicy
        let load: @Sendable () -> Void = { [weak self] in
            let started = DispatchTime.now().uptimeNanoseconds
            let result: Result<Room?, StoreError>
            do {
                if let stored = try store.load(room: name) {
                    result = .success(try Room(restoring: stored, policy: policy))
                } else {
                    result = .success(nil)
                }
            } catch let error as StoreError {
                result = .failure(error)
            } catch {
                result = .failure(StoreError(.corrupt, "\(error)"))
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            let box = UncheckedSendable(result)
            self?.server?.perform { [weak self] in self?.loaded(name, box.value, seconds: seconds) }
        }
        guard let leases else { return reads.async(execute: load) }
        let reads = reads
        leaseCalls.async { [weak self] in
            do {
                if let owner = try Self.takeLease(leases, room: name) {
                    self?.server?.perform { [weak self] in self?.redirect(name, to: owner) }
                } else {
                    reads.async(execute: load)
                }
            } catch {
                let box = UncheckedSendable(Result<Room?, StoreError>.failure(error as? StoreError ?? StoreError(.lease, "\(error)")))
                self?.server?.perform { [weak self] in self?.loaded(name, box.value, seconds: 0) }
            }
        }
    }

    /// Takes the room's lease; returns the owner's URL if another node has it. A lease held by a node
    /// that has not said where it is yet (it is taking the room over) is asked again for a while.
    private static func takeLease(_ leases: any RoomLeases, room: String) throws(StoreError) -> String? {
        for _ in 0..<25 {
            switch try leases.acquire(room: room) {
            case .acquired: return nil
            case .ownedBy(_, let url): return url
            case .busy: Thread.sleep(forTimeInterval: 0.2)
            }
        }
        throw StoreError(.lease, "room \(room) is held by a node that does not say where it is")
    }

    /// The room is served by another node: every hello waiting for it is sent there.
    private func redirect(_ name: String, to base: String) {
        guard case .loading(let load)? = rooms[name] else { return }
        rooms[name] = nil
        let url = base + "/v1/rooms/" + name
        logger.debug("redirect", metadata: ["room": "\(name)", "url": "\(url)"])
        metrics.roomLoads[.redirected]?.increment()
        for (connection, peer, _) in load.waiting where connection.context === peer {
            peer.waiting = nil
            send(.redirect(url: url), to: connection)
            connection.close(code: 1000, reason: "redirect")
        }
    }

    private func loaded(_ name: String, _ result: Result<Room?, StoreError>, seconds: Double) {
        guard case .loading(let load)? = rooms[name] else { return }
        let host: RoomHost
        switch result {
        case .success(let room?):
            metrics.roomLoads[.loaded]?.increment()
            metrics.roomLoadDuration.recordSeconds(seconds)
            host = RoomHost(room: room)
            logger.info("room loaded", metadata: [
                "room": "\(name)", "rev": "\(room.revision)", "seconds": "\(String(format: "%.3f", seconds))",
            ])
        case .success(nil):
            metrics.roomLoads[.created]?.increment()
            // A new room: its first snapshot (the seed) is stored before anything journalled after it.
            host = RoomHost(room: Room(name: name, seed: configuration.seed, policy: configuration.roomPolicy))
            store.save(host.room.snapshot(), room: name)
            logger.info("room created", metadata: ["room": "\(name)"])
        case .failure(let error):
            metrics.roomLoads[.failed]?.increment()
            rooms[name] = nil
            if let leases { leaseCalls.async { leases.release(room: name) } }
            logger.critical("room cannot be loaded", metadata: ["room": "\(name)", "error": "\(error)"])
            for (connection, peer, _) in load.waiting where connection.context === peer {
                peer.waiting = nil
                send(error: ProtocolError(.serverError, "room \(name) cannot be loaded; try again later"), to: connection)
                connection.close(code: 1011, reason: "room cannot be loaded")
            }
            return
        }
        rooms[name] = .loaded(host)
        metrics.rooms.record(rooms.count)
        for (connection, peer, hello) in load.waiting where connection.context === peer && !connection.isClosing {
            join(hello, on: connection, peer: peer, host: host)
        }
        if host.connections.isEmpty && host.catchingUp == 0 { host.idleSince = clock() }
    }

    /// Joins a hello whose room is loaded; a `since` older than memory first reads the missed
    /// revisions from the store (off the service thread).
    private func join(_ hello: ClientMessage.Hello, on connection: WebSocketConnection, peer: Peer, host: RoomHost) {
        guard let since = hello.since, host.room.needsEarlierRevisions(since: since) else {
            return finishJoin(hello, on: connection, peer: peer, host: host, earlier: [])
        }
        host.catchingUp += 1
        host.idleSince = nil
        let store = store
        let name = peer.room
        let through = host.room.oldestKeptBase
        let box = UncheckedSendable((connection, peer, host, hello))
        reads.async { [weak self] in
            let earlier = (try? store.revisions(room: name, after: since, through: through)) ?? []
            self?.server?.perform { [weak self] in
                guard let self else { return }
                let (connection, peer, host, hello) = box.value
                host.catchingUp -= 1
                guard connection.context === peer, !connection.isClosing else {
                    if host.connections.isEmpty && host.catchingUp == 0 { host.idleSince = self.clock() }
                    return
                }
                if self.host(name) === host {
                    self.finishJoin(hello, on: connection, peer: peer, host: host, earlier: earlier)
                } else {
                    self.open(hello, on: connection, peer: peer)  // the room was reloaded meanwhile
                }
            }
        }
    }

    private func finishJoin(_ hello: ClientMessage.Hello, on connection: WebSocketConnection, peer: Peer,
                            host: RoomHost, earlier: [Revision]) {
        let (session, actions) = host.room.join(
            session: makeSessionID(), user: hello.user, role: peer.role, client: hello.client,
            resume: hello.resume, since: hello.since, earlier: earlier)
        if let previous = host.connections[session], previous !== connection {
            // The session resumed on a new connection: the old one (likely half-open) is replaced.
            (previous.context as? Peer)?.session = nil
            previous.close(code: 1000, reason: "session resumed on another connection")
        }
        host.connections[session] = connection
        host.idleSince = nil
        peer.session = session
        peer.user = hello.user
        connection.setDeadline(seconds: 0)
        logger.debug("joined", metadata: [
            "room": "\(peer.room)", "session": "\(session)", "user": "\(hello.user)",
            "client": "\(hello.client ?? "")", "resumed": "\(hello.resume == session)",
        ])
        perform(actions, in: host)
        let waiting = peer.waiting ?? []
        peer.waiting = nil
        for (frame, binary) in waiting where !connection.isClosing {
            receive(frame, binary: binary, on: connection, peer: peer)
        }
    }

    private func receive(_ frame: [UInt8], binary: Bool, on connection: WebSocketConnection, peer: Peer) {
        guard let session = peer.session, let host = host(peer.room) else { return }
        if binary { return send(error: ProtocolError(.badMessage, "binary frames are not part of the protocol"), to: connection) }
        let json: JSON
        do { json = try JSON.parse(frame) } catch {
            return send(error: ProtocolError(.badJSON, error.description), to: connection)
        }
        let message: ClientMessage
        do { message = try ClientMessage(json: json) } catch {
            return send(error: error, seq: Self.seq(of: json), to: connection)
        }
        let actions: [RoomAction]
        switch message {
        case .submit, .undo, .redo:
            if case .undo = message { metrics.undoRequests.increment() }
            if case .redo = message { metrics.redoRequests.increment() }
            let start = DispatchTime.now().uptimeNanoseconds
            actions = host.room.receive(message, from: session, now: clock())
            metrics.applyDuration.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - start))
        default:
            actions = host.room.receive(message, from: session, now: clock())
        }
        perform(actions, in: host)
    }

    // MARK: Effects

    /// Carries out the room's actions in order: records go to the store; sends after a record that is
    /// not durable yet wait behind it. Every `snapshotEvery` revisions the room's snapshot follows.
    private func perform(_ actions: [RoomAction], in host: RoomHost) {
        let name = host.room.name
        for action in actions {
            switch action {
            case .persist(let entry):
                if let revision = entry.record.revision { metrics.revisions[revision.kind]?.increment() }
                let box = UncheckedSendable(host)
                // The completion comes back through the service thread, so it cannot run before the
                // barrier is in place below.
                let barrier = host.makeBarrierID()
                let handed = DispatchTime.now().uptimeNanoseconds
                let outcome = store.append([entry], room: name) { [weak self] error in
                    self?.server?.perform { [weak self] in
                        guard let self else { return }
                        metrics.durableWait.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - handed))
                        durable(barrier: barrier, host: box.value, error: error)
                    }
                }
                if outcome == .pending { host.hold(behind: barrier) }
            case .send(.presence, _):
                // Presence is a state, not an event: only the newest list matters (see flushPresence).
                schedulePresence(host)
            case .send(let message, let sessions):
                metrics.count(message)
                let encoded = OutboundMessage(text: message.json.bytes)
                if host.isHolding {
                    // Addressed to the connections of now: a session that resumes on a new connection
                    // meanwhile gets its welcome and catch-up there, not this frame ahead of them.
                    host.held.append(.send(encoded, to: sessions.compactMap { host.connections[$0] }))
                } else {
                    deliver(encoded, to: sessions, in: host)
                }
            }
        }
        if host.room.revision - host.snapshotRevision >= configuration.snapshotEvery { saveSnapshotIfChanged(host) }
    }

    /// Sends the room's presence list soon: once per service pass at most, and at most once per
    /// `presenceInterval(members:)`, whatever the number of joins, leaves and presence updates in
    /// between. Each list replaces one still waiting in a receiver's queue, so a room where hundreds
    /// come and go keeps every member's queue to one presence message, not one per change.
    private func schedulePresence(_ host: RoomHost) {
        guard !host.presenceScheduled else { return }
        host.presenceScheduled = true
        let box = UncheckedSendable(host)
        let interval = Self.presenceInterval(members: host.connections.count)
        let wait = host.lastPresence.map { min(interval, interval - (clock() - $0)) } ?? 0
        let flush: @Sendable () -> Void = { [weak self] in
            self?.server?.perform { [weak self] in self?.flushPresence(box.value) }
        }
        if wait > 0 {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(wait)), execute: flush)
        } else {
            _ = server?.perform { [weak self] in self?.flushPresence(box.value) }
        }
    }

    /// Milliseconds between a room's presence lists: 50, or 1 per member in rooms of more than 50
    /// (capped at 1 s). A list has one entry per member and goes to every member, so a fixed interval
    /// would cost O(members²) bytes a second; this keeps it O(members).
    static func presenceInterval(members: Int) -> Int64 { Int64(min(1000, max(50, members))) }

    private func flushPresence(_ host: RoomHost) {
        host.presenceScheduled = false
        guard !host.broken, self.host(host.room.name) === host else { return }
        host.lastPresence = clock()
        let message = ServerMessage.presence(host.room.presence)
        metrics.count(message)
        let encoded = OutboundMessage(text: message.json.bytes, replaceable: true)
        if host.isHolding {
            // A joiner's welcome may be waiting for its tag block to be durable: presence goes after it.
            host.held.append(.send(encoded, to: host.room.connectedSessions.compactMap { host.connections[$0] }))
        } else {
            deliver(encoded, to: host.room.connectedSessions, in: host)
        }
    }

    private func durable(barrier: Int, host: RoomHost, error: StoreError?) {
        guard !host.broken else { return }
        if let error {
            // Nothing after the failed record may be sent.
            metrics.storeFailures.increment()
            logger.critical("store failed; room dropped and its connections closed",
                            metadata: ["room": "\(host.room.name)", "error": "\(error)"])
            drop(host, code: 1011, reason: "store failed")
            return
        }
        for (encoded, connections) in host.release(barrier) {
            for connection in connections { connection.send(encoded) }
        }
    }

    private func deliver(_ encoded: OutboundMessage, to sessions: [SessionID], in host: RoomHost) {
        for session in sessions {
            host.connections[session]?.send(encoded)
        }
    }

    private func send(_ message: ServerMessage, to connection: WebSocketConnection) {
        metrics.count(message)
        connection.send(OutboundMessage(text: message.json.bytes))
    }

    private func send(error: ProtocolError, seq: Int? = nil, to connection: WebSocketConnection) {
        send(.error(.init(seq: seq, error)), to: connection)
        if error.code.isFatal { connection.close(code: 1008, reason: error.code.rawValue) }
    }

    // MARK: Parsing helpers

    /// Whether a page from `origin` may open a WebSocket here: no `Origin` (not a browser), the hub's
    /// own origin (its host and port as the browser addressed it), or one listed in `allowed`
    /// (`*`: any). A page of another site must not act for a user who happens to have the hub open.
    public static func originAllowed(_ origin: String?, host: String?, allowed: [String]) -> Bool {
        guard let origin, !origin.isEmpty else { return true }
        if allowed.contains("*") { return true }
        let normalized = origin.lowercased().hasSuffix("/") ? String(origin.lowercased().dropLast()) : origin.lowercased()
        if allowed.contains(where: { $0.lowercased() == normalized }) { return true }
        guard let host = host?.lowercased() else { return false }
        return normalized == "http://\(host)" || normalized == "https://\(host)"
    }

    /// The room of a WebSocket path `/v1/rooms/ROOM` (ROOM: 1–64 of `[A-Za-z0-9_.-]`), or nil.
    public static func roomName(inPath path: String) -> String? {
        let prefix = "/v1/rooms/"
        guard path.hasPrefix(prefix) else { return nil }
        let name = path.dropFirst(prefix.count)
        guard (1...64).contains(name.utf8.count), name.utf8.allSatisfy({ byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x5F || byte == 0x2E || byte == 0x2D
        }) else { return nil }
        return String(name)
    }

    private static func seq(of json: JSON) -> Int? {
        if case .int(let seq)? = json["seq"] { seq } else { nil }
    }
}

/// What the hub keeps on each connection.
final class Peer {
    let room: String
    var session: SessionID?
    /// Frames that arrived after the hello while its room (or catch-up) is read from the store; nil
    /// when not waiting.
    var waiting: [(frame: [UInt8], binary: Bool)]?
    var user: String?
    /// What the token said (open mode: everyone is an editor).
    var role: Role = .editor
    var bucket: TokenBucket
    var refusedInARow = 0
    var refusedSince: Int64?
    var lastRefused: Int64?

    init(room: String, bucket: TokenBucket) {
        self.room = room
        self.bucket = bucket
    }
}

/// Carries service-thread objects through another thread untouched, back to the service thread.
private struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
