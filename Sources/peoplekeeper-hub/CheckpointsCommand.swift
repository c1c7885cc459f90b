import ArgumentParser
import Foundation
import PeopleCore
import PeopleStore

/// `peoplekeeper-hub checkpoints [ROOM…]`: builds the checkpoints a room stored by an older hub lacks,
/// so that a restore or `?at=` far back in it reads a checkpoint and a few revisions instead of every
/// revision from the head back.
struct CheckpointsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "checkpoints",
        abstract: "Build the checkpoints of rooms stored before hubs kept them (restores far back then read little).",
        discussion: """
            A hub keeps the people at each snapshot's revision (every storage.snapshotEvery revisions) \
            as a checkpoint. Rooms stored by hubs older than that have none below their first newer \
            snapshot, and a restore or ?at= there reads every revision from the head back (about 1 s \
            per 90,000). This walks each such room back from its oldest checkpoint (or its head) through \
            every revision's exact inverses, and keeps a checkpoint at every multiple of \
            storage.snapshotEvery and at revision 0. A room with a checkpoint at revision 0 is left \
            as it is, so running it again does nothing. It only adds rows about revisions already \
            durable, so it may run beside the hubs (a room deleted and created again while it runs \
            is the one thing to avoid).

            Exit 66 for a room the store does not have, 74 when the store fails (the other rooms are \
            still done).

            Examples:
              peoplekeeper-hub checkpoints            (every room in the store)
              peoplekeeper-hub checkpoints team-a
            """)

    @Option(name: .long, help: "The YAML config file (for the store and storage.snapshotEvery).")
    var config: String = "Config/peoplekeeper.yaml"

    @Argument(help: "The rooms (none: every room in the store).") var rooms: [String] = []

    /// Revisions read from the store at once.
    static let chunk = 10_000

    func run() async throws {
        let settings = try await StoreAccess.settings(config: config, command: "checkpoints")
        let store = try StoreAccess.open(settings, command: "checkpoints")
        defer { store.close() }
        var names: [String] = []
        do {
            for room in rooms { names.append(try RoomName(room).rawValue) }
        } catch {
            throw StoreAccess.fail(64, "checkpoints", "\(error)")
        }
        if rooms.isEmpty {
            do { names = try store.everyRoom().map(\.name) } catch { throw StoreAccess.fail(74, "checkpoints", "cannot list the rooms: \(error)") }
        }
        var status: Int32 = 0
        for name in names {
            do {
                try output(try Self.backfill(name, in: store, every: settings.snapshotEvery))
            } catch let exit as ExitCode {
                status = max(status, exit.rawValue)
            } catch {
                status = max(status, StoreAccess.fail(74, "checkpoints", "room \(name): \(error)").rawValue)
            }
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// Walks `room` back from its oldest checkpoint (or its head) to revision 0, keeping a checkpoint at
    /// every multiple of `every`. Returns what it did, in a sentence.
    static func backfill(_ room: String, in store: any PeopleStore, every: Int) throws -> String {
        var oldest = try store.checkpoint(room: room, atOrBelow: Int(Int64.max))
        while let found = oldest, found.revision > 0, let older = try store.checkpoint(room: room, atOrBelow: found.revision - 1) {
            oldest = older
        }
        if oldest?.revision == 0 { return "room \(room): has its checkpoints (one at revision 0): nothing to do" }
        let start: Checkpoint
        if let oldest {
            start = oldest
        } else {
            guard let stored = try store.load(room: room) else {
                throw StoreAccess.fail(66, "checkpoints", "there is no room \(room) in the store")
            }
            let head = try Room(restoring: stored, policy: RoomPolicy())
            start = Checkpoint(revision: head.revision, people: head.model)
        }
        var walk = CheckpointWalk(from: start)
        var kept = 0
        // From the head (no checkpoint at all), the head itself may be one of the multiples.
        if oldest == nil, start.revision > 0, start.revision % every == 0 {
            try store.keepCheckpoint(start, room: room)
            kept += 1
        }
        while walk.revision > 0 {
            let after = max(0, walk.revision - chunk)
            let revisions = try store.revisions(room: room, after: after, through: walk.revision)
            for revision in revisions.reversed() where walk.takeBack(revision) {
                if walk.revision % every == 0 {
                    try store.keepCheckpoint(walk.checkpoint, room: room)
                    kept += 1
                }
            }
            guard walk.revision == after else {
                throw StoreAccess.fail(74, "checkpoints", "room \(room): the store does not have revision \(walk.revision): "
                                       + "the room's past cannot be walked back further (\(kept) checkpoints kept above it)")
            }
        }
        return "room \(room): \(kept) checkpoint\(kept == 1 ? "" : "s") kept, revisions 0–\(start.revision) walked back"
    }
}
