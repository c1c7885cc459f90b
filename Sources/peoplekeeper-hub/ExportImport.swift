import ArgumentParser
import Foundation
import Logging
import PeopleCore
import PeopleHub
import PeopleStore
import PeopleWebhooks

/// `peoplekeeper-hub export ROOM` and `import ROOM FILE`: the HTTP API's export and import for
/// operators, straight on the store the config names (the hub may be running for an export; import
/// into a room nobody uses yet: it refuses a room the store has).
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Print a room as JSON (with --history: every revision, for import elsewhere) or as CSV.",
        discussion: """
            The same as GET /v1/rooms/ROOM/export. Exit 66 when the store has no such room.

            Examples:
              peoplekeeper-hub export team-a --history > team-a.json
              peoplekeeper-hub export team-a --csv > team-a.csv
            """)

    @Option(name: .long, help: "The YAML config file (for the store).")
    var config: String = "Config/peoplekeeper.yaml"

    @Argument(help: "The room.") var room: String

    @Flag(help: "Add the people at revision 0 and every revision since (what import needs to rebuild the history).")
    var history = false

    @Flag(help: "The people as CSV (RFC 4180; sets joined with ;) instead of JSON.") var csv = false

    func run() async throws {
        let store = try await StoreAccess.open(config: config, command: "export")
        defer { store.close() }
        let (room, older) = try StoreAccess.load(room, from: store, command: "export", older: history && !csv)
        if csv {
            try output(RoomExport.csvText(room.model), newline: false)
            return
        }
        guard let json = room.export(history: history, older: older) else {
            throw StoreAccess.fail(74, "export", "the room's history cannot be read back to revision 0")
        }
        try output(json.text)
    }
}

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Create a room from an export (JSON from export or GET …/export): its people, and its history if the file has it.",
        discussion: """
            The same as PUT /v1/rooms/ROOM. Refuses a room the store already has (exit 73) and a file \
            that does not add up (exit 65: the revisions must lead from its initial people to its people).

            Example:
              peoplekeeper-hub import team-b team-a.json
            """)

    @Option(name: .long, help: "The YAML config file (for the store).")
    var config: String = "Config/peoplekeeper.yaml"

    @Argument(help: "The room to create.") var room: String
    @Argument(help: "The export file (JSON).") var file: String

    func run() async throws {
        let name: String
        do { name = try RoomName(room).rawValue } catch { throw StoreAccess.fail(64, "import", "\(error)") }
        let json: JSON
        guard let data = FileManager.default.contents(atPath: file) else {
            throw StoreAccess.fail(66, "import", "cannot read \(file): no such file, or not readable")
        }
        do { json = try JSON.parse(Array(data)) } catch {
            throw StoreAccess.fail(66, "import", "cannot read \(file) as JSON: \(error)")
        }
        let settings = try await StoreAccess.settings(config: config, command: "import")
        let endpoints: [WebhookEndpoint]
        do { endpoints = try WebhookSettings.endpoints(file: config) } catch { throw StoreAccess.fail(78, "import", "\(error)") }
        let imported: RoomImport
        do {
            imported = try RoomImport(room: name, body: json, policy: settings.roomPolicy,
                                      now: Int64(Date().timeIntervalSince1970 * 1000), snapshotEvery: settings.snapshotEvery)
        } catch {
            throw StoreAccess.fail(65, "import", "\(error)")
        }
        let store = try StoreAccess.open(settings, command: "import", creating: true)
        defer { store.close() }
        do {
            if try store.load(room: name) != nil { throw StoreAccess.fail(73, "import", "room \(name) exists in the store") }
        } catch let exit as ExitCode { throw exit } catch {
            throw StoreAccess.fail(74, "import", "\(error)")
        }
        // The new room's first snapshot, its history and the people every storage.snapshotEvery
        // revisions (so a restore or ?at= far back reads little), all or nothing (PeopleStore.create),
        // then the room's snapshot at its head (so loading it replays nothing), as a hub that
        // made the same revisions one by one would have kept.
        let done = DispatchSemaphore(value: 0)
        let failure = LockedBox<StoreError?>(nil)
        // The webhooks hear of it as of a room PUT made (a helper's drill found them told nothing): its
        // room.created kept with it, and every endpoint that wants its revisions at 0 (in the same
        // commit), so the hub that loads it (now or at its next start) delivers them from the first.
        // A file of people makes a room at this time, its revision 0's and its room.created's alike
        // (as a PUT's, `RoomImport.room(madeAt:)`); an export keeps its own.
        let created = Int64(Date().timeIntervalSince1970 * 1000)
        let room = imported.room(madeAt: created)
        let notices = WebhookDispatcher.notices(.roomCreated, room: name, time: created, endpoints: endpoints)
        if store.create(imported.startingRoom(madeAt: created).snapshot(), notices: notices, entries: imported.entries,
                        checkpoints: imported.checkpoints, room: name,
                        whenDurable: { error in failure.set(error); done.signal() }) == .durable {
            done.signal()
        }
        done.wait()
        if let error = failure.get() { throw StoreAccess.fail(74, "import", "the store failed: \(error)") }
        if room.revision > 0 { store.save(room.snapshot(), room: name) }
        try output("imported room \(name): \(room.model.people.count) people, revision \(room.revision)")
    }
}

/// What the commands on the store (history, export, import) share: failing with an exit status and
/// a message, the settings and the store they name, a room read back.
enum StoreAccess {
    static func fail(_ status: Int32, _ command: String, _ message: String) -> ExitCode {
        writeStandardError(line: "peoplekeeper-hub \(command): \(message)")
        return ExitCode(status)
    }

    /// The config's settings (exit 78 for a bad config).
    static func settings(config: String, command: String) async throws -> HubSettings {
        do {
            return try await HubSettings.load(file: config, flags: [:], environment: ProcessInfo.processInfo.environment)
        } catch {
            throw fail(78, command, "\(error)")
        }
    }

    /// The store the settings name: exit 64 for the memory store (nothing to read), 66 for a SQLite
    /// file that is not there (unless `creating`: an import may start a store), 78 when the settings for
    /// it are wrong, 74 when it cannot be opened.
    static func open(_ settings: HubSettings, command: String, creating: Bool = false) throws -> any PeopleStore {
        guard settings.storageKind != .memory else { throw fail(64, command, "storage.kind memory keeps nothing to read") }
        if settings.storageKind == .embedded, !creating, !FileManager.default.fileExists(atPath: settings.storagePath) {
            throw fail(66, command, "there is no store at \(settings.storagePath) (storage.path): nothing to read")
        }
        do { return try settings.openStore(logger: Logger(label: "peoplekeeper.\(command)")) } catch let problem as ConfigProblem {
            throw fail(78, command, "\(problem)")
        } catch {
            throw fail(74, command, "\(error)")
        }
    }

    /// Both, for a command that needs only the store.
    static func open(config: String, command: String) async throws -> any PeopleStore {
        try open(try await settings(config: config, command: command), command: command)
    }

    /// The room as stored, and (with `older`) its revisions below memory.
    static func load(_ name: String, from store: any PeopleStore, command: String, older: Bool) throws -> (Room, [Revision]) {
        do {
            guard let stored = try store.load(room: name) else { throw fail(66, command, "there is no room \(name) in the store") }
            let room = try Room(restoring: stored, policy: RoomPolicy())
            let revisions = older && room.oldestKeptBase > 0
                ? try store.revisions(room: name, after: 0, through: room.oldestKeptBase) : []
            return (room, revisions)
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw fail(74, command, "cannot read room \(name): \(error)")
        }
    }
}

/// A value set on one thread and read on another.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func set(_ new: Value) { lock.withLock { value = new } }
    func get() -> Value { lock.withLock { value } }
}
