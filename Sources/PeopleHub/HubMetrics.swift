import Metrics
import PeopleCore

/// The hub's Prometheus series, made once (looking a metric up per event would cost a lock each).
///
/// Names: `peoplekeeper_connections`, `peoplekeeper_rooms` (gauges);
/// `peoplekeeper_revisions_total{kind}`, `peoplekeeper_undo_requests_total`,
/// `peoplekeeper_redo_requests_total`, `peoplekeeper_undo_skips_total{reason}`,
/// `peoplekeeper_errors_total{code}`, `peoplekeeper_send_queue_drops_total`,
/// `peoplekeeper_refused_connections_total` (counters); `peoplekeeper_apply_duration_seconds`
/// (histogram of the time to decide and apply one submit / undo / redo).
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

    public init() {
        revisions = Dictionary(uniqueKeysWithValues: RevisionKind.allCases.map {
            ($0, Counter(label: "peoplekeeper_revisions_total", dimensions: [("kind", $0.rawValue)]))
        })
        skips = Dictionary(uniqueKeysWithValues: SkipReport.Reason.allCases.map {
            ($0, Counter(label: "peoplekeeper_undo_skips_total", dimensions: [("reason", $0.rawValue)]))
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
