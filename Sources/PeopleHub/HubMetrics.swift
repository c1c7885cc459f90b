import Metrics
import PeopleCore

/// The hub's Prometheus series, made once (looking a metric up per event would cost a lock each).
///
/// Names: `peoplekeeper_connections`, `peoplekeeper_rooms`, `peoplekeeper_resident_memory_bytes`,
/// `peoplekeeper_heap_bytes`, `peoplekeeper_memory_short` (gauges);
/// `peoplekeeper_revisions_total{kind}`, `peoplekeeper_undo_requests_total`,
/// `peoplekeeper_redo_requests_total`, `peoplekeeper_undo_skips_total{reason}`,
/// `peoplekeeper_errors_total{code}`, `peoplekeeper_send_queue_drops_total`,
/// `peoplekeeper_refused_connections_total`, `peoplekeeper_room_loads_total{outcome}`,
/// `peoplekeeper_room_unloads_total`, `peoplekeeper_store_failures_total`,
/// `peoplekeeper_refused_tokens_total`, `peoplekeeper_refused_origins_total` (counters);
/// `peoplekeeper_apply_duration_seconds` (histogram of the time to decide and apply one submit / undo /
/// redo), `peoplekeeper_durable_wait_seconds` (from handing a record to the store until the service
/// thread hears it is durable: what every ack waits), `peoplekeeper_room_load_duration_seconds`.
/// The store's writer adds `peoplekeeper_store_commit_*` (see `GroupCommitWriter`); the HTTP API adds
/// `peoplekeeper_http_requests_total{route,status}` and `peoplekeeper_http_request_duration_seconds{route}`
/// (`HTTPMetrics`, HTTP/Hub+Routes.swift); the webhooks `peoplekeeper_webhook_*` (PeopleWebhooks).
public struct HubMetrics: Sendable {
    let connections = Gauge(label: "peoplekeeper_connections")
    let rooms = Gauge(label: "peoplekeeper_rooms")
    let revisions: [RevisionKind: Counter]
    let undoRequests = Counter(label: "peoplekeeper_undo_requests_total")
    let redoRequests = Counter(label: "peoplekeeper_redo_requests_total")
    let skips: [SkipReport.Reason: Counter]
    let errors: [ErrorCode: Counter]
    let sendQueueDrops = Counter(label: "peoplekeeper_send_queue_drops_total")
    let refusedConnections = Counter(label: "peoplekeeper_refused_connections_total")
    let applyDuration = Metrics.Timer(label: "peoplekeeper_apply_duration_seconds")
    let durableWait = Metrics.Timer(label: "peoplekeeper_durable_wait_seconds")
    let roomLoadDuration = Metrics.Timer(label: "peoplekeeper_room_load_duration_seconds")
    let roomLoads: [RoomLoadOutcome: Counter]
    let roomUnloads = Counter(label: "peoplekeeper_room_unloads_total")
    let storeFailures = Counter(label: "peoplekeeper_store_failures_total")
    let refusedTokens = Counter(label: "peoplekeeper_refused_tokens_total")
    let expiredSessions = Counter(label: "peoplekeeper_expired_sessions_total")
    let refusedOrigins = Counter(label: "peoplekeeper_refused_origins_total")
    let residentMemory = Gauge(label: "peoplekeeper_resident_memory_bytes")
    let heapInUse = Gauge(label: "peoplekeeper_heap_bytes")
    let memoryShort = Gauge(label: "peoplekeeper_memory_short")

    /// How a room's load ended: read from the store, created (new), failed, or sent to its owner.
    enum RoomLoadOutcome: String, CaseIterable {
        case loaded, created, failed, redirected
    }

    public init() {
        revisions = Dictionary(uniqueKeysWithValues: RevisionKind.allCases.map {
            ($0, Counter(label: "peoplekeeper_revisions_total", dimensions: [("kind", $0.rawValue)]))
        })
        skips = Dictionary(uniqueKeysWithValues: SkipReport.Reason.allCases.map {
            ($0, Counter(label: "peoplekeeper_undo_skips_total", dimensions: [("reason", $0.rawValue)]))
        })
        roomLoads = Dictionary(uniqueKeysWithValues: RoomLoadOutcome.allCases.map {
            ($0, Counter(label: "peoplekeeper_room_loads_total", dimensions: [("outcome", $0.rawValue)]))
        })
        errors = Dictionary(uniqueKeysWithValues: ErrorCode.allCases.map {
            ($0, Counter(label: "peoplekeeper_errors_total", dimensions: [("code", $0.rawValue)]))
        })
    }

    /// Counts what an outgoing message says about the room (errors, undo skips).
    func count(_ message: ServerMessage) {
        switch message {
        case .error(let error): errors[error.code]?.increment()
        case .undone(let result), .redone(let result):
            for report in result.skipped { skips[report.reason]?.increment() }
        default: break
        }
    }
}
