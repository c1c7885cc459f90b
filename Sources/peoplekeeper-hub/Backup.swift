import ArgumentParser
import Foundation
import PeopleStoreSQLite

/// `peoplekeeper-hub backup FILE`: an online copy of the embedded SQLite store, while the hub runs.
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy the embedded SQLite store into a new file, consistently, while the hub runs.",
        discussion: """
            Reads storage.path from the config (and PEOPLEKEEPER_* variables), copies the database with \
            SQLite's online backup in one read transaction (the hub goes on committing), checks the copy's \
            integrity, and prints the rooms and journal records it holds. The file must not exist. To \
            restore, stop the hub and put the copy at storage.path (docs/OPERATIONS.md). With \
            storage.kind postgres, use pg_dump instead.

            Examples:
              peoplekeeper-hub backup /backups/peoplekeeper-$(date +%F).sqlite
              peoplekeeper-hub backup --config Config/peoplekeeper.yaml copy.sqlite
            """
    )

    @Option(name: .long, help: "The YAML config file (for storage.kind and storage.path).")
    var config: String = "Config/peoplekeeper.yaml"

    @Argument(help: "The backup file to write (it must not exist).")
    var destination: String

    func run() async throws {
        let settings: HubSettings
        do {
            settings = try await HubSettings.load(file: config, flags: [:], environment: ProcessInfo.processInfo.environment)
        } catch {
            writeStandardError(line: "peoplekeeper-hub: \(error)")
            throw ExitCode(78)  // EX_CONFIG
        }
        guard settings.storageKind == .embedded else {
            writeStandardError(line: """
                peoplekeeper-hub backup: storage.kind is \(settings.storageKind.rawValue); this command copies the \
                embedded SQLite store\(settings.storageKind == .memory ? " (a memory store keeps nothing to copy)" : "; for PostgreSQL use pg_dump") (docs/OPERATIONS.md).
                """)
            throw ExitCode(64)  // EX_USAGE
        }
        let copied: (rooms: Int, records: Int)
        do { copied = try SQLiteStore.backup(from: settings.storagePath, to: destination) } catch {
            writeStandardError(line: "peoplekeeper-hub backup: \(error)")
            throw ExitCode(74)  // EX_IOERR
        }
        try output("backed up \(settings.storagePath) to \(destination): \(copied.rooms) rooms, \(copied.records) journal records (integrity ok)")
    }
}
