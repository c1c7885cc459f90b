import Dispatch
import Logging
import PeopleCore
import WebSocketTransport

/// The driver of each connection's `ConnectionMachine`: it feeds the machine what happened and
/// carries out the outcome (send, close, check a token, open the room, hand a message to the room).
extension Hub {
    /// An upgrade: nil accepts it; a refusal is answered with an HTTP status and a sentence saying why
    /// (the client sees the handshake fail). On whichever service thread serves the upgrade: it reads the
    /// admission counts under their lock, and logs and counts (both safe from any thread); nothing else
    /// of the hub.
    public func refusal(of request: UpgradeRequest) -> UpgradeRefusal? {
        guard let refusal = shared.admission.withLock({ $0.refusal(of: request) }) else { return nil }
        switch refusal {
        case .draining, .notARoom:
            break
        case .origin:
            metrics.refusedOrigins.increment()
            logger.warning("refused a connection from a page of another origin (auth.allowedOrigins)",
                           metadata: ["origin": "\(request.origin ?? "")", "peer": "\(request.peer)"])
        case .host:
            metrics.refusedOrigins.increment()
            logger.warning("refused a connection from this machine addressed to another name (auth.mode open)",
                           metadata: ["host": "\(request.host ?? "")", "origin": "\(request.origin ?? "")", "peer": "\(request.peer)"])
        case .maxConnections:
            metrics.refusedConnections.increment()
            logger.warning("refused a connection: at limits.maxConnections", metadata: ["peer": "\(request.peer)"])
        case .maxConnectionsPerIP:
            metrics.refusedConnections.increment()
            logger.debug("refused a connection: at limits.maxConnectionsPerIP", metadata: ["peer": "\(request.peer)"])
        }
        return refusal.answer
    }

    /// An accepted connection opened: it has `limits.helloTimeoutSeconds` to say hello.
    public func didOpen(_ connection: any ClientConnection) {
        metrics.connections.record(shared.admission.withLock { admission in
            admission.opened(peer: connection.peer)
            return admission.openConnections
        })
        guard let room = RoomName(path: connection.path) else { return connection.close(code: 1008, reason: "") }
        let limits = configuration.limits
        connection.context = Client(ConnectionMachine(
            room: room, needsToken: configuration.auth != nil, opsPerSecond: limits.opsPerSecond, now: clock))
        connection.setDeadline(seconds: limits.helloTimeoutSeconds, code: 1008,
                               reason: "no hello within \(limits.helloTimeoutSeconds) s")
    }

    /// A whole frame arrived.
    public func didReceive(_ connection: any ClientConnection, message: [UInt8], binary: Bool) {
        guard !draining, !connection.isClosing, let client = connection.context as? Client else { return }
        let outcome = client.machine.receive(.init(bytes: message, binary: binary), now: clock)
        carryOut(outcome, on: connection, client: client)
    }

    /// A frame over `limits.maxMessageBytes` arrived and was dropped unread.
    public func didReceiveOversized(_ connection: any ClientConnection, bytes: Int) {
        guard !draining, !connection.isClosing, let client = connection.context as? Client else { return }
        let outcome = client.machine.receiveOversized(bytes: bytes, limit: connection.maxMessageBytes, now: clock)
        carryOut(outcome, on: connection, client: client)
    }

    /// The connection closed, for whatever reason: its session (if it still carries one) leaves the room.
    public func didClose(_ connection: any ClientConnection) {
        metrics.connections.record(shared.admission.withLock { admission in
            admission.closed(peer: connection.peer)
            return admission.openConnections
        })
        guard let client = connection.context as? Client else { return }
        connection.context = nil
        let room = client.machine.room.rawValue
        guard let session = client.machine.closed(), let host = host(room),
              host.connections[session] === connection else { return }
        host.connections[session] = nil
        if host.connections.isEmpty { host.idleSince = clock }
        perform(host.room.leave(session: session), in: host)
        logger.debug("left", metadata: ["room": "\(room)", "session": "\(session)"])
    }

    /// The connection's send queue overflowed (the transport closes it with 1008).
    public func didOverflow(_ connection: any ClientConnection) {
        metrics.sendQueueDrops.increment()
        logger.warning("closed a slow consumer (send queue full)", metadata: ["peer": "\(connection.peer)"])
    }

    func carryOut(_ outcome: ConnectionMachine.FrameOutcome, on connection: any ClientConnection, client: Client) {
        switch outcome {
        case .ignore, .wait:
            break
        case .refuse(let error, let close):
            if error.code == .unauthorized { metrics.refusedTokens.increment() }  // a hello without a token
            send(.error(error), to: connection)
            if close { connection.close(code: 1008, reason: error.code.rawValue) }
        case .expire(let error):
            metrics.expiredSessions.increment()
            logger.info("session ended: its token expired", metadata: [
                "room": "\(client.machine.room)", "session": "\(client.machine.session ?? "")", "peer": "\(connection.peer)",
            ])
            send(.error(error), to: connection)
            connection.close(code: 1008, reason: error.code.rawValue)
        case .close(let code, let reason):
            if reason == "rate limit" {
                logger.warning("closed a connection that stayed over its rate", metadata: ["peer": "\(connection.peer)"])
            }
            connection.close(code: code, reason: reason)
        case .authorize(let token, let hello):
            logHello(hello, on: connection, client: client)
            authorize(token, hello: hello, on: connection, client: client)
        case .open(let hello, _):
            logHello(hello, on: connection, client: client)
            openRoom(for: connection, client: client)
        case .deliver(let message, let session):
            deliver(message, from: session, room: client.machine.room.rawValue)
        case .deliverUnreadable(let seq, let error, let session):
            guard let host = host(client.machine.room.rawValue) else { return }
            perform(host.room.receiveUnreadable(seq: seq, error: error, from: session), in: host)
        }
    }

    private func logHello(_ hello: ClientMessage.Hello, on connection: any ClientConnection, client: Client) {
        logger.debug("hello", metadata: [
            "room": "\(client.machine.room)", "user": "\(hello.user)", "peer": "\(connection.peer)",
        ])
    }

    /// Checks a hello's token off the service thread (jwt-kit is async); frames that arrive meanwhile
    /// wait in the machine.
    private func authorize(_ token: String, hello: ClientMessage.Hello, on connection: any ClientConnection,
                           client: Client) {
        guard let auth = configuration.auth else { return }
        let room = client.machine.room.rawValue
        let box = UncheckedSendable((connection, client))
        Task { [weak self] in
            let result = await auth.check(token, user: hello.user, room: room)
            self?.back(box) { hub, box in hub.authorized(result, on: box.value.0, client: box.value.1) }
        }
    }

    /// A hello's token was checked: it opens the room with the token's role, or is refused
    /// (`unauthorized`, then close 1008).
    private func authorized(_ result: Result<TokenGrant, AuthFailure>, on connection: any ClientConnection, client: Client) {
        guard connection.context === client, !connection.isClosing else { return }
        switch client.machine.tokenChecked(result) {
        case .open:
            openRoom(for: connection, client: client)
        case .refuse(let error, let close):
            metrics.refusedTokens.increment()
            if case .failure(let failure) = result {
                logger.notice("token refused", metadata: ["room": "\(client.machine.room)", "why": "\(failure)"])
            }
            send(.error(error), to: connection)
            if close { connection.close(code: 1008, reason: error.code.rawValue) }
        case .unexpected:
            break
        }
    }

    /// Ends the sessions whose token has expired (`auth.mode: token`; the once-a-second sweep): each is
    /// told `unauthorized` and closed (1008). A connection still opening its room is told at its next
    /// frame or once it has joined.
    func endExpiredSessions() {
        guard configuration.auth != nil else { return }
        let now = clock
        var ending: [(any ClientConnection, Client, ConnectionMachine.FrameOutcome)] = []
        for case .loaded(let host) in rooms.values {
            for connection in host.connections.values where !connection.isClosing {
                guard let client = connection.context as? Client, let outcome = client.machine.expired(now: now) else { continue }
                ending.append((connection, client, outcome))
            }
        }
        for (connection, client, outcome) in ending { carryOut(outcome, on: connection, client: client) }
    }

    /// Hands a joined session's message to its room.
    private func deliver(_ message: ClientMessage, from session: SessionID, room: String) {
        guard let host = host(room) else { return }
        let actions: [RoomAction]
        switch message {
        case .submit, .undo, .redo:
            if case .undo = message { metrics.undoRequests.increment() }
            if case .redo = message { metrics.redoRequests.increment() }
            let start = DispatchTime.now().uptimeNanoseconds
            actions = host.room.receive(message, from: session, now: clock)
            metrics.applyDuration.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - start))
        case .log, .blame:
            if leasesUnsure, let connection = host.connections[session], let client = connection.context as? Client,
               client.machine.fetch() {
                // Not from the room's memory while this node may have lost the room (HTTP reads answer
                // 503 meanwhile): the question waits, the session's later frames behind it.
                host.readsAwaitingSure.append((connection, message, session: session))
                return
            }
            actions = host.room.receive(message, from: session, now: clock)
        default:
            actions = host.room.receive(message, from: session, now: clock)
        }
        perform(actions, in: host)
    }

    /// The `log` and `blame` questions that waited for this node to be sure of its leases are asked
    /// now, each before the frames its session sent after it (`RoomHost.readsAwaitingSure`).
    func askWhenSure(_ host: RoomHost) {
        let reads = host.readsAwaitingSure
        host.readsAwaitingSure = []
        for (connection, message, session) in reads {
            guard host.connections[session] === connection, let client = connection.context as? Client,
                  !connection.isClosing, let waiting = client.machine.fetched() else { continue }
            deliver(message, from: session, room: host.room.name)
            receiveWaiting(waiting, on: connection, client: client)
        }
    }

    /// The frames that waited in the machine (for the room, a read from the store, a sure node) are
    /// received now, in order, until the connection closes.
    func receiveWaiting(_ frames: [ConnectionMachine.Frame], on connection: any ClientConnection, client: Client) {
        for frame in frames where !connection.isClosing {
            carryOut(client.machine.receiveWaiting(frame), on: connection, client: client)
        }
    }
}
