import PeopleCore
import PeopleStore
import WebSocketTransport

/// The HTTP API's admin routes (the product contract's HTTP API §2): list rooms, create or import
/// one, delete one, export one (JSON with or without its history, or CSV), and the webhooks' state.
extension Hub {
    func addAdminRoutes() {
        routes.add("GET", "/v1/rooms") { [unowned self] call throws in
            let after = call.request.query("after")
            let prefix = call.request.query("prefix")
            let limit = min(1000, max(1, try call.integer("limit") ?? 100))
            return try api(call) { [unowned self] caller throws in
                guard caller.role.allows(.admin) else { throw HTTPFailure.forbidden("listing rooms needs an admin") }
                listRooms(call, caller, after: after, prefix: prefix, limit: limit)
                return nil
            }
        }
        routes.add("PUT", "/v1/rooms/:room") { [unowned self] call throws in
            let room = try roomName(call)
            return try api(call) { [unowned self] caller throws in
                try caller.check(.admin, room: room)
                readImport(call, room: room)
                return nil
            }
        }
        routes.add("DELETE", "/v1/rooms/:room") { [unowned self] call throws in
            try api(call) { [unowned self] caller throws in
                let room = try roomName(call)
                if rooms[room] == nil {
                    // Not in memory: deleted in the store, not loaded first (a long history took a
                    // second to load), also at `limits.maxRooms`; in cluster mode under its lease.
                    try caller.check(.admin, room: room)
                    deleteFromStore(room, call: call, ifStored: true)
                    return nil
                }
                return try inRoom(call, caller, need: .admin) { [unowned self] host throws in
                    delete(host, call: call)
                    return nil
                }
            }
        }
        routes.add("GET", "/v1/rooms/:room/export") { [unowned self] call throws in
            let csv = call.request.headers["accept"]?.lowercased().contains("text/csv") ?? false
            let history = try call.boolean("history") ?? false
            return try api(call) { [unowned self] caller throws in
                try inRoom(call, caller, need: .admin) { [unowned self] host throws in
                    if csv { return answerDurable(call, RoomExport.csv(host.room.model), showing: host.room.revision, in: host) }
                    return try export(host, history: history, call: call)
                }
            }
        }
        routes.add("GET", "/v1/webhooks") { [unowned self] call throws in
            try api(call) { [unowned self] caller throws in
                guard caller.role.allows(.admin) else { throw HTTPFailure.forbidden("the webhooks' state needs an admin") }
                guard caller.seesEveryRoom else { throw Self.webhooksNeedEveryRoom }
                return .json(webhooks?.status() ?? .object(["webhooks": .array([])]))
            }
        }
        routes.add("POST", "/v1/webhooks/enable") { [unowned self] call throws in
            // The body is read only for a caller who may re-enable (parsing costs the service thread).
            try api(call) { [unowned self] caller throws in
                guard caller.role.allows(.admin) else { throw HTTPFailure.forbidden("re-enabling a webhook needs an admin") }
                guard caller.seesEveryRoom else { throw Self.webhooksNeedEveryRoom }
                // By its URL, or by the name the metrics and the log call it (an alert names only that).
                let body = try Self.bodyObject(call)
                let endpoint: WebhookEndpointReference
                switch (body["url"], body["name"]) {
                case (.string(let url)?, nil): endpoint = .url(url)
                case (nil, .string(let name)?): endpoint = .name(name)
                default: throw HTTPFailure.badMessage("give url (the endpoint's URL) or name (its name in the metrics and the log), one of them")
                }
                guard webhooks?.reenable(endpoint) == true else { throw HTTPFailure.notFound("no webhook endpoint has \(endpoint)") }
                return .json(webhooks?.status() ?? .object(["webhooks": .array([])]))
            }
        }
    }

    /// An endpoint's state (its backlog, its last error) covers every room it serves, and re-enabling
    /// it resumes them all: an admin whose token names some rooms only gets neither.
    static let webhooksNeedEveryRoom = HTTPFailure.forbidden(
        "the webhooks' state covers every room: it needs an admin token for rooms [\"*\"]")

    // MARK: List

    /// A page of the store's rooms (in name order) that the caller may see, with what memory knows
    /// better for loaded ones; `next` only when more of them follow. Off the service thread, the store
    /// is read a page at a time past the rooms the caller's patterns leave out (a single pattern narrows
    /// the read to its literal prefix).
    private func listRooms(_ call: HTTPCall, _ caller: HTTPCaller, after: String?, prefix: String?, limit: Int) {
        let store = store
        let box = UncheckedSendable(call)
        runtime.background { [weak self] in
            let page = Result { () throws(StoreError) -> (rooms: [StoredRoomSummary], more: Bool) in
                try Self.visibleRooms(in: store, to: caller, after: after, prefix: prefix, limit: limit)
            }
            self?.back(box) { hub, box in
                guard case .success(let (shown, more)) = page else {
                    return box.value.exchange.respond(
                        HTTPFailure.unavailable("the store cannot list rooms; try again").response(json: true))
                }
                // Loaded rooms: what their owners (on their own threads) know better than the store.
                hub.ask(owners: shown.map(\.name), { owner, name in owner.loadedSummary(name) }) { hub, loaded in
                    hub.answer(box.value) { () throws -> HTTPResponse? in
                        let entries = shown.map { stored -> JSON in
                            let live = loaded[stored.name]
                            return .object([
                                "name": .string(stored.name), "rev": .int(live?.rev ?? stored.rev),
                                "people": .int(live?.people ?? stored.people), "connected": .int(live?.connected ?? 0),
                                "updated": .int(Int(live?.updated ?? stored.updated))])
                        }
                        var members: [JSON.Member] = [.init("rooms", .array(entries))]
                        if more, let last = shown.last { members.append(.init("next", .string(last.name))) }
                        return .json(.object(members))
                    }
                }
            }
        }
    }

    /// Up to `limit` rooms after `after` (with `prefix`) that `caller` sees, and whether another
    /// follows. Blocks on the store.
    static func visibleRooms(in store: any PeopleStore, to caller: HTTPCaller, after: String?, prefix: String?,
                             limit: Int) throws(StoreError) -> (rooms: [StoredRoomSummary], more: Bool) {
        var prefix = prefix ?? ""
        if let patterns = caller.rooms, patterns.count == 1 {
            // Every room the one pattern matches starts with its literal prefix.
            let literal = patterns[0].literalPrefix
            if literal.hasPrefix(prefix) { prefix = literal } else if !prefix.hasPrefix(literal) { return ([], false) }
        }
        let pageSize = max(limit + 1, 200)
        var shown: [StoredRoomSummary] = []
        var cursor = after
        while true {
            let page = try store.listRooms(after: cursor, prefix: prefix.isEmpty ? nil : prefix, limit: pageSize)
            for room in page where caller.sees(room.name) {
                if shown.count == limit { return (shown, true) }
                shown.append(room)
            }
            guard page.count == pageSize, let last = page.last else { return (shown, false) }
            cursor = last.name
        }
    }

    /// What a loaded room says of itself for the list (owner's thread); nil when not loaded here.
    struct LoadedSummary {
        var rev: Int
        var people: Int
        var updated: Int64?
        var connected: Int
    }

    func loadedSummary(_ name: String) -> LoadedSummary? {
        guard let host = host(name) else { return nil }
        return LoadedSummary(rev: host.room.revision, people: host.room.model.people.count,
                             updated: host.room.revision(host.room.revision)?.timestamp,
                             connected: host.connections.values.filter { !($0 is HTTPReplies) }.count)
    }

    // MARK: Create and import

    /// Reads a `PUT` body off the service thread (an export of a long history is megabytes of JSON and
    /// a replay of every revision), after the caller was let in, then creates the room. Meanwhile the
    /// name is taken: the room is looked up in the store at once, and a hello that comes during the
    /// check waits for the import instead of creating the room from the seed (`RoomLoad.importing`).
    private func readImport(_ call: HTTPCall, room: String) {
        let busy = HTTPFailure(status: 409, code: "room-exists",
                               message: "room \(room) is being created by another request; try again if that one fails")
        switch rooms[room] {
        case .loaded?:
            return call.exchange.respond(Self.roomExists(room).response(json: true))
        case .loading(let load)?:
            guard load.creator == nil, !load.importing else { return call.exchange.respond(busy.response(json: true)) }
            load.importing = true
            load.importAt = load.waiters.count
        case nil:
            if roomShortage == nil {  // else `create` answers that the hub is full
                let load = RoomLoad()
                load.importing = true
                rooms[room] = .loading(load)
                startLoading(room)
            }
        }
        let (policy, now, every, body) = (configuration.roomPolicy, clock, configuration.snapshotEvery, call.request.body)
        let work = UncheckedSendable(call)
        runtime.background { [weak self] in
            let result = Result { try RoomImport(room: room, body: try Self.bodyObject(body), policy: policy,
                                                 now: now, snapshotEvery: every) }
            self?.back(result) { hub, result in hub.importChecked(room, result, call: work.value) }
        }
    }

    /// The import's body was checked: create the room from it (or answer why not), then let a load that
    /// waited for the check go on (creating the room from the import, or from the seed for waiting
    /// hellos when the body was refused).
    private func importChecked(_ room: String, _ result: Result<RoomImport, any Error>, call: HTTPCall) {
        var waited: RoomLoad?
        if case .loading(let load)? = rooms[room], load.importing {
            load.importing = false
            waited = load
        }
        switch result {
        case .success(let imported): create(imported, call: call)
        case .failure(let error): answer(call) { throw error }
        }
        if let waited, waited.parked, case .loading(let load)? = rooms[room], load === waited {
            waited.parked = false
            loaded(room, .success(nil), seconds: 0)
        }
    }

    static func roomExists(_ room: String) -> HTTPFailure {
        HTTPFailure(status: 409, code: "room-exists", message: "room \(room) exists; DELETE it first")
    }

    /// Creates the room with the import's people (and its history): 409 `room-exists` if the store has
    /// it; 201 once everything is durable. The room built off the service thread is the new room
    /// (`loaded` makes it, its first snapshot, history and checkpoints all or nothing, before hellos
    /// that waited join it).
    private func create(_ imported: RoomImport, call: HTTPCall) {
        let name = imported.room
        let exists = Self.roomExists(name)
        let done: (RoomOutcome) -> Void = { [unowned self] outcome in
            answer(call) { () throws -> HTTPResponse? in
                switch outcome {
                case .created(let host):
                    guard !host.broken, self.host(name) === host else {
                        throw HTTPFailure.unavailable("room \(name) was deleted while it was created; try again")
                    }
                    let answer = HTTPResponse.json(.object(["room": .string(name), "rev": .int(imported.built.revision)]), status: 201)
                    afterDurable(of: name, call: call, answer, release: true)
                    return nil
                case .loaded(let host) where host.broken && self.host(name) !== host:
                    // A `DELETE` that came before this `PUT` took the room away: make it once that is done.
                    create(imported, call: call)
                    return nil
                case .loaded: throw exists
                case .absent: throw HTTPFailure.unavailable("room \(name) could not be created; try again")
                case .elsewhere, .failed, .full: throw notServedHere(outcome, call, room: name)
                }
            }
        }
        switch rooms[name] {
        case .loaded?:
            call.exchange.respond(exists.response(json: true))
        case .loading(let load)?:
            guard load.creator == nil else { return call.exchange.respond(exists.response(json: true)) }
            load.creator = imported
            // After what came before the `PUT`, before what came during its check (a `DELETE` then
            // deletes the imported room, not a room still being made).
            load.add(done, at: load.importAt)
        case nil:
            if let shortage = roomShortage { return done(.full(shortage)) }
            let load = RoomLoad()
            load.creator = imported
            load.add(done)
            rooms[name] = .loading(load)
            startLoading(name)
        }
    }

    /// Answers `call` with `response` once everything handed to the store for `room` so far is durable
    /// (503 if that failed).
    /// `release`: malloc hands its freed pages back soon after (what an import held is gone by then).
    func afterDurable(of room: String, call: HTTPCall, _ response: HTTPResponse, release: Bool = false) {
        let box = UncheckedSendable((call.exchange, response))
        let answer: @Sendable (StoreError?) -> Void = { [weak self] error in
            self?.back(box) { hub, box in
                let (exchange, response) = box.value
                exchange.respond(error == nil ? response
                    : HTTPFailure.unavailable("the store failed: \(error!)").response(json: true))
                if release { hub.releaseMemorySoon() }
            }
        }
        if store.append([], room: room, whenDurable: answer) == .durable { answer(nil) }
    }

    // MARK: Delete

    /// Closes the room's connections (1000), forgets it, and deletes it and its history from the store;
    /// 204 after. Hellos and requests meanwhile wait, then find no room.
    ///
    /// Callers whose answers wait behind commits handed to the store before the deletion get them once
    /// those are durable, as ever (the store writes them before the deletion, in order: they are
    /// revisions of the room, told to the webhooks, before `room.deleted`): an HTTP batch its `200`, a
    /// WebSocket's submit its `ack` (its connection reads nothing more and is closed once nothing is
    /// held for it); `404 no-room` only for what the store failed to write (each commit's own outcome),
    /// and for requests the room had not answered. A backend's pass found a batch answered 404 whose
    /// revision its webhook endpoint then received (session 41), and a submit unacknowledged in the
    /// same state (session 42).
    private func delete(_ host: RoomHost, call: HTTPCall) {
        let name = host.room.name
        host.broken = true
        var deletion = RoomLife.Deletion()
        for connection in host.connections.values {
            // (closing a stand-in answers its callers 503 "try again": they are answered as the
            // commits they wait for settle, `settleDeleted`)
            if let replies = connection as? HTTPReplies { deletion.callers.append(replies); continue }
            (connection.context as? Client)?.machine.roomDeleted()
            deletion.sockets.append(connection)
        }
        host.deletion = deletion
        settleDeleted(barrier: nil, host: host, failed: false)
        for waiter in host.feedWaiters { waiter.call.exchange.respond(HTTPFailure.noRoom(name).response(json: true)) }
        host.feedWaiters.removeAll()
        // Hellos waiting for the room's commit (`joinsAwaitingDurable`: its import's) or for the node
        // to be sure of its leases wait for the deletion instead, then find what is there after, as
        // hellos that come now do.
        let waiting = host.takeWaitingJoins()
        deleteFromStore(name, call: call, ifStored: false, deleting: host)
        for connection in waiting {
            guard let client = connection.context as? Client, !connection.isClosing else { continue }
            openRoom(for: connection, client: client)
        }
    }

    /// A commit of a deleted room settled: what was held behind it goes, in order, each from its own
    /// commit's outcome: written, the HTTP answers and the WebSocket messages (a submit's `ack`, the
    /// revision's broadcast) as ever; not written, a WebSocket message is dropped and a request's
    /// answer is `404 no-room` (the room's answer to a request it did not get to) once the deletion is
    /// committed, `503` if the store could not delete the room either. Once nothing is held and the
    /// deletion's outcome is known, the rest are answered (`concludeDeletion`).
    func settleDeleted(barrier: Int?, host: RoomHost, failed: Bool) {
        let ready = barrier.map { host.settle($0, failed: failed) } ?? []
        for (item, durable) in ready {
            switch item {
            case .send(let message, let connections):
                for connection in connections {
                    if let replies = connection as? HTTPReplies {
                        if durable { replies.send(message) } else { whenDeleted(host) { replies.answer($0.response(json: true)) } }
                    } else if durable {
                        connection.send(message)
                    }
                }
            case .answer(let exchange, let response):
                if durable { exchange.respond(response) } else { whenDeleted(host) { exchange.respond($0.response(json: true)) } }
            case .barrier: break
            }
        }
        concludeDeletion(host)
    }

    /// Answers what the deletion of `host`'s room leaves unanswered, once the store has said:
    /// `404 no-room` if it deleted the room, `503` (try again) if it could not.
    private func whenDeleted(_ host: RoomHost, _ answer: @escaping (HTTPFailure) -> Void) {
        let name = host.room.name
        host.life.whenDecided { deleted in
            answer(Self.leftByDeletion(of: name, deleted: deleted))
        }
    }

    /// The answer to what a deletion left unanswered: `404 no-room` if the store deleted the room,
    /// `503` (try again) if it could not.
    private static func leftByDeletion(of room: String, deleted: Bool) -> HTTPFailure {
        deleted ? .noRoom(room) : .unavailable("room \(room) could not be deleted; try again")
    }

    /// The end of a deletion, once nothing is held for its callers and the store has said: the
    /// callers still waiting are answered (`404 no-room`, or `503` if the store failed), and the
    /// room's WebSockets closed: 1000 `room deleted`, or 1011 `store failed` (the room is still
    /// there: they come back to it, as after any store failure).
    private func concludeDeletion(_ host: RoomHost) {
        guard !host.isHolding, let deletion = host.deletion, deletion.outcome != .pending else { return }
        host.deletion?.callers = []
        host.deletion?.sockets = []
        let deleted = deletion.outcome == .deleted
        for replies in deletion.callers {
            replies.fail(Self.leftByDeletion(of: host.room.name, deleted: deleted))
        }
        for connection in deletion.sockets {
            if deleted { connection.close(code: 1000, reason: CloseReason.roomDeleted) }
            else { connection.close(code: 1011, reason: "store failed") }
        }
    }

    /// Deletes the room from the store (off the service thread) while a placeholder load holds its name:
    /// hellos and requests meanwhile wait, then load what is there after. `ifStored`: the room is not in
    /// memory, so the store is asked first whether it has it (404 if not, and no `room.deleted`); in
    /// cluster mode this node takes its lease first, so no node loads it meanwhile, and a room another
    /// node holds is sent there (307), as any request for it is. `deleting`: the room's host (it was
    /// in memory), told the outcome (`concludeDeletion`).
    private func deleteFromStore(_ name: String, call: HTTPCall, ifStored: Bool, deleting host: RoomHost? = nil) {
        let placeholder = RoomLoad()
        rooms[name] = .loading(placeholder)
        let store = store
        let box = UncheckedSendable((call, placeholder, host))
        // `room.deleted` is kept with the deletion, in the same commit, so no crash can lose it.
        let time = clock
        let notices = webhooks?.notices(roomDeleted: name, time: time) ?? []
        let deletion: @Sendable () -> Void = { [weak self] in
            let result = Result { () throws(StoreError) -> Bool in
                if ifStored, try !store.hasRoom(name) { return false }
                _ = try store.deleteRoom(name, notices: notices)
                return true
            }
            self?.back(box) { hub, box in
                let (call, placeholder, host) = box.value
                if let host {
                    if case .success(true) = result { host.life.decide(deleted: true) } else { host.life.decide(deleted: false) }
                    hub.concludeDeletion(host)
                }
                let response: HTTPResponse
                switch result {
                case .success(false):
                    response = HTTPFailure.noRoom(name).response(json: true)
                case .success(true):
                    hub.logger.info("room deleted", metadata: ["room": "\(name)"])
                    hub.webhooks?.roomDeleted(room: name, time: time)
                    response = HTTPResponse(status: 204, body: [])
                case .failure(let error):
                    response = HTTPFailure.unavailable("the store could not delete room \(name): \(error)")
                        .response(json: true)
                }
                // In cluster mode the lease goes back before the answer, so what the caller does next,
                // on any node, finds the room free (a GET at another node right after a 204 was sent
                // here); and before what waited for the deletion loads the room again, which takes the
                // lease anew (ended first, the load's take came before the release, which gave up
                // the lease the room was then served under: a review, session 40).
                hub.releasingLease(of: name, then: call.exchange) { hub, exchange in
                    hub.deletionEnded(name, placeholder)
                    exchange.respond(response)
                }
            }
        }
        guard ifStored, let leases else { return runtime.background(deletion) }
        let background = runtime.background
        leaseCalls.async { [weak self] in
            let failure: HTTPFailure
            do {
                guard let owner = try Self.takeLease(leases, room: name) else { return background(deletion) }
                failure = Self.redirect(box.value.0, roomURL: owner + RoomName.pathPrefix + name, room: name)
            } catch {
                failure = .unavailable("room \(name) cannot be deleted here: \(error)")
            }
            self?.back(box) { hub, box in
                let (call, placeholder, _) = box.value
                hub.deletionEnded(name, placeholder)
                call.exchange.respond(failure.response(json: true))
            }
        }
    }

    /// A deletion's placeholder gives the name back: hellos and requests that waited load the room
    /// anew; so does an import whose body is being checked (the name stays taken for it: a hello
    /// meanwhile waits).
    private func deletionEnded(_ name: String, _ placeholder: RoomLoad) {
        guard case .loading(let load)? = rooms[name], load === placeholder else { return }
        rooms[name] = nil
        if !load.waiters.isEmpty || load.importing {
            rooms[name] = .loading(load)
            startLoading(name)
        }
    }

    // MARK: Export

    /// `{"room","rev","people"}`; with the history also `initial` (the people at revision 0) and every
    /// revision as the change feed gives it, older ones read from the store. A history is read and
    /// encoded off the service thread, from a copy of the room as it is now (a long one is megabytes),
    /// a page of older revisions at a time (`Room.exportBytes`), revision 0 from the checkpoint the
    /// room was made with; then malloc gives its freed pages back (`releaseMemorySoon`: a big export
    /// left the hub gigabytes larger for good).
    private func export(_ host: RoomHost, history: Bool, call: HTTPCall) throws -> HTTPResponse? {
        let room = host.room
        guard history else {
            guard let json = room.export(history: false, older: []) else { throw HTTPFailure.unavailable("try again") }
            return answerDurable(call, .json(json), showing: room.revision, in: host)
        }
        let (store, work) = (store, UncheckedSendable((call, host)))
        host.storeReads += 1
        runtime.background { [weak self] in
            let result = Result { () throws -> HTTPResponse in
                let floor = room.oldestKeptBase
                // Revision 0 from its checkpoint; a room stored before checkpoints, from every older revision.
                let start = floor == 0 ? OlderHistory(revisions: [])
                    : try Self.olderHistory(store, room: room.name, after: 0, through: floor, modelAt: 0)
                let whole = start.checkpoint == nil ? start.revisions : nil
                guard let initial = room.people(at: 0, older: start.revisions, checkpoint: start.checkpoint) else {
                    throw HTTPFailure.unavailable("the room's first revision cannot be rebuilt; try again")
                }
                var first: Revision?
                let body = try room.exportBytes(initial: initial) { after, through in
                    if let whole { return Array(whole[after..<through]) }
                    let page = try Self.olderHistory(store, room: room.name, after: after, through: through).revisions
                    if after == 0 { first = page.first }
                    return page
                }
                // The pages are reads of their own: a room deleted and made again meanwhile would give
                // the later ones from its new life. Its first revision, read again, tells (a code review).
                if let first, try Self.olderHistory(store, room: room.name, after: 0, through: 1).revisions.first != first {
                    throw HTTPFailure.unavailable("room \(room.name) was deleted and made again during the export; try again")
                }
                return HTTPResponse(status: 200, contentType: "application/json", body: body)
            }
            self?.back(work) { hub, work in
                let (call, host) = work.value
                host.storeReads -= 1
                // A room deleted meanwhile is gone, whatever the pages read (a review, session 42).
                host.life.whenDecided { deleted in
                    hub.answer(call) {
                        if deleted { throw HTTPFailure.noRoom(room.name) }
                        return hub.answerDurable(call, try result.get(), showing: room.revision, in: host)
                    }
                }
                hub.releaseMemorySoon()
            }
        }
        return nil
    }
}
