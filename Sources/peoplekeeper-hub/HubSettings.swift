import Logging
import PeopleCore

/// Everything `peoplekeeper-hub serve` reads from its config, with the defaults used for keys that are
/// not set. Every key can be set in the YAML file, overridden by an environment variable
/// `PEOPLEKEEPER_<KEY>` (dots and camel-case humps become underscores: `limits.maxMessageBytes` is
/// `PEOPLEKEEPER_LIMITS_MAX_MESSAGE_BYTES`), and the main ones by flags. docs/CONFIG.md is the
/// reference; `Config/peoplekeeper.yaml` documents each key in place.
///
/// | key | type | default |
/// |---|---|---|
/// | `listen.host` | string | `127.0.0.1` |
/// | `listen.port` | int 0–65535 (0: any free port) | `8080` |
/// | `web.root` | path | `Web` |
/// | `rooms.seed` | `tutorial`, `empty` or a path to a JSON array of people | `tutorial` |
/// | `rooms.tagBlockSize` | int ≥ 1 | `100` |
/// | `rooms.keptRevisions` | int ≥ 0 (0: all) | `10000` |
/// | `rooms.repliesKept` | int ≥ 1 | `64` |
/// | `rooms.keptSessions` | int ≥ 0 | `256` |
/// | `rooms.unloadAfterSeconds` | int ≥ 1 | `60` |
/// | `rooms.maxCatchUp` | int ≥ 0 (capped at `limits.sendQueueMessages` − 64) | `1000` |
/// | `undo.depth` | int ≥ 0 (0: no limit) | `100` |
/// | `undo.conflicts` | `skip` or `force` | `skip` |
/// | `undo.cascade` | bool | `true` |
/// | `undo.coalesceMillis` | int ≥ 0 | `500` |
/// | `limits.maxMessageBytes` | int ≥ 1024 | `1048576` |
/// | `limits.maxConnections` | int ≥ 1 | `10000` |
/// | `limits.maxConnectionsPerIP` | int ≥ 0 (0: no limit) | `0` |
/// | `limits.maxRooms` | int ≥ 1 | `1000` |
/// | `limits.maxPeoplePerRoom` | int ≥ 0 (0: no limit) | `1000` |
/// | `limits.opsPerSecond` | int ≥ 1 | `100` |
/// | `limits.helloTimeoutSeconds` | int ≥ 1 | `10` |
/// | `auth.mode` | `open` or `token` | `open` |
/// | `auth.secretFile` | path (the secret may come from `PEOPLEKEEPER_AUTH_SECRET` instead) | `""` |
/// | `auth.allowedOrigins` | list of `scheme://host[:port]`, or `*` | `[]` (the hub's own origin only) |
/// | `tls.certFile`, `tls.keyFile` | PEM paths (both or neither) | `""` (plain http / ws) |
/// | `limits.sendQueueMessages` | int ≥ 1 | `4096` |
/// | `limits.sendQueueBytes` | int ≥ 1024 | `16777216` |
/// | `transport.permessageDeflate` | bool | `false` (libwebsockets 4.1's inflate can abort the process) |
/// | `transport.pingIntervalSeconds` | int ≥ 0 (0: none) | `30` |
/// | `logging.level` | trace, debug, info, notice, warning, error, critical | `info` |
/// | `logging.format` | `text` or `json` | `text` |
/// | `metrics.enabled` | bool | `true` |
/// | `storage.kind` | `embedded`, `postgres` or `memory` | `embedded` |
/// | `storage.path` | path | `data/peoplekeeper.sqlite` |
/// | `storage.snapshotEvery` | int ≥ 1 | `1000` |
/// | `storage.postgresURL` | `postgres://user@host:port/database` | `postgres://peoplekeeper@127.0.0.1:5432/peoplekeeper` |
/// | `storage.postgresPasswordFile` | path, empty for none | empty |
/// | `cluster.nodeId` | string, empty: the host name | empty |
/// | `cluster.advertisedURL` | `ws://host:port` clients reach this node by | empty: from `listen` |
struct HubSettings: Sendable {
    var host = "127.0.0.1"
    var port = 8080
    var webRoot = "Web"
    var seed = "tutorial"
    var tagBlockSize = 100
    var keptRevisions = 10_000
    var repliesKept = 64
    var keptSessions = 256
    var unloadAfterSeconds = 60
    var maxCatchUp = 1000
    var undoDepth = 100
    var undoConflicts = UndoPolicy.Conflicts.skip
    var undoCascade = true
    var coalesceMillis = 500
    var maxMessageBytes = 1 << 20
    var maxConnections = 10_000
    var maxConnectionsPerIP = 0
    var maxRooms = 1_000
    var maxPeoplePerRoom = 1_000
    var opsPerSecond = 100
    var helloTimeoutSeconds = 10
    var sendQueueMessages = 4096
    var sendQueueBytes = 16 << 20
    var permessageDeflate = false
    var pingIntervalSeconds = 30
    var logLevel = Logger.Level.info
    var logFormat = LogFormat.text
    var metricsEnabled = true
    var storageKind = StorageKind.embedded
    var storagePath = "data/peoplekeeper.sqlite"
    var snapshotEvery = 1_000
    var postgresURL = "postgres://peoplekeeper@127.0.0.1:5432/peoplekeeper"
    var postgresPasswordFile = ""
    var authMode = AuthMode.open
    var authSecretFile = ""
    var allowedOrigins: [String] = []
    var tlsCertFile = ""
    var tlsKeyFile = ""
    /// Whether the port speaks TLS (both files given).
    var tls: Bool { !tlsCertFile.isEmpty && !tlsKeyFile.isEmpty }
    var nodeID = ""
    var advertisedURL = ""

    enum LogFormat: String, Sendable, CaseIterable { case text, json }
    enum StorageKind: String, Sendable, CaseIterable { case embedded, postgres, memory }
    enum AuthMode: String, Sendable, CaseIterable { case open, token }
}

/// A config problem, naming the key.
struct ConfigProblem: Error, CustomStringConvertible {
    var key: String
    var problem: String
    var description: String { "config: \(key): \(problem)" }
}
