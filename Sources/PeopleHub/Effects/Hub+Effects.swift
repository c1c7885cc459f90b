import Dispatch
import Logging
import PeopleCore
import PeopleStore
import WebSocketTransport

/// Effects: what a room decided, carried out. Records go to the store; sends after a record that is
/// not durable yet wait behind it (in order, addressed to the connections of the moment); presence
/// lists are coalesced; every message is encoded once for all its receivers.
extension Hub {
    /// Carries out the room's actions in order. Every `snapshotEvery` revisions the room's snapshot
    /// follows.
    func perform(_ actions: [RoomAction], in host: RoomHost) {
        for action in actions {
            switch action {
            case .persist(let entry):
                persist([entry], in: host)
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
                    for session in sessions { host.connections[session]?.send(encoded) }
                }
            case .readHistory(let read):
                if var waiting = host.historyReads[read.session], !waiting.isEmpty {
                    // An HTTP caller's request (HTTP/Hub+RoomRoutes.swift).
                    let resume = waiting.removeFirst()
                    host.historyReads[read.session] = waiting.isEmpty ? nil : waiting
                    resume(read)
                } else {
                    readHistory(read, in: host)
                }
            }
        }
        if host.room.revision - host.snapshotRevision >= configuration.snapshotEvery { saveSnapshotIfChanged(host) }
    }

    /// A new room's creation (`persist(_:in:creating:)`): its first snapshot, and the webhook notices
    /// and checkpoints (an import's) kept with it.
    struct RoomCreation {
        var snapshot: RoomSnapshot
        var notices: [WebhookNotice]
        var checkpoints: [Checkpoint]
        /// When it was made: the webhooks hear of `room.created` once it is durable, before its revisions.
        var time: Int64
    }

    /// Hands `entries` to the store in one append; what the room sends after them waits until they
    /// are durable (a barrier), and the change feed and webhooks hear of their revisions then.
    /// `creating`: the room is new, and made with `entries` (none for a room from the seed), all or
    /// nothing (`PeopleStore.create`).
    func persist(_ entries: [JournalEntry], in host: RoomHost, creating: RoomCreation? = nil) {
        guard !entries.isEmpty || creating != nil else { return }
        for entry in entries {
            if let revision = entry.record.revision { metrics.revisions[revision.kind]?.increment() }
        }
        // The completion comes back through the service thread, so it cannot run before the barrier
        // is in place below.
        let barrier = host.makeBarrierID()
        let handed = DispatchTime.now().uptimeNanoseconds
        let box = UncheckedSendable(host)
        let rev = entries.last(where: { $0.record.revision != nil })?.record.revision?.number
        let (name, bornAt) = (host.room.name, creating?.time)
        let whenDurable: @Sendable (StoreError?) -> Void = { [weak self] error in
            self?.back(box) { hub, box in
                hub.metrics.durableWait.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - handed))
                hub.durable(barrier: barrier, host: box.value, error: error)
                guard error == nil else { return }
                // A creation that committed is told even if the room was deleted meanwhile (its
                // deletion, later in the writer's order, tells room.deleted after): else the webhooks
                // got that life's revisions, owed, and its room.created only at a later start.
                if let bornAt { hub.created(name, revisions: rev ?? 0, time: bornAt) }
                guard !box.value.broken else { return }
                if let rev { hub.revisionsDurable(box.value, through: rev) }
            }
        }
        let outcome = if let creating {
            store.create(creating.snapshot, notices: creating.notices, entries: entries, checkpoints: creating.checkpoints,
                         room: host.room.name, whenDurable: whenDurable)
        } else {
            store.append(entries, room: host.room.name, whenDurable: whenDurable)
        }
        if outcome == .pending {
            host.hold(behind: barrier)
            return
        }
        if let bornAt { created(name, revisions: rev ?? 0, time: bornAt) }
        if let rev { revisionsDurable(host, through: rev) }
    }

    /// A new room is durable: logged, and the webhooks hear of it (before its revisions). One whose
    /// commit failed is neither (the failure is logged as the store's).
    private func created(_ name: String, revisions: Int, time: Int64) {
        // Counted once durable: a creation whose first commit failed made no room.
        metrics.roomLoads[.created]?.increment()
        logger.info("room created", metadata: ["room": "\(name)", "rev": "\(revisions)"])
        webhooks?.roomCreated(room: name, time: time)
    }

    /// Sends the room's presence list soon: once per service pass at most, and at most once per
    /// `presenceInterval(members:)`, whatever the number of joins, leaves and presence updates in
    /// between. Each list replaces one still waiting in a receiver's queue, so a room where hundreds
    /// come and go keeps every member's queue to one presence message, not one per change.
    private func schedulePresence(_ host: RoomHost) {
        guard !host.presenceScheduled else { return }
        host.presenceScheduled = true
        let interval = Self.presenceInterval(members: host.connections.count)
        let wait = host.lastPresence.map { min(interval, interval - (clock - $0)) } ?? 0
        let box = UncheckedSendable(host)
        if wait > 0 {
            runtime.after(wait) { [weak self] in self?.back(box) { hub, box in hub.flushPresence(box.value) } }
        } else {
            back(box) { hub, box in hub.flushPresence(box.value) }
        }
    }

    /// Milliseconds between a room's presence lists: 50, or 1 per member in rooms of more than 50
    /// (capped at 1 s). A list has one entry per member and goes to every member, so a fixed interval
    /// would cost O(members²) bytes a second; this keeps it O(members).
    static func presenceInterval(members: Int) -> Int64 { Int64(min(1000, max(50, members))) }

    private func flushPresence(_ host: RoomHost) {
        host.presenceScheduled = false
        guard !host.broken, self.host(host.room.name) === host else { return }
        host.lastPresence = clock
        let message = ServerMessage.presence(host.room.presence)
        metrics.count(message)
        let encoded = OutboundMessage(text: message.json.bytes, replaceable: true)
        let connections = host.room.connectedSessions.compactMap { host.connections[$0] }
        if host.isHolding {
            // A joiner's welcome may be waiting for its tag block to be durable: presence goes after it.
            host.held.append(.send(encoded, to: connections))
        } else {
            for connection in connections { connection.send(encoded) }
        }
    }

    /// A record is durable (or failed): the sends held behind it go, in order; a failure drops the room.
    /// A deleted room's go to its HTTP callers (`settleDeleted`).
    private func durable(barrier: Int, host: RoomHost, error: StoreError?) {
        if host.deletion != nil {
            if error != nil { metrics.storeFailures.increment() }  // counted as any room's (a review, session 42)
            return settleDeleted(barrier: barrier, host: host, failed: error != nil)
        }
        guard !host.broken else { return }
        if let error {
            // Nothing after the failed record may be sent.
            metrics.storeFailures.increment()
            // A store that keeps failing (its files deleted, a full disk) drops a room again at each
            // client's reconnect: an operator's drill counted 77 critical lines in 17 s. One line at
            // most every 10 s; it says how many rooms were dropped since the last one (the metric
            // counts every drop).
            storeFailureLog.log(logger, now: clock, ["room": "\(host.room.name)", "error": "\(error)"])
            drop(host, code: 1011, reason: "store failed")
            return
        }
        for item in host.release(barrier) {
            switch item {
            case .send(let encoded, let connections): for connection in connections { connection.send(encoded) }
            case .answer(let exchange, let response): exchange.respond(response)
            case .barrier: break
            }
        }
    }

    /// Answers an HTTP read that shows revision `rev` of the room: at once when it is durable, else
    /// once it is, in order with the room's held sends, as the WebSocket's broadcasts wait — a reader
    /// never sees a revision that a crash could take back. Returns the response to give now, or nil.
    func answerDurable(_ call: HTTPCall, _ response: HTTPResponse, showing rev: Int, in host: RoomHost) -> HTTPResponse? {
        guard rev > host.durableRevision else { return response }
        guard !host.broken, self.host(host.room.name) === host else {
            return HTTPFailure.unavailable("room \(host.room.name) is being reloaded; try again").response(json: true)
        }
        host.held.append(.answer(call.exchange, response))
        return nil
    }

    /// Reads revisions older than the room's memory from the store (off the service thread) for a
    /// `restore` or `log`, then hands the message back to the room with them; the session's later
    /// frames wait meanwhile, so its answers stay in order. For a restore the store may give its
    /// nearest checkpoint below the target and the few revisions after it instead
    /// (`PeopleStore.olderHistory`). A store that cannot give them all answers `server-error`.
    private func readHistory(_ read: HistoryRead, in host: RoomHost) {
        guard let connection = host.connections[read.session], let client = connection.context as? Client else { return }
        _ = client.machine.fetch()  // already fetching when a long log asks for its next chunk
        host.fetching.insert(read.session)
        let store = store
        let name = host.room.name
        let box = UncheckedSendable((connection, client, host))
        runtime.background { [weak self] in
            let older = try? store.olderHistory(room: name, after: read.after, through: read.through, modelAt: read.modelAt)
            self?.back(box) { hub, box in
                let (connection, client, host) = box.value
                host.fetching.remove(read.session)
                guard hub.host(name) === host, connection.context === client, !connection.isClosing else { return }
                if let older {
                    hub.perform(host.room.receive(read.message, from: read.session, now: hub.clock, older: older.revisions,
                                                  log: read.log, checkpoint: older.checkpoint), in: host)
                } else {
                    hub.logger.error("history cannot be read from the store", metadata: [
                        "room": "\(name)", "after": "\(read.after)", "through": "\(read.through)"])
                    hub.send(.error(.init(seq: read.message.seq, ProtocolError(.serverError,
                        "revisions \(read.after + 1) to \(read.through) cannot be read; try again later"))), to: connection)
                }
                guard !host.fetching.contains(read.session) else { return }  // the room asked for more
                hub.receiveWaiting(client.machine.fetched() ?? [], on: connection, client: client)
            }
        }
    }

    /// Sends one message to one connection (replies that are not the room's: errors, redirects).
    func send(_ message: ServerMessage, to connection: any ClientConnection) {
        metrics.count(message)
        connection.send(OutboundMessage(text: message.json.bytes))
    }
}
