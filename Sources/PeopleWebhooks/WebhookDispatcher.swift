import Foundation
import Logging
import Metrics
import PeopleCore
import PeopleStore
import Synchronization

/// Delivers webhooks (HTTP.md §3): each durable revision of a matching room POSTed to every endpoint
/// that wants it, one POST per revision, signed, in revision order per room, at least once.
///
/// Each (endpoint, room) is a lane (`DeliveryLane`, pure) driven by a task of its own while it has
/// work, so a slow or failing endpoint, or a room whose delivery is being retried, never holds up
/// another room or another endpoint; POSTs go out through AsyncHTTPClient on an event loop of its own.
/// What is delivered is read from the store (`revisions(room:after:through:)`, in chunks) and the
/// cursor (endpoint, room → last delivered revision) is written to the store after each 2xx, so a
/// restart or a crash resumes where delivery stopped: a delivery may repeat (same `id`), none is lost.
/// Store calls run on a queue of their own, never on the caller's thread or Swift's cooperative pool.
///
/// The hub calls `revisionDurable`, `roomCreated` and `roomDeleted` from its service thread: they only
/// record and wake a lane, and never block. Failures are retried with exponential backoff (the
/// room's later revisions wait); a delivery failing for longer than `policy.giveUpAfter` marks its
/// endpoint failing: it stops until `reenable(url:)` or a restart, then resumes from its cursors.
///
/// Room events (`room.created`, `room.deleted`) are kept in the store too: the hub has the notices
/// (`notices(_:room:time:)`) written in the same commit as the creation or deletion, a lane removes
/// each once delivered, and `start()` delivers those left by a crash (a room created then is delivered
/// from its first revision; the notices of a deleted room by whichever node starts, in cluster mode).
/// A room created while the dispatcher runs is delivered from its first revision; a room it first
/// sees otherwise (an endpoint newly configured, a room first seen on start) from the head it finds.
///
/// In cluster mode (`leases` given) one node delivers a room at a time: the one holding its lease. A
/// lane works only once this node holds the room (`LeaseHolder.webhooks`, joining the hub's hold when
/// the room is loaded here, else taking the lease); a room whose deliveries are not all made keeps
/// its lease after the hub unloads it, so no other node loads it and delivers beside this one; a
/// room whose lanes have been idle for `policy.releaseAfter` is let go. Every `policy.scanInterval`
/// the store is asked which rooms have deliveries left (`webhookBacklog`): those no node holds (their
/// owner died, or the room was never loaded since a crash) are taken and delivered here. When the
/// leases are lost at once (the store connection broke) every lane stops; the next scan takes back
/// what is free.
public final class WebhookDispatcher: Sendable {
    private let endpoints: [WebhookEndpoint]
    private let metrics: [WebhookMetrics]
    private let store: any PeopleStore
    private let logger: Logger
    private let policy: WebhookPolicy
    private let now: @Sendable () -> Int64
    private let leases: (any RoomLeases)?
    private let random: @Sendable () -> Double
    /// None without endpoints (a dispatcher kept for the endpoints the store keeps: no thread of its own).
    private let poster: WebhookPoster?
    private let storeQueue = DispatchQueue(label: "peoplekeeper-webhook-store", attributes: .concurrent)
    /// Lease calls, one at a time, so a release and a later hold of the same room reach the store in order.
    private let leaseQueue = DispatchQueue(label: "peoplekeeper-webhook-leases")
    private let state: Mutex<DispatchState>
    /// Endpoints the store keeps delivery state for that this node's config does not list (taken out
    /// of it, or listed by other nodes' newer config in a rolling change): a room deleted here keeps
    /// their revisions after their cursors there, as for a configured endpoint, so a room they were
    /// following loses nothing if they come back (HTTP.md: an endpoint taken out of the config keeps
    /// its state until an operator forgets it). Only rooms where they have a cursor keep anything (the
    /// store copies revisions after a cursor), so nothing is made for rooms they never followed, and
    /// an endpoint forgotten meanwhile (no cursor left) gets nothing back. Read at start and every
    /// `policy.scanInterval`.
    private let unconfigured = Mutex<[String]>([])
    /// The task that reads them again (`readStoredEndpoints`), cancelled by `shutdown`.
    private let endpointsReader = Mutex<Task<Void, Never>?>(nil)

    /// - Parameters:
    ///   - endpoints: the configured endpoints; the URL is each one's id (a second with the same URL is
    ///     left out, with an error logged).
    ///   - store: where revisions are read and cursors kept; its calls block, so they run on the
    ///     dispatcher's own queue.
    ///   - logger: the caller's; failures are warnings, an endpoint marked failing an error.
    ///   - policy: timeout, backoff, give-up period (milliseconds; tests make them tiny).
    ///   - now: the clock (milliseconds since the epoch): signatures' `t`, lag, the give-up period.
    ///   - leases: cluster mode: the store's room leases, which a lane holds while it delivers (nil:
    ///     this node alone delivers every room).
    ///   - random: a number in 0..<1 for the backoff's jitter.
    ///   - metricsFactory: where the `peoplekeeper_webhook_*` metrics go (`WebhookMetrics`).
    public init(endpoints: [WebhookEndpoint], store: any PeopleStore, logger: Logger, policy: WebhookPolicy = WebhookPolicy(),
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) },
                leases: (any RoomLeases)? = nil,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                metricsFactory: any MetricsFactory = MetricsSystem.factory) {
        var unique: [WebhookEndpoint] = []
        for endpoint in endpoints {
            if unique.contains(where: { $0.url == endpoint.url }) {
                logger.error("a second webhook endpoint with the same URL is ignored", metadata: ["endpoint": "\(endpoint.name)"])
            } else {
                unique.append(endpoint)
            }
        }
        self.endpoints = unique
        metrics = unique.map { WebhookMetrics(endpoint: $0.name, factory: metricsFactory) }
        self.store = store
        self.logger = logger
        self.policy = policy
        self.now = now
        self.leases = leases
        self.random = random
        state = Mutex(DispatchState(endpoints: unique.count))
        poster = unique.isEmpty ? nil : WebhookPoster()
    }

    // MARK: What the hub calls

    /// Resumes delivery: for every room in the store that an endpoint wants, the revisions after the
    /// endpoint's cursor are delivered; where it has none, it starts at the room's head (and writes
    /// that). In cluster mode, the rooms with deliveries left that no node holds, now and every
    /// `policy.scanInterval`. Returns at once; the store is read in the background.
    public func start() {
        endpointsReader.withLock { $0 = Task.detached { [self] in await readStoredEndpoints() } }
        // None configured: only that read (no lanes, so no leases held, no cursors to write, no scan).
        guard !endpoints.isEmpty else { return }
        if let leases {
            leases.onLeasesLost { [weak self] in self?.leasesLost() }
            Task.detached { [self] in await scanForOrphans() }
        } else {
            Task.detached { [self] in await resume() }
        }
        Task.detached { [self] in await flushCursors() }
    }

    /// The endpoints the store keeps state for (`webhookEndpointIDs`), of which those the config does
    /// not list are kept: as the hub read them at start (before `start()`, so no room is made or
    /// deleted before they are known).
    public func storeKeeps(_ stored: [String]) {
        let configured = Set(endpoints.map(\.url))
        let others = stored.filter { !configured.contains($0) }.sorted()
        unconfigured.withLock { $0 = others }
    }

    /// Reads `storeKeeps` again every `policy.scanInterval` (another node's config may list an endpoint
    /// this one does not; an operator may forget one).
    private func readStoredEndpoints() async {
        while !state.withLock({ $0.stopped }) {
            try? await Task.sleep(for: .milliseconds(max(policy.scanInterval, 1_000)))
            if state.withLock({ $0.stopped }) { return }
            if let stored = await storeCall("list the webhook endpoints the store keeps", [:], { try $0.webhookEndpointIDs() }) {
                storeKeeps(stored)
            }
        }
    }

    /// Every `cursorInterval`, lanes that stopped with a delivered cursor not yet written are woken to
    /// write it (a lane writes on its own only while it has work); in cluster mode, rooms idle for
    /// `releaseAfter` are let go.
    private func flushCursors() async {
        let interval = max(policy.cursorInterval, 10)
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(interval))
            let time = now()
            let stopped = state.withLock { state -> Bool in
                guard !state.stopped else { return true }
                for (key, lane) in state.lanes where lane.unwritten != nil && !lane.running {
                    update(key, in: &state) { _ in }
                }
                if leases != nil { releaseIdleRooms(now: time, in: &state) }
                return false
            }
            if stopped { return }
        }
    }

    /// A revision of `room` is durable. Called from the hub's service thread for every one, in order:
    /// records it and wakes the room's lanes; never blocks. `revisions` gives the durable ones up to
    /// `rev`, oldest first, as the hub has them (asked only if an endpoint wants the room's revisions),
    /// kept as a copy of the store's latest, so lanes that keep up need not read the store; anything
    /// else is read from it. `after`: the revisions after it
    /// through `rev` became durable together (default `rev` - 1); a lane with no cursor starts there.
    public func revisionDurable(room: String, rev: Int, after: Int? = nil, revisions: () -> [Revision] = { [] }) {
        let wanting = endpointIndices(wanting: .revision, of: room)
        guard !wanting.isEmpty else { return }
        let revisions = revisions()
        state.withLock { state in
            if !revisions.isEmpty { state.recent[room, default: RecentRevisions()].add(revisions) }
            for index in wanting {
                // Not in cluster mode: a lane given up there (`releaseIdleRooms`) is made again by the room's
                // next revision, and has no earlier lives to read (a review).
                updateForRoom(LaneKey(endpoint: index, room: room), in: &state, inCluster: false) {
                    $0.revisionDurable(rev, after: after)
                }
            }
        }
    }

    /// The notices the store keeps with a room event, one per endpoint that wants `event` for `room`
    /// (the hub passes them to `save` or `deleteRoom`, then calls `roomCreated` / `roomDeleted` with
    /// the same `time`). A deletion's come after an `owed` one per endpoint that wants the room's
    /// revisions: the store keeps those it had not been sent, delivered before its `room.deleted`. A
    /// creation's come after a cursor start per such endpoint: its cursor at 0 in the same commit.
    /// A deletion's also keep, for the endpoints the store keeps state for but the config does not list
    /// (`storeKeeps`), their revisions after their cursors in the room (none where they have none). A
    /// creation gives them nothing: which rooms they want is in a config this node does not have (back
    /// in one, such an endpoint starts at the room's head, as a new one does), and no room event.
    public func notices(_ event: WebhookEvent, room: String, time: Int64) -> [WebhookNotice] {
        let others = event == .roomDeleted ? unconfigured.withLock { $0 } : []
        return Self.notices(event, room: room, time: time, endpoints: endpoints)
            + others.map { WebhookNotice.owed(endpoint: $0, room: room, deletedAt: time) }
    }

    /// `notices(_:room:time:)` for `endpoints`, without a dispatcher (the `import` command writes a
    /// new room's `room.created` with it, for the hubs to deliver).
    public static func notices(_ event: WebhookEvent, room: String, time: Int64,
                               endpoints: [WebhookEndpoint]) -> [WebhookNotice] {
        let wantRevisions = endpoints.filter { $0.wants(.revision, of: room) }.map(\.url)
        let owed = event != .roomDeleted ? [] : wantRevisions.map { WebhookNotice.owed(endpoint: $0, room: room, deletedAt: time) }
        let starts = event != .roomCreated ? [] : wantRevisions.map { WebhookNotice.startsAtZero(endpoint: $0, room: room, life: time) }
        return owed + starts + endpoints.filter { $0.wants(event, of: room) }
            .map { WebhookNotice(endpoint: $0.url, room: room, event: event.rawValue, time: time) }
    }

    /// `room` was loaded from the store (not made here): the notices the store keeps for it are read
    /// before anything of it is delivered (a room the `import` command made while the hub ran: its
    /// `room.created` waited for a restart, and came after the revisions that followed); in cluster
    /// mode also the revisions owed of its earlier lives (`updateForRoom`). Never blocks.
    public func roomLoaded(room: String) {
        state.withLock { state in
            guard !state.stopped else { return }
            for index in endpoints.indices
            where endpoints[index].wants(.revision, of: room) || endpoints[index].wants(.roomCreated, of: room) {
                updateForRoom(LaneKey(endpoint: index, room: room), in: &state) { $0.mayHaveNotices() }
            }
        }
    }

    /// `update` for the hub's news of `key`'s room. In cluster mode a lane the news makes here may follow
    /// lives of the room another node made, deleted and could not deliver (it died, or its endpoint failed): what
    /// they left in the store (their room events, the revisions they owed) is read and delivered
    /// first, in order, as a scan or a start would. It came after this node's own events of the room,
    /// from the next scan, once the lane was done (an operator's pass: a room made again here got its
    /// events and revisions out before the earlier lives' `room.created` and `room.deleted`).
    /// `inCluster: false`: no catch-up in cluster mode (only while the start has not given the room its lane).
    private func updateForRoom(_ key: LaneKey, in state: inout DispatchState, inCluster: Bool = true,
                               _ change: (inout DeliveryLane) -> Void) {
        // One node, while the start has not given the room its lane: its kept notices and the revisions
        // owed of its earlier lives are read the same way (a model test of the lane found a restarted
        // hub's news overtake the start: a room loaded first posted its earlier life's `room.deleted`
        // before the revisions that life owed, which the start had not said were there).
        if leases == nil && state.starting { state.caughtUp.insert(key) }
        let catchUp = ((leases != nil && inCluster) || (leases == nil && state.starting)) && state.lanes[key] == nil
        update(key, in: &state) { lane in
            if catchUp {
                lane.mayHaveNotices()
                lane.mayBeOwed()
            }
            change(&lane)
        }
    }

    /// `room` was created at `time` (milliseconds since the epoch): endpoints that want `room.created`
    /// are told, and every matching endpoint delivers the room's revisions from the first. Never blocks.
    public func roomCreated(room: String, time: Int64) {
        roomEvent(.roomCreated, room: room, time: time) { lane, notice, _ in lane.created(notice, at: time) }
    }

    /// `room` was deleted at `time`: the revisions an endpoint had not been sent (which the store kept
    /// with the deletion, `notices`) are delivered, then `room.deleted` to the endpoints that want it;
    /// the room's cursors go. Never blocks.
    public func roomDeleted(room: String, time: Int64) {
        roomEvent(.roomDeleted, room: room, time: time) { lane, notice, endpoint in
            lane.deleted(notice, owed: endpoint.wants(.revision, of: room), at: time)
        }
    }

    private func roomEvent(_ event: WebhookEvent, room: String, time: Int64,
                           _ apply: (inout DeliveryLane, RoomNotice?, WebhookEndpoint) -> Void) {
        let indices = endpoints.indices.filter { endpoints[$0].rooms.contains { $0.matches(room) } }
        state.withLock { state in
            state.recent[room] = nil
            for index in indices {
                let notice = endpoints[index].events.contains(event) ? RoomNotice(event: event, time: time) : nil
                updateForRoom(LaneKey(endpoint: index, room: room), in: &state) { apply(&$0, notice, endpoints[index]) }
            }
        }
    }

    /// Lets a failing endpoint try again: every room's delivery resumes from its cursor, the item that
    /// failed first, with a new give-up period. An endpoint that is not failing is left as it is (one
    /// still retrying keeps its backoff, its give-up period and its `retrying` state). Returns false if
    /// no endpoint has this URL.
    @discardableResult
    public func reenable(url: String) -> Bool {
        guard let index = endpoints.firstIndex(where: { $0.url == url }) else { return false }
        reenable(index)
        return true
    }

    /// `reenable(url:)` for the endpoint the metrics and the log call `name`.
    @discardableResult
    public func reenable(name: String) -> Bool {
        guard let index = endpoints.firstIndex(where: { $0.name == name }) else { return false }
        reenable(index)
        return true
    }

    private func reenable(_ index: Int) {
        state.withLock { state in
            guard state.endpoints[index].failing else { return }
            state.endpoints[index].failing = false
            metrics[index].failing(false)
            for key in state.lanes.keys where key.endpoint == index {
                update(key, in: &state) { $0.clearFailures() }
            }
        }
        logger.info("webhook endpoint re-enabled", metadata: ["endpoint": "\(endpoints[index].name)"])
    }

    /// Every endpoint as it stands, in configuration order (for `GET /v1/webhooks`).
    public func status() -> [WebhookStatus] {
        state.withLock { state in
            endpoints.indices.map { index in
                let endpoint = endpoints[index], counts = state.endpoints[index]
                let health: WebhookStatus.State = counts.failing ? .failing : counts.retrying > 0 ? .retrying : .ok
                return WebhookStatus(url: endpoint.url, name: endpoint.name, rooms: endpoint.rooms.map(\.text),
                                     events: WebhookEvent.allCases.filter { endpoint.events.contains($0) },
                                     state: health, backlog: counts.backlog, delivered: counts.delivered,
                                     lastError: counts.lastError, lastSuccess: counts.lastSuccess)
            }
        }
    }

    /// Stops every lane (a POST in flight is cancelled: it is delivered again after a restart) and
    /// closes the HTTP client. Calls after it record nothing.
    public func shutdown() async {
        let tasks = state.withLock { state in
            state.stopped = true
            return Array(state.tasks.values)
        }
        endpointsReader.withLock { $0 }?.cancel()
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        // What was delivered and not yet written goes to the store now, so a clean stop repeats nothing.
        let unwritten = state.withLock { state in
            state.lanes.compactMap { key, lane in lane.unwritten.map { (endpoints[key.endpoint], key.room, $0, lane.life) } }
        }
        for (endpoint, room, rev, life) in unwritten {
            _ = await storeCall("write the webhook cursor", ["endpoint": "\(endpoint.name)", "room": "\(room)"]) { store in
                try store.setWebhookCursor(endpoint: endpoint.url, room: room, rev: rev, life: life)
            }
        }
        await poster?.shutdown()
    }

    // MARK: Lanes

    private func endpointIndices(wanting event: WebhookEvent, of room: String) -> [Int] {
        endpoints.indices.filter { endpoints[$0].wants(event, of: room) }
    }

    /// Changes a lane, keeps its endpoint's backlog and retrying counts (and the backlog gauge) in
    /// step, and starts a task for it if it has none. Call with the state locked.
    @discardableResult
    private func update<T>(_ key: LaneKey, in state: inout DispatchState, _ change: (inout DeliveryLane) -> T) -> T {
        var lane = state.lanes[key] ?? DeliveryLane()
        let (backlog, retrying) = (lane.backlog, lane.isRetrying)
        let result = change(&lane)
        state.endpoints[key.endpoint].backlog += lane.backlog - backlog
        state.endpoints[key.endpoint].retrying += (lane.isRetrying ? 1 : 0) - (retrying ? 1 : 0)
        if lane.backlog != backlog { metrics[key.endpoint].backlog(state.endpoints[key.endpoint].backlog) }
        if !lane.running && !state.stopped && (!state.endpoints[key.endpoint].failing || lane.hasStoreWork) {
            lane.running = true
            state.tasks[key] = Task.detached { [self] in await drive(key) }
        }
        state.lanes[key] = lane
        return result
    }

    /// The lane's next step; when it is `.stop`, the lane's task is done (and a lane with nothing
    /// left of its room is dropped).
    private func next(_ key: LaneKey) -> DeliveryLane.Step {
        state.withLock { state in
            guard var lane = state.lanes[key] else { return .stop }
            let step = lane.next(endpointFailing: state.endpoints[key.endpoint].failing || state.stopped,
                                 stopping: state.stopped, chunk: policy.chunk,
                                 now: now(), cursorBatch: policy.cursorBatch, cursorInterval: policy.cursorInterval)
            if case .stop = step {
                state.tasks[key] = nil
                if lane.isEmpty {
                    state.lanes[key] = nil
                    if leases != nil { state.droppedDuringScan.insert(key) }
                    return step
                }
            }
            state.lanes[key] = lane
            return step
        }
    }

    /// Changes a lane from its task (which is running, so no task is started).
    private func withLane(_ key: LaneKey, _ change: (inout DeliveryLane) -> Void) {
        state.withLock { state in update(key, in: &state, change) }
    }

    /// A lane's task: steps until the lane has nothing to do, its endpoint fails, or shutdown. In
    /// cluster mode it first holds the room (or, if another node does, drops the lane: that node delivers).
    private func drive(_ key: LaneKey) async {
        let endpoint = endpoints[key.endpoint], room = key.room
        let lane: Logger.Metadata = ["endpoint": "\(endpoint.name)", "room": "\(room)"]
        if leases != nil, !(await hold(key)) { return }
        while !Task.isCancelled {
            switch next(key) {
            case .stop:
                return
            case .loadNotices:
                guard let kept = await storeCall("read the webhook notices", lane, { store in
                    try store.webhookNotices(endpoint: endpoint.url).filter { $0.room == room }
                }) else { continue }
                withLane(key) { lane in lane.noticesRead(kept.compactMap(RoomNotice.init(kept:))) }
            case .loadCursor:
                guard let stored = await storeCall("read the webhook cursors", lane, { store in
                    try store.webhookCursorRecords(endpoint: endpoint.url)[room]
                }) else { continue }
                withLane(key) { lane in lane.loaded(stored) }
            case .resetCursor(let reset, let life):
                guard await leasesCertain() else { return }
                guard await storeCall("reset the webhook cursor", lane, { store in
                    try store.resetWebhookCursor(endpoint: endpoint.url, room: room, to: reset == .zero ? 0 : nil, life: life)
                    return true
                }) != nil else { continue }
                withLane(key) { lane in lane.didReset(reset) }
            case .forgetNotice(let notice):
                guard await leasesCertain() else { return }
                let kept = WebhookNotice(endpoint: endpoint.url, room: room, event: notice.event.rawValue, time: notice.time,
                                         revision: notice.revision)
                guard await storeCall("remove a delivered webhook notice", lane, { store in
                    try store.removeWebhookNotice(kept)
                    return true
                }) != nil else { continue }
                withLane(key) { lane in lane.forgot(notice) }
            case .loadOwed(let after, let limit):
                guard let kept = await storeCall("read the revisions owed", lane, { store in
                    try store.owedRevisions(endpoint: endpoint.url, room: room, after: after, limit: limit)
                }) else { continue }
                withLane(key) { lane in lane.owedLoaded(kept.compactMap(RoomNotice.init(kept:)), after: after, limit: limit) }
            case .writeCursor(let rev, let life):
                guard await leasesCertain() else { return }
                guard let landed = await storeCall("write the webhook cursor", lane, { store in
                    try store.setWebhookCursor(endpoint: endpoint.url, room: room, rev: rev, life: life)
                }) else { continue }
                if !landed {
                    // The store's cursor counts in another life of the room: made again since the write
                    // was asked for (the lane has moved on), or by a process the lane did not hear (it
                    // reads the cursor again and goes on from the room's life).
                    logger.debug("a webhook cursor of another life of the room is not written",
                                 metadata: lane.merging(["rev": "\(rev)"]) { $1 })
                }
                let time = now()
                withLane(key) { lane in lane.wrote(rev, now: time, landed: landed) }
            case .read(let after, let through, let generation):
                var revisions = state.withLock { $0.recent[room]?.revisions(after: after, through: through) }
                if revisions == nil {
                    revisions = await storeCall("read revisions", lane, { store in
                        try store.revisions(room: room, after: after, through: through)
                    })
                }
                guard let revisions else { continue }
                let missing = state.withLock { state in
                    update(key, in: &state) { $0.read(revisions, after: after, through: through, generation: generation) }
                }
                if !missing.isEmpty {
                    logger.error("revisions the store does not have are skipped by the webhook",
                                 metadata: ["endpoint": "\(endpoint.name)", "room": "\(room)", "revisions": "\(missing)"])
                }
            case .post(let item, let generation):
                await post(item, generation: generation, key: key)
            }
        }
    }

    /// Waits until the node is sure of its leases; false if the lane was stopped meanwhile. A node woken
    /// from a pause may have lost its rooms to another node without knowing yet: it posts nothing and
    /// writes no cursor or notice until it is sure, or until the loss is found (the lane is stopped
    /// then). A frozen node's pass (session 42) saw a woken node send a room's revisions again after
    /// the new holder had, after the room was deleted and made again; a review, that its cursor write
    /// could land in the new room's row.
    private func leasesCertain() async -> Bool {
        if let leases {
            while !leases.leasesCertain {
                try? await Task.sleep(for: .milliseconds(50))
                if Task.isCancelled { return false }
            }
        }
        return !Task.isCancelled
    }

    /// One attempt at the lane's front item; on failure, the wait before the next (or giving up).
    private func post(_ item: LaneItem, generation: Int, key: LaneKey) async {
        let endpoint = endpoints[key.endpoint], metrics = self.metrics[key.endpoint]
        let payload = WebhookPayload(room: key.room, item: item)
        guard let poster else { return }  // a lane has an endpoint, and so the dispatcher a poster
        guard await leasesCertain() else { return }
        let outcome = await poster.post(url: endpoint.url, body: payload.body,
                                        signature: payload.signature(secret: endpoint.secret, unixSeconds: now() / 1000),
                                        timeout: policy.timeout)
        if Task.isCancelled { return }
        let time = now()
        if outcome == .ok {
            // From the commit: an imported revision keeps its original time, but was committed when
            // its room was made (the lane knows when, for a room made while this hub runs).
            let committed = max(payload.time, state.withLock { $0.lanes[key]?.bornAt } ?? 0)
            metrics.lag(milliseconds: time - committed)
        }
        metrics.count(outcome)
        if outcome == .ok {
            state.withLock { state in
                update(key, in: &state) { $0.delivered(item, generation: generation) }
                state.endpoints[key.endpoint].delivered += 1
                state.endpoints[key.endpoint].lastSuccess = time
                // The error stays while another room of this endpoint still retries (it says why).
                if state.endpoints[key.endpoint].retrying == 0 { state.endpoints[key.endpoint].lastError = nil }
            }
            return
        }
        let error = "\(payload.id): \(outcome.description)"
        let unit = random()
        let retry = state.withLock { state in
            let retry = update(key, in: &state) { $0.failed(item, now: time, policy: policy, unit: unit, generation: generation) }
            state.endpoints[key.endpoint].lastError = error
            if retry == .giveUp { state.endpoints[key.endpoint].failing = true }
            return retry
        }
        switch retry {
        case .moveOn:
            return
        case .giveUp:
            metrics.failing(true)
            logger.error("webhook endpoint failing: deliveries stopped until it is re-enabled",
                         metadata: ["endpoint": "\(endpoint.name)", "room": "\(key.room)", "error": "\(error)"])
        case .after(let wait):
            logger.warning("webhook delivery failed; retrying",
                           metadata: ["endpoint": "\(endpoint.name)", "room": "\(key.room)", "error": "\(error)",
                                      "retryInMs": "\(wait)"])
            try? await Task.sleep(for: .milliseconds(wait))
        }
    }

    /// Runs a store call on the store's queue. On failure: logs it, waits `policy.backoffStart`, and
    /// returns nil (the lane tries the step again).
    private func storeCall<T: Sendable>(_ what: String, _ metadata: Logger.Metadata,
                                        _ body: @escaping @Sendable (any PeopleStore) throws -> T) async -> T? {
        let store = self.store
        let result: Result<T, any Error> = await withCheckedContinuation { continuation in
            storeQueue.async { continuation.resume(returning: Result { try body(store) }) }
        }
        switch result {
        case .success(let value):
            return value
        case .failure(let error):
            logger.warning("webhook dispatcher cannot \(what)",
                           metadata: metadata.merging(["error": "\(error)"]) { $1 })
            try? await Task.sleep(for: .milliseconds(policy.backoffStart))
            return nil
        }
    }

    // MARK: Cluster mode

    /// Holds the lane's room for its webhooks (joining the hub's hold when the room is loaded here),
    /// or drops the lane if another node holds the room: that node delivers it. A store failure is
    /// retried after `backoffStart`.
    private func hold(_ key: LaneKey) async -> Bool {
        while !Task.isCancelled {
            switch await claim(key.room) {
            case true?:
                return true
            case false?:
                state.withLock { state in drop(key, in: &state) }
                return false
            case nil:
                try? await Task.sleep(for: .milliseconds(policy.backoffStart))
            }
        }
        return false
    }

    /// Holds `room` for its webhooks: true once this node holds it (it may already), false when
    /// another node does, nil when the store could not say (logged).
    private func claim(_ room: String) async -> Bool? {
        guard let leases else { return true }
        while true {
            let losses = state.withLock { state -> Int? in state.held.contains(room) ? nil : state.leaseLosses }
            guard let losses else { return true }
            let outcome: Result<LeaseOutcome, any Error> = await withCheckedContinuation { continuation in
                leaseQueue.async { continuation.resume(returning: Result { try leases.acquire(room: room, for: .webhooks) }) }
            }
            switch outcome {
            case .failure(let error):
                logger.warning("webhook dispatcher cannot take a room's lease",
                               metadata: ["room": "\(room)", "error": "\(error)"])
                return nil
            case .success(.acquired):
                let kept = state.withLock { state -> Bool in
                    guard state.leaseLosses == losses else { return false }
                    state.held.insert(room)
                    return true
                }
                if kept { return true }  // else the leases were lost meanwhile: ask again
            case .success:
                return false
            }
        }
    }

    /// Lets go of every held room whose lanes have all been idle for `releaseAfter` (or that has none
    /// left): its lanes are dropped (a later one starts from the store's cursor) and its lease is
    /// released, unless the hub still has the room loaded here. Call with the state locked.
    private func releaseIdleRooms(now: Int64, in state: inout DispatchState) {
        guard let leases, !state.held.isEmpty else { return }
        var ready: [String: Bool] = [:]
        for (key, lane) in state.lanes where state.held.contains(key.room) {
            let idle = !lane.running && lane.idleSince.map { now - $0 >= policy.releaseAfter } == true
            ready[key.room] = (ready[key.room] ?? true) && idle
        }
        let rooms = state.held.filter { ready[$0] != false }
        for room in rooms {
            for key in state.lanes.keys where key.room == room { drop(key, in: &state) }
            state.held.remove(room)
            state.recent[room] = nil
            leaseQueue.async { leases.release(room: room, for: .webhooks) }
        }
    }

    /// Forgets a lane, and its share of its endpoint's counts. Call with the state locked.
    private func drop(_ key: LaneKey, in state: inout DispatchState) {
        state.tasks[key] = nil
        guard let lane = state.lanes.removeValue(forKey: key) else { return }
        if leases != nil { state.droppedDuringScan.insert(key) }
        state.endpoints[key.endpoint].backlog -= lane.backlog
        if lane.isRetrying { state.endpoints[key.endpoint].retrying -= 1 }
        if lane.backlog != 0 { metrics[key.endpoint].backlog(state.endpoints[key.endpoint].backlog) }
    }

    /// The store connection holding the leases broke: another node may take any of these rooms now,
    /// so every lane stops (a POST in flight may still land: it is repeated, with its id, by whoever
    /// delivers next). The next scan takes back the rooms that are free.
    private func leasesLost() {
        let lanes = state.withLock { state -> Int in
            state.leaseLosses += 1
            state.held = []
            state.recent = [:]
            for task in state.tasks.values { task.cancel() }
            let count = state.lanes.count
            for key in Array(state.lanes.keys) { drop(key, in: &state) }
            return count
        }
        logger.error("lost the room leases: webhook deliveries stop until a scan takes back the rooms no node holds",
                     metadata: ["lanes": "\(lanes)"])
    }

    /// Now and every `scanInterval`: rooms with deliveries left that have no lane here are held, if no
    /// other node holds them, and get their lanes (a room another node holds is left to it).
    private func scanForOrphans() async {
        while !state.withLock({ $0.stopped }) {
            for index in endpoints.indices { await scan(endpoint: index) }
            try? await Task.sleep(for: .milliseconds(policy.scanInterval))
        }
    }

    private func scan(endpoint index: Int) async {
        let endpoint = endpoints[index], url = endpoint.url
        state.withLock { state in state.droppedDuringScan = state.droppedDuringScan.filter { $0.endpoint != index } }
        guard let backlog = await storeCall("read the webhook backlog", ["endpoint": "\(endpoint.name)"], { try $0.webhookBacklog(endpoint: url) })
        else { return }
        var notices: [String: [RoomNotice]] = [:]
        if backlog.contains(where: \.noticed) {
            guard let kept = await storeCall("read the webhook notices", ["endpoint": "\(endpoint.name)"], { try $0.webhookNotices(endpoint: url) })
            else { return }
            for notice in kept {
                guard let found = RoomNotice(kept: notice) else { continue }
                notices[notice.room, default: []].append(found)
            }
        }
        for found in backlog {
            let key = LaneKey(endpoint: index, room: found.room)
            let kept = notices[found.room] ?? []
            let head = endpoint.wants(.revision, of: found.room) ? found.head : nil
            let free = { (state: DispatchState) in
                !state.stopped && state.lanes[key] == nil && !state.droppedDuringScan.contains(key)
            }
            guard head != nil || found.noticed, state.withLock({ free($0) }) else { continue }
            // Held first, so that a room another node delivers costs no lane (nor a backlog shown) here.
            guard await claim(found.room) == true else { continue }
            state.withLock { state in
                guard free(state) else { return }
                update(key, in: &state) { lane in
                    // Noticed: room events, or revisions of a deleted room owed (read by the lane).
                    if found.noticed { lane.mayBeOwed(count: found.owed) }
                    if !kept.isEmpty { lane.restored(kept) }
                    if let head { lane.resume(head: head, stored: found.storedCursor) }
                }
            }
        }
    }

    // MARK: Start

    /// Reads every endpoint's cursors, kept notices and rooms owed revisions, then the store's rooms a
    /// page at a time, and gives each lane its cursor, head and notices; then the lanes of rooms no
    /// longer in the store that have notices or owed revisions. A room the hub's news reached first
    /// (`caughtUp`) is left to its lane, which reads the store itself.
    private func resume() async {
        // The cursors first, then the notices: a room the `import` command commits between two reads
        // is then either seen in both, or has its `room.created` read without its cursor (the lane
        // starts at 0, posts it first, and takes the store's life when its first write is refused), or
        // is seen in neither (the listing finds it; the refused write has the lane read its notices).
        // The other way round, one committed between them had its cursor without its `room.created`:
        // its revisions went out, and its `room.created` waited for the next start (a code review).
        var cursors: [Int: [String: WebhookCursor]] = [:]
        for index in endpoints.indices where endpoints[index].events.contains(.revision) {
            let url = endpoints[index].url
            while cursors[index] == nil {
                if state.withLock({ $0.stopped }) { return }
                cursors[index] = await storeCall("read the webhook cursors", ["endpoint": "\(endpoints[index].name)"]) {
                    try $0.webhookCursorRecords(endpoint: url)
                }
            }
        }
        // Endpoint → room → notices kept and not delivered; endpoint → rooms with revisions owed.
        var kept: [Int: [String: [RoomNotice]]] = [:]
        var owed: [Int: [String: Int]] = [:]
        for index in endpoints.indices {
            let url = endpoints[index].url, named: Logger.Metadata = ["endpoint": "\(endpoints[index].name)"]
            while kept[index] == nil || owed[index] == nil {
                if state.withLock({ $0.stopped }) { return }
                guard let notices = await storeCall("read the webhook notices", named, { try $0.webhookNotices(endpoint: url) }),
                      let rooms = await storeCall("read the revisions owed", named, { try $0.revisionsOwed(endpoint: url) })
                else { continue }
                var byRoom: [String: [RoomNotice]] = [:]
                for notice in notices {
                    guard let found = RoomNotice(kept: notice) else { continue }
                    byRoom[notice.room, default: []].append(found)
                }
                (kept[index], owed[index]) = (byRoom, rooms)
            }
        }
        var stored: Set<String> = []
        let pageSize = 500
        var after: String?
        while true {
            if state.withLock({ $0.stopped }) { return }
            guard let page = await storeCall("list the rooms", [:], { [after] in
                try $0.listRooms(after: after, prefix: nil, limit: pageSize)
            }) else { continue }
            for summary in page { stored.insert(summary.name) }
            state.withLock { state in
                for summary in page {
                    for index in endpoints.indices where !state.caughtUp.contains(LaneKey(endpoint: index, room: summary.name)) {
                        let notices = kept[index]?[summary.name] ?? []
                        let owedCount = owed[index]?[summary.name]
                        let wantsRevisions = endpoints[index].wants(.revision, of: summary.name)
                        guard wantsRevisions || !notices.isEmpty || owedCount != nil else { continue }
                        let cursor = cursors[index]?[summary.name]
                        update(LaneKey(endpoint: index, room: summary.name), in: &state) {
                            if let owedCount { $0.mayBeOwed(count: owedCount) }
                            if !notices.isEmpty { $0.restored(notices) }
                            if wantsRevisions { $0.resume(head: summary.rev, stored: cursor) }
                        }
                    }
                }
            }
            guard page.count == pageSize, let last = page.last else { break }
            after = last.name
        }
        // Rooms deleted (their notices and owed revisions outlive them).
        state.withLock { state in
            defer {
                state.starting = false
                state.caughtUp = []
            }
            for index in endpoints.indices {
                let rooms = Set(kept[index]?.keys ?? [:].keys).union(owed[index]?.keys ?? [:].keys)
                for room in rooms where !stored.contains(room) && !state.caughtUp.contains(LaneKey(endpoint: index, room: room)) {
                    update(LaneKey(endpoint: index, room: room), in: &state) { lane in
                        if let owedCount = owed[index]?[room] { lane.mayBeOwed(count: owedCount) }
                        if let notices = kept[index]?[room] { lane.restored(notices) }
                    }
                }
            }
        }
    }
}

/// One endpoint's lane of one room.
struct LaneKey: Hashable, Sendable {
    var endpoint: Int
    var room: String
}

/// What one endpoint has done and how it stands.
struct EndpointCounts: Sendable {
    var failing = false
    var backlog = 0
    /// Lanes whose front item has failed and is being retried.
    var retrying = 0
    var delivered = 0
    var lastError: String?
    var lastSuccess: Int64?
}

/// The dispatcher's state, behind its lock.
struct DispatchState: Sendable {
    var lanes: [LaneKey: DeliveryLane] = [:]
    /// The latest durable revisions of each room, as the hub handed them (a copy of the store's).
    var recent: [String: RecentRevisions] = [:]
    var endpoints: [EndpointCounts]
    var tasks: [LaneKey: Task<Void, Never>] = [:]
    var stopped = false
    /// Cluster mode: the rooms this node holds for their webhooks (`LeaseHolder.webhooks`).
    var held: Set<String> = []
    /// Counts the times every lease was lost: a hold taken across a loss is not trusted.
    var leaseLosses = 0
    /// One node: the start (`resume`) has not yet given every room its lane. The hub serves meanwhile,
    /// so its news of a room can come before the start's; such a room is `caughtUp`.
    var starting = true
    /// Lanes the hub's news made or changed while `starting`: each reads what the store keeps for its
    /// room itself (as in cluster mode), and the start leaves them alone (what it read may be older
    /// than the news).
    var caughtUp: Set<LaneKey> = []
    /// Cluster mode: lanes dropped since their endpoint's scan began reading the store. That scan's
    /// reads may be older than what they delivered, so it leaves their rooms to the next scan (it made
    /// a new lane from them, which delivered again what the dropped one had: room events it had
    /// delivered and removed, revisions after the cursor it had since written).
    var droppedDuringScan: Set<LaneKey> = []

    init(endpoints: Int) {
        self.endpoints = Array(repeating: EndpointCounts(), count: endpoints)
    }
}

/// A room's latest durable revisions, at most `capacity`, in order without gaps: what lanes that keep
/// up read instead of the store.
struct RecentRevisions: Sendable {
    static let capacity = 1_000
    private(set) var revisions: [Revision] = []

    mutating func add(_ new: [Revision]) {
        for revision in new {
            if let last = revisions.last, revision.number != last.number + 1 {
                if revision.number <= last.number { continue }  // already here
                revisions.removeAll()                              // a gap: start again from here
            }
            revisions.append(revision)
        }
        if revisions.count > Self.capacity { revisions.removeFirst(revisions.count - Self.capacity) }
    }

    /// Revisions `after + 1 ... through`, if all are here.
    func revisions(after: Int, through: Int) -> [Revision]? {
        guard let first = revisions.first, first.number <= after + 1, let last = revisions.last, last.number >= through,
              through > after else { return nil }
        let start = after + 1 - first.number
        return Array(revisions[start...(through - first.number)])
    }
}
