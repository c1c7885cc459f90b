import ArgumentParser
import BuildIdentity
import Foundation

/// `peoplekeeper-hub`: the PeopleKeeper sync server. `serve` (the default) runs it.
@main
struct PeopleKeeperHub: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peoplekeeper-hub",
        abstract: "The PeopleKeeper hub: rooms of people edited together over WebSocket, with per-user undo.",
        version: "peoplekeeper-hub \(BuildIdentity.versionLine)",
        subcommands: [Serve.self, Backup.self, Token.self, HistoryCommand.self, ExportCommand.self, ImportCommand.self,
                      CheckpointsCommand.self, WebhooksCommand.self,
                      Echo.self, ConfigKeysCommand.self],
        defaultSubcommand: Serve.self
    )

    static func main() async {
        keepStandardStreamsOpen()
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}
