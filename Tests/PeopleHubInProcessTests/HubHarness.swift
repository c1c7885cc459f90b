import Foundation
import Logging
import PeopleCore
@testable import PeopleHub
import PeopleStore
import Synchronization
import Testing
@testable import WebSocketTransport

/// A client connection with no socket: what the hub sends is decoded and kept, a close is recorded.
final class FakeConnection: ClientConnection {
    let peer: String
    let path: String
    var context: AnyObject?
    private(set) var isClosing = false
    var maxMessageBytes = 1 << 20
    /// Every message sent, in order (replaceable presence lists included).
    private(set) var sent: [ServerMessage] = []
    private(set) var closeCode: UInt16?
    private(set) var closeReason: String?
    private(set) var deadline: Int?

    init(peer: String, path: String) {
        self.peer = peer
        self.path = path
    }

    @discardableResult
    func send(_ message: OutboundMessage) -> Bool {
        guard !isClosing else { return false }
        switch ServerMessage.decode(message.bytes) {
        case .success(let decoded): sent.append(decoded)
        case .failure(let error): Issue.record("the hub sent an undecodable frame: \(error)")
        }
        return true
    }

    func close(code: UInt16, reason: String) {
        guard !isClosing else { return }
        isClosing = true
        closeCode = code
        closeReason = reason
    }

    func setDeadline(seconds: Int, code: UInt16, reason: String) { deadline = seconds }

    /// Messages other than presence lists (which come and go with timing).
    var replies: [ServerMessage] {
        sent.filter { if case .presence = $0 { false } else { true } }
    }

    var errors: [ServerMessage.ErrorMessage] {
        sent.compactMap { if case .error(let e) = $0 { e } else { nil } }
    }

    var welcome: ServerMessage.Welcome? {
        sent.lazy.compactMap { if case .welcome(let w) = $0 { w } else { nil } }.first
    }

    func acks() -> [ServerMessage.Ack] { sent.compactMap { if case .ack(let a) = $0 { a } else { nil } } }

    func ops() -> [ServerMessage.Ops] { sent.compactMap { if case .ops(let o) = $0 { o } else { nil } } }
}

/// The test's own service thread: work handed to `perform` waits until the test runs it, on the
/// test's thread, which is the only one that calls into the hub.
final class TestServiceThread: ServiceThread {
    private let queue = Mutex<[@Sendable () -> Void]>([])

    @discardableResult
    func perform(_ work: @escaping @Sendable () -> Void) -> Bool {
        queue.withLock { $0.append(work) }
        return true
    }

    /// Runs what is queued (and what that queues) until nothing is; returns how many ran.
    @discardableResult
    func runPending() -> Int {
        var ran = 0
        while true {
            let batch = queue.withLock { queue in
                defer { queue.removeAll() }
                return queue
            }
            if batch.isEmpty { return ran }
            for work in batch { work() }
            ran += batch.count
        }
    }
}

/// A clock the test moves.
final class TestClock: Sendable {
    private let now: Mutex<Int64>
    /// `start`: milliseconds since 1970 (tests of tokens start at the real time, which jwt-kit reads).
    init(start: Int64 = 1_000_000) { now = Mutex(start) }
    var milliseconds: Int64 { now.withLock { $0 } }
    func advance(by milliseconds: Int64) { now.withLock { $0 += milliseconds } }
}

/// A store whose appends the test can hold (durable only when released) or fail, and whose loads can
/// fail, which counts the revisions read and can act as a store without checkpoints; otherwise the
/// in-memory store.
class ScriptedStore: PeopleStore, @unchecked Sendable {
    let inner = InMemoryStore()
    private let lock = NSLock()
    private var holding = false
    private var waiting: [@Sendable (StoreError?) -> Void] = []
    var failLoads = false
    /// Fail every deletion (the room stays).
    var failDeletes = false
    /// Answer every checkpoint read with none (a store written before checkpoints were kept).
    var withoutCheckpoints = false
    private var read = 0
    private var checkpointsGiven: [Int] = []

    /// Revisions read so far (`revisions(room:after:through:)`, every call).
    var revisionsRead: Int { lock.withLock { read } }
    /// The revisions of the checkpoints handed out so far.
    var checkpointsRead: [Int] { lock.withLock { checkpointsGiven } }

    var kind: String { "scripted" }

    /// From now on appends are pending until `release` or `fail`.
    func hold() { lock.withLock { holding = true } }

    /// Makes everything pending durable (in order) and stops holding.
    func release(error: StoreError? = nil) {
        let done = lock.withLock {
            holding = false
            defer { waiting.removeAll() }
            return waiting
        }
        for completion in done { completion(error) }
    }

    /// Appends pending (held, not yet released).
    var pendingCount: Int { lock.withLock { waiting.count } }

    /// Settles the oldest pending append only (durable, or failed with `error`); holding goes on.
    func releaseOne(error: StoreError? = nil) {
        let done: (@Sendable (StoreError?) -> Void)? = lock.withLock { waiting.isEmpty ? nil : waiting.removeFirst() }
        done?(error)
    }

    /// Settles the newest pending write only: an order no real store has (theirs is the order the
    /// writes were handed over), to open a window a test shows is closed anyway.
    func releaseNewest(error: StoreError? = nil) {
        let done: (@Sendable (StoreError?) -> Void)? = lock.withLock { waiting.isEmpty ? nil : waiting.removeLast() }
        done?(error)
    }

    func append(_ entries: [JournalEntry], room: String,
                whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        // As the durable stores: kept only once durable (after a failure, nothing held is kept).
        let inner = inner
        return lock.withLock {
            guard holding else {
                _ = inner.append(entries, room: room) { _ in }
                return .durable
            }
            waiting.append { error in
                if error == nil { _ = inner.append(entries, room: room) { _ in } }
                whenDurable(error)
            }
            return .pending
        }
    }

    func save(_ snapshot: RoomSnapshot, room: String, notices: [WebhookNotice]) {
        inner.save(snapshot, room: room, notices: notices)
    }

    /// Rooms created with a history (`create`), in order.
    var created: [String] { lock.withLock { creations } }
    private var creations: [String] = []

    /// As the durable stores: all or nothing. While holding, the room is kept only when `release`
    /// makes it durable (a failure leaves no trace of it).
    func create(_ snapshot: RoomSnapshot, notices: [WebhookNotice], entries: [JournalEntry],
                checkpoints: [Checkpoint], room: String,
                whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        let inner = inner
        let keep: @Sendable () -> Void = {
            _ = inner.create(snapshot, notices: notices, entries: entries, checkpoints: checkpoints, room: room) { _ in }
        }
        return lock.withLock {
            creations.append(room)
            guard holding else {
                keep()
                return .durable
            }
            waiting.append { error in
                if error == nil { keep() }
                whenDurable(error)
            }
            return .pending
        }
    }

    func load(room: String) throws(StoreError) -> StoredRoom? {
        if lock.withLock({ failLoads }) { throw StoreError(.io, "the disk is on fire") }
        return try inner.load(room: room)
    }

    /// What a read of revisions gives instead of the store's (a room made again under a reader).
    var rewriteRead: (@Sendable (_ after: Int, _ through: Int, [Revision]) -> [Revision])?

    func revisions(room: String, after: Int, through: Int) throws(StoreError) -> [Revision] {
        var revisions = try inner.revisions(room: room, after: after, through: through)
        if let rewriteRead { revisions = rewriteRead(after, through, revisions) }
        lock.withLock { read += revisions.count }
        return revisions
    }

    func keepCheckpoint(_ checkpoint: Checkpoint, room: String) throws(StoreError) {
        try inner.keepCheckpoint(checkpoint, room: room)
    }

    func checkpoint(room: String, atOrBelow rev: Int) throws(StoreError) -> Checkpoint? {
        guard !lock.withLock({ withoutCheckpoints }) else { return nil }
        let checkpoint = try inner.checkpoint(room: room, atOrBelow: rev)
        if let checkpoint { lock.withLock { checkpointsGiven.append(checkpoint.revision) } }
        return checkpoint
    }

    func listRooms(after: String?, prefix: String?, limit: Int) throws(StoreError) -> [StoredRoomSummary] {
        try inner.listRooms(after: after, prefix: prefix, limit: limit)
    }
    func deleteRoom(_ room: String, notices: [WebhookNotice]) throws(StoreError) -> Bool {
        if failDeletes { throw StoreError(.io, "disk full") }
        return try inner.deleteRoom(room, notices: notices)
    }
    func deletion(of room: String) throws(StoreError) -> Int64? { try inner.deletion(of: room) }
    func webhookNotices(endpoint: String) throws(StoreError) -> [WebhookNotice] { try inner.webhookNotices(endpoint: endpoint) }
    func owedRevisions(endpoint: String, room: String, after: OwedPosition?, limit: Int) throws(StoreError) -> [WebhookNotice] {
        try inner.owedRevisions(endpoint: endpoint, room: room, after: after, limit: limit)
    }
    func revisionsOwed(endpoint: String) throws(StoreError) -> [String: Int] { try inner.revisionsOwed(endpoint: endpoint) }
    func removeWebhookNotice(_ notice: WebhookNotice) throws(StoreError) { try inner.removeWebhookNotice(notice) }
    func webhookCursorRecords(endpoint: String) throws(StoreError) -> [String: WebhookCursor] {
        try inner.webhookCursorRecords(endpoint: endpoint)
    }
    func setWebhookCursor(endpoint: String, room: String, rev: Int, life: Int64?) throws(StoreError) -> Bool {
        try inner.setWebhookCursor(endpoint: endpoint, room: room, rev: rev, life: life)
    }
    func resetWebhookCursor(endpoint: String, room: String, to rev: Int?, life: Int64?) throws(StoreError) {
        try inner.resetWebhookCursor(endpoint: endpoint, room: room, to: rev, life: life)
    }
    func webhookEndpoints() throws(StoreError) -> [StoredWebhookEndpoint] { try inner.webhookEndpoints() }
    func forgetWebhookEndpoint(_ endpoint: String) throws(StoreError) -> StoredWebhookEndpoint? {
        try inner.forgetWebhookEndpoint(endpoint)
    }

    func check() throws(StoreError) {}
    func close() {}
}

/// A scripted store that leases rooms as a cluster node's does: every room is this node's, each
/// acquire is counted, and `loseLeases` tells the hub they are all gone (its connection broke).
final class LeasingStore: ScriptedStore, RoomLeases, @unchecked Sendable {
    let node = "n1"
    var advertisedURL = "ws://n1.test:8080"
    private let state = Mutex<(acquired: [String], held: Set<String>, handlers: [@Sendable () -> Void])>(([], [], []))

    /// The rooms acquired so far, in order (each hold counted).
    var acquired: [String] { state.withLock { $0.acquired } }
    /// The rooms leased now: acquired and not released since (one release frees a room, as a
    /// PostgreSQL store's does however many times its node acquired it).
    var held: Set<String> { state.withLock { $0.held } }

    func acquire(room: String, for holder: LeaseHolder) throws(StoreError) -> LeaseOutcome {
        state.withLock {
            $0.acquired.append(room)
            $0.held.insert(room)
        }
        return .acquired
    }

    func release(room: String, for holder: LeaseHolder) { _ = state.withLock { $0.held.remove(room) } }

    func onLeasesLost(_ handler: @escaping @Sendable () -> Void) { state.withLock { $0.handlers.append(handler) } }

    func loseLeases() {
        for handler in state.withLock({ $0.handlers }) { handler() }
    }

    /// Whether the node is sure of its leases (false: as after a pause, `PauseWatch`).
    let certain = Mutex(true)
    var leasesCertain: Bool { certain.withLock { $0 } }
}

/// The heap the hub reads (nil: unknown) and the times it handed freed memory back.
final class FakeMemory: Sendable {
    let heap = Mutex<Int?>(nil)
    let releases = Mutex(0)
}

/// Background work, run at once on the calling thread, or (`hold`) kept until the test runs it.
final class TestBackground: Sendable {
    private let state = Mutex<(holding: Bool, queued: [@Sendable () -> Void])>((false, []))

    func run(_ work: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.holding { state.queued.append(work) }
            return !state.holding
        }
        if now { work() }
    }

    /// From now on background work waits for `next`.
    func hold() { state.withLock { $0.holding = true } }

    /// How many pieces of held background work wait for `next`.
    var waiting: Int { state.withLock { $0.queued.count } }

    /// Runs the oldest (or, `newestFirst`, the newest) waiting piece of background work; false if none
    /// waits.
    @discardableResult
    func next(newestFirst: Bool = false) -> Bool {
        guard let work = state.withLock({ $0.queued.isEmpty ? nil : newestFirst ? $0.queued.removeLast() : $0.queued.removeFirst() })
        else { return false }
        work()
        return true
    }
}

/// What a hub logged, every level: each line's message and metadata.
final class LogRecorder: Sendable {
    struct Line: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let recorded = Mutex<[Line]>([])
    var lines: [Line] { recorded.withLock { $0 } }

    struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }.mapValues { "\($0)" }
            recorder.recorded.withLock { $0.append(Line(level: event.level, message: "\(event.message)", metadata: all)) }
        }
    }
}

/// A hub in-process: fake connections, the test's service thread and clock, background work run at
/// once on the calling thread (its answer queued for the service thread, like the real thing) unless
/// the test holds it (`background.hold()`) to step it. What it logs is in `logs`.
final class HubHarness {
    let hub: Hub
    let service = TestServiceThread()
    let logs = LogRecorder()
    let clock: TestClock
    let background = TestBackground()
    /// The hub's timers (`runtime.after`): they fire at once unless held (a long poll's wait, presence).
    let timers = TestBackground()
    /// What the hub reads as its heap in use, and how often it handed freed memory back.
    let memory = FakeMemory()
    let anyStore: any PeopleStore
    private var peers = 0

    /// The store, when it is the scripted one (the default).
    var store: ScriptedStore { anyStore as! ScriptedStore }

    /// `sessions`: the first letters of the session ids it makes (hubs sharing a store need their own,
    /// as real ones have random ids).
    init(configure: (inout HubConfiguration) -> Void = { _ in }, store: any PeopleStore = ScriptedStore(),
         sessions: String = "s", clockStart: Int64 = 1_000_000) {
        clock = TestClock(start: clockStart)
        var configuration = HubConfiguration(seed: PeopleModel.tutorialSeed)
        configure(&configuration)
        anyStore = store
        let clock = clock
        (store as? ScriptedStore)?.inner.timeDeletions { clock.milliseconds }
        let ids = Mutex(0)
        let (background, memory, timers) = (background, memory, timers)
        let runtime = HubRuntime(
            clock: { clock.milliseconds },
            makeSessionID: { sessions + String(ids.withLock { $0 += 1; return $0 }) },
            background: { background.run($0) },
            after: { _, work in timers.run(work) },
            heapInUse: { memory.heap.withLock { $0 } },
            releaseFreeMemory: { memory.releases.withLock { $0 += 1 } })
        hub = Hub(configuration: configuration, store: store,
                  logger: Logger(label: "test", factory: { [logs] _ in LogRecorder.Handler(recorder: logs) }), runtime: runtime)
        hub.attach(service: service)
    }

    /// An upgrade from `peer` to `path`: nil when the hub refuses it, else the open connection.
    func connect(_ path: String = "/v1/rooms/r", peer: String? = nil, origin: String? = nil,
                 host: String? = "hub.test:8080") -> FakeConnection? {
        peers += 1
        let address = peer ?? "10.0.0.\(peers)"
        let request = UpgradeRequest(path: path, query: "", origin: origin, peer: address, host: host)
        guard hub.refusal(of: request) == nil else { return nil }
        let connection = FakeConnection(peer: address, path: path)
        hub.didOpen(connection)
        return connection
    }

    /// Sends a text frame and lets whatever it started finish.
    func send(_ text: String, on connection: FakeConnection) async {
        hub.didReceive(connection, message: Array(text.utf8), binary: false)
        await settle()
    }

    func send(_ message: ClientMessage, on connection: FakeConnection) async {
        await send(message.json.text, on: connection)
    }

    /// Hands the hub a hello and lets nothing it starts finish (the test steps it).
    func hello(_ connection: FakeConnection, as user: String) {
        hub.didReceive(connection, message: Array(ClientMessage.hello(.init(protocolVersion: 1, user: user, client: "test")).json.text.utf8),
                       binary: false)
    }

    func sendBinary(_ bytes: [UInt8], on connection: FakeConnection) async {
        hub.didReceive(connection, message: bytes, binary: true)
        await settle()
    }

    /// The transport closed the connection.
    func disconnect(_ connection: FakeConnection) async {
        hub.didClose(connection)
        await settle()
    }

    /// A connection whose hello was answered with a welcome (in open mode, or with `token`).
    func joined(_ user: String, room: String = "r", token: String? = nil, resume: SessionID? = nil,
                since: Int? = nil) async throws -> FakeConnection {
        let connection = try #require(connect("/v1/rooms/\(room)"))
        await send(.hello(.init(protocolVersion: 1, user: user, token: token, client: "test", resume: resume,
                                since: since)), on: connection)
        // A token is checked on Swift's cooperative pool, which a parallel test run can keep busy for
        // longer than `settle`'s patience: wait for the answer itself.
        await settle { connection.welcome != nil || !connection.sent.isEmpty || connection.isClosing }
        _ = try #require(connection.welcome, "no welcome; got \(connection.sent)")
        return connection
    }

    /// Runs the service thread's queue until it stays empty; work on other threads (a token check's
    /// Task, a lease call) gets up to `patience` to come back.
    func settle(patience: Duration = .milliseconds(30)) async {
        let clock = ContinuousClock()
        var quietSince = clock.now
        while true {
            if service.runPending() > 0 {
                quietSince = clock.now
                continue
            }
            if clock.now - quietSince >= patience { return }
            try? await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Runs the queue until `condition` holds (a token check, a lease call), for at most 30 s: a token
    /// is checked on Swift's cooperative pool, which a parallel run on two cores kept busy for more
    /// than 5 s once (session 17). A passing test waits only as long as its answer takes.
    func settle(until condition: () -> Bool) async {
        let deadline = ContinuousClock().now + .seconds(30)
        while !condition(), ContinuousClock().now < deadline {
            if service.runPending() == 0 { try? await Task.sleep(for: .milliseconds(2)) }
        }
    }
}

/// An HTTP request with no socket: the response is kept.
final class FakeExchange: HTTPExchange {
    let request: HTTPRequest
    private(set) var response: HTTPResponse?
    var isOpen: Bool { response == nil }

    init(_ request: HTTPRequest) { self.request = request }

    func respond(_ response: HTTPResponse) {
        guard self.response == nil else { Issue.record("answered twice: \(response)"); return }
        self.response = response
    }
}

extension HTTPResponse {
    var json: JSON? { try? JSON.parse(body) }
}

extension HubHarness {
    /// Starts an HTTP request; the exchange gets its answer as the hub's work settles.
    func start(_ method: String, _ path: String, query: [String: String] = [:], body: String = "",
               token: String? = nil, peer: String = "127.0.0.1", headers: [String: String] = [:]) -> FakeExchange {
        var headers = headers
        if let token { headers["authorization"] = "Bearer " + token }
        let request = HTTPRequest(method: method, path: path,
                                  query: query.sorted { $0.key < $1.key }.map { .init(name: $0.key, value: $0.value) },
                                  headers: headers, peer: peer, body: Array(body.utf8))
        let exchange = FakeExchange(request)
        if !hub.handle(exchange) { Issue.record("no route took \(method) \(path)") }
        return exchange
    }

    /// An HTTP request and its answer once everything it started has settled.
    func http(_ method: String, _ path: String, query: [String: String] = [:], body: String = "",
              token: String? = nil, peer: String = "127.0.0.1", headers: [String: String] = [:]) async -> HTTPResponse? {
        let exchange = start(method, path, query: query, body: body, token: token, peer: peer, headers: headers)
        await settle()
        return exchange.response
    }
}

extension ClientMessage {
    static func submit(seq: Int, base: Int, _ ops: [Diff], label: String? = nil) -> ClientMessage {
        .submit(.init(seq: seq, base: base, ops: ops, label: label))
    }
}
