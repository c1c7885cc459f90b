import ArgumentParser
import Foundation
import Logging
import PeopleCore
import PeopleStore

/// `peoplekeeper-hub history ROOM`: the audit trail: a room's revisions as the store keeps them, with
/// who made each, what kind and which action.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Print a room's revisions from the store: who made each, its kind and action name.",
        discussion: """
            Reads the store named by the config (SQLite or PostgreSQL; the hub may be running). Exit 66 \
            when the store has no such room.

            Examples:
              peoplekeeper-hub history team-a
              peoplekeeper-hub history team-a --last 50 --config Config/cluster.yaml
              peoplekeeper-hub history team-a --json
            """)

    @Option(name: .long, help: "The YAML config file (for the store).")
    var config: String = "Config/peoplekeeper.yaml"

    @Argument(help: "The room.") var room: String

    @Option(help: "How many of the latest revisions (0: all).") var last = 100

    @Flag(help: "One JSON object per revision, one per line.") var json = false

    func validate() throws {
        guard last >= 0 else { throw ValidationError("--last is 0 (all) or more") }
    }

    func run() async throws {
        func fail(_ status: Int32, _ message: String) -> ExitCode { StoreAccess.fail(status, "history", message) }
        let store = try await StoreAccess.open(config: config, command: "history")
        defer { store.close() }
        let revisions: [Revision]
        do {
            // The head from the store's room list, not from loading the room (its snapshot, its journal
            // since, its kept answers: 2.4 s and 300 MB for `--last 20` of a room of a million revisions).
            guard let head = try store.listRooms(after: nil, prefix: room, limit: 1).first(where: { $0.name == room })?.rev else {
                throw fail(66, "there is no room \(room) in the store")
            }
            revisions = try store.revisions(room: room, after: last == 0 ? 0 : max(0, head - last), through: head)
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw fail(74, "cannot read room \(room): \(error)")
        }
        let dates = ISO8601DateFormatter()
        func when(_ r: Revision) -> String { dates.string(from: Date(timeIntervalSince1970: Double(r.timestamp) / 1000)) }
        // One write for the whole output (a write a line made `history --last 0` of a long room slow).
        if json {
            let lines = revisions.map { r in
                JSON.object([
                    "rev": .int(r.number), "time": .int(Int(r.timestamp)), "at": .string(when(r)), "author": .string(r.author),
                    "kind": .string(r.kind.rawValue), "label": r.label.map(JSON.string), "ops": .array(r.diffs.map(\.json)),
                ]).text
            }
            if !lines.isEmpty { try output(lines.joined(separator: "\n")) }
            return
        }
        var rows = [["REV", "AT", "AUTHOR", "KIND", "LABEL", "OPS"]]
        rows += revisions.map { [String($0.number), when($0), $0.author, $0.kind.rawValue, $0.label ?? "", String($0.diffs.count)] }
        let widths = (0..<6).map { c in rows.map { $0[c].count }.max() ?? 0 }
        try output(rows.map { row in
            row.enumerated().map { c, cell in c == 5 ? cell : cell.padding(toLength: widths[c], withPad: " ", startingAt: 0) }
                .joined(separator: "  ")
        }.joined(separator: "\n"))
    }
}
