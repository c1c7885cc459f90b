import PeopleCore
import PeopleStore
import WebSocketTransport

/// The HTTP API's common path (the product contract's HTTP API §1): who is calling, whether they may,
/// the per-caller rate, and the room — in memory, read from the store, or owned by another node. Every
/// step that waits (a token check, a room load, a store read) comes back to the service thread, and
/// every failure on the way is answered as `{"error":{"code","message"}}` with its status.
extension Hub {
    /// Runs `body` for an authenticated, rate-admitted caller; answers now or later.
    func api(_ call: HTTPCall, _ body: @escaping (HTTPCaller) throws -> HTTPResponse?)
        throws -> HTTPResponse?
    {
        if draining { throw HTTPFailure.shuttingDown }
        guard let auth = configuration.auth else {
            let caller = try openCaller(call)
            try admit(call, caller: caller)
            return try body(caller)
        }
        guard let token = call.bearerToken else {
            throw HTTPFailure.unauthorized("send Authorization: Bearer <token> (auth.mode is token)")
        }
        let work = Continuation(call: call, body: body)
        Task { [weak self] in
            let result = await auth.verify(token)
            self?.back(work) { hub, work in
                hub.answer(work.call) { () throws -> HTTPResponse? in
                    let claims: AccessClaims
                    switch result {
                    case .success(let c): claims = c
                    case .failure(let failure):
                        hub.metrics.refusedTokens.increment()
                        throw HTTPFailure.unauthorized(failure.description)
                    }
                    let caller = HTTPCaller(user: claims.sub.value, role: claims.accessRole,
                                            rooms: claims.rooms.map(RoomPattern.init),
                                            expires: TokenGrant.milliseconds(claims.exp.value))
                    try hub.admit(work.call, caller: caller)
                    return try work.body(caller)
                }
            }
        }
        return nil
    }

    /// A request and what to do once its caller is known, carried through the token check's task
    /// (a class: a closure inside a generic tuple crashed Swift 6.3's reabstraction thunks).
    private final class Continuation: @unchecked Sendable {
        let call: HTTPCall
        let body: (HTTPCaller) throws -> HTTPResponse?
        init(call: HTTPCall, body: @escaping (HTTPCaller) throws -> HTTPResponse?) {
            self.call = call
            self.body = body
        }
    }

    /// Open mode: the `user` query argument (writes may name it in the body instead), an editor; an
    /// admin only from a loopback peer, and not from a page of another origin.
    ///
    /// Anyone may act as anyone here, so what a browser may do is checked as for a WebSocket: a page
    /// of another site is refused (`Origin`, `auth.allowedOrigins`), and so is a request from this
    /// machine that addresses the hub by another name than a loopback one (DNS rebinding).
    private func openCaller(_ call: HTTPCall) throws -> HTTPCaller {
        let headers = call.request.headers
        guard Admission.originAllowed(headers["origin"], host: headers["host"], allowed: configuration.allowedOrigins) else {
            throw HTTPFailure.forbidden("pages of this origin may not call this hub (auth.allowedOrigins)")
        }
        try refuseRebound(call)
        var user: String?
        if let name = call.request.query("user") {
            guard (try? UserName(name)) != nil else { throw HTTPFailure.badMessage("user must be 1 to 64 bytes of UTF-8") }
            user = name
        }
        // A page of another origin, even a listed one, is never an admin: it may do what a room's
        // WebSocket lets it do, not delete, create, list or export rooms for whoever opened it here.
        let loopback = Admission.isLoopback(call.request.peer)
        let page = Admission.isCrossOrigin(headers["origin"], host: headers["host"])
        return HTTPCaller(user: user, role: loopback && !page ? .admin : .editor, rooms: nil,
                          notAdmin: page ? "this needs an admin: in auth.mode open, a web page of another origin is never one"
                              : "this needs an admin: in auth.mode open, only a caller on the hub's machine (loopback) is one")
    }

    /// Open mode: a request from this machine that addresses the hub by another name than a loopback
    /// one (a page whose name was pointed at 127.0.0.1) is 403 (`Admission.hostAllowed`).
    func refuseRebound(_ call: HTTPCall) throws {
        guard configuration.auth == nil else { return }
        guard Admission.hostAllowed(call.request.headers["host"], peer: call.request.peer, allowed: configuration.allowedOrigins) else {
            throw HTTPFailure.forbidden(Admission.hostRefusal)
        }
    }

    /// `limits.opsPerSecond` per caller (user, or peer when anonymous) with a burst of twice that:
    /// over it is 429 `rate-limited` with `Retry-After`.
    private func admit(_ call: HTTPCall, caller: HTTPCaller) throws {
        let who = (caller.user ?? "") + "@" + call.request.peer
        let now = clock
        let limits = configuration.limits
        // Shared by the hubs of every service thread: a caller's rate is the hub's, whichever rooms it asks for.
        let admitted = shared.httpRates.withLock { $0.take(who, rate: limits.opsPerSecond, now: now) }
        guard admitted else {
            var failure = HTTPFailure(ProtocolError(.rateLimited,
                "over \(configuration.limits.opsPerSecond) requests a second (limits.opsPerSecond)"))
            failure.headers = [.init("Retry-After", "1")]
            throw failure
        }
    }

    /// Answers `call` with what `work` returns or throws (nil: it answers later itself).
    func answer(_ call: HTTPCall, _ work: () throws -> HTTPResponse?) {
        do {
            if let response = try work() { call.exchange.respond(response) }
        } catch {
            call.exchange.respond(HTTPFailure.from(error).response(json: true))
        }
    }

    /// The room named by the path, checked for `need`, then `body` with it loaded: absent is 404
    /// `no-room`, another node's is 307 to it, a store that cannot load it 503.
    func inRoom(_ call: HTTPCall, _ caller: HTTPCaller, need: AccessRole,
                _ body: @escaping (RoomHost) throws -> HTTPResponse?) throws -> HTTPResponse? {
        let name = try roomName(call)
        try caller.check(need, room: name)
        withRoom(name) { [unowned self] outcome in
            answer(call) { () throws -> HTTPResponse? in
                switch outcome {
                case .loaded(let host), .created(let host):
                    if host.broken && self.host(name) !== host {
                        // A request ahead of this one deleted the room (or the store failed): ask again,
                        // after that (a deleted room is then absent).
                        return try inRoom(call, caller, need: need, body)
                    }
                    guard !host.broken else { throw HTTPFailure.unavailable("room \(name) is being reloaded; try again") }
                    // A node woken from a pause may have lost the room to another node without knowing
                    // yet: it answers nothing from the room's memory until it is sure (`leasesCertain`).
                    if leasesUnsure { throw Self.unsureOf(room: name) }
                    if host.connections.isEmpty { host.idleSince = clock }
                    return try body(host)
                case .absent:
                    throw HTTPFailure.noRoom(name)
                case .elsewhere, .failed, .full:
                    throw notServedHere(outcome, call, room: name)
                }
            }
        }
        return nil
    }

    /// The answer when the room cannot be served by this node now: another node owns it (307 to it),
    /// the store cannot load it (503), or it would go over `limits.maxRooms` or `limits.maxMemoryMB`
    /// (503 `room-full`).
    func notServedHere(_ outcome: RoomOutcome, _ call: HTTPCall, room: String) -> HTTPFailure {
        switch outcome {
        case .elsewhere(let url):
            let failure = Self.redirect(call, roomURL: url, room: room)
            logger.debug("redirect", metadata: ["room": "\(room)", "location": "\(failure.headers.first?.value ?? "")"])
            return failure
        case .failed(let problem):
            return .unavailable("room \(room) cannot be loaded: \(problem)")
        case .full(let shortage):
            return HTTPFailure(roomFullError(shortage))
        case .loaded, .created, .absent:
            preconditionFailure("notServedHere: the room is here (or absent); the caller answers that itself")
        }
    }

    func roomName(_ call: HTTPCall) throws -> String {
        let text = call.parameters["room"] ?? ""
        do {
            return try RoomName(text).rawValue
        } catch {
            throw HTTPFailure.badMessage("\(error)")
        }
    }

    /// 307 to the node that owns the room: its URL (`ws://` → `http://`) with this request's path and query.
    static func redirect(_ call: HTTPCall, roomURL: String, room: String) -> HTTPFailure {
        var base = String(roomURL.dropLast(RoomName.pathPrefix.count + room.utf8.count))
        if base.hasPrefix("ws://") { base = "http://" + base.dropFirst(5) }
        if base.hasPrefix("wss://") { base = "https://" + base.dropFirst(6) }
        let query = call.request.query.map { $0.value.isEmpty ? $0.name : "\($0.name)=\(percentEncoded($0.value))" }
        let location = base + call.request.path + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        var failure = HTTPFailure(status: 307, code: "elsewhere", message: "room \(room) is served by \(base)")
        failure.headers = [.init("Location", location)]
        return failure
    }

    private static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if byte < 0x80, c.isLetter || c.isNumber || "-._~".contains(c) {
                out.append(c)
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    /// The request body as a JSON object (an empty body is an empty object).
    static func bodyObject(_ call: HTTPCall) throws -> JSON { try bodyObject(call.request.body) }

    static func bodyObject(_ body: [UInt8]) throws -> JSON {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .object([]) }
        let json: JSON
        do {
            json = try JSON.parse(body)
        } catch {
            throw HTTPFailure.badJSON("the body is not JSON: \(error)")
        }
        guard case .object = json else { throw HTTPFailure.badMessage("the body must be a JSON object") }
        return json
    }

    /// The idempotency `key` a write must carry: 1 to 128 characters, counted as Unicode code points (as
    /// JSON Schema's `maxLength` does), so at most 512 bytes: counted as Swift `Character`s, one letter
    /// with thousands of combining marks was one, and 128 of them a megabyte kept for a day.
    static func key(_ body: JSON) throws -> String {
        guard case .string(let key)? = body["key"], (1...128).contains(key.unicodeScalars.count) else {
            throw HTTPFailure.badMessage("key (1 to 128 characters) is required: a retry with the same key gets the first answer")
        }
        return key
    }
}
