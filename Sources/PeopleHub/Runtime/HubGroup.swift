import Logging
import PeopleCore
import PeopleStore
import Synchronization
import WebSocketTransport

/// What the hubs of every service thread share, from any thread: who may connect (connection limits
/// and draining are per hub, not per thread), how many rooms are open (`limits.maxRooms`), whether
/// memory is short (`limits.maxMemoryMB`) and the HTTP callers' rates (`limits.opsPerSecond`).
final class HubShared: Sendable {
    let admission: Mutex<Admission>
    /// Rooms in memory or loading, summed over the hubs (each adds its changes).
    let rooms = Atomic<Int>(0)
    /// HTTP API callers' buckets, by user and peer.
    let httpRates = Mutex(CallerRates())
    /// The process is over `limits.maxMemoryBytes` (and has not yet fallen under 90 % of it): no room
    /// is loaded or created. Set by the first hub's sweep, read by every hub.
    let memoryShort = Atomic<Bool>(false)

    init(_ configuration: HubConfiguration) {
        admission = Mutex(Admission(allowedOrigins: configuration.allowedOrigins, open: configuration.auth == nil,
                                     limits: configuration.limits))
    }
}

/// The hub on every service thread of a server: one `Hub` per thread, each the one owner of the rooms
/// whose names hash to it (`thread(forRoom:threads:)`): their state machines, commits, encoding, sessions,
/// HTTP requests and webhook notices. The transport calls the delegate on each connection's and
/// request's *home* thread, which `homeThread(forPath:threads:)` makes the room's owner; a client
/// served by another thread has its frames handed to the owner and the owner's sends handed back
/// (`WebSocketConnection`). Requests that name no room (`/healthz`, `/metrics`, listing rooms,
/// webhooks) go to the first hub. With one service thread this is one `Hub`.
public final class HubGroup: WebSocketServerDelegate, @unchecked Sendable {
    public let hubs: [Hub]
    private let store: any PeopleStore
    private weak var server: WebSocketServer?

    public init(threads: Int, configuration: HubConfiguration, store: any PeopleStore, logger: Logger,
                metrics: HubMetrics = HubMetrics(), renderMetrics: (@Sendable () -> String)? = nil,
                runtime: HubRuntime = HubRuntime()) {
        let shared = HubShared(configuration)
        self.store = store
        hubs = (0..<max(1, threads)).map { index in
            Hub(configuration: configuration, store: store, logger: logger, metrics: metrics,
                renderMetrics: renderMetrics, runtime: runtime, shared: shared, index: index)
        }
        for hub in hubs { hub.group = self }
    }

    /// Where durable revisions and room births and deaths are told; the same for every hub.
    public var webhooks: (any HubWebhooks)? {
        get { hubs[0].webhooks }
        set { for hub in hubs { hub.webhooks = newValue } }
    }

    /// Connects hub i to the server's context i (one per service thread; made with the server, so
    /// before any connection), and tells every hub when the store's room leases are lost.
    public func attach(to server: WebSocketServer) {
        precondition(server.contexts.count == hubs.count, "one hub per service thread")
        self.server = server
        for (hub, context) in zip(hubs, server.contexts) { hub.attach(thread: context) }
        hubs[0].leases?.onLeasesLost { [hubs] in
            for hub in hubs { hub.leasesLost() }
        }
    }

    /// Stops taking messages on every thread, lets the server close every connection with 1001 and stop,
    /// then hands the store a snapshot of every room changed since its last one. The store stays open:
    /// the caller closes it (which waits for those writes) once nothing else writes to it, the webhook
    /// deliverer's last cursors included.
    public func drain() async {
        guard let server else { return }
        for hub in hubs { hub.beginDrain() }
        await server.drain(code: 1001, reason: "hub shutting down")
        for hub in hubs { hub.finishDrain() }
    }

    // MARK: Which thread owns what

    /// The owner of room `name` among `threads` service threads: a stable hash of the name (FNV-1a),
    /// so that every thread, and every restart, agrees without asking anyone.
    static func thread(forRoom name: some StringProtocol, threads: Int) -> Int {
        guard threads > 1 else { return 0 }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int(hash % UInt64(threads))
    }

    /// The owner of the room a path names (`/v1/rooms/ROOM`, and the HTTP API's `/v1/rooms/ROOM/…`);
    /// 0 for every other path.
    static func thread(forPath path: String, threads: Int) -> Int {
        guard threads > 1, path.hasPrefix(RoomName.pathPrefix) else { return 0 }
        let name = path.dropFirst(RoomName.pathPrefix.count).prefix { $0 != "/" }
        return name.isEmpty ? 0 : thread(forRoom: name, threads: threads)
    }

    // MARK: The transport's delegate

    public func homeThread(forPath path: String, threads: Int) -> Int {
        Self.thread(forPath: path, threads: threads)
    }

    private func hub(of connection: WebSocketConnection) -> Hub { hubs[min(connection.homeThread, hubs.count - 1)] }

    public func refusal(of request: UpgradeRequest) -> UpgradeRefusal? { hubs[0].refusal(of: request) }
    public func claims(_ request: HTTPRequest) -> Bool { hubs[0].claims(request) }
    public func didOpen(_ connection: WebSocketConnection) { hub(of: connection).didOpen(connection as any ClientConnection) }

    public func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        hub(of: connection).didReceive(connection as any ClientConnection, message: message, binary: binary)
    }

    public func didReceiveOversized(_ connection: WebSocketConnection, bytes: Int) {
        hub(of: connection).didReceiveOversized(connection as any ClientConnection, bytes: bytes)
    }

    public func didClose(_ connection: WebSocketConnection) { hub(of: connection).didClose(connection as any ClientConnection) }
    public func didOverflow(_ connection: WebSocketConnection) { hub(of: connection).didOverflow(connection as any ClientConnection) }

    public func handle(_ exchange: any HTTPExchange) -> Bool {
        hubs[Self.thread(forPath: exchange.request.path, threads: hubs.count)].handle(exchange)
    }
}

extension Hub {
    /// The hub that owns room `name`: this one alone, else the group's owner.
    func owner(ofRoom name: String) -> Hub {
        guard let hubs = group?.hubs, hubs.count > 1 else { return self }
        return hubs[HubGroup.thread(forRoom: name, threads: hubs.count)]
    }

    /// Asks the owner of each of `rooms` (on its own thread) what `read` says of it, and calls `then`
    /// here (this hub's thread) with every answer that was not nil, once all are in.
    func ask<Answer>(owners rooms: [String], _ read: @escaping (Hub, String) -> Answer?,
                     then: @escaping (Hub, [String: Answer]) -> Void) {
        var byOwner: [ObjectIdentifier: (hub: Hub, rooms: [String])] = [:]
        for room in rooms {
            let owner = owner(ofRoom: room)
            byOwner[ObjectIdentifier(owner), default: (owner, [])].rooms.append(room)
        }
        let gathered = Gathered<Answer>(left: byOwner.count)
        guard !byOwner.isEmpty else { return then(self, [:]) }
        for (owner, rooms) in byOwner.values {
            owner.back(rooms) { [weak self] owner, rooms in
                var answers: [String: Answer] = [:]
                for room in rooms { answers[room] = read(owner, room) }
                guard let self else { return }
                self.back(answers) { hub, answers in
                    gathered.answers.merge(answers) { first, _ in first }
                    gathered.left -= 1
                    if gathered.left == 0 { then(hub, gathered.answers) }
                }
            }
        }
    }
}

/// Answers gathered from several hubs, on the asking hub's thread.
private final class Gathered<Answer> {
    var answers: [String: Answer] = [:]
    var left: Int
    init(left: Int) { self.left = left }
}
