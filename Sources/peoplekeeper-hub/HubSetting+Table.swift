import Configuration
import Logging
import PeopleCore
import WebSocketTransport

extension HubSetting {
    /// Every key `peoplekeeper-hub` reads, in the order errors and `config-keys` list them: the one table
    /// of names, types, defaults, allowed values and docs (docs/CONFIG.md explains each at length;
    /// `peoplekeeper-hub config-keys` prints this). A key added here is read, defaulted, range-checked,
    /// accepted in files and the environment and listed; `HubSettings.init(values:)` gives it a field.
    static let all: [HubSetting] = [
        .string("listen.host", "127.0.0.1", flag: "host",
                "Address to listen on: 127.0.0.1 this machine only; 0.0.0.0, ::, * or empty every interface"),
        .int("listen.port", 8080, 0...65535, flag: "port",
             "Port for WebSocket, the web client, /healthz and /metrics; 0 picks any free one"),
        .string("web.root", "Web", flag: "web-root", "Directory of the web client's files, served at /"),

        .string("rooms.seed", "tutorial", flag: "seed",
                "People a new room starts with: tutorial, empty, or a JSON file of people"),
        .int("rooms.tagBlockSize", 100, 1...1_000_000, "Tags reserved per session for its inserts"),
        .int("rooms.keptRevisions", 10_000, 0...Int.max,
             "Revisions kept in memory per room for rebasing, undo and catch-up; 0 keeps all"),
        .int("rooms.maxCatchUp", 1000, 0...1_000_000,
             "A hello at most this far behind is caught up revision by revision, else sent the full state; capped at limits.sendQueueMessages - 64"),
        .int("rooms.repliesKept", 64, 1...100_000, "Replies kept per session so a resent seq is answered once"),
        .int("rooms.keysKept", 100_000, 1...10_000_000,
             "HTTP idempotency keys kept per caller per room, each for 24 hours at most; beyond it the oldest go"),
        .int("rooms.keptSessions", 256, 0...1_000_000, "Disconnected sessions kept per room for hello.resume"),
        .int("rooms.unloadAfterSeconds", 60, 1...604_800,
             "A room with no connection for this long is snapshotted and dropped from memory"),

        .int("undo.depth", 100, 0...100_000, "Undo steps kept per user per room; 0: no limit"),
        .choice("undo.conflicts", UndoPolicy.Conflicts.skip,
                "skip: an undo never overwrites a teammate's later change (reported); force: restore anyway"),
        .bool("undo.cascade", true, "An undo whose entry changes nothing goes on to the user's next entry"),
        .int("undo.coalesceMillis", 500, 0...3_600_000,
             "Batches with the same coalesce key this close together are one undo step"),

        .int("limits.maxMessageBytes", 1 << 20, 1024...(64 << 20),
             "Largest incoming message; a bigger one is dropped and answered too-large"),
        .int("limits.maxConnections", 10_000, 1...1_000_000, "Open WebSocket connections in total"),
        .int("limits.maxConnectionsPerIP", 0, 0...1_000_000, "Open WebSocket connections from one address; 0: no limit"),
        .int("limits.maxRooms", 1_000, 1...1_000_000, "Rooms held in memory at once; beyond, a hello is answered room-full"),
        .int("limits.maxMemoryMB", 0, 0...16_000_000,
             "Heap MB in use above which no room is opened (room-full) and idle rooms are unloaded; 0: from the container's limit, if any"),
        .int("limits.maxPeoplePerRoom", 1_000, 0...1_000_000,
             "People a submit or a PUT of people may leave in a room (room-full beyond); 0: no limit"),
        .int("limits.opsPerSecond", 100, 1...1_000_000,
             "Frames per second per connection, bursts of twice this; beyond: rate-limited, then closed"),
        .int("limits.helloTimeoutSeconds", 10, 1...3600, "Seconds a connection may stay open without a hello"),
        .int("limits.sendQueueMessages", 4096, 1...1_000_000,
             "Messages waiting for a receiver before it is closed as a slow consumer"),
        .int("limits.sendQueueBytes", 16 << 20, 1024...(1 << 30),
             "Bytes waiting for a receiver before it is closed as a slow consumer"),

        .bool("transport.permessageDeflate", false,
              "Compress WebSocket messages (RFC 7692); off: libwebsockets 4.1's inflate can abort the hub"),
        .int("transport.pingIntervalSeconds", 30, 0...3600,
             "Seconds of silence before a ping; silent 2 x this + 10 s: dropped; 0: off"),
        .int("transport.serviceThreads", 0, 0...256,
             "libwebsockets service threads sharing the port; 0: one per core"),
        .choice("transport.eventLoop", LWSEventLoop.epoll,
                "epoll (libev: each round costs the ready sockets) or poll (lws's own: every socket, each round)"),

        .choice("logging.level", Logger.Level.info, flag: "log-level", "The lowest level logged"),
        .choice("logging.format", HubSettings.LogFormat.text, flag: "log-format",
                "text (human) or json (one object per line); logs go to stderr"),
        .bool("metrics.enabled", true, "Serve Prometheus metrics at GET /metrics"),
        .string("metrics.tokenFile", "",
                "A file holding a token /metrics then asks for (Authorization: Bearer); empty: no token"),

        .choice("storage.kind", HubSettings.StorageKind.embedded, flag: "storage",
                "embedded (SQLite), postgres (several hub nodes) or memory (nothing outlives the process)"),
        .string("storage.path", "data/peoplekeeper.sqlite", "The SQLite file for storage.kind embedded"),
        .int("storage.snapshotEvery", 1_000, 1...100_000_000, "A room's snapshot is stored every this many revisions"),
        .string("storage.postgresURL", "postgres://peoplekeeper@127.0.0.1:5432/peoplekeeper",
                "The database for storage.kind postgres: postgres://user@host:port/database"),
        .string("storage.postgresPasswordFile", "", "A file holding the PostgreSQL password; empty: none, or the URL's"),

        .string("cluster.nodeId", "", "This node's name in room_owners; empty: the host name"),
        .string("cluster.advertisedURL", "",
                "The ws:// or wss:// URL clients reach this node by, for redirects; empty: from listen"),
        .int("cluster.leaseTimeoutSeconds", 30, 2...7_200,
             "Seconds after which PostgreSQL frees the rooms of a node that stopped answering, and the node gives up on a silent PostgreSQL"),
        .int("cluster.webhookScanSeconds", 30, 1...86_400,
             "How often a node looks for rooms whose webhook deliveries no node is making, and takes them"),

        .choice("auth.mode", HubSettings.AuthMode.open,
                "open: any user name, everyone an editor; token: every hello needs an access token"),
        .string("auth.secretFile", "",
                "For auth.mode token: a file holding the secret (PEOPLEKEEPER_AUTH_SECRET wins)"),
        .string("auth.issuer", "",
                "For auth.mode token: when set, a token's iss must be this (peoplekeeper-hub token writes it)"),
        .string("auth.audience", "",
                "For auth.mode token: when set, a token's aud must name this (peoplekeeper-hub token writes it)"),
        .strings("auth.allowedOrigins", [],
                 "Origins (scheme://host[:port]) whose pages may connect besides the hub's own; * any"),

        .string("tls.certFile", "", "PEM certificate (chain); with tls.keyFile the port speaks TLS only"),
        .string("tls.keyFile", "", "PEM private key of tls.certFile"),
    ]

    /// The table's defaults by key: the last config provider, so every key has a value.
    static let defaults: [String: ConfigContent] = Dictionary(uniqueKeysWithValues: all.map { ($0.key, $0.defaultValue) })
}
