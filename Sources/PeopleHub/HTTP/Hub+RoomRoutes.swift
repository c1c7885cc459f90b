import PeopleCore
import PeopleStore
import WebSocketTransport

/// The HTTP API's room routes (the product contract's HTTP API §2): the state now or at a revision,
/// writes as the caller (batches, undo, redo, restore), the timeline, blame and the change feed.
///
/// A write is a request to the room as the caller's agent session (`Room.request`): the same batch,
/// transform and undo stack as a WebSocket's, answered through `HTTPReplies` once durable.
extension Hub {
    func addRoomRoutes() {
        routes.add("GET", "/v1/rooms/:room") { [unowned self] call throws in
            try api(call) { [unowned self] caller throws in
                try inRoom(call, caller, need: .viewer) { [unowned self] host throws in try state(call, host) }
            }
        }
        routes.add("POST", "/v1/rooms/:room/batches") { [unowned self] call throws in
            try write(call) { body throws in try Self.batch(body) }
        }
        routes.add("POST", "/v1/rooms/:room/undo") { [unowned self] call throws in
            try write(call) { body throws in try Self.request("undo", body, fields: ["scope", "entry"]) }
        }
        routes.add("POST", "/v1/rooms/:room/redo") { [unowned self] call throws in
            try write(call) { body throws in try Self.request("redo", body, fields: ["scope", "entry"]) }
        }
        routes.add("POST", "/v1/rooms/:room/restore") { [unowned self] call throws in
            try write(call) { body throws in try Self.request("restore", body, fields: ["rev", "label"]) }
        }
        routes.add("GET", "/v1/rooms/:room/log") { [unowned self] call throws in
            let request = ClientMessage.LogRequest(
                before: try call.integer("before", in: 0...Int.max),
                limit: try call.integer("limit", in: ClientMessage.LogRequest.limits) ?? ClientMessage.LogRequest.defaultLimit,
                tag: try call.integer("tag", in: 1...Int.max))
            return try read(call, .log(request))
        }
        routes.add("GET", "/v1/rooms/:room/people/:tag/blame") { [unowned self] call throws in
            guard let tag = Int(call.parameters["tag"] ?? "") else { throw HTTPFailure.badMessage("the tag must be a whole number") }
            return try read(call, .blame(.init(tag: tag)))
        }
        routes.add("GET", "/v1/rooms/:room/revisions") { [unowned self] call throws in
            let after = try call.integer("after", in: 0...Int.max) ?? 0
            let limit = min(1000, max(1, try call.integer("limit") ?? 100))
            let wait = min(60, max(0, try call.integer("wait") ?? 0))
            let afterTime = try call.integer("afterTime").map(Int64.init)
            return try api(call) { [unowned self] caller throws in
                // A long poll waits no longer than its token lasts: it answers (empty) at `exp`, and
                // the reader's next request is refused (it could get a revision made after `exp`).
                let waitMilliseconds = min(Int64(wait) * 1000, caller.expires.map { max(0, $0 - clock) } ?? .max)
                return try inRoom(call, caller, need: .viewer) { [unowned self] host throws in
                    try feed(call, host, after: after, afterTime: afterTime, limit: limit, waitMilliseconds: waitMilliseconds)
                }
            }
        }
    }

    // MARK: State

    /// `{"rev","people"}` now, or right after `?at=REV` (older than memory: from the store's nearest
    /// checkpoint at or below it and the revisions after that, or every revision up to memory).
    private func state(_ call: HTTPCall, _ host: RoomHost) throws -> HTTPResponse? {
        let room = host.room
        guard let at = try call.integer("at") else {
            let now = HTTPResponse.json(.object(["rev": .int(room.revision), "people": .array(room.model.people.map(\.json))]))
            return answerDurable(call, now, showing: room.revision, in: host)
        }
        guard at >= 0, at <= room.revision else {
            throw HTTPFailure.badMessage("at must be a revision of the room: 0 to \(room.revision)")
        }
        let people: (PeopleModel) -> HTTPResponse = { .json(.object(["rev": .int(at), "people": .array($0.people.map(\.json))])) }
        if let model = room.people(at: at) { return answerDurable(call, people(model), showing: at, in: host) }
        readOlder(host, after: at, through: room.oldestKeptBase, modelAt: at, call: call) { hub, older throws in
            guard let model = host.room.people(at: at, older: older.revisions, checkpoint: older.checkpoint) else {
                throw HTTPFailure.unavailable("revision \(at) cannot be rebuilt from the store; try again")
            }
            return people(model)  // below memory: durable
        }
        return nil
    }

    /// Reads revisions `after + 1 ... through` from the store off the service thread (or, when the model
    /// at `modelAt` is what is wanted, a checkpoint and fewer revisions: `PeopleStore.olderHistory`),
    /// then answers `call` with `then` (a store that cannot give them all: 503). A room an admin deleted
    /// meanwhile is `404 no-room` once the store has deleted it, as a request that comes after the
    /// `DELETE` is, whether or not the store still had the revisions (it was `503 try again`, which
    /// invites a retry, until session 42); after a deletion the store failed, `then` says.
    func readOlder(_ host: RoomHost, after: Int, through: Int, modelAt: Int? = nil, call: HTTPCall,
                   then: @escaping (Hub, OlderHistory) throws -> HTTPResponse?) {
        let store = store
        let name = host.room.name
        let work = OlderRead(call: call, host: host, then: then)
        host.storeReads += 1
        runtime.background { [weak self] in
            let older = Result { try Self.olderHistory(store, room: name, after: after, through: through, modelAt: modelAt) }
            self?.back(work) { hub, work in
                let (call, then) = (work.call, work.then)
                work.host.storeReads -= 1
                work.host.life.whenDecided { deleted in
                    hub.answer(call) { () throws -> HTTPResponse? in
                        if deleted { throw HTTPFailure.noRoom(name) }
                        return try then(hub, older.get())
                    }
                }
            }
        }
    }

    /// Revisions `after + 1 ... through` of `room` from the store (`PeopleStore.olderHistory`), or 503
    /// when it cannot give them all. Blocks: off the service thread.
    static func olderHistory(_ store: any PeopleStore, room: String, after: Int, through: Int,
                             modelAt: Int? = nil) throws -> OlderHistory {
        guard let older = try? store.olderHistory(room: room, after: after, through: through, modelAt: modelAt) else {
            throw HTTPFailure.unavailable("revisions \(after + 1) to \(through) cannot be read; try again")
        }
        return older
    }

    // MARK: Writes

    /// A write as the caller: once the caller may write in the room, parse the body into the room's
    /// request, then hand it to the room. The body is not read before (a request without a token or
    /// over the caller's rate would cost the service thread its parse).
    private func write(_ call: HTTPCall, _ parse: @escaping (JSON) throws -> ClientMessage)
        throws -> HTTPResponse?
    {
        try api(call) { [unowned self] caller throws in
            try caller.check(.editor, room: roomName(call))
            let body = try Self.bodyObject(call)
            if call.request.body.isEmpty {
                throw HTTPFailure.badMessage("the request has no body: send a JSON object with at least key (1 to 128 characters)")
            }
            let key = try Self.key(body)
            let message = try parse(body)
            let user = try caller.writer(body: body)
            return try inRoom(call, caller, need: .editor) { [unowned self] host throws in
                request(message, as: user, key: key, in: host, call: call)
                return nil
            }
        }
    }

    /// Hands an HTTP write to the room; its answer (after the records before it are durable) goes to
    /// `call`. A restore below memory reads the revisions it needs first and asks again.
    private func request(_ message: ClientMessage, as user: String, key: String, in host: RoomHost, call: HTTPCall) {
        let session = Room.agentSession(of: user)
        replies(for: session, in: host).expect(call.exchange)
        host.historyReads[session, default: []].append(afterRead(session, in: host, call: call) { hub, host, read, older in
            hub.replies(for: session, in: host).expect(call.exchange)
            hub.perform(host.room.request(read.message, as: user, key: key, now: hub.clock, older: older.revisions,
                                          checkpoint: older.checkpoint), in: host)
        })
        let actions = host.room.request(message, as: user, key: key, now: clock)
        if !actions.contains(where: { if case .readHistory = $0 { true } else { false } }) {
            host.historyReads[session]?.removeLast()
            if host.historyReads[session]?.isEmpty == true { host.historyReads[session] = nil }
        }
        perform(actions, in: host)
    }

    /// What to do when the room asks the store for older revisions for an HTTP caller's request: the
    /// exchange leaves the stand-in's queue (the request is asked again), the revisions are read off
    /// the service thread, then `resume` runs with them on the same room (unloaded or dropped
    /// meanwhile: 503, try again).
    private func afterRead(_ session: SessionID, in host: RoomHost, call: HTTPCall,
                           resume: @escaping (Hub, RoomHost, HistoryRead, OlderHistory) -> Void) -> (HistoryRead) -> Void {
        { [weak self, weak host] read in
            guard let self, let host else { return }
            (host.connections[session] as? HTTPReplies)?.forget(call.exchange)
            let name = host.room.name
            readOlder(host, after: read.after, through: read.through, modelAt: read.modelAt, call: call) { [weak host] hub, older in
                guard let host, !host.broken, hub.host(name) === host else {
                    throw HTTPFailure.unavailable("room \(name) was reloaded meanwhile; try again")
                }
                resume(hub, host, read, older)
                return nil
            }
        }
    }

    /// The stand-in connection that turns a session's answers into HTTP responses.
    func replies(for session: SessionID, in host: RoomHost) -> HTTPReplies {
        if let replies = host.connections[session] as? HTTPReplies { return replies }
        let replies = HTTPReplies(path: RoomName.pathPrefix + host.room.name)
        replies.finished = { [weak self, weak host, weak replies] in
            guard let self, let host, let replies, host.connections[session] === replies else { return }
            host.connections[session] = nil
            if host.connections.isEmpty { host.idleSince = clock }
        }
        host.connections[session] = replies
        return replies
    }

    // MARK: Reads

    /// A `log` or `blame` for the caller, answered by the room to a one-off reader id.
    private func read(_ call: HTTPCall, _ message: ClientMessage) throws -> HTTPResponse? {
        try api(call) { [unowned self] caller throws in
            try inRoom(call, caller, need: .viewer) { [unowned self] host throws in
                nextReader += 1
                ask(message, as: caller.user, reader: "read:\(nextReader)", older: [], resume: nil, in: host, call: call)
                return nil
            }
        }
    }

    /// One step of a read: the room answers `reader`, or (a long `log` below memory) asks for older
    /// revisions, and the read goes on with them and the page so far.
    private func ask(_ message: ClientMessage, as user: String?, reader: SessionID, older: [Revision],
                     resume: LogResume?, in host: RoomHost, call: HTTPCall) {
        replies(for: reader, in: host).expect(call.exchange)
        host.historyReads[reader] = [afterRead(reader, in: host, call: call) { hub, host, next, more in
            hub.ask(next.message, as: user, reader: reader, older: more.revisions, resume: next.log, in: host, call: call)
        }]
        perform(host.room.read(message, as: user, reader: reader, older: older, resume: resume), in: host)
        if host.connections[reader] == nil { host.historyReads[reader] = nil }
    }

    // MARK: The change feed

    /// Revisions after `after`, oldest first, at most `limit` (fewer only at the head), durable only:
    /// from the store below memory, then from memory. None yet and `wait` > 0: the answer waits for the next durable revision or the
    /// end of the wait.
    ///
    /// With `afterTime` (the time of revision `after` as the reader got it; an addition to the product
    /// contract, as `hello.sinceTime` is), a revision `after` with another time, or none, is 409 `reset`:
    /// the room went back (a store restored from an older backup, a room deleted and created again) and
    /// the reader's revisions are not its own any more. The check reads that one revision from the store
    /// when memory no longer holds it.
    private func feed(_ call: HTTPCall, _ host: RoomHost, after: Int, afterTime: Int64? = nil, limit: Int,
                      waitMilliseconds: Int64) throws -> HTTPResponse? {
        let head = host.durableRevision
        guard after <= head else {
            // With afterTime the reader says it had revision `after`: the room went back, as for a
            // hello whose since is above the head.
            if afterTime != nil { throw Self.wentBack(after: after, why: "this room has no revision \(after) (its last is \(head))") }
            throw HTTPFailure.badMessage("after \(after) is beyond the room's last revision \(head)")
        }
        if let afterTime {
            if after == 0 {
                // Revision 0's time is when the room was made (a welcome at revision 0 says it).
                guard let created = host.room.created else {
                    throw Self.wentBack(after: after, why: "revision 0 (the room as it began) has no time here to match afterTime")
                }
                guard created == afterTime else { throw Self.wentBack(after: after) }
            } else if after > host.room.oldestKeptBase {
                guard host.room.revision(after)?.timestamp == afterTime else { throw Self.wentBack(after: after) }
            } else {
                // Revision `after` first, from the store, then the page as usual.
                readOlder(host, after: after - 1, through: after, call: call) { hub, older throws in
                    guard older.revisions.first.map({ $0.number == after && $0.timestamp == afterTime }) == true else {
                        throw Self.wentBack(after: after)
                    }
                    return try hub.feed(call, host, after: after, limit: limit, waitMilliseconds: waitMilliseconds)
                }
                return nil
            }
        }
        if after == head {
            guard waitMilliseconds > 0 else { return Self.feedPage([], head: head) }
            host.feedWaiters.append(FeedWaiter(call: call, after: after, limit: limit))
            let box = UncheckedSendable((call.exchange, host))
            runtime.after(waitMilliseconds) { [weak self] in
                self?.back(box) { hub, box in
                    let (exchange, host) = box.value
                    guard let index = host.feedWaiters.firstIndex(where: { $0.call.exchange === exchange }) else { return }
                    host.feedWaiters.remove(at: index)
                    // A wait that ran out while the node was paused: its head may be old (a review).
                    if hub.leasesUnsure { return exchange.respond(Self.unsureOf(room: host.room.name).response(json: true)) }
                    exchange.respond(Self.feedPage([], head: host.durableRevision))
                }
            }
            return nil
        }
        let through = min(head, after + limit)
        if after >= host.room.oldestKeptBase {
            let revisions = host.room.revisions(after: after, through: through)
            return Self.feedPage(revisions, head: head)
        }
        readOlder(host, after: after, through: min(through, host.room.oldestKeptBase), call: call) { hub, older throws in
            // The page goes on from memory, so that it is short only at the head.
            let last = older.revisions.last?.number ?? after
            let rest = last >= host.room.oldestKeptBase ? host.room.revisions(after: last, through: through) : []
            return Self.feedPage(older.revisions + rest, head: head)
        }
        return nil
    }

    /// 409 `reset`: the reader's revision `after` is not the room's (the room went back); `why` says
    /// what did not match.
    static func wentBack(after: Int, why: String? = nil) -> HTTPFailure {
        let what = why ?? "revision \(after) of this room has another time than afterTime"
        return HTTPFailure(status: 409, code: "reset",
                           message: "\(what): the room went back (restored from an older backup, or created again); read it again from after=0 without afterTime")
    }

    static func feedPage(_ revisions: [Revision], head: Int) -> HTTPResponse {
        .json(.object(["revisions": .array(revisions.map(\.feedJSON)), "head": .int(head)]))
    }

    /// A revision of `host` became durable: the feed's long polls waiting for it are answered.
    func revisionsDurable(_ host: RoomHost, through rev: Int) {
        guard rev > host.durableRevision else { return }
        let previous = host.durableRevision
        host.durableRevision = rev
        webhooks?.revisionsDurable(room: host.room.name, after: previous, through: rev) {
            host.room.revisions(after: previous, through: rev)
        }
        let ready = host.joinsAwaitingDurable.filter { $0.through <= rev }
        if !ready.isEmpty {
            host.joinsAwaitingDurable.removeAll { $0.through <= rev }
            joinAgain(ready.map(\.0), host: host)
        }
        guard !host.feedWaiters.isEmpty else { return }
        let waiters = host.feedWaiters
        host.feedWaiters.removeAll()
        for waiter in waiters where waiter.call.exchange.isOpen {
            let through = min(rev, waiter.after + waiter.limit)
            let revisions = host.room.revisions(after: waiter.after, through: through)
            waiter.call.exchange.respond(Self.feedPage(revisions, head: rev))
        }
    }

    // MARK: Bodies

    /// A batch body `{"base","ops","label"?,"coalesce"?}` as the room's `submit`. An insert's person may
    /// leave `tag` out: the room gives it one of the caller's tags.
    static func batch(_ body: JSON) throws -> ClientMessage {
        guard case .array(let ops)? = body["ops"] else { throw HTTPFailure.badMessage("ops (an array of diffs) is required") }
        var placeholder = Room.tagPlaceholders.lowerBound
        let filled = try ops.map { (op: JSON) throws -> JSON in
            guard case .string("insert")? = op["op"], case .object(let members) = op,
                  case .object(var person)? = op["person"] else { return op }
            if let tag = person.last(where: { $0.key == "tag" })?.value {
                guard case .int(let value) = tag, value > 0, !Room.tagPlaceholders.contains(value) else {
                    throw HTTPFailure(ProtocolError(.invalidOp, "an inserted person's tag is a whole number above 0 (or left out)"))
                }
                return op
            }
            placeholder += 1
            person.append(.init("tag", .int(placeholder)))
            return .object(members.map { $0.key == "person" ? .init("person", .object(person)) : $0 })
        }
        var submit = body
        if case .object(let members) = body {
            submit = .object(members.filter { $0.key != "ops" } + [.init("ops", .array(filled))])
        }
        return try request("submit", submit, fields: ["base", "label", "coalesce", "ops"])
    }

    /// An HTTP body as the room's request of `type`, through the WebSocket decoder (so the same fields
    /// are checked the same way: `entry` with `scope` is bad-message, a bad op invalid-op, …).
    static func request(_ type: String, _ body: JSON, fields: Set<String>) throws -> ClientMessage {
        var members: [JSON.Member] = [.init("type", .string(type)), .init("seq", .int(1))]
        if case .object(let given) = body { members += given.filter { fields.contains($0.key) } }
        // Re-encoded, a lone surrogate would read as null (a label silently dropped): refuse it as the
        // WebSocket does (`bad-message`, or `invalid-op` inside `ops`).
        for member in members where Self.holdsLoneSurrogate(member.value) {
            throw HTTPFailure(ProtocolError(member.key == "ops" ? .invalidOp : .badMessage, "`\(member.key)` holds a lone surrogate"))
        }
        switch ClientMessage.decode(JSON.object(members).bytes) {
        case .success(let message): return message
        case .failure(let error): throw HTTPFailure(error)
        }
    }
}

extension Hub {
    static func holdsLoneSurrogate(_ value: JSON) -> Bool {
        switch value {
        case .loneSurrogate: true
        case .array(let items): items.contains(where: holdsLoneSurrogate)
        case .object(let members): members.contains { holdsLoneSurrogate($0.value) }
        default: false
        }
    }
}

/// A request waiting for revisions read from the store, and what to do with them (a class: see
/// `Hub.Continuation`).
final class OlderRead: @unchecked Sendable {
    let call: HTTPCall
    /// The room the read is for: its `life` says whether it was deleted meanwhile, its `storeReads`
    /// count the read (touched on the service thread only).
    let host: RoomHost
    let then: (Hub, OlderHistory) throws -> HTTPResponse?
    init(call: HTTPCall, host: RoomHost, then: @escaping (Hub, OlderHistory) throws -> HTTPResponse?) {
        self.call = call
        self.host = host
        self.then = then
    }
}

/// A long poll of the change feed waiting for a revision after `after`.
struct FeedWaiter {
    let call: HTTPCall
    let after: Int
    let limit: Int
}
