import ArgumentParser
import BuildIdentity
import Configuration
import Foundation
import Logging
import Metrics
import PeopleCore
import PeopleHub
import PeopleWebhooks
import PeopleStore
import PeopleStorePostgres
import PeopleStoreSQLite
import Prometheus
import ServiceLifecycle
import WebSocketTransport

/// `peoplekeeper-hub serve`: reads the config, starts the hub and runs until SIGTERM / SIGINT, then
/// drains (no new connections or messages, pending acks flushed, every connection closed with 1001)
/// and exits 0.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the hub (the default command).",
        discussion: """
            Settings come from the YAML file, then PEOPLEKEEPER_* environment variables, then these flags \
            (each overriding the one before). Every key is listed in docs/CONFIG.md and by \
            `peoplekeeper-hub config-keys`.

            Examples:
              peoplekeeper-hub --config Config/peoplekeeper.yaml
              peoplekeeper-hub --port 0 --storage memory     # any free port, printed at start
              PEOPLEKEEPER_LIMITS_MAX_ROOMS=10 peoplekeeper-hub
            """
    )

    @Option(name: .long, help: "The YAML config file.")
    var config: String = "Config/peoplekeeper.yaml"

    // The flags that set a key: their help is the key's doc in HubSetting.all, whose `flag` names them.
    @Option(name: .long, help: .init(HubSetting.help(forFlag: "host"))) var host: String?
    @Option(name: .long, help: .init(HubSetting.help(forFlag: "port"))) var port: Int?
    @Option(name: .customLong("web-root"), help: .init(HubSetting.help(forFlag: "web-root"))) var webRoot: String?
    @Option(name: .customLong("log-level"), help: .init(HubSetting.help(forFlag: "log-level"))) var logLevel: String?
    @Option(name: .customLong("log-format"), help: .init(HubSetting.help(forFlag: "log-format"))) var logFormat: String?
    @Option(name: .long, help: .init(HubSetting.help(forFlag: "storage"))) var storage: String?
    @Option(name: .long, help: .init(HubSetting.help(forFlag: "seed"))) var seed: String?

    func run() async throws {
        let given: [String: ConfigContent?] = [
            "host": host.map { .string($0) }, "port": port.map { .int($0) }, "web-root": webRoot.map { .string($0) },
            "log-level": logLevel.map { .string($0) }, "log-format": logFormat.map { .string($0) },
            "storage": storage.map { .string($0) }, "seed": seed.map { .string($0) },
        ]
        var flags: [String: ConfigContent] = [:]
        for setting in HubSetting.all {
            if let flag = setting.flag, let value = given[flag] ?? nil { flags[setting.key] = value }
        }

        let settings: HubSettings
        let seedModel: PeopleModel
        let endpoints: [WebhookEndpoint]
        do {
            settings = try await HubSettings.load(file: config, flags: flags,
                                                  environment: ProcessInfo.processInfo.environment)
            seedModel = try settings.loadSeed()
            endpoints = try WebhookSettings.endpoints(file: config)
        } catch {
            writeStandardError(line: "peoplekeeper-hub: \(error)")
            throw ExitCode(78)  // EX_CONFIG
        }

        let level = settings.logLevel
        switch settings.logFormat {
        case .text:
            LoggingSystem.bootstrap { TextLogHandler(label: $0, level: level) }
        case .json:
            LoggingSystem.bootstrap { JSONLogHandler(label: $0, level: level) }
        }
        let logger = Logger(label: "peoplekeeper.hub")
        // The first line, so that a log says which binary wrote it even when the start fails.
        logger.info("starting", metadata: [
            "version": "\(BuildIdentity.release)", "build": "\(BuildIdentity.buildID ?? "unknown")",
            "pid": "\(getpid())",
        ])
        for variable in HubSettings.unknownVariables {
            logger.warning("environment variable \(variable) names no setting; ignored (docs/CONFIG.md lists them)")
        }

        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["peoplekeeper_apply_duration_seconds"] = [
            .microseconds(10), .microseconds(25), .microseconds(50), .microseconds(100), .microseconds(250),
            .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(100),
        ]
        // Commits and what waits for them: from a fraction of a millisecond (SQLite with group commit)
        // to seconds (a slow disk or a distant database).
        let commitBuckets: [Duration] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .seconds(1), .seconds(5),
        ]
        factory.durationHistogramBuckets["peoplekeeper_durable_wait_seconds"] = commitBuckets
        factory.durationHistogramBuckets["peoplekeeper_store_commit_duration_seconds"] = commitBuckets
        factory.valueHistogramBuckets["peoplekeeper_store_commit_size"] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096]
        MetricsSystem.bootstrap(factory)
        Gauge(label: "peoplekeeper_build_info", dimensions: [
            ("version", BuildIdentity.release), ("build", BuildIdentity.buildID ?? "unknown"),
        ]).record(1)

        // Every file a setting names is read before anything is opened or said (a missing token file
        // left a new SQLite file behind, and a store in use hid it under exit 1).
        let metricsToken: [UInt8]?
        do { metricsToken = try settings.metricsToken() } catch {
            writeStandardError(line: "peoplekeeper-hub: \(error)")
            throw ExitCode(78)  // EX_CONFIG
        }
        var auth: TokenAuthority?
        switch settings.authMode {
        case .token:
            do { auth = try await settings.tokenAuthority(environment: ProcessInfo.processInfo.environment) } catch {
                writeStandardError(line: "peoplekeeper-hub: \(error)")
                throw ExitCode(78)  // EX_CONFIG
            }
            logger.info("auth.mode token: every hello needs an access token (peoplekeeper-hub token mints one)")
        case .open:
            if !settings.authIssuer.isEmpty || !settings.authAudience.isEmpty {
                logger.warning("auth.issuer and auth.audience are checked in token mode only; auth.mode is open")
            }
            let loopback = HubSettings.loopbackHosts.contains(settings.host)
            if loopback {
                logger.notice("auth.mode open: anyone who can reach \(settings.host) may join as any user; listening on loopback only")
            } else {
                logger.warning("auth.mode open on \(settings.host): anyone who can reach this address may join as any user and edit every room; use auth.mode token")
            }
        }

        if settings.permessageDeflate {
            logger.warning("transport.permessageDeflate is on: libwebsockets 4.1's inflate can abort the hub on hostile compressed input (lws issue #2120); use it with trusted clients only")
        }

        let store: any PeopleStore
        do {
            store = try settings.openStore(logger: logger, claim: true, webhooks: endpoints.map(\.url))
        } catch {
            logger.critical("cannot open the store: \(error)")
            writeStandardError(line: "peoplekeeper-hub: \(error)")
            throw ExitCode(error is ConfigProblem ? 78 : 1)  // EX_CONFIG for a setting that is wrong
        }
        let clusterKeys = [("cluster.nodeId", settings.nodeID), ("cluster.advertisedURL", settings.advertisedURL)]
            .filter { !$0.1.isEmpty }.map(\.0)
        if settings.storageKind != .postgres, !clusterKeys.isEmpty {
            // A cluster pass started a node with SQLite beside the cluster's: nothing said it was on its
            // own, and its rooms (the cluster's names, the seed's people) went to the shared webhooks as new.
            logger.warning("\(clusterKeys.joined(separator: " and ")) \(clusterKeys.count == 1 ? "is" : "are") set but storage.kind is \(settings.storageKind.rawValue): this hub is in no cluster; its rooms are its own, not those of the nodes on PostgreSQL")
        }
        var storedEndpoints: [StoredWebhookEndpoint] = []
        if settings.storageKind == .memory {
            logger.warning("storage.kind memory: nothing outlives this process (rooms, edits and undo stacks are lost on restart)")
        } else {
            storedEndpoints = Self.noteForgottenEndpoints(store: store, configured: Set(endpoints.map(\.url)), logger: logger)
        }

        var limits = HubLimits(
            maxConnections: Self.connectionsTheFileLimitAllows(settings.maxConnections, logger: logger),
            maxRooms: settings.maxRooms,
            maxPeoplePerRoom: settings.maxPeoplePerRoom, opsPerSecond: settings.opsPerSecond,
            helloTimeoutSeconds: settings.helloTimeoutSeconds, keptSessionsPerRoom: settings.keptSessions)
        limits.maxConnectionsPerIP = settings.maxConnectionsPerIP
        limits.maxMemoryBytes = Self.memoryBudget(megabytes: settings.maxMemoryMB, logger: logger)
        var hubConfiguration = HubConfiguration(
            seed: seedModel, roomPolicy: settings.roomPolicy, limits: limits, metricsEnabled: settings.metricsEnabled,
            snapshotEvery: settings.snapshotEvery, unloadAfterSeconds: settings.unloadAfterSeconds, auth: auth)
        hubConfiguration.allowedOrigins = settings.allowedOrigins
        hubConfiguration.metricsToken = metricsToken
        var renderMetrics: (@Sendable () -> String)?
        if settings.metricsEnabled { renderMetrics = { registry.emitToString() } }
        // One hub per service thread, each owning the rooms whose names hash to it.
        let hub = HubGroup(threads: settings.serviceThreads, configuration: hubConfiguration, store: store,
                           logger: logger, renderMetrics: renderMetrics)
        var dispatcher: WebhookDispatcher?
        // With none configured, still one on a durable store: a room deleted here keeps what the
        // endpoints the store keeps state for were owed there (taken out of the config, for if they
        // come back; or listed by another node's config, which may begin to follow a room at any time).
        if !endpoints.isEmpty || settings.storageKind != .memory {
            // In cluster mode the node holding a room's lease delivers it: the rooms this node loads
            // (each load tells the dispatcher its head, so a backlog resumes there), rooms whose
            // deliveries it has not finished (it keeps their leases after unloading them), and rooms
            // with deliveries left that no node holds (found every cluster.webhookScanSeconds).
            // Alone, every room from the start.
            let scan = Int64(settings.webhookScanSeconds) * 1000
            let webhooks = WebhookDispatcher(endpoints: endpoints, store: store,
                                             logger: Logger(label: "peoplekeeper.webhooks"),
                                             policy: WebhookPolicy(scanInterval: scan, releaseAfter: min(scan, 10_000)),
                                             leases: store as? any RoomLeases)
            webhooks.storeKeeps(storedEndpoints.filter { !$0.isEmpty }.map(\.endpoint))
            hub.webhooks = DispatcherWebhooks(webhooks)
            dispatcher = webhooks
            if endpoints.isEmpty {
                logger.debug("webhooks: none configured; a room deleted keeps what the endpoints the store keeps state for were owed there")
            } else {
                logger.info("webhooks", metadata: ["endpoints": "\(endpoints.map(\.name))"])  // never the URLs: a credential
            }
        }
        let server = WebSocketServer(
            configuration: .init(
                host: settings.host, port: settings.port,
                webRoot: settings.webRoot,
                limits: WebSocketLimits(maxMessageBytes: settings.maxMessageBytes,
                                        sendQueueMessages: settings.sendQueueMessages,
                                        sendQueueBytes: settings.sendQueueBytes),
                permessageDeflate: settings.permessageDeflate,
                pingIntervalSeconds: settings.pingIntervalSeconds,
                tlsCertFile: settings.tlsCertFile.isEmpty ? nil : settings.tlsCertFile,
                tlsKeyFile: settings.tlsKeyFile.isEmpty ? nil : settings.tlsKeyFile,
                serviceThreads: settings.serviceThreads, eventLoop: settings.eventLoop),
            delegate: hub)
        hub.attach(to: server)

        let service = HubService(hub: hub, server: server, store: store, settings: settings, logger: logger,
                                 webhooks: dispatcher)
        let group = ServiceGroup(configuration: .init(
            services: [service], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        let ignored = Self.ignoreSignals([(SIGHUP, "SIGHUP"), (SIGUSR1, "SIGUSR1"), (SIGUSR2, "SIGUSR2")], logger: logger)
        try await group.run()
        ignored.forEach { $0.cancel() }  // kept until here
    }

    /// Descriptors kept for everything but connections: the store's files, PostgreSQL's and webhook
    /// deliveries' sockets, event descriptors, lws's own.
    static let reservedDescriptors: rlim_t = 128

    /// `limits.maxConnections`, within what the open-file limit allows. The soft limit is raised to the
    /// hard one first (often 1024 against 1048576: a hub stopped accepting at about a thousand
    /// connections). Past the limit, accept() failed and connections hung in the handshake, unanswered,
    /// with nothing logged and /healthz unanswered (an SRE's pass): a hub allowed more connections than
    /// it has descriptors for now refuses the rest at the handshake (503, as at the setting), and says
    /// so at start.
    static func connectionsTheFileLimitAllows(_ configured: Int, logger: Logger) -> Int {
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return configured }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        guard limit.rlim_cur != rlim_t.max else { return configured }  // RLIM_INFINITY
        let allowed = Int(clamping: limit.rlim_cur > reservedDescriptors ? limit.rlim_cur - reservedDescriptors : 1)
        guard configured > allowed else { return configured }
        let needed = configured + Int(reservedDescriptors)
        logger.warning("""
            the open-file limit (ulimit -n) is \(limit.rlim_cur): connections past \(allowed) are refused (503), below \
            limits.maxConnections (\(configured)); raise the limit (ulimit -n, systemd LimitNOFILE=, docker --ulimit \
            nofile=) to at least \(needed)
            """)
        return allowed
    }

    /// `limits.maxMemoryMB` in bytes: as set, or (0) what 80 % of the container's memory limit leaves
    /// for the heap once the process's other resident memory (code, stacks: measured now, before any
    /// room) is counted, said at start; 0 (no bound) outside a container with a limit. A hub that went
    /// over its container's limit was killed (or crashed when an allocation failed), taking every room
    /// down with it; with the bound it stops opening rooms and unloads the idle ones first.
    static func memoryBudget(megabytes: Int, logger: Logger) -> Int {
        let container = ProcessMemory.containerLimitBytes()
        let heap = ProcessMemory.heapInUse()
        let overhead = max(0, (ProcessMemory.residentBytes() ?? 0) - (heap ?? 0))
        if megabytes > 0 || container != nil, heap == nil {
            logger.warning("limits.maxMemoryMB: this C library does not say how much its heap holds (glibc 2.33 or later does): no memory bound")
            return 0
        }
        if megabytes > 0 {
            if let container, megabytes << 20 > container - overhead {
                logger.warning("limits.maxMemoryMB (\(megabytes) MB) and the hub's own \(overhead >> 20) MB are above this container's memory limit (\(container >> 20) MB): the hub may be killed before it stops opening rooms")
            }
            if let heap, heap >= (megabytes << 20) / 10 * 9 {
                logger.warning("limits.maxMemoryMB (\(megabytes) MB) is about what the hub holds before any room (\(heap >> 20) MB): it will open few rooms or none")
            }
            return megabytes << 20
        }
        guard let container else { return 0 }
        var budget = container / 10 * 8 - overhead
        if budget < container / 4 {
            budget = container / 4
            logger.warning("this container's memory limit (\(container >> 20) MB) leaves little for rooms beside the hub's own \(overhead >> 20) MB: limits.maxMemoryMB is \(budget >> 20) MB")
        } else {
            logger.info("limits.maxMemoryMB is \(budget >> 20) MB: 80 % of this container's memory limit (\(container >> 20) MB) less the hub's own \(overhead >> 20) MB")
        }
        return budget
    }

    /// SIGHUP (a terminal closing, a log rotation's `kill -HUP`), SIGUSR1 and SIGUSR2 ended the hub at
    /// once, with no drain and no word (an SRE's pass): the hub has nothing to reload, so each is logged
    /// and otherwise ignored; SIGTERM and SIGINT stop it. The sources must be kept while it runs.
    static func ignoreSignals(_ signals: [(Int32, String)], logger: Logger) -> [any DispatchSourceSignal] {
        signals.map { number, name in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                logger.notice("\(name) ignored: the hub has nothing to reload; SIGTERM or SIGINT stops it, draining")
            }
            source.resume()
            return source
        }
    }

    /// Warns at start when the store keeps webhook delivery state (cursors, room events, a deleted
    /// room's revisions owed: people's names among them) for endpoints the config no longer lists,
    /// which nothing delivers or removes: how many, and the commands that list and remove it (never
    /// the URLs: they may hold a credential). A store that cannot say is left to the first delivery.
    /// Returns what the store keeps, per endpoint (empty when it cannot say).
    ///
    /// In a cluster, an endpoint another live node's config lists is not forgotten: this node and that
    /// one list different webhooks, which is warned of instead (every node must list the same: a room
    /// made here is not followed by an endpoint this node does not list).
    static func noteForgottenEndpoints(store: any PeopleStore, configured: Set<String>, logger: Logger) -> [StoredWebhookEndpoint] {
        var elsewhere: Set<String> = []
        var unknown = false
        if let cluster = store as? any ClusterNodes, let others = try? cluster.webhookListing(except: cluster.node) {
            // A node of an older version does not say (a rolling upgrade): none of the store's
            // endpoints is called gone meanwhile.
            unknown = !others.unknown.isEmpty
            elsewhere = Set(others.listed.keys)
            let differing = others.byNode.filter { Set($0.value) != configured }.keys.sorted()
            if !differing.isEmpty {
                logger.warning("""
                    this node's webhooks differ from those of \(differing.count == 1 ? "node" : "nodes") \(differing.joined(separator: ", ")): \
                    every node must list the same webhooks (a room made on a node that does not list an endpoint is not \
                    followed by it; the revisions waiting for it show on no node while that node holds the room)
                    """, metadata: ["nodes": "\(differing)", "endpoints": "\(configured.count)"])
            }
        }
        guard let held = try? store.webhookEndpoints() else { return [] }
        let forgotten = unknown ? [] : held.filter { !configured.contains($0.endpoint) && !elsewhere.contains($0.endpoint) }
        guard !forgotten.isEmpty else { return held }
        logger.warning("""
            the store keeps webhook delivery state for endpoints no longer in the config: \
            `peoplekeeper-hub webhooks` lists them, `peoplekeeper-hub webhooks forget --unconfigured` removes it
            """,
                       metadata: ["endpoints": "\(forgotten.count)", "cursors": "\(forgotten.reduce(0) { $0 + $1.cursors })",
                                  "events": "\(forgotten.reduce(0) { $0 + $1.events })",
                                  "owedRevisions": "\(forgotten.reduce(0) { $0 + $1.owedRevisions })"])
        return held
    }
}

/// Runs the server inside swift-service-lifecycle: starts it, waits for graceful shutdown, drains.
/// Its description is its name only: the service group logs its services at `debug`, and the default
/// description showed every setting, `storage.postgresURL`'s password included.
struct HubService: Service, CustomStringConvertible {
    var description: String { "HubService" }

    let hub: HubGroup
    let server: WebSocketServer
    let store: any PeopleStore
    let settings: HubSettings
    let logger: Logger
    let webhooks: WebhookDispatcher?

    func run() async throws {
        let port: Int
        do {
            port = try server.start()
        } catch {
            logger.critical("cannot listen on \(settings.host):\(settings.port): \(error)")
            throw error
        }
        let shownHost = settings.host.contains(":") ? "[\(settings.host)]" : settings.host
        let loopback = HubSettings.loopbackHosts + ["[::1]"]  // a URL's host may keep the brackets
        if store is any RoomLeases, loopback.contains(settings.host), let advertised = URLComponents(string: settings.advertisedURL),
           loopback.contains(advertised.host ?? ""), let named = advertised.port, named != port {
            // Listening on loopback, no port mapping reaches this node from elsewhere: nothing of it is at
            // that address but through a proxy on this machine (a cluster pass's clients were
            // redirected there and could not connect). A container's mapped port is not remarked.
            logger.warning("cluster.advertisedURL \(settings.advertisedURL) names port \(named) on this machine, but this node listens on \(port): other nodes send clients there")
        }
        if store is any RoomLeases, settings.tls, settings.advertisedURL.lowercased().hasPrefix("ws://") {
            // This node speaks only TLS: clients sent to a ws:// address cannot talk to it, and the
            // terminal client does not follow a wss:// node's redirect to one (an operator's pass).
            logger.warning("cluster.advertisedURL \(settings.advertisedURL) is ws://, but this node speaks TLS (tls.certFile): other nodes send clients there without TLS, which cannot reach it; use wss://")
        }
        if let leases = store as? any RoomLeases, settings.advertisedURL.isEmpty {
            leases.advertisedURL = "\(settings.tls ? "wss" : "ws")://\(shownHost):\(port)"
            if ["0.0.0.0", "::", ""].contains(settings.host) {
                logger.warning("cluster.advertisedURL is empty and listen.host is a wildcard: other nodes will redirect clients to \(leases.advertisedURL), which they cannot reach; set cluster.advertisedURL")
            }
        }
        // The first line on stdout, for people and for tests that start the hub on port 0.
        let (http, ws) = settings.tls ? ("https", "wss") : ("http", "ws")
        let banner = "peoplekeeper-hub listening on \(http)://\(shownHost):\(port)/ (WebSocket \(ws)://\(shownHost):\(port)/v1/rooms/ROOM)\n"
        writeBanner(banner)
        if settings.eventLoop == .epoll, server.eventLoopInUse == .poll {
            logger.warning("transport.eventLoop epoll: libev's plugin for libwebsockets (libwebsockets-evlib-ev) could not be loaded; serving with poll()")
        }
        logger.info("listening", metadata: [
            "host": "\(settings.host)", "port": "\(port)", "webRoot": "\(settings.webRoot)",
            "storage": "\(settings.storageKind.rawValue)", "serviceThreads": "\(settings.serviceThreads)",
            "eventLoop": "\(server.eventLoopInUse.rawValue)",
        ])
        webhooks?.start()
        try? await gracefulShutdown()
        logger.info("shutdown requested")
        await hub.drain()
        // The deliverer writes the cursors of what it delivered last, then the store closes (it was
        // closed by the drain before, so those writes failed, one backoff each, and a restart sent
        // those revisions again).
        await webhooks?.shutdown()
        store.close()
        logger.info("stopped")
    }
}

extension HubSettings {
    /// The store `storage.kind` names: SQLite at `storage.path`, PostgreSQL (cluster mode: this node
    /// leases rooms and redirects to their owners), or memory. `claim`: the hub's own store, one hub
    /// per SQLite file (the commands that read beside a running hub do not claim).
    /// `webhooks`: the endpoints a serving node's config lists (a cluster node's heartbeat says them).
    func openStore(logger: Logger, claim: Bool = false, webhooks: [String] = []) throws -> any PeopleStore {
        switch storageKind {
        case .memory:
            return InMemoryStore()
        case .embedded:
            return try SQLiteStore(path: storagePath, logger: logger, claim: claim)
        case .postgres:
            var password: String?
            if !postgresPasswordFile.isEmpty {
                do {
                    password = try String(contentsOfFile: postgresPasswordFile, encoding: .utf8)
                        .trimmingCharacters(in: .whitespacesAndNewlines)
                } catch {
                    throw ConfigProblem(key: "storage.postgresPasswordFile", problem: "cannot read \(postgresPasswordFile)")
                }
            }
            let endpoint: PostgresEndpoint
            do { endpoint = try PostgresEndpoint(url: postgresURL, password: password) } catch {
                throw ConfigProblem(key: "storage.postgresURL", problem: error.description)
            }
            let node = nodeID.isEmpty ? ProcessInfo.processInfo.hostName : nodeID
            return try PostgresStore(endpoint: endpoint, node: node, advertisedURL: advertisedBase,
                                     leaseTimeout: leaseTimeoutSeconds, claimsNode: claim, webhooks: webhooks, logger: logger)
        }
    }

    /// The names of this machine a `listen.host` or an address may use (open mode stays there).
    static let loopbackHosts = ["127.0.0.1", "::1", "localhost"]

    /// Where clients reach this node: `cluster.advertisedURL`, else the listen address.
    var advertisedBase: String {
        if !advertisedURL.isEmpty { return advertisedURL.hasSuffix("/") ? String(advertisedURL.dropLast()) : advertisedURL }
        let shown = host.contains(":") ? "[\(host)]" : host
        return "ws://\(shown):\(port)"
    }
}

extension HubSettings {
    /// A secret kept in a file (`auth.secretFile`, `metrics.tokenFile`): its bytes, white space and line
    /// ends around it dropped; a file that cannot be read is a config problem of `key`.
    static func secret(inFile path: String, key: String) throws(ConfigProblem) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigProblem(key: key, problem: "cannot read \(path)")
        }
        return Array(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).utf8)
    }

    /// The token `/metrics` asks for (`metrics.tokenFile`, white space around it ignored): nil when no
    /// file is named; a file that cannot be read, holds fewer than 16 bytes, or holds what no
    /// `Authorization` header can carry as one token (a second line, a space, a control character, a
    /// byte outside ASCII) is a config problem: such a file would lock every scraper out.
    func metricsToken() throws(ConfigProblem) -> [UInt8]? {
        guard !metricsTokenFile.isEmpty else { return nil }
        let token = try Self.secret(inFile: metricsTokenFile, key: "metrics.tokenFile")
        guard token.count >= 16 else {
            throw ConfigProblem(key: "metrics.tokenFile", problem: "the token is \(token.count) bytes; it must be at least 16")
        }
        guard !token.starts(with: [0xEF, 0xBB, 0xBF]) else {
            throw ConfigProblem(key: "metrics.tokenFile", problem: "\(metricsTokenFile) starts with a byte-order mark (an editor "
                                + "saved it as UTF-8 with BOM): save the token without one")
        }
        guard token.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw ConfigProblem(key: "metrics.tokenFile", problem: "the token must be one line of visible ASCII with no "
                                + "spaces (a bearer token): \(metricsTokenFile) holds a line break, a space or another character "
                                + "no Authorization header can carry")
        }
        return token
    }

    /// The token authority for `auth.mode: token`: the secret comes from `PEOPLEKEEPER_AUTH_SECRET` or
    /// from the file `auth.secretFile` (never from the YAML itself).
    func tokenAuthority(environment: [String: String]) async throws -> TokenAuthority {
        let secret: [UInt8]
        if let value = environment["PEOPLEKEEPER_AUTH_SECRET"], !value.isEmpty {
            secret = Array(value.utf8)
        } else if !authSecretFile.isEmpty {
            secret = try Self.secret(inFile: authSecretFile, key: "auth.secretFile")
        } else {
            throw ConfigProblem(key: authMode == .token ? "auth.mode" : "auth.secretFile",
                                problem: authMode == .token ? "token needs a secret: set PEOPLEKEEPER_AUTH_SECRET or auth.secretFile"
                                    : "a token is signed with the hub's secret, and this config names none (auth.mode is "
                                        + "\(authMode.rawValue)): set PEOPLEKEEPER_AUTH_SECRET or auth.secretFile")
        }
        do { return try await TokenAuthority(secret: secret, issuer: authIssuer, audience: authAudience) } catch {
            throw ConfigProblem(key: environment["PEOPLEKEEPER_AUTH_SECRET"] != nil ? "PEOPLEKEEPER_AUTH_SECRET" : "auth.secretFile",
                                problem: error.description)
        }
    }
}
