import Foundation
import PeopleCore

/// One configured webhook receiver (config `webhooks: [{url, name, secretFile, rooms, events}]`).
///
/// The URL is the endpoint's id: its cursors in the store are kept under it, so changing an
/// endpoint's URL makes it a new endpoint (which starts at the head of each room). Two endpoints with
/// the same URL are one: the dispatcher keeps the first. The name is what the metrics and the log
/// call it, never the URL itself: any part of a URL after its host can be a credential (a secret path,
/// as Slack's and Discord's incoming webhooks have; a key in the query; a user and password).
public struct WebhookEndpoint: Sendable {
    /// Where each delivery is POSTed (`http://` or `https://`).
    public var url: String
    /// What the metrics (`endpoint`) and the log call it: the configured name, else `displayName(of:)`.
    public var name: String
    /// The key of the `PeopleKeeper-Signature` HMAC (the bytes of the secret file). Never logged.
    public var secret: [UInt8]
    /// The rooms it hears of: a room matching any pattern.
    public var rooms: [RoomPattern]
    /// What it is told of.
    public var events: Set<WebhookEvent>

    public init(url: String, name: String? = nil, secret: [UInt8], rooms: [RoomPattern],
                events: Set<WebhookEvent> = Set(WebhookEvent.allCases)) {
        self.url = url
        self.name = name ?? Self.displayName(of: url)
        self.secret = secret
        self.rooms = rooms
        self.events = events
    }

    /// A URL without what may be a credential: its scheme, host and port only
    /// (`https://user:pw@hooks.example/services/T0/B0/SECRET?key=k` → `https://hooks.example`).
    public static func displayName(of url: String) -> String {
        guard let parts = URLComponents(string: url), let scheme = parts.scheme, let host = parts.host else { return "webhook" }
        let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(shownHost)\(parts.port.map { ":\($0)" } ?? "")"
    }

    /// Whether `room` is one of its rooms and it wants `event` of it.
    public func wants(_ event: WebhookEvent, of room: String) -> Bool {
        events.contains(event) && rooms.contains { $0.matches(room) }
    }
}
