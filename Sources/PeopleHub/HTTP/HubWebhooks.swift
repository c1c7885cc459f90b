import PeopleCore
import PeopleStore

/// What the hub tells the webhook deliverer (the product contract's HTTP API §3), from its service
/// thread: each call must return at once (the deliverer works on its own threads and reads what it
/// sends from the store, so nothing here is the only copy).
public protocol HubWebhooks: AnyObject, Sendable {
    /// Revisions `after + 1 ... through` of `room` are durable; `revisions` gives those the hub still
    /// has in memory (a copy the deliverer may use instead of reading the store; possibly none), called
    /// only if an endpoint wants the room's revisions.
    func revisionsDurable(room: String, after: Int, through: Int, revisions: () -> [Revision])
    /// The `room.created` notices to keep with a new room's first snapshot (one per endpoint that wants
    /// it), before `roomCreated` with the same `time`.
    func notices(roomCreated room: String, time: Int64) -> [WebhookNotice]
    /// The `room.deleted` notices to keep with a room's deletion, before `roomDeleted` with the same `time`.
    func notices(roomDeleted room: String, time: Int64) -> [WebhookNotice]
    /// A room was created (by a hello, or an HTTP `PUT`) at `time` (ms since the epoch).
    func roomCreated(room: String, time: Int64)
    /// A room was deleted (HTTP `DELETE`) at `time`.
    func roomDeleted(room: String, time: Int64)
    /// A room was loaded from the store (made earlier, or by another process: the `import` command):
    /// before `revisionsDurable` for it.
    func roomLoaded(room: String)
    /// The endpoints' state for `GET /v1/webhooks`: `{"webhooks":[…]}`.
    func status() -> JSON
    /// Lets a `failing` endpoint try again (`POST /v1/webhooks/enable`): false if no endpoint is the
    /// one named.
    func reenable(_ endpoint: WebhookEndpointReference) -> Bool
}

/// How an admin names a webhook endpoint: by its URL, or by the name the metrics and the log call it.
public enum WebhookEndpointReference: Sendable, Hashable, CustomStringConvertible {
    case url(String)
    case name(String)

    public var description: String {
        switch self {
        case .url(let url): "the URL \(url)"
        case .name(let name): "the name \(name)"
        }
    }
}
