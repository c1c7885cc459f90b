import Foundation
import Logging
import NIOCore
import NIOPosix
import PeopleCore
import PeopleStore
import PostgresNIO
import Synchronization

/// The cluster store: PostgreSQL, shared by several hub nodes, each room owned by one node at a time.
///
/// The journal and snapshots have the SQLite store's shape, written by the same group-commit thread
/// (a batch of appends is one multi-row `INSERT`, one commit). Room ownership is a PostgreSQL
/// session advisory lock held on the node's writer connection: it lasts exactly as long as that
/// connection, so when a node dies PostgreSQL frees its rooms at once. `room_owners` tells the other
/// nodes where a room is served (for `redirect`). The journal's primary key (room, position) fences
/// a node that lost its lease without noticing: its next append collides and fails.
///
/// A node that vanishes without closing its connection (power, network) is noticed by PostgreSQL's TCP
/// keepalives on that session, which the writer connection sets (`SET tcp_keepalives_*`,
/// `tcp_user_timeout`) so that its leases are freed about `leaseTimeout` seconds later, not after the
/// operating system's two hours. The node's own sockets give up on a silent network as soon (`open`).
public final class PostgresStore: PeopleStore, RoomLeases, ClusterNodes, @unchecked Sendable {
    public let node: String
    /// Where clients reach this node; settable until the first lease (a node on port 0 learns its
    /// port after the store is open).
    public var advertisedURL: String {
        get { lock.withLock { advertised } }
        set { lock.withLock { advertised = newValue } }
    }
    private var advertised: String
    private let configuration: PostgresConnection.Configuration
    /// Where the server is (`open` makes the socket itself).
    private let host: String
    private let port: Int
    /// `sslmode=prefer`: the configuration to try again with in plain text when the server refuses the
    /// user over TLS (`pg_hba.conf` `hostssl … reject` beside `hostnossl`), as libpq does.
    private let plainFallback: PostgresConnection.Configuration?
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let logger: Logger
    /// The connection that writes and holds the leases; guarded by `lock` (the writer thread, lease
    /// calls and reconnection take turns on it).
    private let lock = NSLock()
    private var writerConnection: PostgresConnection?
    /// The same, for `close` to end it while the writer holds `lock` (a commit stuck on the network).
    private let writerHandle = Mutex<PostgresConnection?>(nil)
    /// The writer connection's backend pid (0 before the first): what `proveLeasesAside` asks about.
    private let writerPid = Atomic<Int>(0)
    /// Tests: called on the writer's thread once a batch's records are encoded, before its
    /// transaction begins (a test looks at the writer session's state then).
    package let afterEncoding = Mutex<(@Sendable () -> Void)?>(nil)
    /// Rooms whose lease this node holds, and what on the node needs each (`LeaseHolder`).
    private var owned: [String: Set<LeaseHolder>] = [:]
    /// Rooms whose lease went with a lost writer connection and was not taken again (guarded by
    /// `lock`): their snapshots are not written either (`fence`).
    private var lostLeases: Set<String> = []
    /// `close` has begun: no connection is made any more (a stop during a partition would wait for
    /// each attempt's connect timeout).
    private let closing = Atomic<Bool>(false)
    /// Up to four idle connections for reads and for writes that wait for no group commit
    /// (`withPooledConnection`); guarded by `poolLock`.
    private var pool: [PostgresConnection] = []
    private let poolLock = NSLock()
    private var writer: GroupCommitWriter!
    private var leasesLostHandlers: [@Sendable () -> Void] = []
    /// A serving node's own pauses and silences (`leasesCertain`), looked at every 250 ms by
    /// `watchForPauses`; told of every statement answered on the writer connection (`run`).
    private let pauses: Mutex<PauseWatch>
    /// A check after a pause is under way (`checkAfterPause`).
    private let checkingAfterPause = Atomic<Bool>(false)
    /// When the hub last asked for a check (`check`; `PauseWatch.now()`): the watch keeps the node sure
    /// between the hub's checks only while they come (a node whose checking thread is stuck must fall
    /// silent, so that the others end its session and serve its rooms).
    private let hubChecked = Atomic<Int64>(0)
    /// The last finding of `serverAnswers` and when (guarded by `probeLock`, held while asking).
    private var lastProbe: (at: NIODeadline, answer: ServerAnswer)?
    private let probeLock = NSLock()
    /// Connection ids for postgres-nio's logs (connections are opened with and without `lock`).
    private let connectionIDs = Atomic<Int>(0)
    /// Seconds after which PostgreSQL gives up on this node's writer connection once it stops
    /// answering (its leases then free).
    private let leaseTimeout: Int
    /// A serving node: its writer connection holds the node's own lock (`init`) and says it lives in
    /// `nodes` at every check.
    private let claimsNode: Bool
    /// The background build of the schema's concurrent indexes (`buildIndexes`).
    private final class IndexBuild: @unchecked Sendable {
        let lock = NSLock()
        var connection: PostgresConnection?
        var stopping = false
        var started = false
        let done = DispatchSemaphore(value: 0)
    }
    private let indexBuild = IndexBuild()
    /// The sessions of silent holders this node has ended (guarded by `lock`): each is logged once.
    private var ended: Set<Int> = []
    /// Whether a writer connection was ever made (guarded by `lock`): a later connect is a reconnect.
    private var writerConnected = false
    /// The webhook endpoints (ids) this serving node's config lists, said in its heartbeat.
    private let webhooks: [String]
    /// This node's row in `nodes`, written on its writer connection (so with that session's pid).
    private var heartbeat: PostgresQuery {
        """
        INSERT INTO nodes (node, pid, seen, webhooks) VALUES (\(node), pg_backend_pid(), now(), \(webhooks))
        ON CONFLICT (node) DO UPDATE SET pid = EXCLUDED.pid, seen = EXCLUDED.seen, webhooks = EXCLUDED.webhooks
        """
    }
    /// Seconds a holder may go without a heartbeat before a node that wants one of its rooms ends its
    /// session: `cluster.leaseTimeoutSeconds`, but never below three checks' worth (15 s).
    private var silentAfter: Int { max(leaseTimeout, 15) }

    /// Another session holds this node's lock: a node started with the same `cluster.nodeId`, or an
    /// earlier run of this one that PostgreSQL has not seen end yet. At a reconnect (`again`) the
    /// holder is this node's own lost session: the store is unavailable until PostgreSQL ends it (its
    /// keepalives do, within `leaseTimeout`).
    private struct NodeTaken: Error, CustomStringConvertible {
        let node: String
        var again = false
        var description: String {
            again
                ? "this node's previous PostgreSQL session still holds cluster.nodeId \(node); waiting for PostgreSQL to end it (cluster.leaseTimeoutSeconds)"
                : "another session holds cluster.nodeId \(node) in PostgreSQL (a node running with the same id, or this node's earlier run not yet ended)"
        }
    }

    /// Connects to `url` (`postgres://user[:password]@host[:port]/database[?sslmode=…]`, read by
    /// `PostgresEndpoint`; a password from `password` wins), creates the tables if missing, and starts
    /// the writer. `logger` is the caller's: the store logs lost leases and unsaved snapshots there, and
    /// postgres-nio its connections.
    public convenience init(url: String, password: String? = nil, node: String, advertisedURL: String,
                            leaseTimeout: Int = 30, claimsNode: Bool = false, webhooks: [String] = [],
                            logger: Logger) throws(StoreError) {
        let endpoint: PostgresEndpoint
        do { endpoint = try PostgresEndpoint(url: url, password: password) } catch {
            throw StoreError(.invalidRequest, "storage.postgresURL \(error)")
        }
        try self.init(endpoint: endpoint, node: node, advertisedURL: advertisedURL, leaseTimeout: leaseTimeout,
                      claimsNode: claimsNode, webhooks: webhooks, logger: logger)
    }

    /// Connects to `endpoint` (TLS as its `sslmode` says), creates the tables if missing, and starts the
    /// writer. `leaseTimeout`: seconds after which PostgreSQL frees the leases of this node once it
    /// stops answering (at least 2).
    ///
    /// `claimsNode`: this is a serving node, which holds `node` as its own for as long as its writer
    /// connection lives (an advisory lock on that session): a second node started with the same
    /// `cluster.nodeId` waits up to twice `leaseTimeout`, 20 s at least (an earlier run of this node
    /// whose session PostgreSQL has not ended yet; one frozen is ended once silent), and then fails to
    /// open. The commands that read or write beside the
    /// nodes (`history`, `import`, …) do not claim it. `webhooks`: the endpoints a serving node's
    /// config lists, which its heartbeat tells the other nodes and the commands (`webhooksOfLiveNodes`).
    public init(endpoint: PostgresEndpoint, node: String, advertisedURL: String, leaseTimeout: Int = 30,
                claimsNode: Bool = false, webhooks: [String] = [], logger: Logger) throws(StoreError) {
        self.leaseTimeout = max(2, leaseTimeout)
        let opened = PauseWatch.now()
        pauses = Mutex(PauseWatch(now: opened, sureFor: PauseWatch.sureFor(leaseTimeout: self.leaseTimeout),
                                  answeredSentAt: opened))
        self.claimsNode = claimsNode
        self.webhooks = webhooks.sorted()
        host = endpoint.host
        port = endpoint.port
        configuration = endpoint.configuration
        plainFallback = endpoint.plainConfiguration
        self.node = node
        self.advertised = advertisedURL
        self.logger = logger
        do {
            // Long enough for PostgreSQL to end a vanished earlier run's session (its keepalives), and
            // for a frozen one to be found silent (`silentAfter`) and ended here.
            let wait = max(2 * self.leaseTimeout, silentAfter + 5)
            let deadline = ContinuousClock.now + .seconds(wait)
            var warned = false
            while true {
                do {
                    try lock.withLock { _ = try writerLocked() }
                    break
                } catch let taken as NodeTaken where ContinuousClock.now < deadline {
                    // This node's earlier run, frozen (its machine paused) rather than gone, holds the
                    // id: ended as another node would end it, once silent and idle past the threshold.
                    if (try? withPooledConnection({ try endSilentHolder(node, on: $0) })) == true {
                        Thread.sleep(forTimeInterval: 0.2)  // the session exits soon after the signal
                        continue
                    }
                    if !warned {
                        logger.warning("\(taken); waiting up to \(wait) s for it to end")
                        warned = true
                    }
                    Thread.sleep(forTimeInterval: 1)
                }
            }
            try migrate()
            if claimsNode { try lock.withLock { try beat(on: try writerLocked()) } }
            buildIndexes()
        } catch let taken as NodeTaken {
            try? group.syncShutdownGracefully()
            throw StoreError(.unavailable, "\(taken): give each node its own cluster.nodeId")
        } catch {
            try? group.syncShutdownGracefully()
            throw Self.storeError(error, "cannot open the PostgreSQL store at \(host):\(port) (sslmode \(endpoint.tlsMode.rawValue)): \(endpoint.explainTLS(error) ?? Self.explainAuth(error) ?? Self.describe(error))",
                                  otherwise: .unavailable)
        }
        writer = GroupCommitWriter(
            name: "pk-pg-writer", kind: "postgres", probeWrites: true,
            commit: { [unowned self] batch in
                do { try commit(batch) } catch { throw Self.storeError(error, Self.describe(error)) }
            },
            onSnapshotFailure: { room, error in
                logger.error("snapshot not saved", metadata: ["room": "\(room)", "error": "\(error)"])
            })
        if claimsNode { watchForPauses() }
    }

    public var kind: String { "postgres" }

    // MARK: Connections

    private func connect() throws -> PostgresConnection {
        let id = connectionIDs.add(1, ordering: .relaxed).newValue
        do {
            return try open(configuration, id: id)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "28000" {
            // 28000: pg_hba.conf has no entry for this connection (here: over TLS). libpq's prefer
            // then tries without TLS.
            guard let plain = plainFallback else { throw error }
            let connection = try open(plain, id: id)
            logger.warning("PostgreSQL refused this user over TLS (pg_hba.conf); connected in plain text, as sslmode prefer allows")
            return connection
        }
    }

    /// A connection to PostgreSQL whose socket gives up on a silent network as the server's side of
    /// it does (`keepalive`, as libpq's `keepalives_*` and `tcp_user_timeout`). Without them a node whose network went silent
    /// (a cable, a partition, a dead router: nothing closes) waited in its commit, its store check and
    /// its drain until the kernel gave up, about 15 minutes of retransmits, long after PostgreSQL had
    /// freed its leases; now the query fails (`run` sees the connection close) and the node drops its
    /// rooms and answers 503 until PostgreSQL is back. A slow query is not a silent network: the
    /// server's kernel acknowledges while PostgreSQL works.
    private func open(_ configuration: PostgresConnection.Configuration, id: Int) throws -> PostgresConnection {
        guard !closing.load(ordering: .relaxed) else {
            throw StoreError(.unavailable, "the store is closing: no new PostgreSQL connection is made")
        }
        let loop = group.next()
        // One deadline for the socket, TLS and the start-up exchange, as postgres-nio keeps when it
        // connects itself (not one for the socket and a fresh one for the rest).
        let deadline = NIODeadline.now() + configuration.options.connectTimeout
        let bounds = keepalive
        let tcp = NIOBSDSocket.OptionLevel.tcp
        func option(_ name: Int32) -> ChannelOptions.Types.SocketOption {
            ChannelOptions.Types.SocketOption(level: tcp, name: NIOBSDSocket.Option(rawValue: name))
        }
        let channel: any Channel
        do {
            channel = try ClientBootstrap(group: loop)
                .connectTimeout(configuration.options.connectTimeout)
                .channelOption(ChannelOptions.socketOption(.so_keepalive), value: 1)
                .channelOption(option(Int32(TCP_KEEPIDLE)), value: SocketOptionValue(bounds.idleSeconds))
                .channelOption(option(Int32(TCP_KEEPINTVL)), value: SocketOptionValue(bounds.intervalSeconds))
                .channelOption(option(Int32(TCP_KEEPCNT)), value: SocketOptionValue(bounds.probes))
                .channelOption(option(Int32(TCP_USER_TIMEOUT)), value: SocketOptionValue(bounds.userTimeoutMillis))
                .connect(host: host, port: port).wait()
        } catch {
            throw CannotConnect(underlying: error)
        }
        var established = PostgresConnection.Configuration(
            establishedChannel: channel, tls: configuration.tls, username: configuration.username,
            password: configuration.password, database: configuration.database)
        established.options = configuration.options
        established.options.connectTimeout = max(deadline - .now(), .milliseconds(1))
        // The name TLS checks the certificate against and sends as SNI, as postgres-nio does for a
        // connection it makes itself: the host, unless it is an IP address (then the peer's address).
        if established.options.tlsServerName == nil, (try? SocketAddress(ipAddress: host, port: port)) == nil {
            established.options.tlsServerName = host
        }
        do {
            return try PostgresConnection.connect(on: loop, configuration: established, id: id, logger: logger).wait()
        } catch {
            channel.close(promise: nil)
            throw error
        }
    }

    /// The writer connection, reconnecting if it was lost (then every lease it held is gone: the hub
    /// is told, so it drops the rooms it can no longer own). Call with `lock` held.
    private func writerLocked() throws -> PostgresConnection {
        if let connection = writerConnection, !connection.isClosed { return connection }
        // A reconnect (the first connection was made in `init`), also after an attempt that failed:
        // the node's own lost session may still hold its id (`NodeTaken.again`).
        let again = writerConnected
        if writerConnection != nil {
            writerConnection = nil
            let lost = owned
            owned = [:]
            lostLeases.formUnion(lost.keys)
            if !lost.isEmpty {
                // What is queued for them was made under the lost leases: never written (`breakRooms`).
                writer?.breakRooms(lost.keys, StoreError(.unavailable, "this node lost the room's lease with its PostgreSQL connection: its records were not written"))
                logger.error("lost the PostgreSQL connection holding the room leases", metadata: ["rooms": "\(lost.count)"])
                for handler in leasesLostHandlers { handler() }
            }
        }
        let connection = try connect()
        do {
            try bound(connection)
            if claimsNode {
                let key = Self.lockKey(node, kind: "node")
                guard try run("SELECT pg_try_advisory_lock(\(key))", on: connection).rows.first?.decode(Bool.self) == true else {
                    throw NodeTaken(node: node, again: again)
                }
            }
        } catch {
            // Closed before it goes (postgres-nio asserts that a connection is), whatever failed.
            _ = try? (connection.close() as EventLoopFuture<Void>).wait()
            throw error
        }
        if claimsNode, let pid = try? run("SELECT pg_backend_pid()", on: connection).rows.first?.decode(Int.self) {
            writerPid.store(pid, ordering: .relaxed)
        }
        writerConnection = connection
        writerHandle.withLock { $0 = connection }
        writerConnected = true
        return connection
    }

    /// A serving node writes a room's records only while it holds the room's lease (`owned`, emptied
    /// when the writer connection that held the leases is lost, filled again only by `acquire`):
    /// records queued under a lost connection are not written on a new one, by the commit that finds
    /// it lost, by the room-by-room retry after, or by any commit after a check or a lease call
    /// reconnected first. Another node may own those rooms now, or have deleted one (rows written after
    /// its deletion would be taken for a later room's). A review found them written. Snapshots other
    /// than a creation's are left alone: an unload gives the lease back before its snapshot commits,
    /// and a snapshot never replaces a newer one; but not the snapshot of a room whose lease went with
    /// a lost connection (the drain's, during a partition: each tried to connect again and waited out
    /// its connect timeout, holding the stop up). The commands beside the nodes hold no leases.
    /// Called before the writer connection is looked at too, so a batch refused here never waits for
    /// a reconnect.
    private func fence(_ batch: [WriterWork]) throws {
        guard claimsNode else { return }
        for work in batch {
            let room: String
            switch work {
            case .append(let name, _, _), .checkpoints(let name, _), .delete(let name, _, _, _): room = name
            case .snapshot(let name, let snapshot, _) where snapshot.position == 0: room = name
            case .snapshot(let name, _, _) where lostLeases.contains(name):
                throw StoreError(.unavailable, "this node lost room \(name)'s lease with its PostgreSQL connection: the snapshot was not written")
            case .snapshot, .probe: continue
            }
            guard owned[room] != nil else {
                throw StoreError(.unavailable, "this node does not hold room \(room)'s lease (the connection that held it was lost): its records were not written")
            }
        }
    }

    /// Runs `body` on a pooled connection (not the writer's: reads, and writes that need no group
    /// commit). A connection whose `body` threw is closed, not pooled again (it may be mid-statement;
    /// before, it was neither, and each failing call leaked one server connection). Connecting does
    /// not hold `lock`, so a slow connect never holds up commits and lease calls.
    private func withPooledConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let reused = poolLock.withLock { pool.popLast() }
        let connection = try reused.flatMap { $0.isClosed ? nil : $0 } ?? connect()
        let result: T
        do {
            result = try body(connection)
        } catch {
            if !connection.isClosed { _ = try? (connection.close() as EventLoopFuture<Void>).wait() }
            throw error
        }
        let kept = poolLock.withLock { () -> Bool in
            guard pool.count < 4 else { return false }
            pool.append(connection)
            return true
        }
        if !kept { _ = try? (connection.close() as EventLoopFuture<Void>).wait() }
        return result
    }

    /// The last commit did not fail (`GroupCommitWriter.recheck`), and the connection that writes and
    /// holds the leases answers (reconnecting if it was lost: then the hub has already been told its
    /// leases are gone).
    ///
    /// A serving node's heartbeat goes first: a commit that failed and has not been followed by one that
    /// worked must not silence it (the others would take this node for frozen).
    public func check() throws(StoreError) {
        hubChecked.store(PauseWatch.now(), ordering: .relaxed)
        try checkNow()
    }

    /// `check`, also on the watch's behalf (`checkAfterPause`).
    private func checkNow() throws(StoreError) {
        do {
            try lock.withLock {
                let connection = try writerLocked()
                if claimsNode { try beat(on: connection) } else { _ = try run("SELECT 1", on: connection) }
            }
        } catch {
            throw Self.storeError(error, "PostgreSQL does not answer: \(Self.describe(error))", otherwise: .unavailable)
        }
        try writer.recheck()
    }

    /// Writes the heartbeat (`run` tells the pause watch of its answer).
    private func beat(on connection: PostgresConnection) throws {
        _ = try run(heartbeat, on: connection)
    }

    /// A statement sent at `sent` on the writer connection was answered: its session, and so every
    /// lease it holds, lived then (`PauseWatch.answered`). Logs a pause or a silence it settles.
    private func writerAnswered(sentAt sent: Int64, sureUntil: Int64? = nil) {
        let now = PauseWatch.now()
        let (paused, silent, sure) = pauses.withLock { watch -> (Bool, Bool, Bool) in
            let paused = watch.suspectedSince != nil, silent = watch.silent(now: now)
            watch.answered(sentAt: sent, sureUntil: sureUntil)
            return (paused, silent, watch.suspectedSince == nil && !watch.silent(now: now))
        }
        guard sure else { return }
        if paused {
            logger.notice("the pause is settled: PostgreSQL says this node's session still holds the room leases")
        } else if silent {
            logger.notice("PostgreSQL answers this node again: it serves the rooms whose leases it holds")
        }
    }

    /// Whether this node may act on its leases now (`RoomLeases.leasesCertain`): not from a pause of
    /// its process until a statement sent after it is answered on the writer connection, nor when no
    /// statement sent there in the last three quarters of `cluster.leaseTimeoutSeconds` has been
    /// answered (`PauseWatch`). A node that claims no node id (the commands) holds no lease for long,
    /// and is always sure.
    public var leasesCertain: Bool {
        guard claimsNode else { return true }
        let certain = pauses.withLock { $0.look(now: PauseWatch.now()) }
        if !certain { checkAfterPause() }
        return certain
    }

    /// A serving node looks at the clock every 250 ms on a thread of its own (a dispatch queue's
    /// timer can wait behind busy workers, and look like a pause): a look long after the one before
    /// is a pause, and a check follows at once (its heartbeat ends the doubt, or its failure finds the
    /// leases lost) rather than at the hub's next one, up to 5 s later. A check follows too once half
    /// of the time an answer keeps the node sure has gone without one, while the hub's checks come (it
    /// checks every 5 s: a short `cluster.leaseTimeoutSeconds` needs more).
    private func watchForPauses() {
        // From now: opening the store (waiting for an earlier run's session to end, the schema) is no
        // pause of a node that held nothing yet. The answer to the opening heartbeat is kept.
        pauses.withLock {
            $0 = PauseWatch(now: PauseWatch.now(), sureFor: $0.sureFor, answeredSentAt: $0.answeredSentAt)
        }
        let thread = Thread { [weak self] in
            var saidPause: Int64?  // the pause last logged
            var saidSilence: Int64?  // the answer after which a silence was last logged
            while let store = self, !store.closing.load(ordering: .relaxed) {
                let now = PauseWatch.now()
                let (since, silentSince, wants) = store.pauses.withLock { watch -> (Int64?, Int64?, Bool) in
                    _ = watch.look(now: now)
                    return (watch.suspectedSince, watch.silent(now: now) ? watch.answeredSentAt : nil,
                            watch.wantsAnswer(now: now))
                }
                if let since, since != saidPause {
                    saidPause = since
                    store.logger.warning("this node was paused (4 s or more without running): it answers nothing from its rooms and sends no webhook until PostgreSQL answers on the connection holding its leases")
                } else if since == nil, let silentSince, silentSince != saidSilence {
                    saidSilence = silentSince
                    let seconds = Double(now - silentSince) / 1e9
                    store.logger.warning("PostgreSQL has answered nothing sent on the connection holding the room leases for \(String(format: "%.1f", seconds)) s (3/4 of cluster.leaseTimeoutSeconds): this node answers nothing from its rooms and sends no webhook until it does")
                }
                // A pause: at once. Half of `sureFor` without an answer: a heartbeat only while the hub's
                // checks come (see `hubChecked`; its own, every 5 s, do for the default lease timeout),
                // else the question aside, which keeps no stuck node alive to the others.
                if since != nil || wants {
                    store.checkAfterPause(heartbeat: since != nil || now - store.hubChecked.load(ordering: .relaxed) < 10_000_000_000)
                }
                Thread.sleep(forTimeInterval: 0.25)
            }
        }
        thread.name = "pk-pg-pauses"
        thread.start()
    }

    /// Checks the store (off the caller's thread), once at a time, while a pause is not settled or an
    /// answer is wanted.
    private func checkAfterPause(heartbeat: Bool = true) {
        guard !checkingAfterPause.exchange(true, ordering: .acquiring) else { return }
        DispatchQueue.global().async { [self] in
            defer { checkingAfterPause.store(false, ordering: .releasing) }
            // The writer in a long statement (an import's commit, a wait for a lock) holds `lock`, and
            // a heartbeat would wait behind it while the session is busy and its leases safe: asked
            // aside instead (a review, session 43: a node went unsure, 503, during such a wait).
            if heartbeat, lock.try() {
                lock.unlock()
                if (try? checkNow()) == nil { Thread.sleep(forTimeInterval: 0.25) }  // not every look
            } else if !proveLeasesAside() {
                Thread.sleep(forTimeInterval: 0.25)
            }
        }
    }

    /// Asks on a pooled connection whether the writer's session lives and holds this node's lock, and
    /// for how long it cannot be ended: another node ends a holder only once it has written no
    /// heartbeat and been idle for `silentAfter`, and an `active` session is not idle. The answer proves
    /// the leases until then from when it was asked, and at most half the lease timeout (PostgreSQL's
    /// keepalives end the writer's session that long at least after the network went silent, which
    /// was after this question got through). False when it proves nothing.
    private func proveLeasesAside() -> Bool {
        let pid = writerPid.load(ordering: .relaxed)
        guard claimsNode, pid != 0 else { return false }
        let (high, low) = Self.lockParts(Self.lockKey(node, kind: "node"))
        let sent = PauseWatch.now()
        let alive: Double?
        do {
            alive = try withPooledConnection { connection in
                try run("""
                    SELECT extract(epoch FROM (CASE WHEN a.state = 'active' THEN now()
                                                    ELSE greatest(a.state_change, n.seen) END) - now())::float8
                    FROM pg_stat_activity a LEFT JOIN nodes n ON n.node = \(node) AND n.pid = a.pid
                    WHERE a.pid = \(pid)
                      AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.pid = a.pid
                                  AND l.classid::bigint = \(high) AND l.objid::bigint = \(low) AND l.objsubid = 1)
                    """, on: connection).rows.first?.decode(Double.self)
            }
        } catch {
            return false
        }
        guard let alive, alive.isFinite else { return false }
        let second: Int64 = 1_000_000_000
        let lastSign = sent + Int64(min(0, alive) * 1e9)
        let safeUntil = min(lastSign + Int64(silentAfter) * second, sent + Int64(leaseTimeout) * second / 2)
        writerAnswered(sentAt: sent, sureUntil: safeUntil)
        return true
    }

    /// How both ends of a connection give up `leaseTimeout` seconds after the other stops answering:
    /// keepalive probes after half of it without traffic, three more at a sixth each, and data not
    /// acknowledged for all of it dropped. The server's side (`bound`) and the node's (`open`).
    private var keepalive: (idleSeconds: Int, intervalSeconds: Int, probes: Int, userTimeoutMillis: Int) {
        let idle = max(1, leaseTimeout / 2)
        return (idle, max(1, (leaseTimeout - idle) / 3), 3, leaseTimeout * 1000)
    }

    /// The server's side of the lease connection gives up as `keepalive` says. Session settings any
    /// user may make; PostgreSQL ignores them on a Unix socket (no network to lose there).
    private func bound(_ connection: PostgresConnection) throws {
        let bounds = keepalive
        for setting in ["tcp_keepalives_idle = \(bounds.idleSeconds)", "tcp_keepalives_interval = \(bounds.intervalSeconds)",
                        "tcp_keepalives_count = \(bounds.probes)", "tcp_user_timeout = \(bounds.userTimeoutMillis)"] {
            _ = try run(PostgresQuery(unsafeSQL: "SET \(setting)"), on: connection)
        }
    }

    /// The answer to `query`, or a failure once its connection has closed or the server has stopped
    /// answering. postgres-nio could leave a query unanswered for good when PostgreSQL shut down under
    /// it (the connection closed, the query's future never failed): a node stopping while its database
    /// stopped waited forever in its last commit (every run of `scripts/bench-history.sh`'s PostgreSQL
    /// part left its hub so). And a PostgreSQL whose processes are stopped (SIGSTOP, or stuck) while
    /// its machine runs keeps the connection alive at the TCP level, so the keepalives never fire: the
    /// node's commit, and every room's behind it, waited until the server came back, the clients'
    /// edits neither acknowledged nor refused. A check on the connection's event loop, every second
    /// while the query waits, fails it in either case: once the query has waited `queryTimeout`
    /// seconds, the server is asked whether it answers at all (`serverAnswers`). A server that answers
    /// is busy (the query waits for a lock, say: it goes on waiting, and the server is asked again
    /// after as long); one that does not, twice, is taken for stopped and the query's connection is
    /// closed (the writer's leases go with it, as on a silent network). A paused machine is the
    /// keepalives' case (its kernel stops answering too); a disk that hangs under one commit while the
    /// server still answers `SELECT 1` is not caught here.
    private func run(_ query: PostgresQuery, on connection: PostgresConnection) throws -> PostgresQueryResult {
        let sent = PauseWatch.now()
        let answer = connection.query(query, logger: logger)
        let loop = answer.eventLoop
        let promise = loop.makePromise(of: PostgresQueryResult.self)
        let wait = QueryWait()
        let limit = queryTimeout
        // All on the connection's event loop, so the first to complete the promise wins.
        let watch = loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { [self] task in
            if connection.isClosed {
                task.cancel()
                promise.fail(ConnectionClosed())
                return
            }
            guard !wait.asking, NIODeadline.now() - wait.since >= .seconds(Int64(limit)) else { return }
            wait.asking = true
            DispatchQueue.global().async { [self] in
                let server = serverAnswers()
                // A stop ends a waiting query by its own deadline, and the loop may be gone by now.
                guard server != .closing, !closing.load(ordering: .relaxed) else { return }
                loop.execute { [self] in
                    wait.asking = false
                    guard !wait.done else { return }
                    guard server == .silent else {
                        wait.since = .now()
                        return
                    }
                    task.cancel()
                    logger.warning("PostgreSQL has answered neither a query for \(limit) s nor a new connection: closing the query's connection",
                                   metadata: ["seconds": "\(limit)"])
                    _ = connection.close() as EventLoopFuture<Void>
                    promise.fail(NoAnswer(seconds: limit))
                }
            }
        }
        promise.futureResult.whenComplete { _ in
            wait.done = true
            watch.cancel()
        }
        answer.whenComplete { promise.completeWith($0) }
        let result = try promise.futureResult.wait()
        if claimsNode, writerHandle.withLock({ $0 === connection }) { writerAnswered(sentAt: sent) }
        return result
    }

    /// Seconds a query waits for PostgreSQL's answer before the server is asked whether it answers at
    /// all (`run`): `cluster.leaseTimeoutSeconds`, as the sockets give up on a silent network, but
    /// never below 10.
    private var queryTimeout: Int { max(leaseTimeout, 10) }

    /// A query's wait (`run`), touched on its connection's event loop only.
    private final class QueryWait: @unchecked Sendable {
        var since = NIODeadline.now()
        var asking = false
        var done = false
    }

    /// What asking the server found (`serverAnswers`).
    enum ServerAnswer { case answers, silent, closing }

    /// Whether PostgreSQL answers at all, asked on a new connection; one question at a time for every
    /// query that waits, its finding kept 5 s. Silent means twice without an answer (a loaded server
    /// may miss once): up to 30 s.
    private func serverAnswers() -> ServerAnswer {
        probeLock.withLock {
            if let last = lastProbe, NIODeadline.now() - last.at < .seconds(5) { return last.answer }
            var answer = askServer()
            if answer == .silent { answer = askServer() }
            lastProbe = (.now(), answer)
            return answer
        }
    }

    /// One question (`serverAnswers`): a new connection (within its connect timeout, 10 s) and
    /// `SELECT 1` on it within 5 s. A server that refuses the connection with an error of its own (too
    /// many clients) answers too; a store that is closing makes no connection.
    private func askServer() -> ServerAnswer {
        let connection: PostgresConnection
        do { connection = try connect() } catch let error as PSQLError where error.serverInfo != nil {
            return .answers
        } catch {
            return closing.load(ordering: .relaxed) ? .closing : .silent
        }
        defer { _ = try? (connection.close() as EventLoopFuture<Void>).wait() }
        let reply = connection.query("SELECT 1", logger: logger)
        let answered = reply.eventLoop.makePromise(of: Bool.self)
        reply.eventLoop.scheduleTask(in: .seconds(5)) { answered.succeed(false) }
        reply.whenComplete { answered.succeed((try? $0.get()) != nil) }
        return (try? answered.futureResult.wait()) == true ? .answers : .silent
    }

    /// PostgreSQL answered neither a query nor a new connection (`run`); the query's connection was closed.
    struct NoAnswer: Error, CustomStringConvertible {
        let seconds: Int
        var description: String { "PostgreSQL answers nothing (a query waited \(seconds) s; a new connection got no answer either): the connection was closed" }
    }

    /// No connection could be made to the server (`open`).
    struct CannotConnect: Error, CustomStringConvertible {
        let underlying: any Error
        var description: String { PostgresStore.describe(underlying) }
    }

    /// The connection closed while a query waited for its answer (`run`).
    struct ConnectionClosed: Error, CustomStringConvertible {
        var description: String { "the PostgreSQL connection closed before the query was answered" }
    }

    /// Makes what the schema lacks. Each step's object is looked up in the catalog first, and when all
    /// are there (every open but a new version's first) no DDL runs: even `… IF NOT EXISTS` takes its
    /// table's lock before it looks (an `ALTER TABLE` the exclusive one), and would wait behind a
    /// `pg_dump` or a long commit with every later query on that table queued behind it.
    private func migrate() throws {
        try lock.withLock {
            let connection = try writerLocked()
            let relations = Self.schema.compactMap(\.relation), columns = Self.schema.compactMap(\.column)
            let current = try run("""
                SELECT (SELECT bool_and(to_regclass(name) IS NOT NULL) FROM unnest(\(relations)::text[]) AS r(name))
                   AND (SELECT bool_and(EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(c.t)
                                                AND attname = c.name AND NOT attisdropped))
                        FROM unnest(\(columns.map(\.table))::text[], \(columns.map(\.column))::text[]) AS c(t, name))
                """, on: connection).rows.first?.decode(Bool?.self) ?? nil
            if current == true {
                for case .data(let sql) in Self.schema { _ = try run(PostgresQuery(unsafeSQL: sql), on: connection) }
                return
            }
            // One node creates the tables while the others wait (nodes may start together).
            try transaction(on: connection) {
                _ = try run("SELECT pg_advisory_xact_lock(7354610427)", on: connection)
                for step in Self.schema where step.relation != nil || step.column != nil { _ = try run(step.query, on: connection) }
                for case .data(let sql) in Self.schema { _ = try run(PostgresQuery(unsafeSQL: sql), on: connection) }
            }
        }
    }

    /// Builds the schema's concurrent indexes that are missing, or left invalid by a build that did not
    /// finish (a node stopped during it), on a connection of its own in the background: `CREATE INDEX
    /// CONCURRENTLY` holds no lock that writes wait on (the plain one held off every node's journal
    /// writes while it read the journal), and the open does not wait for it. Until it is there the
    /// queries it serves read the table without it (the same answer, slower). One node builds at a
    /// time (an advisory lock: another node would take a build under way for one that failed).
    /// Serving nodes only: a command's short open would start builds its close stops.
    private func buildIndexes() {
        let steps = Self.schema.compactMap { step -> (name: String, sql: String)? in
            if case .concurrentIndex(let name, let sql) = step { (name, sql) } else { nil }
        }
        guard claimsNode, !steps.isEmpty else { return }
        indexBuild.started = true
        Thread.detachNewThread { [self] in
            defer { indexBuild.done.signal() }
            do {
                let connection = try connect()
                let stopping = indexBuild.lock.withLock { () -> Bool in
                    indexBuild.connection = connection
                    return indexBuild.stopping
                }
                defer { _ = try? (connection.close() as EventLoopFuture<Void>).wait() }
                // A build goes on without its client (closing the connection at `close()` does not stop
                // it, nor free its lock, until it would next write to it): the server looks for the
                // client every second while it runs, and ends a build whose node stopped, leaving the
                // index invalid for the next one (PostgreSQL 14 and later; before, it runs to its end).
                _ = try? run("SET client_connection_check_interval = '1s'", on: connection)
                guard !stopping,
                      try run("SELECT pg_try_advisory_lock(\(Self.lockKey("indexes", kind: "schema")))", on: connection)
                        .rows.first?.decode(Bool.self) == true else { return }
                for (name, sql) in steps {
                    let valid = try run("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(\(name))", on: connection)
                        .rows.first?.decode(Bool.self)
                    if valid == true { continue }
                    let started = NIODeadline.now()
                    logger.notice("building index \(name) (CREATE INDEX CONCURRENTLY: writes go on meanwhile)")
                    if valid == false { _ = try run(PostgresQuery(unsafeSQL: "DROP INDEX CONCURRENTLY IF EXISTS \(name)"), on: connection) }
                    _ = try run(PostgresQuery(unsafeSQL: sql.replacingOccurrences(of: "CREATE INDEX ", with: "CREATE INDEX CONCURRENTLY ")),
                                on: connection)
                    let seconds = Double((NIODeadline.now() - started).nanoseconds) / 1e9
                    logger.notice("index \(name) built", metadata: ["seconds": "\(String(format: "%.1f", seconds))"])
                }
            } catch {
                if !indexBuild.lock.withLock({ indexBuild.stopping }) {
                    logger.warning("could not build the store's indexes (queries read without them): \(Self.describe(error))")
                }
            }
        }
    }

    /// `body` in one transaction on `connection`, committed if it returns, rolled back if it throws.
    /// READ COMMITTED whatever the database's default: each statement reads what is committed when it
    /// starts, so what follows a lock reads after the lock's last holder. `snapshot`: REPEATABLE READ,
    /// READ ONLY instead: every statement reads what was committed when the first started (a load's
    /// reads all of one life of the room, even if it is deleted and made again meanwhile).
    private func transaction<T>(on connection: PostgresConnection, snapshot: Bool = false, _ body: () throws -> T) throws -> T {
        _ = try run(snapshot ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN ISOLATION LEVEL READ COMMITTED",
                    on: connection)
        do {
            let result = try body()
            _ = try run("COMMIT", on: connection)
            return result
        } catch {
            _ = try? run("ROLLBACK", on: connection)
            throw error
        }
    }

    /// One statement of the schema and the object it makes (a data step makes none: it runs at every open).
    enum SchemaStep {
        case table(String, String)
        case index(String, String)
        case column(table: String, column: String, String)
        case data(String)
        /// An index on a table that may be big when it comes (`buildIndexes`): built `CONCURRENTLY`,
        /// after the open, by a serving node, so writes go on meanwhile. `sql` lacks the keyword.
        case concurrentIndex(String, String)

        var query: PostgresQuery {
            switch self {
            case .table(_, let sql), .index(_, let sql), .column(_, _, let sql), .data(let sql): PostgresQuery(unsafeSQL: sql)
            case .concurrentIndex(_, let sql): PostgresQuery(unsafeSQL: sql)
            }
        }

        /// The table or index the step makes in the open's transaction.
        var relation: String? {
            switch self {
            case .table(let name, _), .index(let name, _): name
            case .column, .data, .concurrentIndex: nil
            }
        }

        /// The column the step adds.
        var column: (table: String, column: String)? {
            if case .column(let table, let column, _) = self { (table, column) } else { nil }
        }
    }

    static let schema: [SchemaStep] = [
        .table("journal", """
        CREATE TABLE IF NOT EXISTS journal (
            room text NOT NULL, position bigint NOT NULL, revision bigint, kind text NOT NULL,
            author text, label text, at bigint, record text NOT NULL, PRIMARY KEY (room, position))
        """),
        .index("journal_revision", "CREATE UNIQUE INDEX IF NOT EXISTS journal_revision ON journal (room, revision) WHERE revision IS NOT NULL"),
        .table("snapshots", """
        CREATE TABLE IF NOT EXISTS snapshots (
            room text PRIMARY KEY, position bigint NOT NULL, revision bigint NOT NULL, floor bigint NOT NULL,
            state text NOT NULL)
        """),
        .table("room_owners", """
        CREATE TABLE IF NOT EXISTS room_owners (
            room text PRIMARY KEY, node text NOT NULL, url text NOT NULL, since timestamptz NOT NULL DEFAULT now())
        """),
        // The room list reads a snapshot's count of people and save time instead of parsing it; rows
        // from before these columns get them once here (people from the JSON, the time as now).
        .column(table: "snapshots", column: "people", "ALTER TABLE snapshots ADD COLUMN IF NOT EXISTS people bigint"),
        .column(table: "snapshots", column: "saved_at", "ALTER TABLE snapshots ADD COLUMN IF NOT EXISTS saved_at bigint"),
        .data("""
        UPDATE snapshots SET people = coalesce(json_array_length(state::json -> 'people'), 0),
            saved_at = coalesce(saved_at, (extract(epoch FROM now()) * 1000)::bigint)
        WHERE people IS NULL OR saved_at IS NULL
        """),
        // Byte order for the room list's pages, whatever the database's collation.
        .index("snapshots_room_bytes", #"CREATE INDEX IF NOT EXISTS snapshots_room_bytes ON snapshots (room COLLATE "C")"#),
        .table("webhook_cursors", """
        CREATE TABLE IF NOT EXISTS webhook_cursors (
            endpoint text NOT NULL, room text NOT NULL, rev bigint NOT NULL, PRIMARY KEY (endpoint, room))
        """),
        .index("webhook_cursors_room", "CREATE INDEX IF NOT EXISTS webhook_cursors_room ON webhook_cursors (room)"),
        // The life of the room each cursor counts in (`WebhookCursor.life`): a write of an earlier life
        // does not land in the cursor a room made again has. Cursors from before have none (NULL).
        .column(table: "webhook_cursors", column: "life", "ALTER TABLE webhook_cursors ADD COLUMN IF NOT EXISTS life bigint"),
        // The people at each snapshot's revision, kept from now on (rooms stored before have none and
        // fall back to reading revisions): a restore or `?at=` far back replays from the nearest.
        .table("checkpoints", """
        CREATE TABLE IF NOT EXISTS checkpoints (
            room text NOT NULL, revision bigint NOT NULL, people text NOT NULL, PRIMARY KEY (room, revision))
        """),
        // Room events not yet delivered to a webhook endpoint, kept with the creation or deletion.
        .table("webhook_notices", """
        CREATE TABLE IF NOT EXISTS webhook_notices (
            id bigserial PRIMARY KEY, endpoint text NOT NULL, room text NOT NULL, event text NOT NULL,
            at bigint NOT NULL, UNIQUE (endpoint, room, event, at))
        """),
        // The revisions of a deleted room that an endpoint had not been sent, copied from the journal
        // by the deletion (a journal row as it was), delivered before the room's `room.deleted`.
        .table("webhook_owed", """
        CREATE TABLE IF NOT EXISTS webhook_owed (
            endpoint text NOT NULL, room text NOT NULL, deleted_at bigint NOT NULL, revision bigint NOT NULL,
            position bigint NOT NULL, record text NOT NULL, PRIMARY KEY (endpoint, room, deleted_at, revision))
        """),
        // Each serving node's heartbeat: its writer session's pid, and when it last said it lives (its
        // store check, every 5 s). A node whose rooms another wants and that has been silent longer
        // than `silentAfter` has its session ended (`acquire`): a frozen node's kernel answers the
        // keepalives that free a vanished node's leases, so nothing else would free them.
        .table("nodes", "CREATE TABLE IF NOT EXISTS nodes (node text PRIMARY KEY, pid integer NOT NULL, seen timestamptz NOT NULL)"),
        // The webhook endpoints each node's config lists (its heartbeat says them): a node and the
        // `webhooks` commands tell an endpoint another node delivers to from one no node lists. NULL:
        // a node of an older version, whose heartbeat does not say (not "none").
        .column(table: "nodes", column: "webhooks", "ALTER TABLE nodes ADD COLUMN IF NOT EXISTS webhooks text[]"),
        // The answers that kept an idempotency key, found by their record's own `"keyTime":` member
        // (`JournalEntry.keyMarker`): a room's load reads those from its snapshot's `keysFrom` on
        // (`StoredRoom.keyed`). On the record's text, not a new column, so rows written before, and by
        // a node of an older version in a rolling upgrade, are in it too. Built concurrently, after
        // the open (`buildIndexes`): building it reads the journal once.
        // The rooms deleted (`deletion(of:)`): a name and a time, nothing of what the room held; a row
        // goes once `DeletedRooms.remembered` old, with a later deletion or at an open.
        .table("deleted_rooms", "CREATE TABLE IF NOT EXISTS deleted_rooms (room text PRIMARY KEY, deleted_at bigint NOT NULL)"),
        .index("deleted_rooms_at", "CREATE INDEX IF NOT EXISTS deleted_rooms_at ON deleted_rooms (deleted_at)"),
        // Deletions remembered longer than `DeletedRooms.remembered` go at every open too.
        .data("DELETE FROM deleted_rooms WHERE deleted_at <= (extract(epoch FROM now()) * 1000)::bigint - \(DeletedRooms.remembered)"),
        .concurrentIndex("journal_keys", "CREATE INDEX IF NOT EXISTS journal_keys ON journal (room, position) WHERE \(PostgresStore.keyedRecord)"),
    ]

    /// The predicate of the keyed answers' index, which a query must repeat word for word to use it.
    static let keyedRecord = "strpos(record, '\(JournalEntry.keyMarker)') > 0"
    /// A room's keyed answers between two positions ($1 room, $2 from, $3 through), on that index.
    static let keyedQuery = """
        SELECT position, record FROM journal WHERE room = $1 AND position >= $2 AND position <= $3 AND \(keyedRecord)
        ORDER BY position
        """

    /// The probe after a failed commit (`GroupCommitWriter.recheck`, committed alone): a write that
    /// grows a table, as a journal insert does. Rewriting a row in place (the heartbeat) passes on a
    /// full disk where the journal's next page fails (53100, "could not extend file"), so the probe
    /// makes a table of its own (a new, empty file in the tablespace new tables go to), inserts a row
    /// (which must add that file's first page) and rolls it all back: nothing is left, and nothing
    /// another session can see or wait for (a `pg_dump` running beside the nodes holds a lock on every
    /// table it dumps). The table's name is the node's, so nodes probing at once never meet.
    private var probe: [PostgresQuery] {
        let table = "store_probe_" + String(UInt64(bitPattern: Int64(Self.lockKey(node, kind: "probe"))), radix: 16)
        return ["BEGIN", PostgresQuery(unsafeSQL: "CREATE TABLE \(table) (at timestamptz)"),
                PostgresQuery(unsafeSQL: "INSERT INTO \(table) (at) VALUES (now())")]
    }

    // MARK: Writing

    public func append(_ entries: [JournalEntry], room: String,
                       whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        writer.submit(.append(room: room, entries: entries, whenDurable: whenDurable))
        return .pending
    }

    public func save(_ snapshot: RoomSnapshot, room: String, notices: [WebhookNotice]) {
        writer.submit(.snapshot(room: room, snapshot, notices: notices))
    }

    public func create(_ snapshot: RoomSnapshot, notices: [WebhookNotice], entries: [JournalEntry],
                       checkpoints: [Checkpoint], room: String,
                       whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        writer.create(room: room, snapshot, notices: notices, entries: entries, checkpoints: checkpoints,
                      whenDurable: whenDurable)
        return .pending
    }

    /// One commit for the batch: every record in one `INSERT … SELECT FROM unnest(…)`, then the
    /// snapshots (a snapshot never replaces a newer one), each with its checkpoint. A deletion splits the batch: what came before
    /// it is written, then deleted with the room, then what came after is written, all in one commit.
    private func commit(_ batch: [WriterWork]) throws {
        var segments = [CommitSegment()]
        var probing = false
        for work in batch {
            switch work {
            case .append(let room, let entries, _):
                segments[segments.count - 1].rows.add(entries, room: room)
            case .snapshot(let room, let snapshot, let notices):
                segments[segments.count - 1].snapshots.append((room, snapshot))
                segments[segments.count - 1].notices += notices
            case .checkpoints(let room, let checkpoints):
                segments[segments.count - 1].checkpoints += checkpoints.map { (room, $0) }
            case .delete(let room, let found, let notices, _):
                segments[segments.count - 1].deletion = (room, found, notices)
                segments.append(CommitSegment())
            case .probe:
                probing = true
            }
        }
        // The records and the checkpoints of a past are encoded before the transaction begins: an
        // import's (hundreds of thousands of rows) took 10–18 s to encode in a debug build, and
        // meanwhile its session sat idle in a transaction, which the other nodes take for a silent
        // node and end (a cluster pass, session 44: another node took the importer's rooms mid-import).
        // Snapshots are encoded one at a time in the transaction, as before: a batch may hold
        // thousands (every idle room unloaded at once when memory is short), each quick to encode.
        let now = Int(Date().timeIntervalSince1970 * 1000)
        let encoded = segments.map(Self.encode)
        afterEncoding.withLock { $0 }?()
        try lock.withLock {
            try fence(batch)
            let connection = try writerLocked()
            try fence(batch)
            if probing {
                // Alone in its batch (the writer sees to it).
                defer { _ = try? run("ROLLBACK", on: connection) }
                for statement in probe { _ = try run(statement, on: connection) }
                return
            }
            if segments.count == 1 && segments[0].snapshots.isEmpty && segments[0].checkpoints.isEmpty
                && segments[0].notices.isEmpty {
                // One statement: its own commit.
                if let rows = encoded[0].rows { _ = try run(rows, on: connection) }
                return
            }
            try transaction(on: connection) {
                // A room made with webhook cursors or deleted is the lanes' rooms' lock for the commit
                // (`resetWebhookCursor`), taken first and in one order (no two commits wait on each other).
                let rooms = segments.flatMap { segment in
                    segment.notices.filter(\.isCursorStart).map(\.room) + (segment.deletion.map { [$0.0] } ?? [])
                }
                for key in Set(rooms.map(Self.cursorLockKey)).sorted() {
                    _ = try run("SELECT pg_advisory_xact_lock(\(key))", on: connection)
                }
                for (segment, encoded) in zip(segments, encoded) {
                    try write(segment, encoded, now: now, on: connection)
                }
            }
        }
    }

    /// Appends and snapshots up to a deletion (or the end of a batch), then that deletion.
    private struct CommitSegment {
        var rows = JournalRows()
        var snapshots: [(String, RoomSnapshot)] = []
        /// Checkpoints of a created room's past (an import's); one the store has stays.
        var checkpoints: [(String, Checkpoint)] = []
        /// Webhook notices kept with the snapshots (a room's creation).
        var notices: [WebhookNotice] = []
        /// The deletion, and the notices kept with it.
        var deletion: (String, RoomDeletion, [WebhookNotice])?
    }

    /// Journal rows as parallel arrays, for one `unnest` insert.
    private struct JournalRows {
        var rooms: [String] = [], positions: [Int] = [], revisions: [Int] = [], kinds: [String] = []
        var authors: [String] = [], labels: [String] = [], times: [Int] = [], records: [String] = []

        var isEmpty: Bool { rooms.isEmpty }

        mutating func add(_ entries: [JournalEntry], room: String) {
            for entry in entries {
                let row = JournalRow(entry)
                rooms.append(room)
                positions.append(entry.position)
                revisions.append(row.revision ?? -1)
                kinds.append(row.kind)
                authors.append(row.author ?? "")
                labels.append(row.label ?? "")
                times.append(row.at ?? -1)
                records.append(row.record)
            }
        }

        var insert: PostgresQuery {
            """
            INSERT INTO journal (room, position, revision, kind, author, label, at, record)
            SELECT r, p, NULLIF(v, -1), k, NULLIF(a, ''), NULLIF(l, ''), NULLIF(t, -1), j
            FROM unnest(\(rooms)::text[], \(positions)::int8[], \(revisions)::int8[], \(kinds)::text[],
                        \(authors)::text[], \(labels)::text[], \(times)::int8[], \(records)::text[])
                AS x(r, p, v, k, a, l, t, j)
            """
        }
    }

    /// A segment's records and the checkpoints of its past, as statements (`commit`).
    private struct Encoded {
        var rows: PostgresQuery?
        var past: [PostgresQuery]
    }

    private static func encode(_ segment: CommitSegment) -> Encoded {
        Encoded(rows: segment.rows.isEmpty ? nil : segment.rows.insert, past: segment.checkpoints.map { room, past in
            """
            INSERT INTO checkpoints (room, revision, people) VALUES (\(room), \(past.revision), \(past.peopleText))
            ON CONFLICT (room, revision) DO NOTHING
            """
        })
    }

    /// Writes one segment inside the batch's transaction: its records, snapshots (each with its
    /// checkpoint), the checkpoints of its past, its webhook notices, then its deletion. Call with
    /// `lock` held.
    private func write(_ segment: CommitSegment, _ encoded: Encoded, now: Int, on connection: PostgresConnection) throws {
        if let rows = encoded.rows { _ = try run(rows, on: connection) }
        for (room, snapshot) in segment.snapshots {
            let json = snapshot.json
            let state = String(decoding: json.bytes, as: UTF8.self)
            let people = StoredRoomSummary.people(inSnapshot: json)
            if snapshot.position == 0 {
                // A room's first snapshot creates it, and fails if the room exists (another process
                // made it meanwhile): it is never replaced.
                _ = try run("""
                    INSERT INTO snapshots (room, position, revision, floor, state, people, saved_at)
                    VALUES (\(room), 0, \(snapshot.revision), \(snapshot.floor), \(state), \(people), \(now))
                    """, on: connection)
            } else {
                _ = try run("""
                    INSERT INTO snapshots (room, position, revision, floor, state, people, saved_at)
                    VALUES (\(room), \(snapshot.position), \(snapshot.revision), \(snapshot.floor), \(state), \(people), \(now))
                    ON CONFLICT (room) DO UPDATE SET position = EXCLUDED.position, revision = EXCLUDED.revision,
                        floor = EXCLUDED.floor, state = EXCLUDED.state, people = EXCLUDED.people,
                        saved_at = EXCLUDED.saved_at
                    WHERE snapshots.position <= EXCLUDED.position
                    """, on: connection)
            }
            let checkpoint = Checkpoint.peopleText(inSnapshot: json)
            _ = try run("""
                INSERT INTO checkpoints (room, revision, people) VALUES (\(room), \(snapshot.revision), \(checkpoint))
                ON CONFLICT (room, revision) DO UPDATE SET people = EXCLUDED.people
                """, on: connection)
        }
        for statement in encoded.past { _ = try run(statement, on: connection) }
        try keep(segment.notices, on: connection)
        if let (room, found, notices) = segment.deletion {
            for owed in notices where owed.isOwedRequest {
                // No cursor: the subquery is NULL and no row compares above it.
                _ = try run("""
                    INSERT INTO webhook_owed (endpoint, room, deleted_at, revision, position, record)
                    SELECT \(owed.endpoint), room, \(Int(owed.time)), revision, position, record FROM journal
                    WHERE room = \(room) AND revision > (SELECT rev FROM webhook_cursors
                                                         WHERE endpoint = \(owed.endpoint) AND room = \(room))
                    ON CONFLICT DO NOTHING
                    """, on: connection)
            }
            let existed = try run("""
                WITH j AS (DELETE FROM journal WHERE room = \(room) RETURNING 1),
                     s AS (DELETE FROM snapshots WHERE room = \(room) RETURNING 1),
                     c AS (DELETE FROM webhook_cursors WHERE room = \(room) RETURNING 1),
                     k AS (DELETE FROM checkpoints WHERE room = \(room) RETURNING 1)
                SELECT EXISTS (SELECT 1 FROM j) OR EXISTS (SELECT 1 FROM s)
                """, on: connection).rows.first?.decode(Bool.self) ?? false
            if existed {
                _ = try run("DELETE FROM deleted_rooms WHERE deleted_at <= \(now - Int(DeletedRooms.remembered))", on: connection)
                _ = try run("""
                    INSERT INTO deleted_rooms (room, deleted_at) VALUES (\(room), \(now))
                    ON CONFLICT (room) DO UPDATE SET deleted_at = EXCLUDED.deleted_at
                    """, on: connection)
            }
            try keep(notices, on: connection)
            found.found = existed
        }
    }

    private func keep(_ notices: [WebhookNotice], on connection: PostgresConnection) throws {
        for notice in notices where notice.isKept {
            _ = try run("""
                INSERT INTO webhook_notices (endpoint, room, event, at)
                VALUES (\(notice.endpoint), \(notice.room), \(notice.event), \(Int(notice.time))) ON CONFLICT DO NOTHING
                """, on: connection)
        }
        for start in notices where start.isCursorStart {
            _ = try run("""
                INSERT INTO webhook_cursors (endpoint, room, rev, life) VALUES (\(start.endpoint), \(start.room), 0, \(start.time))
                ON CONFLICT (endpoint, room) DO UPDATE SET rev = 0, life = EXCLUDED.life
                """, on: connection)
        }
    }

    // MARK: Reading

    /// One REPEATABLE READ transaction: the snapshot, window, keyed answers and tail are all of one
    /// life of the room, whatever commits meanwhile.
    public func load(room: String) throws(StoreError) -> StoredRoom? {
        let stored: StoredRoom?
        do {
            stored = try withPooledConnection { connection in
                try transaction(on: connection, snapshot: true) { try load(room: room, on: connection) }
            }
        } catch {
            throw Self.storeError(error, "cannot load room \(room): \(Self.describe(error))")
        }
        writer.reopen(room: room)
        return stored
    }

    private func load(room: String, on connection: PostgresConnection) throws -> StoredRoom? {
        let rows = try run("SELECT position, revision, floor, state FROM snapshots WHERE room = \(room)", on: connection)
        guard let row = rows.rows.first else { return nil }
        let (position, revision, floor, state) = try row.decode((Int, Int, Int, String).self)
        let window = try records(run("""
            SELECT position, record FROM journal WHERE room = \(room) AND revision > \(floor)
            AND revision <= \(revision) ORDER BY revision
            """, on: connection)).compactMap(\.record.revision)
        let tail = try records(run("""
            SELECT position, record FROM journal WHERE room = \(room) AND position > \(position) ORDER BY position
            """, on: connection))
        let snapshot = try JSON.parse(state)
        var keyed: [JournalEntry] = []
        if let range = StoredRoom.keyedPositions(inSnapshot: snapshot) {
            var binds = PostgresBindings()
            binds.append(room)
            binds.append(range.lowerBound)
            binds.append(range.upperBound)
            keyed = try records(run(PostgresQuery(unsafeSQL: Self.keyedQuery, binds: binds), on: connection))
        }
        return StoredRoom(snapshot: snapshot, window: window, keyed: keyed, tail: tail)
    }

    public func revisions(room: String, after: Int, through: Int) throws(StoreError) -> [Revision] {
        do {
            return try withPooledConnection { connection in
                try records(run("""
                    SELECT position, record FROM journal WHERE room = \(room) AND revision > \(after)
                    AND revision <= \(through) ORDER BY revision
                    """, on: connection)).compactMap(\.record.revision)
            }
        } catch {
            throw Self.storeError(error, "cannot read revisions of room \(room): \(Self.describe(error))")
        }
    }

    public func checkpoint(room: String, atOrBelow rev: Int) throws(StoreError) -> Checkpoint? {
        do {
            return try withPooledConnection { connection -> Checkpoint? in
                guard let row = try run("""
                    SELECT revision, people FROM checkpoints WHERE room = \(room) AND revision <= \(rev)
                    ORDER BY revision DESC LIMIT 1
                    """, on: connection).rows.first else { return nil }
                let (revision, people) = try row.decode((Int, String).self)
                return try Checkpoint(revision: revision, peopleJSON: JSON.parse(people))
            }
        } catch {
            throw Self.storeError(error, "cannot read a checkpoint of room \(room): \(Self.describe(error))")
        }
    }

    /// One query over the snapshots in byte order (`COLLATE "C"`, its own index), each with its head
    /// revision and that revision's time from the journal's revision index.
    public func listRooms(after: String?, prefix: String?, limit: Int) throws(StoreError) -> [StoredRoomSummary] {
        let after = after ?? "", prefix = prefix ?? "", limit = max(limit, 0)
        do {
            return try withPooledConnection { connection in
                try run("""
                    SELECT s.room, s.people, s.saved_at, h.revision, h.at
                    FROM snapshots s
                    LEFT JOIN LATERAL (SELECT j.revision, j.at FROM journal j
                                       WHERE j.room = s.room AND j.revision IS NOT NULL
                                       ORDER BY j.revision DESC LIMIT 1) h ON true
                    WHERE s.room COLLATE "C" > \(after) AND s.room COLLATE "C" >= \(prefix)
                      AND starts_with(s.room, \(prefix))
                    ORDER BY s.room COLLATE "C" LIMIT \(limit)
                    """, on: connection).rows.map { row in
                    let (name, people, saved, head, at) = try row.decode((String, Int?, Int?, Int?, Int?).self)
                    return StoredRoomSummary(name: name, rev: head ?? 0, people: people ?? 0,
                                             updated: Int64(at ?? saved ?? 0))
                }
            }
        } catch {
            throw Self.storeError(error, "cannot list rooms: \(Self.describe(error))")
        }
    }

    /// On a pooled connection, for a room the store has.
    public func keepCheckpoint(_ checkpoint: Checkpoint, room: String) throws(StoreError) {
        let people = checkpoint.peopleText
        do {
            _ = try withPooledConnection { connection in
                try run("""
                    INSERT INTO checkpoints (room, revision, people)
                    SELECT \(room), \(checkpoint.revision), \(people) WHERE EXISTS (SELECT 1 FROM snapshots WHERE room = \(room))
                    ON CONFLICT (room, revision) DO NOTHING
                    """, on: connection)
            }
        } catch {
            throw Self.storeError(error, "cannot keep a checkpoint of room \(room): \(Self.describe(error))")
        }
    }

    /// One query: the endpoint's cursored and noticed rooms, each with its head from the journal's
    /// revision index; the pending ones kept.
    public func webhookBacklog(endpoint: String) throws(StoreError) -> [WebhookBacklog] {
        do {
            return try withPooledConnection { connection in
                try run("""
                    WITH rooms AS (SELECT room FROM webhook_cursors WHERE endpoint = \(endpoint)
                                   UNION SELECT room FROM webhook_notices WHERE endpoint = \(endpoint)
                                   UNION SELECT room FROM webhook_owed WHERE endpoint = \(endpoint))
                    SELECT r.room,
                           (SELECT c.rev FROM webhook_cursors c WHERE c.endpoint = \(endpoint) AND c.room = r.room),
                           (SELECT c.life FROM webhook_cursors c WHERE c.endpoint = \(endpoint) AND c.room = r.room),
                           (SELECT j.revision FROM journal j WHERE j.room = r.room AND j.revision IS NOT NULL
                            ORDER BY j.revision DESC LIMIT 1),
                           EXISTS (SELECT 1 FROM snapshots s WHERE s.room = r.room),
                           EXISTS (SELECT 1 FROM webhook_notices n WHERE n.endpoint = \(endpoint) AND n.room = r.room),
                           (SELECT COUNT(*) FROM webhook_owed o WHERE o.endpoint = \(endpoint) AND o.room = r.room)
                    FROM rooms r ORDER BY r.room COLLATE "C"
                    """, on: connection).rows.compactMap { row in
                    let (room, cursor, life, head, present, events, owed) = try row.decode((String, Int?, Int64?, Int?, Bool, Bool, Int64).self)
                    let found = WebhookBacklog(room: room, cursor: cursor, cursorLife: life, head: present ? (head ?? 0) : nil,
                                               noticed: events || owed > 0, owed: Int(owed))
                    return found.isPending ? found : nil
                }
            }
        } catch {
            throw Self.storeError(error, "cannot read an endpoint's webhook backlog: \(Self.describe(error))")
        }
    }

    public func webhookCursorRecords(endpoint: String) throws(StoreError) -> [String: WebhookCursor] {
        do {
            return try withPooledConnection { connection in
                var cursors: [String: WebhookCursor] = [:]
                for row in try run("SELECT room, rev, life FROM webhook_cursors WHERE endpoint = \(endpoint)", on: connection).rows {
                    let (room, rev, life) = try row.decode((String, Int, Int64?).self)
                    cursors[room] = WebhookCursor(rev: rev, life: life)
                }
                return cursors
            }
        } catch {
            throw Self.storeError(error, "cannot read an endpoint's webhook cursors: \(Self.describe(error))")
        }
    }

    // MARK: Webhook cursors and deletion

    /// Deletes through the writer, after everything appended before (see `commit`).
    public func deleteRoom(_ room: String, notices: [WebhookNotice]) throws(StoreError) -> Bool {
        try writer.delete(room: room, notices: notices)
    }

    public func deletion(of room: String) throws(StoreError) -> Int64? {
        let since = Int(Date().timeIntervalSince1970 * 1000) - Int(DeletedRooms.remembered)
        do {
            return try withPooledConnection { connection in
                try run("SELECT deleted_at FROM deleted_rooms WHERE room = \(room) AND deleted_at > \(since)",
                        on: connection).rows.first.map { Int64(try $0.decode(Int.self)) }
            }
        } catch {
            throw Self.storeError(error, "cannot read whether room \(room) was deleted: \(Self.describe(error))")
        }
    }

    public func webhookNotices(endpoint: String) throws(StoreError) -> [WebhookNotice] {
        do {
            return try withPooledConnection { connection in
                try run("SELECT room, event, at FROM webhook_notices WHERE endpoint = \(endpoint) ORDER BY at, id",
                        on: connection).rows.map { row in
                    let (room, event, at) = try row.decode((String, String, Int).self)
                    return WebhookNotice(endpoint: endpoint, room: room, event: event, time: Int64(at))
                }
            }
        } catch {
            throw Self.storeError(error, "cannot read an endpoint's webhook notices: \(Self.describe(error))")
        }
    }

    public func owedRevisions(endpoint: String, room: String, after: OwedPosition?, limit: Int) throws(StoreError) -> [WebhookNotice] {
        do {
            return try withPooledConnection { connection in
                let (time, rev) = after.map { (Int($0.time), $0.rev) } ?? (Int.min, Int.min)
                return try run("""
                    SELECT deleted_at, record FROM webhook_owed WHERE endpoint = \(endpoint) AND room = \(room)
                    AND (deleted_at, revision) > (\(time), \(rev)) ORDER BY deleted_at, revision LIMIT \(max(limit, 0))
                    """, on: connection).rows.compactMap { row -> WebhookNotice? in
                    let (deletedAt, record) = try row.decode((Int, String).self)
                    guard let revision = try RoomRecord(json: JSON.parse(record)).revision else { return nil }
                    return WebhookNotice(endpoint: endpoint, room: room, event: WebhookNotice.revisionEvent,
                                         time: Int64(deletedAt), revision: revision)
                }
            }
        } catch {
            throw Self.storeError(error, "cannot read the revisions of \(room) owed to an endpoint: \(Self.describe(error))")
        }
    }

    public func revisionsOwed(endpoint: String) throws(StoreError) -> [String: Int] {
        do {
            return try withPooledConnection { connection in
                let rows = try run("SELECT room, COUNT(*) FROM webhook_owed WHERE endpoint = \(endpoint) GROUP BY room", on: connection).rows
                return Dictionary(uniqueKeysWithValues: try rows.map { row -> (String, Int) in
                    let (room, count) = try row.decode((String, Int64).self)
                    return (room, Int(count))
                })
            }
        } catch {
            throw Self.storeError(error, "cannot read the rooms owed to an endpoint: \(Self.describe(error))")
        }
    }

    public func removeWebhookNotice(_ notice: WebhookNotice) throws(StoreError) {
        do {
            try withPooledConnection { connection in
                if let revision = notice.revision {
                    _ = try run("""
                        DELETE FROM webhook_owed WHERE endpoint = \(notice.endpoint) AND room = \(notice.room)
                        AND deleted_at = \(Int(notice.time)) AND revision = \(revision.number)
                        """, on: connection)
                } else {
                    _ = try run("""
                        DELETE FROM webhook_notices WHERE endpoint = \(notice.endpoint) AND room = \(notice.room)
                        AND event = \(notice.event) AND at = \(Int(notice.time))
                        """, on: connection)
                }
            }
        } catch {
            throw Self.storeError(error, "cannot remove a webhook notice for \(notice.room): \(Self.describe(error))")
        }
    }

    /// On a pooled connection in autocommit, not the writer's: a cursor waits for no group commit.
    @discardableResult
    public func setWebhookCursor(endpoint: String, room: String, rev: Int, life: Int64?) throws(StoreError) -> Bool {
        do {
            return try withPooledConnection { connection in
                try !run("""
                    INSERT INTO webhook_cursors (endpoint, room, rev, life) VALUES (\(endpoint), \(room), \(rev), \(life))
                    ON CONFLICT (endpoint, room) DO UPDATE SET rev = greatest(webhook_cursors.rev, EXCLUDED.rev)
                    WHERE webhook_cursors.life IS NOT DISTINCT FROM EXCLUDED.life
                    RETURNING 1
                    """, on: connection).rows.isEmpty
            }
        } catch {
            throw Self.storeError(error, "cannot set an endpoint's webhook cursor for \(room): \(Self.describe(error))")
        }
    }

    /// In a transaction that first takes the room's cursor lock, which a commit making the room with
    /// webhook cursors or deleting it holds too: the room is read after that commit, not before it
    /// (under READ COMMITTED a forget that waited on the new life's cursor row would still see the room
    /// gone, and remove that cursor).
    public func resetWebhookCursor(endpoint: String, room: String, to rev: Int?, life: Int64?) throws(StoreError) {
        do {
            try withPooledConnection { connection in
                try transaction(on: connection) {
                    // A node lost between the lock and the commit would hold it (and a writer waiting
                    // on it) until its TCP connection is found dead: the server ends it idle after 10 s.
                    _ = try run("SET LOCAL idle_in_transaction_session_timeout = 10000", on: connection)
                    _ = try run("SELECT pg_advisory_xact_lock(\(Self.cursorLockKey(room)))", on: connection)
                    if let rev {
                        _ = try run("""
                            INSERT INTO webhook_cursors (endpoint, room, rev, life)
                            SELECT \(endpoint), \(room), \(rev), \(life)::bigint WHERE EXISTS (SELECT 1 FROM snapshots WHERE room = \(room))
                            ON CONFLICT (endpoint, room) DO UPDATE SET rev = EXCLUDED.rev, life = EXCLUDED.life
                            """, on: connection)
                    } else {
                        _ = try run("""
                            DELETE FROM webhook_cursors WHERE endpoint = \(endpoint) AND room = \(room)
                            AND NOT EXISTS (SELECT 1 FROM snapshots WHERE room = \(room))
                            """, on: connection)
                    }
                }
            }
        } catch {
            throw Self.storeError(error, "cannot reset an endpoint's webhook cursor for \(room): \(Self.describe(error))")
        }
    }

    public func webhookEndpoints() throws(StoreError) -> [StoredWebhookEndpoint] {
        do {
            return try withPooledConnection { connection in
                try run("""
                    WITH endpoints AS (SELECT endpoint FROM webhook_cursors UNION SELECT endpoint FROM webhook_notices
                                       UNION SELECT endpoint FROM webhook_owed)
                    SELECT e.endpoint,
                           (SELECT count(*) FROM webhook_cursors c WHERE c.endpoint = e.endpoint),
                           (SELECT count(*) FROM webhook_notices n WHERE n.endpoint = e.endpoint),
                           (SELECT count(*) FROM webhook_owed o WHERE o.endpoint = e.endpoint)
                    FROM endpoints e ORDER BY e.endpoint COLLATE "C"
                    """, on: connection).rows.map { row in
                    let (endpoint, cursors, events, owed) = try row.decode((String, Int, Int, Int).self)
                    return StoredWebhookEndpoint(endpoint: endpoint, cursors: cursors, events: events, owedRevisions: owed)
                }
            }
        } catch {
            throw Self.storeError(error, "cannot list the webhook endpoints: \(Self.describe(error))")
        }
    }

    /// Each table's endpoints by a skip through its index (the next id after the last), not a count of its rows.
    public func webhookEndpointIDs() throws(StoreError) -> [String] {
        do {
            return try withPooledConnection { connection in
                try run("""
                    WITH RECURSIVE
                      c(e) AS (SELECT min(endpoint) FROM webhook_cursors UNION ALL
                               SELECT (SELECT min(endpoint) FROM webhook_cursors WHERE endpoint > c.e) FROM c WHERE c.e IS NOT NULL),
                      n(e) AS (SELECT min(endpoint) FROM webhook_notices UNION ALL
                               SELECT (SELECT min(endpoint) FROM webhook_notices WHERE endpoint > n.e) FROM n WHERE n.e IS NOT NULL),
                      o(e) AS (SELECT min(endpoint) FROM webhook_owed UNION ALL
                               SELECT (SELECT min(endpoint) FROM webhook_owed WHERE endpoint > o.e) FROM o WHERE o.e IS NOT NULL)
                    SELECT e FROM (SELECT e FROM c UNION SELECT e FROM n UNION SELECT e FROM o) AS every
                    WHERE e IS NOT NULL ORDER BY e COLLATE "C"
                    """, on: connection).rows.map { row in try row.decode(String.self) }
            }
        } catch {
            throw Self.storeError(error, "cannot list the webhook endpoints: \(Self.describe(error))")
        }
    }

    /// One statement (so one transaction) on a pooled connection.
    public func forgetWebhookEndpoint(_ endpoint: String) throws(StoreError) -> StoredWebhookEndpoint? {
        do {
            return try withPooledConnection { connection in
                let rows = try run("""
                    WITH c AS (DELETE FROM webhook_cursors WHERE endpoint = \(endpoint) RETURNING 1),
                         n AS (DELETE FROM webhook_notices WHERE endpoint = \(endpoint) RETURNING 1),
                         o AS (DELETE FROM webhook_owed WHERE endpoint = \(endpoint) RETURNING 1)
                    SELECT (SELECT count(*) FROM c), (SELECT count(*) FROM n), (SELECT count(*) FROM o)
                    """, on: connection).rows
                guard let row = rows.first else { return nil }
                let (cursors, events, owed) = try row.decode((Int, Int, Int).self)
                let held = StoredWebhookEndpoint(endpoint: endpoint, cursors: cursors, events: events, owedRevisions: owed)
                return held.isEmpty ? nil : held
            }
        } catch {
            throw Self.storeError(error, "cannot forget a webhook endpoint: \(Self.describe(error))")
        }
    }

    private func records(_ result: PostgresQueryResult) throws -> [JournalEntry] {
        try result.rows.map { row in
            let (position, text) = try row.decode((Int, String).self)
            return JournalEntry(position: position, record: try RoomRecord(json: JSON.parse(text)))
        }
    }

    // MARK: Leases

    public func onLeasesLost(_ handler: @escaping @Sendable () -> Void) {
        lock.withLock { leasesLostHandlers.append(handler) }
    }

    /// The nodes whose writer session (the one their heartbeat names) is still there: one busy in a
    /// long commit, which writes no heartbeat meanwhile, is live; one stopped is not, at once. On a
    /// pooled connection.
    public func webhooksOfLiveNodes() throws(StoreError) -> [String: [String]?] {
        do {
            return try withPooledConnection { connection in
                var nodes: [String: [String]?] = [:]
                for row in try run("""
                    SELECT n.node, n.webhooks FROM nodes n WHERE EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = n.pid)
                    """, on: connection).rows {
                    let (node, webhooks) = try row.decode((String, [String]?).self)
                    nodes[node] = webhooks
                }
                return nodes
            }
        } catch {
            throw Self.storeError(error, "cannot read the cluster's nodes: \(Self.describe(error))")
        }
    }

    public func acquire(room: String, for holder: LeaseHolder) throws(StoreError) -> LeaseOutcome {
        do {
            let outcome = try lock.withLock { () throws -> LeaseOutcome in
                let connection = try writerLocked()
                if owned[room] != nil {
                    owned[room]?.insert(holder)
                    return .acquired
                }
                let key = Self.lockKey(room)
                let taken = try run("SELECT pg_try_advisory_lock(\(key))", on: connection).rows.first?.decode(Bool.self) ?? false
                if taken {
                    _ = try run("""
                        INSERT INTO room_owners (room, node, url) VALUES (\(room), \(node), \(advertised))
                        ON CONFLICT (room) DO UPDATE SET node = EXCLUDED.node, url = EXCLUDED.url, since = now()
                        """, on: connection)
                    owned[room] = [holder]
                    lostLeases.remove(room)
                    return .acquired
                }
                let owner = try run("SELECT node, url FROM room_owners WHERE room = \(room)", on: connection).rows.first
                    .map { try $0.decode((String, String).self) }
                guard let owner, owner.0 != node else { return .busy }
                return .ownedBy(node: owner.0, url: owner.1)
            }
            // Whether the holder is frozen, asked on a reader connection: not under `lock`, which the
            // group commit needs (most hellos at a node that does not hold their room come here). A
            // question that fails (no reader connection to be had) leaves the answer a redirect: it
            // failed the load (a review).
            if case .ownedBy(let owner, _) = outcome, claimsNode,
               (try? withPooledConnection({ try endSilentHolder(owner, on: $0) })) == true {
                return .busy
            }
            return outcome
        } catch {
            throw Self.storeError(error, "cannot take the lease on room \(room): \(Self.describe(error))", otherwise: .lease)
        }
    }

    /// Ends the writer session of node `holder` if it has said nothing for `silentAfter` seconds and that
    /// session still holds the node's own lock (so a pid reused since is never touched); true if it did.
    /// Its locks go with the session: the caller asks again. The node, if it wakes, finds its
    /// connection gone and drops every room (its writes after that fail: nothing it acknowledges is
    /// lost, and the journal's key fences what it had not).
    private func endSilentHolder(_ holder: String, on connection: PostgresConnection) throws -> Bool {
        let (high, low) = Self.lockParts(Self.lockKey(holder, kind: "node"))
        // Silent, and its session idle as long (a node busy in one long commit, an import's, writes no
        // heartbeat meanwhile but its session is `active`): only then is it frozen. One statement, so
        // a holder that wakes between a read and the end is not ended. The row stays: until the
        // session has exited (the signal is not waited for) a retry still finds it here, not a holder
        // to redirect to.
        guard let row = try run("""
            SELECT n.pid, extract(epoch FROM now() - n.seen)::bigint, pg_terminate_backend(n.pid) FROM nodes n
            JOIN pg_stat_activity a ON a.pid = n.pid
            WHERE n.node = \(holder) AND n.seen < now() - make_interval(secs => \(silentAfter))
              AND a.state <> 'active' AND a.state_change < now() - make_interval(secs => \(silentAfter))
              AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.pid = n.pid
                          AND l.classid::bigint = \(high) AND l.objid::bigint = \(low) AND l.objsubid = 1)
            """, on: connection).rows.first else { return false }
        let (pid, silent, _) = try row.decode((Int, Int, Bool).self)
        // Asked again before it exited: said once.
        guard lock.withLock({ ended.insert(pid).inserted }) else { return true }
        logger.warning("ended the PostgreSQL session of node \(holder): silent for \(silent) s (frozen, or its threads stuck); its rooms are free",
                       metadata: ["node": "\(holder)", "pid": "\(pid)"])
        return true
    }

    public func release(room: String, for holder: LeaseHolder) {
        lock.withLock {
            guard owned[room]?.remove(holder) != nil, owned[room]?.isEmpty == true else { return }
            owned[room] = nil
            guard let connection = writerConnection, !connection.isClosed else { return }
            let key = Self.lockKey(room)
            do {
                _ = try run("DELETE FROM room_owners WHERE room = \(room) AND node = \(node)", on: connection)
                _ = try run("SELECT pg_advisory_unlock(\(key))", on: connection)
            } catch {
                logger.warning("could not release the lease", metadata: ["room": "\(room)", "error": "\(error)"])
            }
        }
    }

    /// What went wrong, with PostgreSQL's own message (postgres-nio hides it from `description`).
    /// A plain sentence for a refused login, or nil.
    static func explainAuth(_ error: any Error) -> String? {
        guard let error = error as? PSQLError else { return nil }
        if error.code == .authMechanismRequiresPassword {
            return "the server asks for a password: put it in storage.postgresPasswordFile (or the URL)"
        }
        if error.serverInfo?[.sqlState] == "28P01" {
            return "the server refused the password (storage.postgresPasswordFile, or the URL's)"
        }
        return nil
    }

    /// `error` in a sentence for an operator: the server's message, or why no connection was made, with
    /// no driver type names (a partition pass saw `/healthz` bodies naming `SingleConnectionFailure`).
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as PSQLError:
            if let message = error.serverInfo?[.message] { return "\(error.code): \(message)" }
            if let underlying = error.underlying { return "\(error.code): \(describe(underlying))" }
            return "\(error.code)"
        case let error as CannotConnect:
            return describe(error.underlying)
        case let error as NIOConnectionError:
            let place = "\(error.host):\(error.port)"
            var causes = error.connectionErrors.map { failure -> String in
                let tried = "\(failure.target.ipAddress ?? "?"):\(failure.target.port ?? 0)"
                return tried == place ? describe(failure.error) : "\(tried): \(describe(failure.error))"
            }
            if causes.isEmpty, let dns = error.dnsAError ?? error.dnsAAAAError {
                causes = ["the name does not resolve (\(dns))"]
            }
            return "cannot connect to \(place)" + (causes.isEmpty ? "" : ": " + causes.joined(separator: "; "))
        case let error as IOError:
            return String(cString: strerror(error.errnoCode)).lowercased()
        case ChannelError.connectTimeout(let limit):
            return "no answer within \(limit.nanoseconds / 1_000_000_000) s"
        default:
            return "\(error)"
        }
    }

    /// `error` (postgres-nio's, or a stored record that does not decode) as a `StoreError` saying
    /// `message`, of the kind its SQLSTATE class or connection state names; `otherwise` for the rest.
    static func storeError(_ error: any Error, _ message: String, otherwise: StoreError.Kind = .io) -> StoreError {
        if let error = error as? StoreError { return error }
        return StoreError(kind(of: error) ?? otherwise, message)
    }

    private static func kind(of error: any Error) -> StoreError.Kind? {
        switch error {
        case is NodeTaken, is ConnectionClosed, is NoAnswer, is CannotConnect: return .unavailable
        case is JSONParseError, is ProtocolError, is PostgresDecodingError: return .corrupt
        case let error as PSQLError:
            switch error.code {
            case .server:
                // SQLSTATE classes: 23 integrity constraint (23505: the journal's primary key, i.e. fencing),
                // 08 connection, 57P operator intervention (shutdown), 53 insufficient resources, 58 system,
                // XX001 / XX002 data or index corrupted.
                let state = error.serverInfo?[.sqlState] ?? ""
                if state.hasPrefix("23") { return .conflict }
                if state.hasPrefix("08") || state.hasPrefix("57P") { return .unavailable }
                if state.hasPrefix("53") || state.hasPrefix("58") { return .io }
                if state == "XX001" || state == "XX002" { return .corrupt }
                return nil
            case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown: return .unavailable
            default: return nil
            }
        default: return nil
        }
    }

    /// The advisory lock key of a room's webhook cursors (`resetWebhookCursor`), apart from its lease's:
    /// one of 256 stripes, so a commit making or deleting thousands of rooms takes at most 256 locks (a
    /// lock per room could fill the server's shared lock table); rooms of one stripe wait on each other.
    static func cursorLockKey(_ room: String) -> Int {
        lockKey("stripe-\(UInt64(bitPattern: Int64(lockKey(room, kind: "cursors"))) % 256)", kind: "cursors")
    }

    /// An advisory lock's key as `pg_locks` shows it: `classid` (the high 32 bits) and `objid` (the low).
    static func lockParts(_ key: Int) -> (high: Int64, low: Int64) {
        let bits = UInt64(bitPattern: Int64(key))
        return (Int64(bits >> 32), Int64(bits & 0xFFFF_FFFF))
    }

    /// The advisory lock key of a room (or, `kind` "node", of a node's id): 64-bit FNV-1a of its name
    /// (stable across nodes and versions).
    static func lockKey(_ name: String, kind: String = "room") -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "peoplekeeper.\(kind):\(name)".utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return Int(Int64(bitPattern: hash))
    }

    public func close() {
        closing.store(true, ordering: .relaxed)
        // An index build under way stops (its connection closed under it: PostgreSQL leaves the index
        // invalid, and the next serving node's open builds it again).
        let building = indexBuild.lock.withLock { () -> PostgresConnection? in
            indexBuild.stopping = true
            return indexBuild.connection
        }
        if let building, !building.isClosed { _ = try? (building.close() as EventLoopFuture<Void>).wait() }
        if indexBuild.started { indexBuild.done.wait() }
        // A commit waiting on a network that answers nothing would hold the stop until the sockets
        // give up (`cluster.leaseTimeoutSeconds`, 30 s by default: a service manager's whole stop
        // timeout). After 10 s its connection is closed under it: the query fails (`run`), nothing
        // connects again, and the writer ends. What it had not committed was never acknowledged.
        let stuck = DispatchWorkItem { [self] in
            guard let connection = writerHandle.withLock({ $0 }), !connection.isClosed else { return }
            logger.warning("the store's writer has not finished 10 s after the stop began: closing its PostgreSQL connection")
            _ = connection.close() as EventLoopFuture<Void>
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 10, execute: stuck)
        writer.close()
        stuck.cancel()
        lock.withLock {
            _ = try? (writerConnection?.close() as EventLoopFuture<Void>?)?.wait()
            writerConnection = nil
        }
        poolLock.withLock {
            for connection in pool { _ = try? (connection.close() as EventLoopFuture<Void>).wait() }
            pool = []
        }
        try? group.syncShutdownGracefully()
    }
}
