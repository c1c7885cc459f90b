import ArgumentParser
import Foundation
import PeopleStore
import PeopleWebhooks

/// `peoplekeeper-hub webhooks [list]` and `peoplekeeper-hub webhooks forget`: what the store keeps for
/// each webhook endpoint (its delivery cursors, room events and a deleted room's revisions not yet
/// delivered), and removing it for an endpoint taken out of the config. Nothing else removes it: the
/// hub keeps what an endpoint was owed while it is configured, and a hub started with an older
/// config in a rolling change must not drop what another node is still delivering.
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "List what the store keeps for each webhook endpoint; forget an endpoint removed from the config.",
        subcommands: [List.self, Forget.self],
        defaultSubcommand: List.self)

    /// What the store keeps for `held`, in words.
    static func describe(_ held: StoredWebhookEndpoint) -> String {
        "cursors in \(count(held.cursors, "room", "rooms")); not yet delivered: \(count(held.events, "room event", "room events")), "
            + "\(count(held.owedRevisions, "revision", "revisions")) of deleted rooms"
    }

    static func count(_ n: Int, _ one: String, _ many: String) -> String { "\(n) \(n == 1 ? one : many)" }

    /// `url` with its password (if any) shown as `***`: the listing is for finding an endpoint, not
    /// for copying its credentials.
    static func shown(_ url: String) -> String {
        guard var parts = URLComponents(string: url), parts.password != nil else { return url }
        parts.password = "***"
        return parts.string ?? url
    }

    /// The config's endpoints and the store (exit 78 for a bad config, 64 for the memory store, 66 for
    /// a SQLite file that is not there, 74 when it cannot be opened).
    static func open(config: String, command: String) async throws -> ([WebhookEndpoint], any PeopleStore) {
        let settings = try await StoreAccess.settings(config: config, command: command)
        let endpoints: [WebhookEndpoint]
        do { endpoints = try WebhookSettings.endpoints(file: config) } catch { throw StoreAccess.fail(78, command, "\(error)") }
        return (endpoints, try StoreAccess.open(settings, command: command))
    }

    static func held(in store: any PeopleStore, command: String) throws -> [StoredWebhookEndpoint] {
        do { return try store.webhookEndpoints() } catch { throw StoreAccess.fail(74, command, "\(error)") }
    }

    /// In a cluster, endpoint → the live nodes whose config lists it (their heartbeats say so), and the
    /// live nodes of an older version, which do not say (any endpoint may be theirs); empty for a
    /// store with no nodes (SQLite).
    static func listedByNodes(in store: any PeopleStore, command: String) throws -> (listed: [String: [String]], unknown: [String]) {
        guard let cluster = store as? any ClusterNodes else { return ([:], []) }
        do {
            let listing = try cluster.webhookListing()
            return (listing.listed, listing.unknown)
        } catch { throw StoreAccess.fail(74, command, "\(error)") }
    }

    static func nodes(_ names: [String]) -> String {
        "\(names.count == 1 ? "node" : "nodes") \(names.joined(separator: ", "))"
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the webhook endpoints the store keeps delivery state for, and whether the config still has each.",
            discussion: """
                One line per endpoint: its URL (a password in it shown as ***; a path or query that holds \
                a key is shown as it is), its name in the config or "not in the config", how many rooms it \
                has a cursor in, and the room events and revisions of deleted rooms it has not been sent. \
                An endpoint not in the config is never delivered to again; `peoplekeeper-hub webhooks \
                forget` removes what the store keeps for it. Reads only: it may run beside the hubs.

                Examples:
                  peoplekeeper-hub webhooks
                  peoplekeeper-hub webhooks list --config /etc/peoplekeeper/peoplekeeper.yaml
                """)

        @Option(name: .long, help: "The YAML config file (for the store and the webhooks configured).")
        var config: String = "Config/peoplekeeper.yaml"

        func run() async throws {
            let (endpoints, store) = try await WebhooksCommand.open(config: config, command: "webhooks")
            defer { store.close() }
            let held = try WebhooksCommand.held(in: store, command: "webhooks")
            let (listed, unknown) = try WebhooksCommand.listedByNodes(in: store, command: "webhooks")
            if held.isEmpty { try output("the store keeps nothing for any webhook endpoint") }
            if !unknown.isEmpty && !held.isEmpty {
                try output("(\(WebhooksCommand.nodes(unknown)) of the cluster \(unknown.count == 1 ? "runs" : "run") an older version, "
                           + "which does not say which endpoints \(unknown.count == 1 ? "its config lists" : "their configs list"))")
            }
            for entry in held {
                let configured = endpoints.firstIndex { $0.url == entry.endpoint }
                let elsewhere = listed[entry.endpoint].map { "; \(WebhooksCommand.nodes($0)) of the cluster \($0.count == 1 ? "lists" : "list") it" } ?? ""
                let status = configured.map { "\"\(endpoints[$0].name)\" (webhooks[\($0)])" } ?? "not in the config" + elsewhere
                try output("\(WebhooksCommand.shown(entry.endpoint))  \(status): \(WebhooksCommand.describe(entry))")
            }
        }
    }

    struct Forget: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "forget",
            abstract: "Remove what the store keeps for webhook endpoints that are no longer configured.",
            discussion: """
                Removes, in one commit per endpoint, its delivery cursors, the room events and the \
                revisions of deleted rooms it was never sent (copies of those rooms' people). Take the \
                endpoint out of every hub's config first, and give this command the config the hubs run \
                with: an endpoint it lists is refused (exit 64, and nothing is removed), since a hub \
                delivering to it carries on from what it holds in memory and writes its cursors again. \
                Name endpoints by their whole URL, as `peoplekeeper-hub webhooks` lists them (matched \
                byte for byte), or by the listing's form with *** for a password when that names one \
                endpoint; or give --unconfigured for every endpoint the config does not list. A URL the \
                store keeps nothing for: exit 66 (the others are still done); a store failure: exit 74. \
                It may run beside the hubs. With SQLite the write-ahead log is emptied into the file \
                afterwards, so what was removed is readable in neither file (beside a running hub this \
                waits for the hub's readers).

                Examples:
                  peoplekeeper-hub webhooks forget --unconfigured
                  peoplekeeper-hub webhooks forget https://old-hooks.example.com/people
                """)

        @Option(name: .long, help: "The YAML config file (for the store and the webhooks configured).")
        var config: String = "Config/peoplekeeper.yaml"

        @Flag(name: .long, help: "Forget every endpoint the config does not list.")
        var unconfigured = false

        @Argument(help: "The endpoints' URLs, as `peoplekeeper-hub webhooks` lists them.")
        var urls: [String] = []

        func validate() throws {
            if unconfigured == !urls.isEmpty {
                throw ValidationError("give the endpoints' URLs or --unconfigured (one of the two)")
            }
        }

        func run() async throws {
            let (endpoints, store) = try await WebhooksCommand.open(config: config, command: "webhooks forget")
            defer { store.close() }
            let held = try WebhooksCommand.held(in: store, command: "webhooks forget")
            let (listed, unknown) = try WebhooksCommand.listedByNodes(in: store, command: "webhooks forget")
            if !unknown.isEmpty {
                // Any endpoint may be theirs: nothing is removed while they run.
                throw StoreAccess.fail(64, "webhooks forget", "\(WebhooksCommand.nodes(unknown)) of the cluster "
                                       + "\(unknown.count == 1 ? "runs" : "run") an older version, which does not say which "
                                       + "endpoints \(unknown.count == 1 ? "its config lists" : "their configs list"): "
                                       + "upgrade \(unknown.count == 1 ? "it" : "them") first; nothing is removed")
            }
            let configured = Set(endpoints.map(\.url))
            var chosen: [String] = []
            var status: Int32 = 0
            if unconfigured {
                // One that a running node of the cluster lists is that node's to deliver: kept.
                for endpoint in held.map(\.endpoint) where !configured.contains(endpoint) {
                    if let nodes = listed[endpoint] {
                        try output("kept \(WebhooksCommand.shown(endpoint)): \(WebhooksCommand.nodes(nodes)) of the cluster "
                                   + "\(nodes.count == 1 ? "lists" : "list") it (take it out of every node's config first)")
                    } else {
                        chosen.append(endpoint)
                    }
                }
                if chosen.isEmpty && !held.contains(where: { !configured.contains($0.endpoint) && listed[$0.endpoint] != nil }) {
                    try output(held.isEmpty ? "the store keeps nothing for any webhook endpoint: nothing to forget"
                          : "every endpoint the store keeps something for is in the config: nothing to forget")
                }
            }
            // Every URL is checked before anything is removed: one refused refuses the command.
            var named: [String: [String]] = [:]
            for url in urls {
                // The whole URL, or the listing's form with `***` for a password when it names one endpoint.
                let matches = held.contains { $0.endpoint == url } ? [url] : held.map(\.endpoint).filter { WebhooksCommand.shown($0) == url }
                if matches.count > 1 {
                    throw StoreAccess.fail(64, "webhooks forget", "\(url) names \(matches.count) endpoints (they differ in the password): "
                                           + "give the whole URL, or --unconfigured")
                }
                for endpoint in matches + [url] {
                    if let index = endpoints.firstIndex(where: { $0.url == endpoint }) {
                        throw StoreAccess.fail(64, "webhooks forget", "\(url) is in the config (webhooks[\(index)], \"\(endpoints[index].name)\"): "
                                               + "take it out of every hub's config first (a hub delivering to it writes its cursors again)")
                    }
                    if let nodes = listed[endpoint] {
                        throw StoreAccess.fail(64, "webhooks forget", "\(url) is in the config of \(WebhooksCommand.nodes(nodes)) of the cluster: "
                                               + "take it out of every node's config first (a node delivering to it writes its cursors again)")
                    }
                }
                named[url] = matches
            }
            for url in urls {
                let matches = named[url] ?? []
                if matches.isEmpty {
                    status = max(status, StoreAccess.fail(66, "webhooks forget", "the store keeps nothing for \(url)").rawValue)
                }
                chosen += matches.filter { !chosen.contains($0) }
            }
            for endpoint in chosen {
                let forgotten: StoredWebhookEndpoint?
                do { forgotten = try store.forgetWebhookEndpoint(endpoint) } catch {
                    status = max(status, StoreAccess.fail(74, "webhooks forget", "\(WebhooksCommand.shown(endpoint)): \(error)").rawValue)
                    continue
                }
                if let forgotten { try output("forgot \(WebhooksCommand.shown(endpoint)): \(WebhooksCommand.describe(forgotten))") }
            }
            if status != 0 { throw ExitCode(status) }
        }
    }
}
