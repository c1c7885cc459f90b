import PeopleCore

/// One configured webhook receiver (config `webhooks: [{url, secretFile, rooms, events}]`).
///
/// The URL is the endpoint's id: its cursors in the store are kept under it, so changing an
/// endpoint's URL makes it a new endpoint (which starts at the head of each room). Two endpoints with
/// the same URL are one: the dispatcher keeps the first.
public struct WebhookEndpoint: Sendable {
    /// Where each delivery is POSTed (`http://` or `https://`).
    public var url: String
    /// The key of the `PeopleKeeper-Signature` HMAC (the bytes of the secret file). Never logged.
    public var secret: [UInt8]
    /// The rooms it hears of: a room matching any pattern.
    public var rooms: [RoomPattern]
    /// What it is told of.
    public var events: Set<WebhookEvent>

    public init(url: String, secret: [UInt8], rooms: [RoomPattern], events: Set<WebhookEvent> = Set(WebhookEvent.allCases)) {
        self.url = url
        self.secret = secret
        self.rooms = rooms
        self.events = events
    }

    /// Whether `room` is one of its rooms and it wants `event` of it.
    public func wants(_ event: WebhookEvent, of room: String) -> Bool {
        events.contains(event) && rooms.contains { $0.matches(room) }
    }
}
