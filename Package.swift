// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "PeopleKeeper",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "PeopleCore", targets: ["PeopleCore"]),
        .library(name: "WebSocketTransport", targets: ["WebSocketTransport"]),
        .executable(name: "peoplekeeper-hub", targets: ["peoplekeeper-hub"]),
        .executable(name: "peoplekeeper-bench", targets: ["peoplekeeper-bench"]),
        .executable(name: "peoplekeeper", targets: ["peoplekeeper"]),
        .executable(name: "peoplekeeper-fuzz", targets: ["peoplekeeper-fuzz"]),
    ],
    dependencies: [
        .package(url: "https://github.com/pointfreeco/swift-identified-collections.git", from: "1.1.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: ["YAML"]),
        // Already in the graph through swift-configuration's YAML trait; used directly only to list the
        // keys a config file sets, so a misspelled key is reported instead of silently ignored.
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // The embedded store (SQLite, WAL) and the cluster store (PostgreSQL).
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // Access tokens (HS256 JWTs) for auth.mode token.
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        // Outgoing webhook POSTs, on an event loop of their own: never the lws service thread, and a slow
        // endpoint holds only its own connections.
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // Already in the graph through jwt-kit and postgres-nio (4.5.2): HMAC-SHA256 for webhook signatures.
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        // Already in the graph through postgres-nio and async-http-client: the webhook tests' HTTP receiver.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // Already in the graph through postgres-nio and async-http-client: TLS to PostgreSQL (sslmode,
        // sslrootcert) is a NIOSSLContext handed to postgres-nio.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        // The pure heart: model, diffs, transform, undo, the room's and the client's state machines, wire messages.
        // No sockets, files, clocks, randomness or logging.
        .target(
            name: "PeopleCore",
            dependencies: [
                .product(name: "IdentifiedCollections", package: "swift-identified-collections"),
            ]
        ),
        // Where rooms go to outlive the process: the journal, snapshots and room leases behind one protocol,
        // its errors, the in-memory twin (tests, storage.kind memory) and the group-commit writer the durable
        // stores share. Importing it brings no database driver.
        .target(
            name: "PeopleStore",
            dependencies: [
                "PeopleCore",
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        // The embedded store: SQLite (WAL) through GRDB, one hub node.
        .target(
            name: "PeopleStoreSQLite",
            dependencies: [
                "PeopleCore",
                "PeopleStore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The cluster store: PostgreSQL through postgres-nio, several hub nodes with room leases.
        .target(
            name: "PeopleStorePostgres",
            dependencies: [
                "PeopleCore",
                "PeopleStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // libwebsockets (Debian libwebsockets-dev) and the shim for what Swift cannot import.
        .systemLibrary(
            name: "CLibWebSockets",
            pkgConfig: "libwebsockets",
            providers: [.apt(["libwebsockets-dev"])]
        ),
        // The lws event loop, connections, frames and HTTP: knows nothing of people.
        .target(name: "WebSocketTransport", dependencies: ["CLibWebSockets"]),
        // glibc's malloc statistics and trim, which Swift's Glibc module does not import (malloc.h):
        // the hub's memory bound (`limits.maxMemoryMB`) counts the heap in use.
        .target(name: "CMallocInfo"),
        // Which binary runs: the release and the linker's build id (`--version`, the start log).
        .target(name: "BuildIdentity"),
        // Rooms, sessions, limits, presence: turns the core's actions into effects.
        .target(
            name: "PeopleHub",
            dependencies: [
                "CMallocInfo",
                "PeopleCore",
                "PeopleStore",
                "WebSocketTransport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
        // Webhooks (HTTP.md §3): each durable revision POSTed, signed, in order per room, to every endpoint
        // whose patterns match, at least once, from the cursors kept in the store.
        .target(
            name: "PeopleWebhooks",
            dependencies: [
                "BuildIdentity",
                "PeopleCore",
                "PeopleStore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .executableTarget(
            name: "peoplekeeper-hub",
            dependencies: [
                "BuildIdentity",
                "PeopleHub",
                "PeopleWebhooks",
                "PeopleCore",
                "PeopleStore",
                "PeopleStoreSQLite",
                "PeopleStorePostgres",
                "WebSocketTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
        // A client's connection to one room over the lws client role: connect, hello, wait for answers.
        .target(
            name: "PeopleClient",
            dependencies: ["PeopleCore", "WebSocketTransport"]
        ),
        // The terminal client: scriptable commands and the interactive screen.
        .executableTarget(
            name: "peoplekeeper",
            dependencies: [
                "BuildIdentity",
                "PeopleClient",
                "PeopleCore",
                "WebSocketTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "IdentifiedCollections", package: "swift-identified-collections"),
            ]
        ),
        .executableTarget(
            name: "peoplekeeper-bench",
            dependencies: [
                "PeopleCore",
                "PeopleStore",
                "PeopleStoreSQLite",
                "PeopleStorePostgres",
                "WebSocketTransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The fuzz harness: wire decoding, apply / transform / undo, client sync; throws when an invariant breaks.
        .target(name: "PeopleFuzzing", dependencies: ["PeopleCore"]),
        // libFuzzer's entry point with -sanitize=fuzzer -DPK_FUZZ (scripts/fuzz.sh); otherwise a replayer of inputs.
        .executableTarget(name: "peoplekeeper-fuzz", dependencies: ["PeopleFuzzing"]),
        .testTarget(
            name: "PeopleCoreTests",
            dependencies: [
                "PeopleCore", "PeopleTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        // For tests only: a real, throwaway PostgreSQL 15 server (initdb in a temporary directory), and
        // the `.cpuBound` trait that keeps long computing tests off Swift's cooperative pool.
        .target(name: "PeopleTestSupport"),
        // One contract suite run against every store; PostgreSQL is a real server started by the tests.
        .testTarget(
            name: "PeopleStoreTests",
            dependencies: [
                "PeopleCore", "PeopleStore", "PeopleStoreSQLite", "PeopleStorePostgres", "PeopleTestSupport",
                .product(name: "Logging", package: "swift-log"),
                // To ask SQLite how it runs the store's queries (its plan), beside the store.
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // Every committed fuzz input (Tests/Fuzz) replayed through the harness, and the issues fuzzing found.
        .testTarget(name: "PeopleFuzzingTests", dependencies: ["PeopleFuzzing", "PeopleCore", "PeopleTestSupport"]),
        // The terminal client's room (LiveRoom): what it tells the screen, without a hub.
        .testTarget(name: "PeopleClientTests", dependencies: ["PeopleClient", "PeopleCore"]),
        // The hub in-process: its connection state machine, and the whole hub driven through fake
        // connections, a test's service thread and clock (no sockets, no binary): runs in seconds.
        .testTarget(
            name: "PeopleHubInProcessTests",
            dependencies: [
                "BuildIdentity",
                "PeopleHub",
                "PeopleCore",
                "PeopleStore",
                "PeopleTestSupport",
                "WebSocketTransport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The dispatcher against a real HTTP receiver on 127.0.0.1 (port 0), on in-memory and SQLite stores.
        .testTarget(
            name: "PeopleWebhooksTests",
            dependencies: [
                "PeopleWebhooks", "PeopleCore", "PeopleStore", "PeopleStoreSQLite", "PeopleTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // The transport alone over real sockets on loopback (several service threads on one port).
        .testTarget(
            name: "WebSocketTransportTests",
            dependencies: ["WebSocketTransport", "PeopleTestSupport"]
        ),
        // Start the real peoplekeeper-hub binary on port 0 and talk to it over real WebSockets.
        .testTarget(
            name: "PeopleHubTests",
            // GRDB: a test injects a fault into the SQLite file of a running hub (a trigger that fails its
            // next append), now that a second hub can no longer be started on the file to provoke one.
            // PeopleClient: the terminal client's LiveRoom against a real hub (its hub clock).
            dependencies: ["PeopleCore", "PeopleClient", "WebSocketTransport", "PeopleTestSupport",
                           .product(name: "GRDB", package: "GRDB.swift")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
