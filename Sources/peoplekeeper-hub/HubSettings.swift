import Foundation
import Logging
import PeopleCore
import WebSocketTransport

/// Everything `peoplekeeper-hub serve` reads from its config. Every key can be set in the YAML file,
/// overridden by an environment variable `PEOPLEKEEPER_<KEY>` (dots and camel-case humps become
/// underscores: `limits.maxMessageBytes` is `PEOPLEKEEPER_LIMITS_MAX_MESSAGE_BYTES`), and the main ones
/// by flags. The keys, their types, defaults, allowed values and docs are one table, `HubSetting.all`
/// (`peoplekeeper-hub config-keys` prints it); docs/CONFIG.md explains each, and
/// `Config/peoplekeeper.yaml` documents each in place. A field here has no default of its own: the
/// table's defaults reach it through the last config provider (`load`).
struct HubSettings: Sendable {
    var host: String
    var port: Int
    var webRoot: String
    var seed: String
    var tagBlockSize: Int
    var keptRevisions: Int
    var repliesKept: Int
    var keysKept: Int
    var keptSessions: Int
    var unloadAfterSeconds: Int
    /// `rooms.maxCatchUp`, capped at `sendQueueMessages` − 64 (a catch-up is queued at once behind the
    /// welcome: it must leave room in the send queue).
    var maxCatchUp: Int
    var undoDepth: Int
    var undoConflicts: UndoPolicy.Conflicts
    var undoCascade: Bool
    var coalesceMillis: Int
    var maxMessageBytes: Int
    var maxConnections: Int
    var maxConnectionsPerIP: Int
    var maxRooms: Int
    var maxMemoryMB: Int
    var maxPeoplePerRoom: Int
    var opsPerSecond: Int
    var helloTimeoutSeconds: Int
    var sendQueueMessages: Int
    var sendQueueBytes: Int
    var permessageDeflate: Bool
    var pingIntervalSeconds: Int
    /// Service threads, resolved (`transport.serviceThreads`, 0: one per core).
    var serviceThreads: Int
    var eventLoop: LWSEventLoop
    var logLevel: Logger.Level
    var logFormat: LogFormat
    var metricsEnabled: Bool
    /// `metrics.tokenFile`: empty, `/metrics` asks for no token.
    var metricsTokenFile: String
    var storageKind: StorageKind
    var storagePath: String
    var snapshotEvery: Int
    var postgresURL: String
    var postgresPasswordFile: String
    var authMode: AuthMode
    var authSecretFile: String
    /// `auth.issuer`, `auth.audience`: checked in every token when set (empty: not checked).
    var authIssuer: String
    var authAudience: String
    var allowedOrigins: [String]
    var tlsCertFile: String
    var tlsKeyFile: String
    /// Whether the port speaks TLS (both files given).
    var tls: Bool { !tlsCertFile.isEmpty && !tlsKeyFile.isEmpty }
    var nodeID: String
    var advertisedURL: String
    var webhookScanSeconds: Int
    var leaseTimeoutSeconds: Int

    enum LogFormat: String, Sendable, CaseIterable { case text, json }
    enum StorageKind: String, Sendable, CaseIterable { case embedded, postgres, memory }
    enum AuthMode: String, Sendable, CaseIterable { case open, token }

    /// The fields from checked values, one per key of `HubSetting.all`.
    init(values: SettingValues) {
        host = values.string("listen.host")
        port = values.int("listen.port")
        webRoot = values.string("web.root")
        seed = values.string("rooms.seed")
        tagBlockSize = values.int("rooms.tagBlockSize")
        keptRevisions = values.int("rooms.keptRevisions")
        repliesKept = values.int("rooms.repliesKept")
        keysKept = values.int("rooms.keysKept")
        keptSessions = values.int("rooms.keptSessions")
        unloadAfterSeconds = values.int("rooms.unloadAfterSeconds")
        undoDepth = values.int("undo.depth")
        undoConflicts = values.choice("undo.conflicts")
        undoCascade = values.bool("undo.cascade")
        coalesceMillis = values.int("undo.coalesceMillis")
        maxMessageBytes = values.int("limits.maxMessageBytes")
        maxConnections = values.int("limits.maxConnections")
        maxConnectionsPerIP = values.int("limits.maxConnectionsPerIP")
        maxRooms = values.int("limits.maxRooms")
        maxMemoryMB = values.int("limits.maxMemoryMB")
        maxPeoplePerRoom = values.int("limits.maxPeoplePerRoom")
        opsPerSecond = values.int("limits.opsPerSecond")
        helloTimeoutSeconds = values.int("limits.helloTimeoutSeconds")
        sendQueueMessages = values.int("limits.sendQueueMessages")
        sendQueueBytes = values.int("limits.sendQueueBytes")
        maxCatchUp = min(values.int("rooms.maxCatchUp"), max(0, sendQueueMessages - 64))
        permessageDeflate = values.bool("transport.permessageDeflate")
        pingIntervalSeconds = values.int("transport.pingIntervalSeconds")
        let threads = values.int("transport.serviceThreads")
        serviceThreads = threads == 0 ? ProcessInfo.processInfo.activeProcessorCount : threads
        eventLoop = values.choice("transport.eventLoop")
        logLevel = values.choice("logging.level")
        logFormat = values.choice("logging.format")
        metricsEnabled = values.bool("metrics.enabled")
        metricsTokenFile = values.string("metrics.tokenFile")
        storageKind = values.choice("storage.kind")
        storagePath = values.string("storage.path")
        snapshotEvery = values.int("storage.snapshotEvery")
        postgresURL = values.string("storage.postgresURL")
        postgresPasswordFile = values.string("storage.postgresPasswordFile")
        authMode = values.choice("auth.mode")
        authSecretFile = values.string("auth.secretFile")
        authIssuer = values.string("auth.issuer")
        authAudience = values.string("auth.audience")
        // A browser leaves a scheme's default port out of Origin and Host: "https://a.example:443"
        // listed never matched what it sends (an HTTPS pass). Compared as the browser sends it.
        allowedOrigins = values.strings("auth.allowedOrigins").map { listed in
            // An address bar's URL pasted as it is ends with "/", which no Origin has (a CORS pass).
            let origin = listed.hasSuffix("/") && !listed.hasSuffix("://") ? String(listed.dropLast()) : listed
            for (scheme, port) in [("https://", ":443"), ("http://", ":80")]
            where origin.lowercased().hasPrefix(scheme) && origin.hasSuffix(port) {
                return String(origin.dropLast(port.count))
            }
            return origin
        }
        tlsCertFile = values.string("tls.certFile")
        tlsKeyFile = values.string("tls.keyFile")
        nodeID = values.string("cluster.nodeId")
        advertisedURL = values.string("cluster.advertisedURL")
        webhookScanSeconds = values.int("cluster.webhookScanSeconds")
        leaseTimeoutSeconds = values.int("cluster.leaseTimeoutSeconds")
    }
}

/// A config problem, naming the key.
struct ConfigProblem: Error, CustomStringConvertible {
    var key: String
    var problem: String
    var description: String { "config: \(key): \(problem)" }
}
