import Foundation
import PeopleCore
import PeopleHub
import PeopleStore
import PeopleWebhooks
import Yams

/// The `webhooks` section of the config file: a list of endpoints, each
/// `{url, name?, secretFile, rooms: [pattern…], events: [revision, room.created, room.deleted]}` (the
/// product contract's HTTP API §3). A list of mappings, which the key table (one value per key) cannot hold,
/// so it is read here, from the file only, and checked as strictly: an unknown key, a URL that is not
/// http(s), an unreadable or short secret, an unknown event are refused naming `webhooks[i].key`.
enum WebhookSettings {
    static let keys = ["url", "name", "secretFile", "rooms", "events"]
    /// The longest `name` (bytes of UTF-8): a metric label and a log field, not a description.
    static let maximumNameBytes = 100
    /// A secret shorter than this is refused (an HMAC key that can be guessed signs nothing).
    static let minimumSecretBytes = 16

    /// The endpoints the file lists (none without a file or a `webhooks` section).
    static func endpoints(file: String?) throws -> [WebhookEndpoint] {
        guard let file, let text = try? String(contentsOfFile: file, encoding: .utf8),
              case .mapping(let top)? = try? Yams.compose(yaml: text),
              let section = top.first(where: { $0.key.string == "webhooks" })?.value else { return [] }
        guard case .sequence(let items) = section else {
            throw ConfigProblem(key: "webhooks", problem: "must be a list of endpoints ({url, secretFile, rooms, events})")
        }
        let parsed = try items.enumerated().map { index, item in try endpoint(item, key: "webhooks[\(index)]", file: file) }
        var endpoints = parsed.map(\.endpoint)
        for (index, endpoint) in endpoints.enumerated() {
            if let other = endpoints[..<index].firstIndex(where: { $0.url == endpoint.url }) {
                throw ConfigProblem(key: "webhooks[\(index)].url", problem: "is also webhooks[\(other)]'s URL: one endpoint per URL "
                                    + "(its delivery cursors are kept under it); give it more rooms or events instead")
            }
        }
        // An endpoint without a name is called by its URL's scheme, host and port; several at one host
        // are told apart by their place in the list.
        let explicit = Set(parsed.indices.filter { parsed[$0].named })
        let names = endpoints.map(\.name)
        for index in endpoints.indices where !explicit.contains(index) {
            if names.indices.contains(where: { $0 != index && names[$0] == names[index] }) {
                endpoints[index].name = "\(names[index]) (webhooks[\(index)])"
            }
        }
        // Two endpoints the metrics and the log would call alike would be counted as one.
        for (index, endpoint) in endpoints.enumerated() {
            if let other = endpoints[..<index].firstIndex(where: { $0.name == endpoint.name }) {
                let key = explicit.contains(index) ? index : other
                throw ConfigProblem(key: "webhooks[\(key)].name", problem: "\(endpoint.name) is also the name of webhooks[\(key == index ? other : index)] "
                                    + "(the metrics and the log would count them as one): give each endpoint a name of its own")
            }
        }
        return endpoints
    }

    /// One endpoint, and whether the file gave it a name.
    private static func endpoint(_ node: Node, key: String, file: String) throws -> (endpoint: WebhookEndpoint, named: Bool) {
        guard case .mapping(let entries) = node else { throw ConfigProblem(key: key, problem: "must be a mapping") }
        for (name, _) in entries where !keys.contains(name.string ?? "") {
            throw ConfigProblem(key: "\(key).\(name.string ?? "?")", problem: "unknown key (known: \(keys.joined(separator: ", ")))")
        }
        func string(_ name: String) throws -> String {
            guard let value = entries.first(where: { $0.key.string == name })?.value.string, !value.isEmpty else {
                throw ConfigProblem(key: "\(key).\(name)", problem: "is required")
            }
            return value
        }
        func strings(_ name: String, default fallback: [String]) throws -> [String] {
            guard let value = entries.first(where: { $0.key.string == name })?.value else { return fallback }
            guard case .sequence(let list) = value, let items = Optional(list.compactMap(\.string)), items.count == list.count else {
                throw ConfigProblem(key: "\(key).\(name)", problem: "must be a list of strings")
            }
            return items
        }
        let url = try string("url")
        guard url.hasPrefix("http://") || url.hasPrefix("https://"), URL(string: url)?.host != nil else {
            throw ConfigProblem(key: "\(key).url", problem: "must be an http:// or https:// URL (\(url))")
        }
        let secretFile = try string("secretFile")
        let path = secretFile.hasPrefix("/") ? secretFile
            : URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent(secretFile).path
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigProblem(key: "\(key).secretFile", problem: "cannot read \(path)")
        }
        var secret = Array(data)
        if secret.last == 0x0A { secret.removeLast() }  // `echo secret > file` writes a newline
        if secret.last == 0x0D { secret.removeLast() }
        guard secret.count >= minimumSecretBytes else {
            throw ConfigProblem(key: "\(key).secretFile", problem: "the secret is \(secret.count) bytes; it must be at least \(minimumSecretBytes)")
        }
        var name: String?
        if let value = entries.first(where: { $0.key.string == "name" })?.value {
            // Shown in a metric label and a log line: visible text, no control or formatting characters
            // (a bidi override would show it reversed).
            guard let text = value.string, !text.trimmingCharacters(in: .whitespaces).isEmpty, text.utf8.count <= maximumNameBytes,
                  !text.unicodeScalars.contains(where: { [.control, .format, .lineSeparator, .paragraphSeparator]
                      .contains($0.properties.generalCategory) }) else {
                throw ConfigProblem(key: "\(key).name", problem: "must be 1 to \(maximumNameBytes) bytes of visible text on one line "
                                    + "(what the metrics and the log call the endpoint)")
            }
            name = text
        }
        let rooms = try strings("rooms", default: ["*"])
        var events: Set<WebhookEvent> = []
        for name in try strings("events", default: WebhookEvent.allCases.map(\.rawValue)) {
            guard let event = WebhookEvent(rawValue: name) else {
                throw ConfigProblem(key: "\(key).events", problem: "unknown event \(name) (known: revision, room.created, room.deleted)")
            }
            events.insert(event)
        }
        return (WebhookEndpoint(url: url, name: name, secret: secret, rooms: rooms.map(RoomPattern.init), events: events), name != nil)
    }
}

/// The hub's side of the webhook dispatcher: what the service thread tells it returns at once.
final class DispatcherWebhooks: HubWebhooks {
    let dispatcher: WebhookDispatcher

    init(_ dispatcher: WebhookDispatcher) { self.dispatcher = dispatcher }

    func revisionsDurable(room: String, after: Int, through: Int, revisions: () -> [Revision]) {
        dispatcher.revisionDurable(room: room, rev: through, after: after, revisions: revisions)
    }
    func notices(roomCreated room: String, time: Int64) -> [WebhookNotice] {
        dispatcher.notices(.roomCreated, room: room, time: time)
    }
    func notices(roomDeleted room: String, time: Int64) -> [WebhookNotice] {
        dispatcher.notices(.roomDeleted, room: room, time: time)
    }
    func roomCreated(room: String, time: Int64) { dispatcher.roomCreated(room: room, time: time) }
    func roomDeleted(room: String, time: Int64) { dispatcher.roomDeleted(room: room, time: time) }
    func roomLoaded(room: String) { dispatcher.roomLoaded(room: room) }
    func reenable(_ endpoint: WebhookEndpointReference) -> Bool {
        switch endpoint {
        case .url(let url): dispatcher.reenable(url: url)
        case .name(let name): dispatcher.reenable(name: name)
        }
    }

    func status() -> JSON {
        .object(["webhooks": .array(dispatcher.status().map { s in
            .object([
                "url": .string(s.url), "name": .string(s.name), "rooms": .array(s.rooms.map(JSON.string)),
                "events": .array(s.events.map { .string($0.rawValue) }), "state": .string(s.state.rawValue),
                "backlog": .int(s.backlog), "delivered": .int(s.delivered), "lastError": s.lastError.map(JSON.string),
                "lastSuccess": s.lastSuccess.map { .int(Int($0)) },
            ])
        })])
    }
}
