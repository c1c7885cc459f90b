import Foundation
import Logging
import PeopleCore
import PeopleStore
import Synchronization

/// Rooms: a hello finds its room in memory, waits for it to be read from the store (after its lease,
/// in cluster mode), is sent to the node that owns it, or is refused; then it joins, after reading the
/// revisions a `since` needs from the store when memory no longer has them.
extension Hub {
    /// Opens the room of a connection whose machine is `opening`: joins at once if the room is in
    /// memory, else waits for it to load.
    func openRoom(for connection: any ClientConnection, client: Client) {
        let name = client.machine.room.rawValue
        switch rooms[name] {
        case .loaded(let host)?:
            join(connection, client: client, host: host)
        case .loading(let load)?:
            load.wait(connection)
        case nil:
            if let shortage = roomShortage { return refuseFull(connection, client: client, shortage) }
            let load = RoomLoad()
            load.wait(connection)
            rooms[name] = .loading(load)
            startLoading(name)
        }
    }

    /// The room for an HTTP request: in memory at once, else after it is read from the store (joining a
    /// load under way). Unlike a hello, a request never creates a room: one the store does not have is
    /// `absent`.
    func withRoom(_ name: String, _ then: @escaping (RoomOutcome) -> Void) {
        switch rooms[name] {
        case .loaded(let host)?:
            then(.loaded(host))
        case .loading(let load)?:
            load.add(then)
        case nil:
            if let shortage = roomShortage { return whenFull(name, shortage, then) }
            let load = RoomLoad()
            load.add(then)
            rooms[name] = .loading(load)
            startLoading(name)
        }
    }

    /// Why no other room can be loaded or created here now: `limits.maxRooms` rooms are in memory or
    /// loading, or the process is over `limits.maxMemoryBytes`; nil when one can.
    var roomShortage: RoomShortage? {
        if roomCount >= configuration.limits.maxRooms { return .rooms }
        if shared.memoryShort.load(ordering: .relaxed) { return .memory }
        return nil
    }

    /// The `room-full` error for a room that cannot be loaded: which limit, in words.
    func roomFullError(_ shortage: RoomShortage) -> ProtocolError {
        switch shortage {
        case .rooms:
            ProtocolError(.roomFull, "the hub holds at most \(configuration.limits.maxRooms) rooms (limits.maxRooms)")
        case .memory:
            ProtocolError(.roomFull, """
                the hub is short of memory (limits.maxMemoryMB, \(configuration.limits.maxMemoryBytes >> 20) MB) \
                and opens no other room until idle ones are unloaded; try again later
                """)
        }
    }

    /// No other room can be loaded here: the hello is refused `room-full`, unless (cluster mode)
    /// another node serves the room, where it is sent as below the limit.
    private func refuseFull(_ connection: any ClientConnection, client: Client, _ shortage: RoomShortage) {
        let name = client.machine.room.rawValue
        let refuse = { [unowned self] in
            if let refusal = client.machine.refused(roomFullError(shortage)) { send(.error(refusal), to: connection) }
        }
        guard leases != nil else { return refuse() }
        servedElsewhere(name) { [unowned self] url in
            guard connection.context === client, !connection.isClosing else { return }
            guard let url else { return refuse() }
            sendElsewhere(connection, client: client, url: url)
        }
    }

    /// Sends a hello to the node that serves its room: `redirect` with the room's URL there, then a close (1000).
    private func sendElsewhere(_ connection: any ClientConnection, client: Client, url: String) {
        guard client.machine.redirected() else { return }
        logger.debug("redirect", metadata: ["room": "\(client.machine.room.rawValue)", "url": "\(url)"])
        send(.redirect(url: url), to: connection)
        connection.close(code: 1000, reason: "redirect")
    }

    /// When no other room can be loaded (`full`), a room the store does not have
    /// is still `absent` (404 over HTTP, not 503): one cheap store read tells, off the service thread;
    /// and in cluster mode a room another node serves is `elsewhere` (307), as below the limit. A read
    /// that fails answers `full`.
    private func whenFull(_ name: String, _ shortage: RoomShortage, _ then: @escaping (RoomOutcome) -> Void) {
        let store = store
        let box = UncheckedSendable(then)
        let absentOrFull: @Sendable () -> Void = { [weak self] in
            let stored = try? store.hasRoom(name)
            self?.back(box) { _, box in box.value(stored == false ? .absent : .full(shortage)) }
        }
        guard leases != nil else { return runtime.background(absentOrFull) }
        let background = runtime.background
        servedElsewhere(name) { url in
            guard let url else { return background(absentOrFull) }
            box.value(.elsewhere(url))
        }
    }

    /// Cluster mode, for a room this node cannot load (it is full): the room's URL at the node that
    /// holds its lease, or nil if none does. Asked by taking the lease and giving it straight back (on
    /// the lease queue); the answer comes on the service thread (a URL counted as a `redirected` load).
    private func servedElsewhere(_ name: String, _ then: @escaping (String?) -> Void) {
        guard let leases else { return then(nil) }
        let box = UncheckedSendable(then)
        leaseCalls.async { [weak self] in
            var url: String?
            switch try? leases.acquire(room: name) {
            case .ownedBy(_, let base)?: url = base + RoomName.pathPrefix + name
            case .acquired?: leases.release(room: name)
            case .busy?, nil: break
            }
            self?.back(box) { hub, box in
                if url != nil { hub.metrics.roomLoads[.redirected]?.increment() }
                box.value(url)
            }
        }
    }

    /// Reads and rebuilds the room off the service thread, then joins the hellos that waited for it.
    /// In cluster mode the room's lease comes first (on the lease queue, in order with releases).
    func startLoading(_ name: String) {
        if case .loading(let load)? = rooms[name] { load.leaseGeneration = leaseGeneration }
        let store = store
        let policy = configuration.roomPolicy
        let load: @Sendable () -> Void = { [weak self] in
            let started = DispatchTime.now().uptimeNanoseconds
            let result: Result<RestoredRoom?, StoreError>
            var deletedAt: Int64?
            do {
                let stored = try store.load(room: name)
                // For a room the store has, a deletion that cannot be read is taken as none: it only
                // turns away clients of an older room of the name, and must not keep this one closed.
                deletedAt = stored == nil ? try store.deletion(of: name) : try? store.deletion(of: name)
                result = .success(try stored.map { try RestoredRoom($0, policy: policy) })
            } catch let error as StoreError {
                result = .failure(error)
            } catch {
                result = .failure(StoreError(.corrupt, "\(error)"))
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            self?.back((result, deletedAt)) { hub, read in hub.loaded(name, read.0, deletedAt: read.1, seconds: seconds) }
        }
        guard let leases else { return runtime.background(load) }
        let background = runtime.background
        leaseCalls.async { [weak self] in
            do {
                if let owner = try Self.takeLease(leases, room: name) {
                    self?.back(owner) { hub, owner in hub.redirect(name, to: owner) }
                } else {
                    background(load)
                }
            } catch {
                let failure = Result<RestoredRoom?, StoreError>.failure(error as? StoreError ?? StoreError(.lease, "\(error)"))
                self?.back(failure) { hub, failure in hub.loaded(name, failure, seconds: 0) }
            }
        }
    }

    /// Takes the room's lease; returns the owner's URL if another node has it. A lease held by a node
    /// that has not said where it is yet (it is taking the room over) is asked again for a while.
    static func takeLease(_ leases: any RoomLeases, room: String) throws(StoreError) -> String? {
        for _ in 0..<25 {
            switch try leases.acquire(room: room) {
            case .acquired: return nil
            case .ownedBy(_, let url): return url
            case .busy: Thread.sleep(forTimeInterval: 0.2)
            }
        }
        throw StoreError(.lease, "room \(room) is held by a node that does not say where it is")
    }

    /// The room is served by another node: every hello waiting for it is sent there, every HTTP
    /// request answered `307` (`notServedHere`).
    private func redirect(_ name: String, to base: String) {
        guard case .loading(let load)? = rooms[name] else { return }
        rooms[name] = nil
        let url = base + RoomName.pathPrefix + name
        metrics.roomLoads[.redirected]?.increment()
        for connection in load.waiting {
            guard let client = connection.context as? Client else { continue }
            sendElsewhere(connection, client: client, url: url)
        }
        for request in load.requests { request(.elsewhere(url)) }
    }

    /// `deletedAt`: when the store says a room of the name was last deleted (kept on the room's host).
    func loaded(_ name: String, _ result: Result<RestoredRoom?, StoreError>, deletedAt: Int64? = nil, seconds: Double) {
        guard case .loading(let load)? = rooms[name] else { return }
        if leases != nil, load.leaseGeneration != leaseGeneration {
            // Every lease was lost while this one loaded: it was lost too. Again, from the lease.
            return startLoading(name)
        }
        if let deletedAt { load.deletedAt = deletedAt }
        var turnedAway: [any ClientConnection] = []
        if case .success(nil) = result, !load.importing, load.creator == nil, let deletedAt = load.deletedAt {
            turnedAway = turnAwayClientsOfTheDeletedRoom(load, name, deletedAt: deletedAt)
            // Closed at once when the room is made for the others; else once the lease is back (below).
            if !load.waiting.isEmpty { Self.closeAsDeleted(turnedAway) }
        }
        let host: RoomHost
        var created = false
        switch result {
        case .success(nil) where load.importing:
            // An import's body is still being checked: it, not the seed, makes the room (`importChecked`).
            load.parked = true
            return
        case .success(let restored?):
            let room = restored.room
            metrics.roomLoads[.loaded]?.increment()
            metrics.roomLoadDuration.recordSeconds(seconds)
            host = RoomHost(room: room)
            // Where the stored snapshot stands: a journal of `snapshotEvery` revisions or more after it
            // (an `import` command stopped before its last snapshot, a hub killed often) gets a new
            // snapshot below, instead of being replayed again at every load.
            host.snapshotRevision = restored.snapshotRevision
            host.snapshotPosition = restored.snapshotPosition
            // The node that loads a room delivers its webhooks (cluster mode): a backlog resumes here,
            // after the notices kept for it (the `import` command's room.created).
            webhooks?.roomLoaded(room: name)
            webhooks?.revisionsDurable(room: name, after: room.revision, through: room.revision, revisions: { [] })
            logger.info("room loaded", metadata: [
                "room": "\(name)", "rev": "\(room.revision)", "seconds": "\(String(format: "%.3f", seconds))",
            ])
        case .success(nil) where load.waiting.isEmpty && load.creator == nil:
            // Only HTTP requests asked: they do not create rooms. In cluster mode the lease goes back
            // before they are answered, so what a caller does next, on any node, finds the room free
            // (a DELETE sent to another node right after a 404 here was redirected here).
            // So are the hellos of a deleted room's clients turned away, closed after it: one that
            // tries again at another node finds the room free there.
            rooms[name] = nil
            releasingLease(of: name, then: (load.requests, turnedAway)) { _, waiting in
                for request in waiting.0 { request(.absent) }
                Self.closeAsDeleted(waiting.1)
            }
            return
        case .success(nil):
            // A new room: its first snapshot (the seed, or an import's people) is stored before anything
            // journalled after it, with `room.created` in the same commit, so no crash can lose it. Its
            // time is revision 0's, a `PUT` of people's too (made now: a backend's pass found the event
            // a few ms after the revision 0 of its people, read earlier, and a follower that took it for
            // `afterTime=` was told `409 reset`), but for an export with its history: that keeps its
            // exported revision-0 time, and the event is told with the import's (an id of its own when
            // one export is imported again, after the deletion before it).
            let time = clock
            let notices = webhooks?.notices(roomCreated: name, time: time) ?? []
            if let imported = load.creator, !imported.entries.isEmpty {
                // An import with a history: the room is made whole before anyone joins it, and its
                // first snapshot, history and checkpoints are written all or nothing (never found at
                // revision 0, or with some of its checkpoints, after a crash); the webhooks hear of it
                // once it is durable (a write that fails leaves no room to tell of).
                let start = imported.startingRoom(madeAt: time)
                host = RoomHost(room: start)
                host.room = imported.built
                persist(imported.entries, in: host, creating: RoomCreation(
                    snapshot: start.snapshot(), notices: notices, checkpoints: imported.checkpoints, time: time))
            } else {
                // A room from the seed (or a `PUT`'s people): its first snapshot alone, told to the
                // webhooks once durable too. Told at once, a delivery's removal of its kept
                // `room.created` could come before the commit that kept it (a busy writer), and the
                // notice stayed, to be delivered again by the next node or start (a cluster pass).
                host = RoomHost(room: load.creator?.room(madeAt: time)
                    ?? Room(name: name, seed: configuration.seed, policy: configuration.roomPolicy, created: time))
                persist([], in: host, creating: RoomCreation(snapshot: host.room.snapshot(), notices: notices,
                                                             checkpoints: [], time: time))
            }
            created = true
        case .failure(let error):
            metrics.roomLoads[.failed]?.increment()
            rooms[name] = nil
            if let leases { leaseCalls.async { leases.release(room: name) } }
            // As `store failed`: a store that cannot be reached fails every reconnecting client's load (a
            // cluster pass counted 102 lines per node in a 30 s outage with three clients).
            loadFailureLog.log(logger, now: clock, ["room": "\(name)", "error": "\(error)"])
            for connection in load.waiting {
                guard let client = connection.context as? Client, let error = client.machine.roomFailed() else { continue }
                send(.error(error), to: connection)
                connection.close(code: 1011, reason: "room cannot be loaded")
            }
            for request in load.requests { request(.failed("\(error)")) }
            return
        }
        host.deletedAt = load.deletedAt
        rooms[name] = .loaded(host)
        if host.room.revision - host.snapshotRevision >= configuration.snapshotEvery { saveSnapshotIfChanged(host) }
        // In the order they came: a `DELETE` among the requests takes the room away from those after it.
        for waiter in load.waiters {
            switch waiter {
            case .hello(let connection):
                guard !connection.isClosing, let client = connection.context as? Client else { continue }
                if host.broken {
                    openRoom(for: connection, client: client)  // waits for what comes after the deletion
                } else {
                    join(connection, client: client, host: host)
                }
            case .request(let request):
                request(created ? .created(host) : .loaded(host))
            }
        }
        if !host.broken && host.connections.isEmpty && host.catchingUp == 0 { host.idleSince = clock }
        if load.importing, case .loading(let next)? = rooms[name], next !== load {
            // A `DELETE` took the room away while an import's body is checked: the name stays taken.
            next.importing = true
        }
    }

    /// The store remembers deleting the room a load did not find: the hellos of its clients (those that
    /// name a revision) are closed with 1000 `room deleted` instead of making it again from the seed
    /// (`ConnectionMachine.roomWasDeleted`); the others make it anew, as for a name never used. With
    /// none left the load ends as one that only HTTP requests asked for.
    /// Returns their connections, to close (`closeAsDeleted`).
    private func turnAwayClientsOfTheDeletedRoom(_ load: RoomLoad, _ name: String, deletedAt: Int64) -> [any ClientConnection] {
        var turnedAway: [any ClientConnection] = []
        load.removeHellos { connection in
            guard let client = connection.context as? Client, client.machine.roomWasDeleted(at: deletedAt) else { return false }
            turnedAway.append(connection)
            return true
        }
        if !turnedAway.isEmpty { logTurnedAway(room: name) }
        return turnedAway
    }

    /// A client that reconnects after any 1000 close (one of another make, or a page of before session
    /// 39) comes back at its backoff, for as long as the deletion is remembered: one line every 10 s at
    /// most on this service thread (`LogThrottle`), with the count of those left out.
    private func logTurnedAway(room: String) {
        turnedAwayLog.log(logger, now: clock, ["room": "\(room)"])
    }

    /// Closes connections as the deletion closed the room's: 1000 `room deleted`.
    private static func closeAsDeleted(_ connections: [any ClientConnection]) {
        for connection in connections { connection.close(code: 1000, reason: CloseReason.roomDeleted) }
    }

    /// Gives the room's lease back (cluster mode: on the lease queue), then runs `then` with `value` on
    /// the service thread, so that an answer sent there lets the caller's next request, at any node,
    /// find the room free; without leases, at once.
    func releasingLease<Value>(of name: String, then value: Value, _ work: @escaping (Hub, Value) -> Void) {
        guard let leases else { return work(self, value) }
        let box = UncheckedSendable((value, work))  // service-thread values, passed through
        leaseCalls.async { [weak self] in
            leases.release(room: name)
            self?.back(box) { hub, box in box.value.1(hub, box.value.0) }
        }
    }

    /// Joins an opening connection to its loaded room; a `since` older than memory (or whose time
    /// must be compared with a revision memory no longer holds) first reads those revisions from the
    /// store (off the service thread).
    func join(_ connection: any ClientConnection, client: Client, host: RoomHost) {
        guard let (hello, _) = client.machine.opening else { return }
        guard let read = host.room.storeReadForJoin(since: hello.since, sinceTime: hello.sinceTime) else {
            return finishJoin(connection, client: client, host: host, earlier: [])
        }
        if read.through > host.durableRevision {
            // The revisions are in a commit not durable yet (an import's): the store does not have
            // them, and a welcome without them cannot say `reset` (a tester's hello, resumed into a room
            // deleted and imported again, was welcomed without it while the import was written).
            host.catchingUp += 1
            host.idleSince = nil
            host.joinsAwaitingDurable.append((connection, through: read.through))
            return
        }
        host.catchingUp += 1
        host.idleSince = nil
        let store = store
        let name = host.room.name
        let box = UncheckedSendable((connection, client, host))
        let logger = logger
        runtime.background { [weak self] in
            let earlier: [Revision]
            do {
                earlier = try store.revisions(room: name, after: read.after, through: read.through)
            } catch {
                // Joined without them: a full welcome (its `reset` cannot be decided). Said, not swallowed.
                logger.error("cannot read the revisions a joining client's since needs; it gets the whole room",
                             metadata: ["room": "\(name)", "error": "\(error)"])
                earlier = []
            }
            self?.back(box) { hub, box in
                let (connection, client, host) = box.value
                host.catchingUp -= 1
                guard connection.context === client, !connection.isClosing else {
                    if host.connections.isEmpty && host.catchingUp == 0 { host.idleSince = hub.clock }
                    return
                }
                if hub.host(name) === host {
                    hub.finishJoin(connection, client: client, host: host, earlier: earlier)
                } else {
                    hub.openRoom(for: connection, client: client)  // the room was reloaded meanwhile
                }
            }
        }
    }

    /// Joins that waited in `host` (taken from its list by the caller, counted in `catchingUp` until
    /// now) go on: those still open join; the room is idle from now if nobody is left in it.
    func joinAgain(_ waiting: [any ClientConnection], host: RoomHost) {
        host.catchingUp -= waiting.count
        for connection in waiting {
            guard let client = connection.context as? Client, !connection.isClosing else { continue }
            join(connection, client: client, host: host)
        }
        if host.connections.isEmpty && host.catchingUp == 0 && host.idleSince == nil { host.idleSince = clock }
    }

    private func finishJoin(_ connection: any ClientConnection, client: Client, host: RoomHost, earlier: [Revision]) {
        // A token that expired while its room loaded gets no welcome (a tester saw the whole room sent
        // 2 s after exp, behind a big import).
        if let expiry = client.machine.expired(now: clock) { return carryOut(expiry, on: connection, client: client) }
        guard let (hello, role) = client.machine.opening else { return }
        if leasesUnsure {
            // A node woken from a pause, or not answered by PostgreSQL lately, may have lost the room
            // to another node without knowing yet: it welcomes nobody from the room's memory until it
            // is sure (as its HTTP reads answer 503 meanwhile), then joins them anew (`Hub.sweep`).
            // The wait is the node's, not the client's: no `no hello within` close meanwhile (a
            // review). It ends when the node is sure, or with the room's drop (1012).
            connection.setDeadline(seconds: 0, code: 0, reason: "")
            host.catchingUp += 1
            host.idleSince = nil
            host.joinsAwaitingSure.append(connection)
            return
        }
        if let deletedAt = host.deletedAt, let since = hello.since,
           host.room.namesOtherHistory(since: since, sinceTime: hello.sinceTime, earlier: earlier),
           client.machine.roomWasDeleted(at: deletedAt, roomPresent: true) {
            // A client of the room deleted before this one was made, or imported, under its name: its
            // revision is not this room's (the deleted room's own export imported again, with its
            // history, has it, and its clients are caught up).
            logTurnedAway(room: host.room.name)
            if host.connections.isEmpty && host.catchingUp == 0 { host.idleSince = clock }
            return Self.closeAsDeleted([connection])
        }
        let (session, actions) = host.room.join(
            session: runtime.makeSessionID(), user: hello.user, role: role, client: hello.client,
            resume: hello.resume, since: hello.since, sinceTime: hello.sinceTime, earlier: earlier)
        if let previous = host.connections[session], previous !== connection {
            // The session resumed on a new connection: the old one (likely half-open) is replaced.
            (previous.context as? Client)?.machine.replaced()
            previous.close(code: 1000, reason: "session resumed on another connection")
        }
        host.connections[session] = connection
        host.idleSince = nil
        let waiting = client.machine.joined(session: session) ?? []
        connection.setDeadline(seconds: 0, code: 0, reason: "")
        logger.debug("joined", metadata: [
            "room": "\(host.room.name)", "session": "\(session)", "user": "\(hello.user)",
            "client": "\(hello.client ?? "")", "resumed": "\(hello.resume == session)",
        ])
        perform(actions, in: host)
        receiveWaiting(waiting, on: connection, client: client)
    }

    /// Stops serving every room at once (this node may no longer own them): their connections are
    /// closed with 1012 so clients reconnect and are sent to the owner.
    func dropAllRooms(reason: String) {
        leasesDropping.store(false, ordering: .sequentiallyConsistent)
        leaseGeneration += 1  // and rooms loading now take their lease again (`loaded`)
        // The store is out of reach: `/healthz` says so now, not once a check has waited it out (a
        // partition pass saw 200 for 7 s after every lease had gone), until a check passes again. The
        // first service thread's hub checks the store and answers `/healthz`.
        if index == 0 { storeUnavailable(StoreError(.unavailable, "\(reason): the connection that held them was lost")) }
        let loaded = rooms.values.compactMap { slot -> RoomHost? in if case .loaded(let host) = slot { host } else { nil } }
        // Each service thread's hub drops its own: the one that had none says nothing.
        guard !loaded.isEmpty else { return }
        logger.error("dropping every room", metadata: ["reason": "\(reason)", "rooms": "\(loaded.count)"])
        for host in loaded { drop(host, code: 1012, reason: "room moved; reconnect") }
    }

    /// Stops serving a room: nothing held is sent any more, its connections are closed, and the next
    /// hello loads it again (from what is durable).
    /// Cluster mode: this node cannot be sure it still holds its rooms (woken from a pause and not yet
    /// checked, `RoomLeases.leasesCertain`; or its leases were lost and its rooms not yet dropped): it
    /// answers nothing from a room's memory meanwhile.
    var leasesUnsure: Bool {
        guard let leases else { return false }
        return leasesDropping.load(ordering: .sequentiallyConsistent) || !leases.leasesCertain
    }

    /// 503 with `Retry-After: 1` while `leasesUnsure`.
    static func unsureOf(room: String) -> HTTPFailure {
        var failure = HTTPFailure.unavailable("this node is checking that it still holds room \(room) (it was paused, or PostgreSQL has not answered it lately); try again")
        failure.headers = [.init("Retry-After", "1")]
        return failure
    }

    func drop(_ host: RoomHost, code: UInt16, reason: String) {
        host.broken = true
        for connection in host.takeWaitingJoins() { connection.close(code: code, reason: reason) }
        for exchange in host.discardHeld() {
            exchange.respond(HTTPFailure.unavailable("the room stopped: \(reason); try again").response(json: true))
        }
        // Long polls of the change feed too: they would wait out their `wait` and answer with this
        // node's head, which another node may have passed (a frozen node's pass, session 42).
        for waiter in host.feedWaiters {
            waiter.call.exchange.respond(HTTPFailure.unavailable("the room stopped: \(reason); try again").response(json: true))
        }
        host.feedWaiters.removeAll()
        if self.host(host.room.name) === host { rooms[host.room.name] = nil }
        for connection in host.connections.values { connection.close(code: code, reason: reason) }
    }
}
