import Metrics

/// One endpoint's metrics, each with an `endpoint` dimension (its URL):
/// `peoplekeeper_webhook_deliveries_total` by `outcome` (ok, http_error, timeout, connect_error),
/// `peoplekeeper_webhook_lag_seconds` (a timer: from the revision's time, or the room event's, to its
/// 2xx), `peoplekeeper_webhook_backlog` (deliveries waiting) and `peoplekeeper_webhook_failing` (1
/// while the endpoint is marked failing).
struct WebhookMetrics: Sendable {
    private let deliveries: [String: Counter]
    private let lag: Metrics.Timer
    private let backlog: Gauge
    private let failing: Gauge

    init(endpoint: String, factory: any MetricsFactory) {
        let dimensions = [("endpoint", endpoint)]
        deliveries = Dictionary(uniqueKeysWithValues: ["ok", "http_error", "timeout", "connect_error"].map { outcome in
            (outcome, Counter(label: "peoplekeeper_webhook_deliveries_total", dimensions: dimensions + [("outcome", outcome)],
                              factory: factory))
        })
        lag = Metrics.Timer(label: "peoplekeeper_webhook_lag_seconds", dimensions: dimensions, factory: factory)
        backlog = Gauge(label: "peoplekeeper_webhook_backlog", dimensions: dimensions, factory: factory)
        failing = Gauge(label: "peoplekeeper_webhook_failing", dimensions: dimensions, factory: factory)
    }

    func count(_ outcome: DeliveryOutcome) { deliveries[outcome.label]?.increment() }
    func lag(milliseconds: Int64) { lag.recordMilliseconds(max(milliseconds, 0)) }
    func backlog(_ count: Int) { backlog.record(count) }
    func failing(_ on: Bool) { failing.record(on ? 1 : 0) }
}
