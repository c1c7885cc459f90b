/// What an endpoint can be told of (config `events`).
public enum WebhookEvent: String, Sendable, Hashable, CaseIterable {
    /// Every durable revision of a matching room, one POST each, in order.
    case revision
    /// A matching room was created.
    case roomCreated = "room.created"
    /// A matching room was deleted with all its history.
    case roomDeleted = "room.deleted"
}
