import Foundation
import Logging
import PeopleCore
import PeopleStore
import Synchronization
import WebSocketTransport

/// The hub: rooms and sessions over client connections. It carries out what the core decides.
///
/// Everything here runs on its service thread (one of the transport's, or a test's); work that blocks
/// or waits (store reads, lease calls, token checks, timers) runs elsewhere and comes back through
/// `back(_:_:)`. With several service threads there is one `Hub` per thread (`HubGroup`), each the
/// only owner of the rooms whose names hash to it, sharing admission, the room count and HTTP rates
/// (`HubShared`). Each concern has its own file:
///
/// | concern | where |
/// |---|---|
/// | who may connect (path, origin, connection limits) | `Admission/Admission.swift` |
/// | one connection's protocol (hello, auth, waiting for the room, parse order, rate limit) | `Sessions/ConnectionMachine.swift`, `Sessions/RateGate.swift`; carried out by `Sessions/Hub+Sessions.swift` |
/// | rooms: loading, leases, redirects, joins and catch-ups | `Rooms/Hub+Rooms.swift`, `Rooms/RoomHost.swift` |
/// | upkeep: idle rooms unloaded, snapshots, the store health check | `Rooms/Hub+Upkeep.swift` |
/// | effects: records to the store, sends held behind commits, presence | `Effects/Hub+Effects.swift` |
/// | plain HTTP: `/healthz`, `/metrics` | `HTTP/HTTPRouter.swift`, `HTTP/Hub+Routes.swift` |
/// | the transport's callbacks, routed to one hub per service thread | `Runtime/HubGroup.swift` |
public final class Hub: @unchecked Sendable {
    public let configuration: HubConfiguration
    let store: any PeopleStore
    /// Room ownership when several nodes share the store (PostgreSQL); nil for a single node.
    let leases: (any RoomLeases)?
    /// The store said its leases are lost and this hub has not dropped its rooms yet (set at once on
    /// the store's thread, cleared by `dropAllRooms` here): the store may already have a new session
    /// whose heartbeat says it is sure again (a review, session 42). See `leasesUnsure`.
    let leasesDropping = Atomic<Bool>(false)
    let logger: Logger
    let metrics: HubMetrics
    let runtime: HubRuntime
    /// Renders `/metrics` (the Prometheus registry); nil when metrics are off.
    let renderMetrics: (@Sendable () -> String)?
    var routes = HTTPRouter()

    /// The thread that owns this state; set once by `attach`, before any connection.
    private(set) weak var service: (any ServiceThread)?

    /// Rooms in memory, or being read from the store (with the hellos waiting for them). Their number
    /// goes into the hub-wide count (`roomCount`, `peoplekeeper_rooms`) as it changes.
    var rooms: [String: RoomSlot] = [:] {
        didSet {
            guard rooms.count != roomsCounted else { return }
            let total = shared.rooms.add(rooms.count - roomsCounted, ordering: .relaxed).newValue
            roomsCounted = rooms.count
            metrics.rooms.record(total)
        }
    }
    private var roomsCounted = 0
    /// A memory check is reading the heap (off the service thread): the next sweep does not start another.
    var memoryCheckUnderWay = false
    /// Sweeps until malloc is asked to hand its freed pages back (0: not asked for): after a long
    /// export or import, once what it held is gone (`releaseMemorySoon`).
    var releaseMemoryIn = 0
    /// What the hubs of every service thread share: admission, the number of rooms, memory, HTTP rates.
    let shared: HubShared
    /// This hub's service thread among the group's (0 alone); hub 0 checks the store and answers `/healthz`.
    let index: Int
    /// The hubs of the other service threads (nil alone, as in the in-process tests).
    weak var group: HubGroup?
    var draining = false {
        didSet { shared.admission.withLock { $0.draining = draining } }
    }
    /// Lease calls, in the order the service thread makes them (a release queued when a room unloads
    /// must run before the acquire of a hello that comes right after).
    let leaseCalls = DispatchQueue(label: "peoplekeeper.hub.leases")
    /// How many times this node lost every lease at once (`dropAllRooms`): a load that took its lease
    /// before the latest loss has none (`RoomLoad.leaseGeneration`).
    var leaseGeneration = 0
    private var sweepTimer: DispatchSourceTimer?
    /// The store's health as `/healthz` reports it.
    var storeHealth = StoreHealth()
    /// `store failed; room dropped` and `room cannot be loaded`: one line every 10 s at most each.
    var storeFailureLog = LogThrottle(.critical, "store failed; room dropped and its connections closed",
                                      countKey: "droppedSinceLastLine")
    var loadFailureLog = LogThrottle(.critical, "room cannot be loaded", countKey: "failedSinceLastLine")
    /// `a client of a deleted room turned away`: a client that reconnects after any close would say it
    /// at every attempt.
    var turnedAwayLog = LogThrottle(.info, "a client of a deleted room turned away", countKey: "turnedAwaySinceLastLine")
    /// The last one-off reader id given to an HTTP read.
    var nextReader = 0
    /// `peoplekeeper_http_*`: requests by route and status, and their durations.
    let httpMetrics = HTTPMetrics()
    /// Where durable revisions and room births and deaths are told (webhooks); nil for none.
    public var webhooks: (any HubWebhooks)?

    enum RoomSlot {
        case loading(RoomLoad)
        case loaded(RoomHost)
    }

    /// The hellos and HTTP requests that wait for their room to come from the store.
    final class RoomLoad {
        /// In the order they came: `loaded` answers them in that order, so a `DELETE` runs after the
        /// hellos and requests that came before it, and those after it wait for what comes next.
        private(set) var waiters: [Waiter] = []
        /// Where an import's request goes among `waiters` once its body is checked: after those that
        /// came before its `PUT`.
        var importAt = 0

        enum Waiter {
            case hello(any ClientConnection)
            /// An HTTP request; a room the store does not have is created only for a hello.
            case request((RoomOutcome) -> Void)
        }

        var waiting: [any ClientConnection] { waiters.compactMap { if case .hello(let c) = $0 { c } else { nil } } }
        var requests: [(RoomOutcome) -> Void] { waiters.compactMap { if case .request(let r) = $0 { r } else { nil } } }
        func wait(_ connection: any ClientConnection) { waiters.append(.hello(connection)) }
        /// Takes out the hellos for which `turnAway` says true.
        func removeHellos(where turnAway: (any ClientConnection) -> Bool) {
            waiters.removeAll { if case .hello(let connection) = $0 { turnAway(connection) } else { false } }
        }
        func add(_ request: @escaping (RoomOutcome) -> Void, at index: Int? = nil) {
            waiters.insert(.request(request), at: min(index ?? waiters.count, waiters.count))
        }
        /// What the room is created from when the store does not have it (an HTTP `PUT`'s import);
        /// nil: only a hello creates it, from the seed.
        var creator: RoomImport?
        /// An HTTP `PUT` whose body is being checked off the service thread: if the store does not have
        /// the room, the load waits for that check (`parked`) instead of creating the room from the
        /// seed for a hello that came meanwhile; the import decides what the room is made of.
        var importing = false
        /// The store said it does not have the room while `importing`: the load goes on when the check ends.
        var parked = false
        /// `Hub.leaseGeneration` when this load asked for its lease: if every lease was lost since,
        /// the lease went with them, and the load starts again (lease first) instead of serving the
        /// room unleased beside the node that takes it next (a code review).
        var leaseGeneration = 0
        /// When the store said a room of this name was deleted (`PeopleStore.deletion(of:)`), if it
        /// has none: hellos of that room are turned away (`ConnectionMachine.roomWasDeleted`).
        var deletedAt: Int64?
    }

    /// Why no other room can be loaded: `limits.maxRooms`, or `limits.maxMemoryMB`.
    enum RoomShortage { case rooms, memory }

    /// What an HTTP request waiting for a room gets.
    enum RoomOutcome {
        case loaded(RoomHost)
        /// The store has no such room (nothing was created).
        case absent
        /// Another node owns it: the room's URL there.
        case elsewhere(String)
        case failed(String)
        case full(RoomShortage)
        /// Created by this load (an HTTP `PUT`'s `create`).
        case created(RoomHost)
    }

    /// What the hub keeps on each connection: its protocol state.
    final class Client {
        var machine: ConnectionMachine
        init(_ machine: ConnectionMachine) { self.machine = machine }
    }

    public convenience init(configuration: HubConfiguration, store: any PeopleStore, logger: Logger,
                            metrics: HubMetrics = HubMetrics(), renderMetrics: (@Sendable () -> String)? = nil,
                            runtime: HubRuntime = HubRuntime()) {
        self.init(configuration: configuration, store: store, logger: logger, metrics: metrics,
                  renderMetrics: renderMetrics, runtime: runtime, shared: HubShared(configuration), index: 0)
    }

    /// One hub of a group (`HubGroup`): the `index`th service thread's, sharing `shared`.
    init(configuration: HubConfiguration, store: any PeopleStore, logger: Logger, metrics: HubMetrics,
         renderMetrics: (@Sendable () -> String)?, runtime: HubRuntime, shared: HubShared, index: Int) {
        self.shared = shared
        self.index = index
        var configuration = configuration
        configuration.roomPolicy.maxPeople = configuration.limits.maxPeoplePerRoom
        configuration.roomPolicy.keptSessions = configuration.limits.keptSessionsPerRoom
        self.configuration = configuration
        self.store = store
        self.leases = store as? any RoomLeases
        self.logger = logger
        self.metrics = metrics
        self.renderMetrics = renderMetrics
        self.runtime = runtime
        addRoutes()
    }

    func host(_ name: String) -> RoomHost? {
        if case .loaded(let host)? = rooms[name] { host } else { nil }
    }

    var clock: Int64 { runtime.clock() }

    /// Rooms in memory or loading, on every service thread (`limits.maxRooms` counts these). Two
    /// threads opening new rooms at the same instant may both pass a check at the limit: it is exact
    /// with one service thread, and over by at most the number of threads less one.
    var roomCount: Int { shared.rooms.load(ordering: .relaxed) }

    /// Connects the hub to the server context whose thread runs it (a group's hubs: one each;
    /// `HubGroup` is the server's delegate), and starts the once-a-second sweep that unloads idle rooms
    /// and checks the store.
    func attach(thread: WebSocketServer) {
        attach(service: thread)
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "peoplekeeper.hub.sweep"))
        timer.schedule(deadline: .now() + 1, repeating: 1)
        timer.setEventHandler { [weak self] in self?.back(()) { hub, _ in hub.sweep() } }
        timer.resume()
        sweepTimer = timer
    }

    /// Connects the hub to the thread that owns it (the in-process tests pass their own, and call
    /// `sweep()` themselves).
    func attach(service: any ServiceThread) {
        self.service = service
        guard group == nil else { return }  // the group tells every hub
        leases?.onLeasesLost { [weak self] in self?.leasesLost() }
    }

    /// The store lost every room lease at once (any thread): unsure from now until the rooms are
    /// dropped on the service thread (`leasesUnsure`; a new session's heartbeat could settle the
    /// store's doubt before the drop).
    func leasesLost() {
        leasesDropping.store(true, ordering: .sequentiallyConsistent)
        back(()) { hub, _ in hub.dropAllRooms(reason: "lost the room leases") }
    }

    /// Comes back to the service thread from another thread and runs `work` there with `value`; nothing
    /// happens if the hub is gone or the thread has stopped. `value` may hold service-thread objects:
    /// they only pass through the other thread, untouched. The one way back, for every hop.
    func back<Value>(_ value: Value, _ work: @escaping (Hub, Value) -> Void) {
        let box = UncheckedSendable((value, work))
        service?.perform { [weak self] in
            guard let self else { return }
            box.value.1(self, box.value.0)
        }
    }

    /// The first half of `HubGroup.drain`: no more sweeps, no new connections or messages; change-feed readers
    /// waiting for a revision are answered 503.
    func beginDrain() {
        sweepTimer?.cancel()
        back(()) { hub, _ in
            hub.draining = true
            if hub.index == 0 { hub.logger.info("draining: no new connections or messages; closing connections with 1001") }
            // Change-feed readers waiting for a revision get their answer before their connection goes.
            let closing = HTTPFailure.shuttingDown.response(json: true)
            for case .loaded(let host) in hub.rooms.values {
                for waiter in host.feedWaiters { waiter.call.exchange.respond(closing) }
                host.feedWaiters.removeAll()
            }
        }
    }

    /// The second half, once the server has stopped (its service threads are gone: the rooms are the
    /// caller's now): a snapshot of every room changed since its last one.
    func finishDrain() {
        for case .loaded(let host) in rooms.values where !host.broken { saveSnapshotIfChanged(host) }
        storeFailureLog.flush(logger)
        loadFailureLog.flush(logger)
        turnedAwayLog.flush(logger)
    }
}
