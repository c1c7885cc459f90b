import PeopleCore

/// One endpoint as the admin route `GET /v1/webhooks` shows it.
public struct WebhookStatus: Sendable, Hashable {
    public enum State: String, Sendable, Hashable {
        /// Nothing is failing.
        case ok
        /// Some room's delivery failed and is being retried.
        case retrying
        /// A delivery failed for longer than the give-up period: nothing is sent until `reenable(url:)`
        /// or a restart.
        case failing
    }

    public var url: String
    /// What the metrics and the log call the endpoint (`WebhookEndpoint.name`).
    public var name: String
    public var rooms: [String]
    public var events: [WebhookEvent]
    public var state: State
    /// Deliveries waiting: revisions not yet delivered (known heads minus cursors) plus room events.
    public var backlog: Int
    /// Deliveries answered with a 2xx since the dispatcher started.
    public var delivered: Int
    /// The last failure, as logged (nil once a delivery succeeds after it).
    public var lastError: String?
    /// When the last delivery succeeded (milliseconds since the epoch).
    public var lastSuccess: Int64?
}
