import Foundation
import GRDB
import Logging
import PeopleCore
import PeopleStore
@testable import PeopleStorePostgres
@testable import PeopleStoreSQLite
import PeopleTestSupport
import Synchronization
import Testing

/// The logger the stores under test write to (libraries take one; they never make their own).
let storeLogger = Logger(label: "peoplekeeper.store-tests")

/// Drives a room through the core's public API and keeps what it asks the store to make durable.
struct RoomDriver {
    var room: Room
    var entries: [JournalEntry] = []
    var seq: [SessionID: Int] = [:]
    var now: Int64 = 1_700_000_000_000

    init(name: String) {
        room = Room(name: name, seed: .tutorialSeed)
    }

    @discardableResult
    mutating func join(_ user: String, session: SessionID) -> SessionID {
        let (id, actions) = room.join(session: session, user: user, role: .editor)
        take(actions)
        return id
    }

    mutating func send(_ message: (Int) -> ClientMessage, from session: SessionID) {
        seq[session, default: 0] += 1
        now += 700
        take(room.receive(message(seq[session]!), from: session, now: now))
    }

    mutating func edit(_ diffs: [Diff], from session: SessionID, label: String = "Edit", coalesce: String? = nil) {
        let base = room.revision
        send({ .submit(.init(seq: $0, base: base, ops: diffs, label: label, coalesce: coalesce)) }, from: session)
    }

    mutating func take(_ actions: [RoomAction]) {
        for case .persist(let entry) in actions { entries.append(entry) }
    }

    /// An HTTP write by ann with idempotency `key`: a rename of person 3.
    mutating func write(_ n: Int, key: String) {
        now += 700
        take(room.request(.submit(.init(seq: 0, base: room.revision, ops: [.set(3, .name("Sam \(n)"))])),
                          as: "ann", key: key, now: now))
    }

    /// Entries not yet handed to the store (after `position`).
    func entries(after position: Int) -> [JournalEntry] { entries.filter { $0.position > position } }

    /// A mixed session: two users edit, undo, redo, type a name, ask for tags; one leaves.
    mutating func play(rounds: Int) {
        let a = join("ann", session: "sa-\(room.name)-\(room.journalPosition)")
        let b = join("bob", session: "sb-\(room.name)-\(room.journalPosition)")
        for round in 0..<rounds {
            let colours: [HairColor] = [.red, .blonde, .black, .brown]
            edit([.set(1, .hairColor(colours[round % 4]))], from: a, label: "Change Hair Color")
            edit([.set(2, .glasses(round % 2 == 0))], from: b, label: "Toggle Glasses")
            edit([.set(3, .name("Sam \(round)"))], from: a, label: "Rename", coalesce: "name-3")
            if round % 3 == 0 { send({ .undo(.init(seq: $0)) }, from: a) }
            if round % 5 == 0 { send({ .redo(.init(seq: $0)) }, from: a) }
            if round % 7 == 0 { send({ _ in .tags }, from: b) }
        }
        take(room.leave(session: b))
    }
}

/// The room's durable state, comparable across a restore (sessions in id order).
func durableState(_ room: Room) -> JSON {
    guard case .object(var members) = room.snapshot().json,
          let i = members.firstIndex(where: { $0.key == "sessions" }), case .array(let sessions) = members[i].value
    else { return .null }
    members[i].value = .array(sessions.sorted { "\($0["id"]!)" < "\($1["id"]!)" })
    return .object(members)
}

/// A new room in `store` (its first snapshot), played for `rounds` and appended; durable on return.
func seededRoom(_ store: any PeopleStore, _ name: String, rounds: Int) throws -> RoomDriver {
    var driver = RoomDriver(name: name)
    store.save(driver.room.snapshot(), room: name)
    driver.play(rounds: rounds)
    try appendAndWait(store, driver.entries, room: name)
    return driver
}

/// Waits for an append's completion (or takes `.durable` at once).
func appendAndWait(_ store: any PeopleStore, _ entries: [JournalEntry], room: String) throws {
    let result = Mutex<StoreError??>(nil)
    let done = DispatchSemaphore(value: 0)
    let outcome = store.append(entries, room: room) { error in
        result.withLock { $0 = .some(error) }
        done.signal()
    }
    if outcome == .durable { return }
    #expect(done.wait(timeout: .now() + 30) == .success, "append never completed")
    if let error = result.withLock({ $0 }) ?? nil { throw error }
}

/// Creates a room with its history and waits for the commit (or takes `.durable` at once).
func createAndWait(_ store: any PeopleStore, _ snapshot: RoomSnapshot, _ entries: [JournalEntry],
                   checkpoints: [Checkpoint] = [], room: String) throws {
    let result = Mutex<StoreError??>(nil)
    let done = DispatchSemaphore(value: 0)
    let outcome = store.create(snapshot, notices: [], entries: entries, checkpoints: checkpoints, room: room) { error in
        result.withLock { $0 = .some(error) }
        done.signal()
    }
    if outcome == .durable { return }
    #expect(done.wait(timeout: .now() + 30) == .success, "create never completed")
    if let error = result.withLock({ $0 }) ?? nil { throw error }
}

extension StoreContract {
    /// Runs a contract test off the cooperative pool (its store calls wait for commits: `blocking`).
    func run(_ test: @escaping (StoreContract) throws -> Void) async throws {
        let contract = Unchecked(self)
        try await blocking { try test(contract.value) }
    }
}

/// One contract, every store: each test takes a factory that opens the same store again (for the
/// durable ones, the same file or database) and runs against it.
struct StoreContract {
    let open: () throws -> any PeopleStore
    let durable: Bool
    /// Prefixes room names, for stores shared between tests (one PostgreSQL database).
    var prefix = ""

    func unknownRoom() throws {
        let store = try open()
        defer { store.close() }
        #expect(try store.load(room: "\(prefix)never") == nil)
        #expect(try store.revisions(room: "\(prefix)never", after: 0, through: 100).isEmpty)
    }

    func roundTrip() throws {
        let store = try open()
        let driver = try seededRoom(store, "\(prefix)round-trip", rounds: 12)
        let stored = try #require(try store.load(room: "\(prefix)round-trip"))
        #expect(stored.tail.map(\.position) == Array(1...driver.room.journalPosition))
        let restored = try Room(restoring: stored, policy: driver.room.policy)
        #expect(durableState(restored) == durableState(driver.room))
        #expect(restored.model == driver.room.model)
        store.close()

        // Everything acknowledged is there after the store is opened again.
        guard durable else { return }
        let reopened = try open()
        defer { reopened.close() }
        let again = try #require(try reopened.load(room: "\(prefix)round-trip"))
        #expect(durableState(try Room(restoring: again, policy: driver.room.policy)) == durableState(driver.room))
    }

    func snapshotThenTail() throws {
        let store = try open()
        defer { store.close() }
        var driver = try seededRoom(store, "\(prefix)snap", rounds: 6)
        let snapshot = driver.room.snapshot()
        store.save(snapshot, room: "\(prefix)snap")
        let before = driver.room.journalPosition
        driver.play(rounds: 4)
        try appendAndWait(store, driver.entries(after: before), room: "\(prefix)snap")
        let stored = try #require(try store.load(room: "\(prefix)snap"))
        #expect(stored.tail.first?.position == snapshot.position + 1)
        #expect(stored.tail.last?.position == driver.room.journalPosition)
        #expect(stored.window.map(\.number) == Array((snapshot.floor + 1)...snapshot.revision).filter { $0 > 0 })
        #expect(durableState(try Room(restoring: stored, policy: driver.room.policy)) == durableState(driver.room))
    }

    func revisionRanges() throws {
        let store = try open()
        defer { store.close() }
        let driver = try seededRoom(store, "\(prefix)ranges", rounds: 10)
        let all = driver.entries.compactMap(\.record.revision)
        let head = driver.room.revision
        #expect(try store.revisions(room: "\(prefix)ranges", after: 0, through: head) == all)
        #expect(try store.revisions(room: "\(prefix)ranges", after: 5, through: 9).map(\.number) == [6, 7, 8, 9])
        #expect(try store.revisions(room: "\(prefix)ranges", after: head, through: head + 10).isEmpty)
    }

    /// Many rooms appended from several threads at once: every append completes without error, and each
    /// room's journal is complete and in order.
    func concurrentAppends() throws {
        let store = try open()
        defer { store.close() }
        let rooms = (0..<8).map { "\(prefix)busy-\($0)" }
        var drivers = rooms.map { RoomDriver(name: $0) }
        for i in drivers.indices {
            store.save(drivers[i].room.snapshot(), room: rooms[i])
            drivers[i].play(rounds: 20)
        }
        let failures = Mutex<[StoreError]>([])
        let pending = DispatchGroup()
        let journals = drivers.map(\.entries)
        DispatchQueue.concurrentPerform(iterations: rooms.count) { i in
            for entry in journals[i] {
                pending.enter()
                let outcome = store.append([entry], room: rooms[i]) { error in
                    if let error { failures.withLock { $0.append(error) } }
                    pending.leave()
                }
                if outcome == .durable { pending.leave() }
            }
        }
        #expect(pending.wait(timeout: .now() + 60) == .success)
        #expect(failures.withLock { $0 }.isEmpty)
        for i in drivers.indices {
            let stored = try #require(try store.load(room: rooms[i]))
            #expect(stored.tail.map(\.position) == Array(1...drivers[i].room.journalPosition))
            #expect(try Room(restoring: stored, policy: RoomPolicy()).model == drivers[i].room.model)
        }
    }

    /// Rooms come in byte order (upper case before lower), only those with the prefix, a page at a
    /// time after a name; each with its head revision, its snapshot's count of people and the time of
    /// its head revision (or of its snapshot, for a room with none).
    func listRoomsInPages() throws {
        let store = try open()
        defer { store.close() }
        let p = "\(prefix)list-"
        var a = try seededRoom(store, p + "a", rounds: 3)
        let mark = a.room.journalPosition
        a.edit([.remove(1)], from: "sa-\(p)a-0", label: "Remove")
        try appendAndWait(store, a.entries(after: mark), room: p + "a")
        store.save(a.room.snapshot(), room: p + "a")
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let quiet = RoomDriver(name: p + "B")
        store.save(quiet.room.snapshot(), room: p + "B")
        let c = try seededRoom(store, p + "c", rounds: 1)
        _ = try seededRoom(store, "\(prefix)lisu-other", rounds: 1)
        // A journal without a snapshot is not a room yet.
        try appendAndWait(store, c.entries, room: p + "d")
        // (Saves go through the writer, in order: every save above is durable once these appends are.)
        let after = Int64(Date().timeIntervalSince1970 * 1000)

        let all = try store.listRooms(after: nil, prefix: p, limit: 100)
        #expect(all.map(\.name) == [p + "B", p + "a", p + "c"])
        let first = try #require(all.first { $0.name == p + "a" })
        #expect(first.rev == a.room.revision)
        #expect(first.people == a.room.model.count)
        #expect(first.people == PeopleModel.tutorialSeed.count - 1)
        #expect(first.updated == a.entries.compactMap(\.record.revision).last?.timestamp)
        let empty = try #require(all.first)
        #expect(empty.rev == 0 && empty.people == PeopleModel.tutorialSeed.count)
        #expect(empty.updated >= before - 1000 && empty.updated <= after + 1000)
        #expect(all.last?.rev == c.room.revision)

        #expect(try store.listRooms(after: nil, prefix: p, limit: 2).map(\.name) == [p + "B", p + "a"])
        #expect(try store.listRooms(after: p + "a", prefix: p, limit: 2).map(\.name) == [p + "c"])
        #expect(try store.listRooms(after: p + "c", prefix: p, limit: 2).isEmpty)
        #expect(try store.listRooms(after: p + "a", prefix: nil, limit: 1).map(\.name) == [p + "c"])
        #expect(try store.listRooms(after: nil, prefix: "\(prefix)lis", limit: 100).count == 4)
    }

    /// A deleted room is gone (load, revisions, list, its webhook cursors); deleting it again says it
    /// was not there; its name can be used for a new room, which keeps nothing of the old one.
    func deleteThenRecreate() throws {
        let store = try open()
        defer { store.close() }
        let name = "\(prefix)doomed"
        _ = try seededRoom(store, name, rounds: 4)
        try store.setWebhookCursor(endpoint: "\(prefix)hook", room: name, rev: 3, life: nil)
        try store.setWebhookCursor(endpoint: "\(prefix)hook", room: "\(prefix)kept", rev: 2, life: nil)
        #expect(try store.deleteRoom(name))
        #expect(try store.load(room: name) == nil)
        #expect(try store.revisions(room: name, after: 0, through: 1000).isEmpty)
        #expect(try store.listRooms(after: nil, prefix: name, limit: 10).isEmpty)
        #expect(try store.webhookCursors(endpoint: "\(prefix)hook") == ["\(prefix)kept": 2])
        #expect(try store.deleteRoom(name) == false)

        let again = try seededRoom(store, name, rounds: 1)
        let stored = try #require(try store.load(room: name))
        #expect(stored.tail.map(\.position) == Array(1...again.room.journalPosition))
        #expect(try Room(restoring: stored, policy: RoomPolicy()).model == again.room.model)
        #expect(try store.revisions(room: name, after: 0, through: 1000) == again.entries.compactMap(\.record.revision))
    }

    /// A deletion is remembered (when, to the store's clock), also once the room is made again (by its
    /// first snapshot or with a history), the latest one when there were several; a name never used,
    /// or deleted when absent, has none; it outlives a reopen. The hub turns away the hellos of a
    /// deleted room's clients by it.
    func deletionRemembered() throws {
        var store = try open()
        defer { store.close() }
        let (name, other) = ("\(prefix)tomb", "\(prefix)tomb-other")
        #expect(try store.deletion(of: name) == nil)
        #expect(try store.deleteRoom(name) == false)
        #expect(try store.deletion(of: name) == nil, "nothing was deleted")
        _ = try seededRoom(store, name, rounds: 2)
        _ = try seededRoom(store, other, rounds: 1)
        #expect(try store.deletion(of: name) == nil, "a room the store has")
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(try store.deleteRoom(name))
        let after = Int64(Date().timeIntervalSince1970 * 1000)
        let deletedAt = try #require(try store.deletion(of: name))
        #expect(deletedAt >= before && deletedAt <= after)
        #expect(try store.deletion(of: other) == nil)
        if durable {
            store.close()
            store = try open()
            #expect(try store.deletion(of: name) == deletedAt, "remembered across a reopen")
        }
        _ = try seededRoom(store, name, rounds: 1)
        #expect(try store.deletion(of: name) == deletedAt, "made again from its first snapshot: still remembered")
        Thread.sleep(forTimeInterval: 0.005)
        #expect(try store.deleteRoom(name))
        let second = try #require(try store.deletion(of: name))
        #expect(second > deletedAt, "the latest deletion")
        var driver = RoomDriver(name: name)
        let first = driver.room.snapshot()
        driver.play(rounds: 2)
        try createAndWait(store, first, driver.entries, checkpoints: [], room: name)
        #expect(try store.deletion(of: name) == second, "made again with a history: still remembered")
    }

    /// A deletion waits for what was appended before it: an append still in the writer's queue does
    /// not bring the room back.
    func deleteAfterPendingAppend() throws {
        let store = try open()
        defer { store.close() }
        let name = "\(prefix)racing"
        var driver = RoomDriver(name: name)
        store.save(driver.room.snapshot(), room: name)
        driver.play(rounds: 30)
        let completed = DispatchSemaphore(value: 0)
        let outcome = store.append(driver.entries, room: name) { _ in completed.signal() }
        #expect(try store.deleteRoom(name))
        if outcome == .pending { #expect(completed.wait(timeout: .now() + 30) == .success) }
        #expect(try store.load(room: name) == nil)
        #expect(try store.revisions(room: name, after: 0, through: 1000).isEmpty)
    }

    /// Every snapshot keeps the room's people at its revision: the newest at or below a revision is
    /// found (at one, between two, above the last; below the first there is none), another room's are
    /// not, a later snapshot at the same revision keeps one, they outlive a reopen, and a deleted room
    /// has none.
    func checkpoints() throws {
        let store = try open()
        let name = "\(prefix)checkpoints"
        var driver = RoomDriver(name: name)
        var saved: [RoomSnapshot] = []
        var written = 0
        for k in 1...3 {
            // Appended first, as the hub does: a snapshot follows the records it includes.
            driver.play(rounds: k)
            try appendAndWait(store, driver.entries(after: written), room: name)
            written = driver.room.journalPosition
            saved.append(driver.room.snapshot())
            store.save(saved.last!, room: name)
        }
        // The same revision again at a later position (a session record, no revision).
        driver.join("cat", session: "sc-\(name)")
        try appendAndWait(store, driver.entries(after: written), room: name)
        written = driver.room.journalPosition
        let again = driver.room.snapshot()
        #expect(again.revision == saved[2].revision && again.position > saved[2].position)
        store.save(again, room: name)
        let other = RoomDriver(name: "\(prefix)checkpoints-other")
        store.save(other.room.snapshot(), room: other.room.name)
        // Saves go through the writer, in order: they are written once a later append is durable.
        driver.play(rounds: 2)
        try appendAndWait(store, driver.entries(after: written), room: name)

        let revisions = saved.map(\.revision)
        #expect(revisions[0] > 0 && revisions[0] < revisions[1] && revisions[1] < revisions[2])
        #expect(saved[1].checkpoint.people != saved[0].checkpoint.people)
        #expect(try store.checkpoint(room: name, atOrBelow: revisions[0] - 1) == nil)
        #expect(try store.checkpoint(room: name, atOrBelow: revisions[0]) == saved[0].checkpoint)
        #expect(try store.checkpoint(room: name, atOrBelow: revisions[1] - 1) == saved[0].checkpoint)
        #expect(try store.checkpoint(room: name, atOrBelow: revisions[1]) == saved[1].checkpoint)
        #expect(try store.checkpoint(room: name, atOrBelow: revisions[2] + 1_000) == again.checkpoint)
        #expect(try store.checkpoint(room: "\(prefix)never", atOrBelow: 10) == nil)
        #expect(try store.checkpoint(room: other.room.name, atOrBelow: 10)?.revision == 0)

        // The model at a revision between two snapshots, from the store: that checkpoint and one revision.
        let target = revisions[1] + 1
        let older = try #require(try store.olderHistory(room: name, after: target, through: driver.room.revision,
                                                        modelAt: target))
        #expect(older.checkpoint == saved[1].checkpoint && older.revisions.map(\.number) == [target])
        store.close()

        let reopened = try open()
        defer { reopened.close() }
        if durable {
            #expect(try reopened.checkpoint(room: name, atOrBelow: revisions[1]) == saved[1].checkpoint)
        }
        #expect(try reopened.deleteRoom(name))
        #expect(try reopened.checkpoint(room: name, atOrBelow: revisions[2]) == nil)
        #expect(try reopened.checkpoint(room: other.room.name, atOrBelow: 10)?.revision == 0)
    }

    /// Cursors are per endpoint and room, never move back, can be forgotten, and outlive the store
    /// being closed and opened again.
    func webhookCursorsPersist() throws {
        let store = try open()
        let (e1, e2) = ("\(prefix)https://one.example/hook", "\(prefix)https://two.example/hook")
        let (r1, r2) = ("\(prefix)cursor-1", "\(prefix)cursor-2")
        #expect(try store.webhookCursors(endpoint: e1).isEmpty)
        try store.setWebhookCursor(endpoint: e1, room: r1, rev: 5, life: nil)
        try store.setWebhookCursor(endpoint: e1, room: r1, rev: 3, life: nil)
        try store.setWebhookCursor(endpoint: e1, room: r2, rev: 0, life: nil)
        try store.setWebhookCursor(endpoint: e1, room: r2, rev: 1, life: nil)
        try store.setWebhookCursor(endpoint: e2, room: r1, rev: 9, life: nil)
        #expect(try store.webhookCursors(endpoint: e1) == [r1: 5, r2: 1])
        // Rooms not in the store: a forget removes their cursors.
        try store.resetWebhookCursor(endpoint: e1, room: r2, to: nil, life: nil)
        try store.resetWebhookCursor(endpoint: e1, room: "\(prefix)never", to: nil, life: nil)
        #expect(try store.webhookCursors(endpoint: e1) == [r1: 5])
        // After a removal a room starts over from any revision.
        try store.resetWebhookCursor(endpoint: e2, room: r1, to: nil, life: nil)
        try store.setWebhookCursor(endpoint: e2, room: r1, rev: 0, life: nil)
        store.close()

        let reopened = try open()
        defer { reopened.close() }
        #expect(try reopened.webhookCursors(endpoint: e1) == [r1: 5])
        #expect(try reopened.webhookCursors(endpoint: e2) == [r1: 0])
    }

    /// A lane's reset is one statement that looks at the room: a cursor is put (lower too) only for a
    /// room in the store, and forgotten only for a room that is not (a forget that comes after the room
    /// was made again leaves the new life's cursor; a cursor put after a deletion makes none).
    func webhookCursorReset() throws {
        let store = try open()
        defer { store.close() }
        let (e1, e2) = ("\(prefix)https://one.example/reset", "\(prefix)https://two.example/reset")
        let (here, gone) = ("\(prefix)reset-here", "\(prefix)reset-gone")
        _ = try seededRoom(store, here, rounds: 1)
        try store.setWebhookCursor(endpoint: e1, room: here, rev: 5, life: nil)
        try store.resetWebhookCursor(endpoint: e1, room: here, to: 2, life: nil)
        #expect(try store.webhookCursors(endpoint: e1) == [here: 2], "lowered")
        try store.resetWebhookCursor(endpoint: e2, room: here, to: 0, life: nil)
        #expect(try store.webhookCursors(endpoint: e2) == [here: 0], "made")
        try store.resetWebhookCursor(endpoint: e1, room: here, to: nil, life: nil)
        #expect(try store.webhookCursors(endpoint: e1) == [here: 2], "the room is in the store: kept")
        try store.resetWebhookCursor(endpoint: e1, room: gone, to: 0, life: nil)
        #expect(try store.webhookCursors(endpoint: e1)[gone] == nil, "no cursor for a room not in the store")
        #expect(try store.deleteRoom(here))
        #expect(try store.webhookCursors(endpoint: e1).isEmpty && store.webhookCursors(endpoint: e2).isEmpty)
        try store.resetWebhookCursor(endpoint: e1, room: here, to: 0, life: nil)
        #expect(try store.webhookCursors(endpoint: e1).isEmpty, "deleted: no cursor put")
        try store.setWebhookCursor(endpoint: e1, room: here, rev: 3, life: nil)  // a stale flush after the deletion
        try store.resetWebhookCursor(endpoint: e1, room: here, to: nil, life: nil)
        #expect(try store.webhookCursors(endpoint: e1).isEmpty, "deleted: forgotten")
    }

    /// Each cursor counts in one life of its room (its creation's time, from the creation's cursor
    /// start): a write names the life, and one of an earlier life (a lane's, on its way while the room
    /// was deleted and made again) changes nothing, so a deletion then keeps every revision the new life
    /// had not been sent (a model test of the lane found them lost, session 47). Within a life a write
    /// never lowers the cursor; a reset puts the life it names; the life outlives a reopen.
    func webhookCursorLives() throws {
        let store = try open()
        let endpoint = "\(prefix)https://lives.example/hook", name = "\(prefix)lives"
        var first = RoomDriver(name: name)
        store.save(first.room.snapshot(), room: name, notices: [.startsAtZero(endpoint: endpoint, room: name, life: 1_000)])
        first.play(rounds: 2)
        try appendAndWait(store, first.entries, room: name)
        #expect(try store.webhookCursorRecords(endpoint: endpoint) == [name: WebhookCursor(rev: 0, life: 1_000)])
        #expect(try store.setWebhookCursor(endpoint: endpoint, room: name, rev: 2, life: 1_000))
        #expect(try store.setWebhookCursor(endpoint: endpoint, room: name, rev: 1, life: 1_000), "the same life")
        #expect(try store.webhookCursorRecords(endpoint: endpoint) == [name: WebhookCursor(rev: 2, life: 1_000)], "not lowered")
        #expect(try store.deleteRoom(name))

        var second = RoomDriver(name: name)
        store.save(second.room.snapshot(), room: name, notices: [.startsAtZero(endpoint: endpoint, room: name, life: 2_000)])
        second.play(rounds: 3)
        try appendAndWait(store, second.entries, room: name)
        // The first life's lane writes what it had delivered, late; and a lane that knew no life.
        #expect(try !store.setWebhookCursor(endpoint: endpoint, room: name, rev: 5, life: 1_000))
        #expect(try !store.setWebhookCursor(endpoint: endpoint, room: name, rev: 5, life: nil))
        #expect(try store.webhookCursorRecords(endpoint: endpoint) == [name: WebhookCursor(rev: 0, life: 2_000)])
        let head = second.room.revision
        #expect(head > 0)
        #expect(try store.deleteRoom(name, notices: [.owed(endpoint: endpoint, room: name, deletedAt: 3_000)]))
        #expect(try store.revisionsOwed(endpoint: endpoint)[name] == head, "every revision of the second life kept")

        // A room with no cursor start: a lane's first write makes the cursor with its life (none here),
        // and a reset puts the life it names.
        let other = "\(prefix)lives-other"
        _ = try seededRoom(store, other, rounds: 1)
        #expect(try store.setWebhookCursor(endpoint: endpoint, room: other, rev: 1, life: nil))
        #expect(try store.setWebhookCursor(endpoint: endpoint, room: other, rev: 2, life: nil))
        #expect(try !store.setWebhookCursor(endpoint: endpoint, room: other, rev: 3, life: 4_000))
        try store.resetWebhookCursor(endpoint: endpoint, room: other, to: 0, life: 5_000)
        #expect(try store.setWebhookCursor(endpoint: endpoint, room: other, rev: 1, life: 5_000))
        store.close()

        let reopened = try open()
        defer { reopened.close() }
        #expect(try reopened.webhookCursorRecords(endpoint: endpoint) == [other: WebhookCursor(rev: 1, life: 5_000)])
        #expect(try !reopened.setWebhookCursor(endpoint: endpoint, room: other, rev: 2, life: nil))
    }

    /// Room-event notices are kept in the same commit as a room's first snapshot or its deletion,
    /// outlive the room's deletion and the store being reopened, come back oldest first per endpoint,
    /// and go when removed (removing one that is gone does nothing).
    func webhookNoticesKept() throws {
        let store = try open()
        let (e1, e2) = ("\(prefix)https://one.example/hook", "\(prefix)https://two.example/hook")
        let name = "\(prefix)noticed"
        var driver = RoomDriver(name: name)
        let created = [WebhookNotice(endpoint: e1, room: name, event: "room.created", time: 1_000),
                       WebhookNotice(endpoint: e2, room: name, event: "room.created", time: 1_000)]
        store.save(driver.room.snapshot(), room: name, notices: created)
        driver.play(rounds: 1)
        try appendAndWait(store, driver.entries, room: name)
        #expect(try store.webhookNotices(endpoint: e1) == [created[0]])
        let deleted = WebhookNotice(endpoint: e1, room: name, event: "room.deleted", time: 2_000)
        #expect(try store.deleteRoom(name, notices: [deleted]))
        #expect(try store.load(room: name) == nil)
        #expect(try store.webhookNotices(endpoint: e1) == [created[0], deleted])
        try store.removeWebhookNotice(created[1])
        try store.removeWebhookNotice(created[1])
        #expect(try store.webhookNotices(endpoint: e2).isEmpty)
        store.close()

        let reopened = try open()
        defer { reopened.close() }
        #expect(try reopened.webhookNotices(endpoint: e1) == [created[0], deleted])
        try reopened.removeWebhookNotice(created[0])
        #expect(try reopened.webhookNotices(endpoint: e1) == [deleted])
    }

    /// A creation's cursor starts set each endpoint's cursor for the room at 0 in the same commit, kept
    /// as no room event; a deletion then keeps every revision for the endpoint, whether or not its
    /// delivery lane ever wrote a cursor (a tester's pass lost a room's revisions that way).
    func cursorStartWithCreation() throws {
        let store = try open()
        defer { store.close() }
        let endpoint = "\(prefix)https://start.example/hook"
        let name = "\(prefix)started"
        var driver = RoomDriver(name: name)
        let notices = [WebhookNotice.startsAtZero(endpoint: endpoint, room: name, life: 1_000),
                       WebhookNotice(endpoint: endpoint, room: name, event: "room.created", time: 1_000)]
        store.save(driver.room.snapshot(), room: name, notices: notices)
        driver.play(rounds: 2)
        try appendAndWait(store, driver.entries, room: name)
        #expect(try store.webhookCursors(endpoint: endpoint) == [name: 0])
        #expect(try store.webhookNotices(endpoint: endpoint) == [notices[1]])
        #expect(driver.room.revision > 0)
        #expect(try store.deleteRoom(name, notices: [.owed(endpoint: endpoint, room: name, deletedAt: 2_000)]))
        let owed = try store.owedRevisions(endpoint: endpoint, room: name, after: nil, limit: 1_000)
        #expect(owed.compactMap(\.revision?.number) == Array(stride(from: 1, through: driver.room.revision, by: 1)))
    }

    /// A deletion with `owed` requests keeps, in its commit, each endpoint's revisions after its cursor
    /// (none for an endpoint without one), read back a page at a time in (deletion time, revision)
    /// order beside the room's events; they count as the endpoint's backlog, outlive the store being
    /// reopened and a room made again under the name, and go one by one.
    func webhookRevisionsOwed() throws {
        let store = try open()
        let (e1, e2, e3) = ("\(prefix)https://one.example/owed", "\(prefix)https://two.example/owed",
                            "\(prefix)https://three.example/owed")
        let name = "\(prefix)owed"
        var driver = RoomDriver(name: name)
        store.save(driver.room.snapshot(), room: name)
        driver.play(rounds: 2)
        try appendAndWait(store, driver.entries, room: name)
        let revisions = try store.revisions(room: name, after: 0, through: driver.room.revision)
        let head = driver.room.revision
        #expect(head >= 4 && revisions.map(\.number) == Array(1...head))
        try store.setWebhookCursor(endpoint: e1, room: name, rev: 2, life: nil)
        try store.setWebhookCursor(endpoint: e2, room: name, rev: head, life: nil)
        let deleted = WebhookNotice(endpoint: e1, room: name, event: "room.deleted", time: 3_000)
        #expect(try store.deleteRoom(name, notices: [WebhookNotice.owed(endpoint: e1, room: name, deletedAt: 3_000),
                                                     WebhookNotice.owed(endpoint: e2, room: name, deletedAt: 3_000),
                                                     WebhookNotice.owed(endpoint: e3, room: name, deletedAt: 3_000),
                                                     deleted]))
        let owed = revisions.dropFirst(2).map {
            WebhookNotice(endpoint: e1, room: name, event: "revision", time: 3_000, revision: $0)
        }
        #expect(try store.webhookNotices(endpoint: e1) == [deleted])
        #expect(try store.owedRevisions(endpoint: e1, room: name, after: nil, limit: 1_000) == owed)
        #expect(try store.owedRevisions(endpoint: e1, room: name, after: nil, limit: 2) == Array(owed.prefix(2)))
        #expect(try store.owedRevisions(endpoint: e1, room: name, after: owed[1].owedPosition, limit: 1_000) == Array(owed.dropFirst(2)))
        #expect(try store.owedRevisions(endpoint: e1, room: "\(prefix)other", after: nil, limit: 1_000).isEmpty)
        #expect(try store.revisionsOwed(endpoint: e1) == [name: owed.count])
        for other in [e2, e3] {
            #expect(try store.owedRevisions(endpoint: other, room: name, after: nil, limit: 1_000).isEmpty)
            #expect(try store.revisionsOwed(endpoint: other).isEmpty)
        }
        #expect(try store.webhookBacklog(endpoint: e1) == [WebhookBacklog(room: name, cursor: nil, head: nil, noticed: true,
                                                                          owed: owed.count)])
        // The name is used again: the old room's owed revisions stay.
        store.save(RoomDriver(name: name).room.snapshot(), room: name)
        store.close()

        let reopened = try open()
        defer { reopened.close() }
        #expect(try reopened.owedRevisions(endpoint: e1, room: name, after: nil, limit: 1_000) == owed)
        try reopened.removeWebhookNotice(owed[0])
        try reopened.removeWebhookNotice(owed[0])
        #expect(try reopened.owedRevisions(endpoint: e1, room: name, after: nil, limit: 1_000) == Array(owed.dropFirst()))
        #expect(try reopened.revisionsOwed(endpoint: e1) == [name: owed.count - 1])
        #expect(try reopened.webhookNotices(endpoint: e1) == [deleted])
        for notice in owed.dropFirst() + [deleted] { try reopened.removeWebhookNotice(notice) }
        #expect(try reopened.owedRevisions(endpoint: e1, room: name, after: nil, limit: 1_000).isEmpty)
        #expect(try reopened.revisionsOwed(endpoint: e1).isEmpty)
        #expect(try reopened.webhookBacklog(endpoint: e1).filter { $0.room == name && $0.noticed }.isEmpty)
    }

    /// The endpoints the store keeps something for are listed with how much; forgetting one removes
    /// its cursors, room events and owed revisions together and says what they were, leaves the other
    /// endpoints and the rooms alone, and outlives the store being reopened; forgetting it again, or
    /// an endpoint never seen, finds nothing. The ids alone (`webhookEndpointIDs`) are the same list,
    /// an endpoint with only owed revisions or only a room event among them.
    func forgetWebhookEndpoint() throws {
        let store = try open()
        let (gone, kept) = ("\(prefix)https://gone.example/forget", "\(prefix)https://kept.example/forget")
        let (live, deleted) = ("\(prefix)forget-live", "\(prefix)forget-deleted")
        var liveRoom = RoomDriver(name: live), deletedRoom = RoomDriver(name: deleted)
        store.save(liveRoom.room.snapshot(), room: live,
                   notices: [WebhookNotice(endpoint: gone, room: live, event: "room.created", time: 1_000)])
        store.save(deletedRoom.room.snapshot(), room: deleted)
        liveRoom.play(rounds: 1)
        deletedRoom.play(rounds: 1)
        try appendAndWait(store, liveRoom.entries, room: live)
        try appendAndWait(store, deletedRoom.entries, room: deleted)
        let head = deletedRoom.room.revision
        #expect(head >= 3)
        try store.setWebhookCursor(endpoint: gone, room: live, rev: 1, life: nil)
        try store.setWebhookCursor(endpoint: gone, room: deleted, rev: 1, life: nil)
        try store.setWebhookCursor(endpoint: kept, room: live, rev: 2, life: nil)
        let (owedOnly, eventOnly) = ("\(prefix)https://owed.example/forget", "\(prefix)https://event.example/forget")
        try store.setWebhookCursor(endpoint: owedOnly, room: deleted, rev: 2, life: nil)
        #expect(try store.deleteRoom(deleted, notices: [.owed(endpoint: gone, room: deleted, deletedAt: 2_000),
                                                        WebhookNotice(endpoint: gone, room: deleted, event: "room.deleted", time: 2_000),
                                                        .owed(endpoint: owedOnly, room: deleted, deletedAt: 2_000),
                                                        WebhookNotice(endpoint: eventOnly, room: deleted, event: "room.deleted", time: 2_000)]))
        let ids = { (store: any PeopleStore) throws -> [String] in
            try store.webhookEndpointIDs().filter { $0.hasPrefix(prefix) && $0.hasSuffix("/forget") }
        }
        #expect(try ids(store) == [eventOnly, gone, kept, owedOnly])
        #expect(try store.webhookEndpoints().filter { [eventOnly, owedOnly].contains($0.endpoint) } == [
            StoredWebhookEndpoint(endpoint: eventOnly, cursors: 0, events: 1, owedRevisions: 0),
            StoredWebhookEndpoint(endpoint: owedOnly, cursors: 0, events: 0, owedRevisions: head - 2),
        ])
        #expect(try store.forgetWebhookEndpoint(owedOnly) != nil)
        #expect(try store.forgetWebhookEndpoint(eventOnly) != nil)
        #expect(try ids(store) == [gone, kept])
        let ours = { (store: any PeopleStore) throws -> [StoredWebhookEndpoint] in
            try store.webhookEndpoints().filter { $0.endpoint.hasPrefix(prefix) && $0.endpoint.hasSuffix("/forget") }
        }
        let goneHeld = StoredWebhookEndpoint(endpoint: gone, cursors: 1, events: 2, owedRevisions: head - 1)
        let keptHeld = StoredWebhookEndpoint(endpoint: kept, cursors: 1, events: 0, owedRevisions: 0)
        #expect(try ours(store) == [goneHeld, keptHeld])
        #expect(try store.forgetWebhookEndpoint(gone) == goneHeld)
        #expect(try ours(store) == [keptHeld])
        #expect(try ids(store) == [kept])
        #expect(try store.webhookCursors(endpoint: gone).isEmpty)
        #expect(try store.webhookNotices(endpoint: gone).isEmpty)
        #expect(try store.revisionsOwed(endpoint: gone).isEmpty)
        #expect(try store.webhookBacklog(endpoint: gone).isEmpty)
        #expect(try store.webhookCursors(endpoint: kept) == [live: 2])
        #expect(try store.load(room: live) != nil)
        #expect(try store.forgetWebhookEndpoint(gone) == nil)
        #expect(try store.forgetWebhookEndpoint("\(prefix)https://never.example/forget") == nil)
        store.close()

        let reopened = try open()
        defer { reopened.close() }
        #expect(try ours(reopened) == [keptHeld])
        #expect(try ids(reopened) == [kept])
        #expect(try reopened.webhookCursors(endpoint: gone).isEmpty)
    }

    /// A checkpoint kept on its own (the backfill of an old room) is read back like a snapshot's; one
    /// the store has at that revision stays; a room the store does not have gets none.
    func keptCheckpoints() throws {
        let store = try open()
        defer { store.close() }
        let name = "\(prefix)kept-checkpoints"
        var driver = RoomDriver(name: name)
        store.save(driver.room.snapshot(), room: name)
        let start = driver.room.model
        driver.play(rounds: 2)
        try appendAndWait(store, driver.entries, room: name)
        #expect(driver.room.revision >= 2)
        let later = Checkpoint(revision: 2, people: driver.room.model)
        try store.keepCheckpoint(later, room: name)
        #expect(try store.checkpoint(room: name, atOrBelow: 5) == later)
        #expect(try store.checkpoint(room: name, atOrBelow: 1)?.revision == 0)
        try store.keepCheckpoint(Checkpoint(revision: 0, people: driver.room.model), room: name)
        #expect(try store.checkpoint(room: name, atOrBelow: 0) == Checkpoint(revision: 0, people: start))
        try store.keepCheckpoint(later, room: "\(prefix)no-such-room")
        #expect(try store.checkpoint(room: "\(prefix)no-such-room", atOrBelow: 5) == nil)
    }

    /// The rooms where an endpoint has something left to deliver: a cursor below the head, or a kept
    /// room event (with the cursor and head it has, none for a deleted room); nothing for rooms it is
    /// done with, rooms it has no cursor or notice for, or another endpoint's.
    func webhookBacklog() throws {
        let store = try open()
        defer { store.close() }
        let (e1, e2) = ("\(prefix)https://one.example/backlog", "\(prefix)https://two.example/backlog")
        func room(_ name: String, notices: [WebhookNotice] = []) throws -> Int {
            var driver = RoomDriver(name: name)
            store.save(driver.room.snapshot(), room: name, notices: notices)
            driver.play(rounds: 1)
            try appendAndWait(store, driver.entries, room: name)
            return driver.room.revision
        }
        let (behind, done, born, gone, unknown) = ("\(prefix)bl-behind", "\(prefix)bl-done", "\(prefix)bl-born",
                                                   "\(prefix)bl-gone", "\(prefix)bl-unknown")
        let behindHead = try room(behind)
        try store.setWebhookCursor(endpoint: e1, room: behind, rev: 1, life: nil)
        try store.setWebhookCursor(endpoint: e2, room: behind, rev: behindHead, life: nil)
        let doneHead = try room(done)
        try store.setWebhookCursor(endpoint: e1, room: done, rev: doneHead, life: nil)
        let bornHead = try room(born, notices: [WebhookNotice(endpoint: e1, room: born, event: "room.created", time: 5)])
        _ = try room(gone)
        try store.setWebhookCursor(endpoint: e1, room: gone, rev: 1, life: nil)
        #expect(try store.deleteRoom(gone, notices: [WebhookNotice(endpoint: e1, room: gone, event: "room.deleted", time: 6)]))
        _ = try room(unknown)
        #expect(behindHead > 1 && bornHead > 0)

        #expect(try store.webhookBacklog(endpoint: e1) == [
            WebhookBacklog(room: behind, cursor: 1, head: behindHead, noticed: false),
            WebhookBacklog(room: born, cursor: nil, head: bornHead, noticed: true),
            WebhookBacklog(room: gone, cursor: nil, head: nil, noticed: true),
        ])
        #expect(try store.webhookBacklog(endpoint: e2).isEmpty)
        try store.setWebhookCursor(endpoint: e1, room: behind, rev: behindHead, life: nil)
        #expect(try store.webhookBacklog(endpoint: e1).map(\.room) == [born, gone])
    }

    /// A room created with its history (an import) is one commit: all of it (its checkpoints too), or
    /// (when the history cannot be written) no room at all, which can then be created again.
    func createWithHistory() throws {
        let store = try open()
        defer { store.close() }
        var driver = RoomDriver(name: "\(prefix)created")
        let first = driver.room.snapshot()
        driver.play(rounds: 2)
        let past = Checkpoint(revision: driver.room.revision, people: driver.room.model)
        driver.play(rounds: 4)
        #expect(past.revision > 0 && past.revision < driver.room.revision && past.people != driver.room.model)
        try createAndWait(store, first, driver.entries, checkpoints: [past], room: "\(prefix)created")
        let stored = try #require(try store.load(room: "\(prefix)created"))
        #expect(durableState(try Room(restoring: stored, policy: driver.room.policy)) == durableState(driver.room))
        #expect(try store.checkpoint(room: "\(prefix)created", atOrBelow: driver.room.revision) == past)
        #expect(try store.checkpoint(room: "\(prefix)created", atOrBelow: past.revision - 1)?.revision == 0)

        guard durable else { return }
        // Two records at one position: the history cannot be written, and neither is the room.
        let failed = #expect(throws: StoreError.self) {
            try createAndWait(store, first, [driver.entries[0], driver.entries[0]], checkpoints: [past], room: "\(prefix)half")
        }
        #expect(failed?.kind == .conflict)
        #expect(try store.load(room: "\(prefix)half") == nil)
        #expect(try store.checkpoint(room: "\(prefix)half", atOrBelow: past.revision) == nil)
        #expect(try store.listRooms(after: nil, prefix: "\(prefix)half", limit: 10).isEmpty)
        try createAndWait(store, first, driver.entries, room: "\(prefix)half")
        #expect(try store.load(room: "\(prefix)half") != nil)
    }

    /// A room's keyed answers come back with its snapshot (from its `keysFrom` on, only those), so a
    /// retry after a restart gets its first answer though the snapshot does not hold the keys.
    func keyedAnswers() throws {
        let store = try open()
        defer { store.close() }
        let name = "\(prefix)keyed"
        var driver = try seededRoom(store, name, rounds: 2)
        let seeded = driver.room.journalPosition
        for n in 1...5 { driver.write(n, key: "early-\(n)") }
        driver.play(rounds: 2)
        for n in 6...10 { driver.write(n, key: "k-\(n)") }
        let before = driver.room.journalPosition
        let snapshot = driver.room.snapshot()
        store.save(snapshot, room: name)
        driver.play(rounds: 1)
        driver.write(11, key: "k-11")
        try appendAndWait(store, driver.entries(after: seeded), room: name)
        let stored = try #require(try store.load(room: name))
        let keyed = driver.entries.filter { $0.keepsKey && $0.position <= before }
        #expect(keyed.count == 10)
        #expect(stored.keyed == keyed, "the keyed answers up to the snapshot, in order, and nothing else")
        #expect(stored.snapshot["keysFrom"] == .int(keyed[0].position))
        #expect(!stored.snapshot.text.contains("early-1"))
        var restored = try Room(restoring: stored, policy: driver.room.policy)
        #expect(durableState(restored) == durableState(driver.room))
        for key in ["early-1", "k-10", "k-11"] {
            let again = restored.request(.submit(.init(seq: 0, base: 0, ops: [.set(3, .name("Again"))])),
                                         as: "ann", key: key, now: driver.now + 1)
            #expect(again.count == 1 && again.allSatisfy { if case .send = $0 { true } else { false } }, "\(key): the first answer again")
        }
        #expect(restored.revision == driver.room.revision)
    }

    /// A room's first snapshot never replaces a room that exists: another process (the import command
    /// beside a hub) may make the same room meanwhile, and the later of the two fails.
    func firstSnapshotNeverReplaces() throws {
        guard durable else { return }
        let store = try open()
        defer { store.close() }
        let made = try seededRoom(store, "\(prefix)made-twice", rounds: 3)
        store.save(Room(name: "\(prefix)made-twice", seed: PeopleModel()).snapshot(), room: "\(prefix)made-twice")
        try? appendAndWait(store, [], room: "\(prefix)made-twice")  // after the second creation's commit
        let stored = try #require(try store.load(room: "\(prefix)made-twice"))
        #expect(durableState(try Room(restoring: stored, policy: made.room.policy)) == durableState(made.room))
    }

    /// An append that cannot be made durable is reported, and the room takes no later append until it
    /// is loaded again: a journal never has a gap.
    func failedAppendBreaksTheRoom() throws {
        guard durable else { return }
        let store = try open()
        defer { store.close() }
        let driver = try seededRoom(store, "\(prefix)broken", rounds: 2)
        try store.check()
        // The same position again: refused by the store as a conflict. That is the room's failure (in
        // a cluster: fencing, another node's rows), not the store's: the health check's probe works, so
        // the check passes (until session 29 it failed until another commit worked, which an idle node
        // behind a load balancer routing by /healthz never gets).
        let collision = #expect(throws: StoreError.self) { try appendAndWait(store, [driver.entries[0]], room: "\(prefix)broken") }
        #expect(collision?.kind == .conflict)
        try store.check()
        let next = JournalEntry(position: driver.room.journalPosition + 1, record: .forgotten(session: "nobody"))
        #expect(throws: StoreError.self) { try appendAndWait(store, [next], room: "\(prefix)broken") }
        // Nor a snapshot handed over after the failure (the hub had not heard of it yet): what it
        // includes never became durable, so neither it nor its checkpoint is kept.
        var ahead = driver
        ahead.play(rounds: 1)
        store.save(ahead.room.snapshot(), room: "\(prefix)broken")
        // Other rooms are not affected; a commit that succeeds clears the check.
        _ = try seededRoom(store, "\(prefix)fine", rounds: 1)
        try store.check()
        #expect(try store.checkpoint(room: "\(prefix)broken", atOrBelow: ahead.room.revision)?.revision == 0)
        // After a load the room takes appends again.
        let stored = try #require(try store.load(room: "\(prefix)broken"))
        #expect(stored.snapshot["position"] == .int(0))
        try appendAndWait(store, [next], room: "\(prefix)broken")
    }
}

@Suite("Store contract: in-memory")
struct InMemoryStoreContractTests {
    let contract: StoreContract = {
        let store = InMemoryStore()
        return StoreContract(open: { store }, durable: false)
    }()

    @Test func unknownRoom() async throws { try await contract.run { try $0.unknownRoom() } }
    @Test func roundTrip() async throws { try await contract.run { try $0.roundTrip() } }
    @Test func snapshotThenTail() async throws { try await contract.run { try $0.snapshotThenTail() } }
    @Test func revisionRanges() async throws { try await contract.run { try $0.revisionRanges() } }
    @Test func concurrentAppends() async throws { try await contract.run { try $0.concurrentAppends() } }
    @Test func listRoomsInPages() async throws { try await contract.run { try $0.listRoomsInPages() } }
    @Test func deleteThenRecreate() async throws { try await contract.run { try $0.deleteThenRecreate() } }
    @Test func deletionRemembered() async throws { try await contract.run { try $0.deletionRemembered() } }
    @Test func deleteAfterPendingAppend() async throws { try await contract.run { try $0.deleteAfterPendingAppend() } }
    @Test func webhookCursorsPersist() async throws { try await contract.run { try $0.webhookCursorsPersist() } }
    @Test func webhookCursorReset() async throws { try await contract.run { try $0.webhookCursorReset() } }
    @Test func webhookCursorLives() async throws { try await contract.run { try $0.webhookCursorLives() } }
    @Test func webhookNoticesKept() async throws { try await contract.run { try $0.webhookNoticesKept() } }
    @Test func cursorStartWithCreation() async throws { try await contract.run { try $0.cursorStartWithCreation() } }
    @Test func webhookRevisionsOwed() async throws { try await contract.run { try $0.webhookRevisionsOwed() } }
    @Test func webhookBacklog() async throws { try await contract.run { try $0.webhookBacklog() } }
    @Test func forgetWebhookEndpoint() async throws { try await contract.run { try $0.forgetWebhookEndpoint() } }
    @Test func keptCheckpoints() async throws { try await contract.run { try $0.keptCheckpoints() } }
    @Test func checkpoints() async throws { try await contract.run { try $0.checkpoints() } }
    @Test func createWithHistory() async throws { try await contract.run { try $0.createWithHistory() } }
    @Test func firstSnapshotNeverReplaces() async throws { try await contract.run { try $0.firstSnapshotNeverReplaces() } }
    @Test func keyedAnswers() async throws { try await contract.run { try $0.keyedAnswers() } }
}

@Suite("Store contract: SQLite")
final class SQLiteStoreContractTests: Sendable {
    // A class so that each test's directory goes away with its instance.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pk-sqlite-\(UUID().uuidString)").path
    deinit { try? FileManager.default.removeItem(atPath: directory) }
    var contract: StoreContract {
        let path = directory + "/data/peoplekeeper.sqlite"
        return StoreContract(open: { try SQLiteStore(path: path, logger: storeLogger) }, durable: true)
    }

    @Test func unknownRoom() async throws { try await contract.run { try $0.unknownRoom() } }
    @Test func roundTrip() async throws { try await contract.run { try $0.roundTrip() } }
    @Test func snapshotThenTail() async throws { try await contract.run { try $0.snapshotThenTail() } }
    @Test func revisionRanges() async throws { try await contract.run { try $0.revisionRanges() } }
    @Test func concurrentAppends() async throws { try await contract.run { try $0.concurrentAppends() } }
    @Test func listRoomsInPages() async throws { try await contract.run { try $0.listRoomsInPages() } }
    @Test func deleteThenRecreate() async throws { try await contract.run { try $0.deleteThenRecreate() } }
    @Test func deletionRemembered() async throws { try await contract.run { try $0.deletionRemembered() } }
    @Test func deleteAfterPendingAppend() async throws { try await contract.run { try $0.deleteAfterPendingAppend() } }
    @Test func webhookCursorsPersist() async throws { try await contract.run { try $0.webhookCursorsPersist() } }
    @Test func webhookCursorReset() async throws { try await contract.run { try $0.webhookCursorReset() } }
    @Test func webhookCursorLives() async throws { try await contract.run { try $0.webhookCursorLives() } }
    @Test func webhookNoticesKept() async throws { try await contract.run { try $0.webhookNoticesKept() } }
    @Test func cursorStartWithCreation() async throws { try await contract.run { try $0.cursorStartWithCreation() } }
    @Test func webhookRevisionsOwed() async throws { try await contract.run { try $0.webhookRevisionsOwed() } }
    @Test func webhookBacklog() async throws { try await contract.run { try $0.webhookBacklog() } }
    @Test func forgetWebhookEndpoint() async throws { try await contract.run { try $0.forgetWebhookEndpoint() } }
    @Test func keptCheckpoints() async throws { try await contract.run { try $0.keptCheckpoints() } }
    @Test func checkpoints() async throws { try await contract.run { try $0.checkpoints() } }
    @Test func createWithHistory() async throws { try await contract.run { try $0.createWithHistory() } }
    @Test func firstSnapshotNeverReplaces() async throws { try await contract.run { try $0.firstSnapshotNeverReplaces() } }
    @Test func keyedAnswers() async throws { try await contract.run { try $0.keyedAnswers() } }
    @Test func failedAppendBreaksTheRoom() async throws { try await contract.run { try $0.failedAppendBreaksTheRoom() } }

    @Test("a commit waits for another process's write lock on the file instead of failing (the import command beside a hub)")
    func waitsForAnotherWriter() async throws {
        let directory = self.directory
        try await blocking {
            let hub = try SQLiteStore(path: directory + "/shared.sqlite", logger: storeLogger)
            defer { hub.close() }
            let other = try SQLiteStore(path: directory + "/shared.sqlite", logger: storeLogger)
            defer { other.close() }
            let held = DispatchSemaphore(value: 0)
            let holder = Thread { try? other.holdWriteLock(seconds: 0.5) { held.signal() } }
            holder.start()
            held.wait()  // the lock is taken
            let driver = try seededRoom(hub, "waited", rounds: 2)  // before: "database is locked"
            let stored = try #require(try hub.load(room: "waited"))
            #expect(try Room(restoring: stored, policy: RoomPolicy()).model == driver.room.model)
        }
    }

    @Test("a store file deleted or replaced under it fails the next commit and the store check, naming it; nothing more is acknowledged", arguments: ["", "-wal", ".lock"])
    func filesChangedUnderIt(suffix: String) async throws {
        let directory = self.directory
        try await blocking {
            let path = directory + "/gone\(suffix.isEmpty ? "db" : suffix.dropFirst()).sqlite"
            let store = try SQLiteStore(path: path, logger: storeLogger, claim: true)
            defer { store.close() }
            var driver = try seededRoom(store, "r", rounds: 2)
            try store.check()
            #expect(FileManager.default.fileExists(atPath: path + suffix))
            try FileManager.default.removeItem(atPath: path + suffix)
            driver.play(rounds: 1)
            let failure = #expect(throws: StoreError.self) { try appendAndWait(store, Array(driver.entries.suffix(2)), room: "r") }
            #expect(failure?.kind == .unavailable)
            #expect(failure?.message.contains("\(path + suffix) was deleted") == true, "\(String(describing: failure))")
            #expect(throws: StoreError.self) { try store.check() }
            // A file of the same name made again is another file: still refused.
            FileManager.default.createFile(atPath: path + suffix, contents: Data())
            let again = #expect(throws: StoreError.self) { try store.check() }
            #expect(again?.message.contains("replaced by another file") == true, "\(String(describing: again))")
        }
    }

    @Test("a load reads a room's keyed answers through their own index, not every record since")
    func keyedAnswersIndexed() async throws {
        let directory = self.directory
        try await blocking {
            let store = try SQLiteStore(path: directory + "/keys.sqlite", logger: storeLogger)
            var driver = try seededRoom(store, "keyed", rounds: 1)
            let position = driver.room.journalPosition
            driver.write(1, key: "k")
            try appendAndWait(store, driver.entries(after: position), room: "keyed")
            store.close()
            let queue = try DatabaseQueue(path: directory + "/keys.sqlite")
            defer { try? queue.close() }
            // The store's query names the index (it fails if the index is gone); the index is the
            // migration's, on the predicate the query repeats.
            let definition = try queue.read { db in
                try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'journal_keys'")
            }
            #expect(definition?.hasSuffix("WHERE \(SQLiteStore.keyedRecord)") == true, "\(String(describing: definition))")
            #expect(SQLiteStore.keyedQuery.contains("INDEXED BY journal_keys") && SQLiteStore.keyedQuery.contains(SQLiteStore.keyedRecord))
            let indexed = try queue.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM journal INDEXED BY journal_keys WHERE room = 'keyed' AND \(SQLiteStore.keyedRecord)")
            }
            #expect(indexed == 1)
        }
    }

    @Test("a deletion older than DeletedRooms.remembered is not answered, and goes from the file at the next open")
    func oldDeletionsGo() async throws {
        let directory = self.directory
        try await blocking {
            let path = directory + "/tombs.sqlite"
            var store = try SQLiteStore(path: path, logger: storeLogger)
            _ = try seededRoom(store, "young", rounds: 1)
            #expect(try store.deleteRoom("young"))
            store.close()
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let queue = try DatabaseQueue(path: path)
            try queue.write { db in
                try db.execute(sql: "INSERT INTO deleted_rooms (room, deleted_at) VALUES ('old', ?)",
                               arguments: [now - DeletedRooms.remembered - 1_000])
            }
            let rows = { try queue.read { db in try String.fetchAll(db, sql: "SELECT room FROM deleted_rooms ORDER BY room") } }
            #expect(try rows() == ["old", "young"])
            store = try SQLiteStore(path: path, logger: storeLogger)
            defer { store.close() }
            #expect(try store.deletion(of: "old") == nil && store.deletion(of: "young") != nil)
            #expect(try rows() == ["young"], "gone at the open")
            try queue.close()
        }
    }

    @Test("the file is in WAL mode with synchronous FULL and a 16 MiB log size limit on the writer, and an online backup holds every room")
    func walAndBackup() async throws {
        let directory = self.directory
        try await blocking {
            let store = try SQLiteStore(path: directory + "/wal.sqlite", logger: storeLogger)
            #expect(try store.writerPragma("synchronous") == 2, "every commit flushed (synchronous FULL), as documented")
            #expect(try store.writerPragma("journal_size_limit") == 16 << 20, "a log grown by an import is cut back to 16 MiB once emptied")
            let driver = try seededRoom(store, "backed-up", rounds: 3)
            #expect(FileManager.default.fileExists(atPath: directory + "/wal.sqlite-wal"))
            try store.backup(to: directory + "/copy.sqlite")
            store.close()
            let copy = try SQLiteStore(path: directory + "/copy.sqlite", logger: storeLogger)
            defer { copy.close() }
            let stored = try #require(try copy.load(room: "backed-up"))
            #expect(try Room(restoring: stored, policy: RoomPolicy()).model == driver.room.model)
        }
    }
}

/// A store call on another thread, while the test holds what it waits for.
private final class Background<T: Sendable>: Sendable {
    private let outcome = Mutex<Result<T, any Error>?>(nil)

    init(_ body: @escaping @Sendable () throws -> T) {
        DispatchQueue.global().async { [self] in
            let result = Result<T, any Error> { try body() }
            self.outcome.withLock { $0 = result }
        }
    }

    var done: Bool { outcome.withLock { $0 != nil } }

    /// What the call returned or threw, waiting up to 10 s for it.
    func result() throws -> T {
        for _ in 0..<200 where !done { Thread.sleep(forTimeInterval: 0.05) }
        return try #require(outcome.withLock { $0 }).get()
    }
}

/// One real PostgreSQL 15 server for the whole run (started on first use, stopped at exit).
enum SharedPostgres {
    static let server: Result<PostgresServer, Error> = {
        let result = Result { try PostgresServer.start() }
        atexit { if case .success(let server) = SharedPostgres.server { server.stop() } }
        return result
    }()

    static func url() throws -> String { try server.get().url }
}

@Suite("Store contract: PostgreSQL (a real server in a temporary directory)", .serialized)
struct PostgresStoreContractTests {
    let contract: StoreContract
    let url: String

    init() async throws {
        let url = try await blocking { try SharedPostgres.url() }
        self.url = url
        contract = StoreContract(
            open: { try PostgresStore(url: url, node: "test", advertisedURL: "ws://127.0.0.1:1", logger: storeLogger) },
            durable: true, prefix: "t\(UInt32.random(in: 0...UInt32.max))-")
    }

    @Test func unknownRoom() async throws { try await contract.run { try $0.unknownRoom() } }
    @Test func roundTrip() async throws { try await contract.run { try $0.roundTrip() } }
    @Test func snapshotThenTail() async throws { try await contract.run { try $0.snapshotThenTail() } }
    @Test func revisionRanges() async throws { try await contract.run { try $0.revisionRanges() } }
    @Test func concurrentAppends() async throws { try await contract.run { try $0.concurrentAppends() } }
    @Test func listRoomsInPages() async throws { try await contract.run { try $0.listRoomsInPages() } }
    @Test func deleteThenRecreate() async throws { try await contract.run { try $0.deleteThenRecreate() } }
    @Test func deletionRemembered() async throws { try await contract.run { try $0.deletionRemembered() } }
    @Test func deleteAfterPendingAppend() async throws { try await contract.run { try $0.deleteAfterPendingAppend() } }
    @Test func webhookCursorsPersist() async throws { try await contract.run { try $0.webhookCursorsPersist() } }
    @Test func webhookCursorReset() async throws { try await contract.run { try $0.webhookCursorReset() } }
    @Test func webhookCursorLives() async throws { try await contract.run { try $0.webhookCursorLives() } }
    @Test func webhookNoticesKept() async throws { try await contract.run { try $0.webhookNoticesKept() } }
    @Test func cursorStartWithCreation() async throws { try await contract.run { try $0.cursorStartWithCreation() } }
    @Test func webhookRevisionsOwed() async throws { try await contract.run { try $0.webhookRevisionsOwed() } }
    @Test func webhookBacklog() async throws { try await contract.run { try $0.webhookBacklog() } }
    @Test func forgetWebhookEndpoint() async throws { try await contract.run { try $0.forgetWebhookEndpoint() } }
    @Test func keptCheckpoints() async throws { try await contract.run { try $0.keptCheckpoints() } }
    @Test func checkpoints() async throws { try await contract.run { try $0.checkpoints() } }
    @Test func createWithHistory() async throws { try await contract.run { try $0.createWithHistory() } }
    @Test func firstSnapshotNeverReplaces() async throws { try await contract.run { try $0.firstSnapshotNeverReplaces() } }
    @Test func keyedAnswers() async throws { try await contract.run { try $0.keyedAnswers() } }
    @Test func failedAppendBreaksTheRoom() async throws { try await contract.run { try $0.failedAppendBreaksTheRoom() } }

    @Test("a room is leased to one node at a time; the others are told its URL; a dead node's rooms are free at once")
    func leases() async throws {
        let url = self.url
        try await blocking {
            let room = "lease-\(UInt32.random(in: 0...UInt32.max))"
            let a = try PostgresStore(url: url, node: "a", advertisedURL: "ws://a.example:8080", logger: storeLogger)
            let b = try PostgresStore(url: url, node: "b", advertisedURL: "ws://b.example:8080", logger: storeLogger)
            defer { b.close() }
            #expect(try a.acquire(room: room) == .acquired)
            #expect(try a.acquire(room: room) == .acquired)
            #expect(try b.acquire(room: room) == .ownedBy(node: "a", url: "ws://a.example:8080"))
            a.release(room: room)
            #expect(try b.acquire(room: room) == .acquired)
            #expect(try a.acquire(room: room) == .ownedBy(node: "b", url: "ws://b.example:8080"))
            // Closing b's connection (as a node's death does) frees its lease without any release, as soon
            // as the server has ended b's session (asynchronously: in a busy run a moment after the close).
            b.close()
            var freed = try a.acquire(room: room)
            for _ in 0..<100 where freed != .acquired {
                Thread.sleep(forTimeInterval: 0.05)
                freed = try a.acquire(room: room)
            }
            #expect(freed == .acquired)
            a.close()
        }
    }

    @Test("a commit's records are encoded before its transaction begins: the lease connection's session is not idle in a transaction meanwhile, which the other nodes take for a silent node and end")
    func recordsEncodedOutsideTheTransaction() async throws {
        // A cluster pass (session 44): an import's commit began its transaction, then encoded the
        // journal's INSERT of 420,000 rows for 10-18 s (debug build) while its session sat idle in the
        // transaction; past 15 s another node ended it as silent and took the importer's rooms. The
        // test stops the writer once the records are encoded and looks at its session then.
        let url = self.url
        try await blocking {
            let node = "idle-\(UInt32.random(in: 0...UInt32.max))"
            let room = node + "-room"
            let store = try PostgresStore(url: url, node: node, advertisedURL: "ws://i.example", claimsNode: true,
                                          logger: storeLogger)
            defer { store.close() }
            #expect(try store.acquire(room: room) == .acquired)
            let server = try SharedPostgres.server.get()
            let pid = try server.psql("SELECT pid FROM nodes WHERE node = '\(node)'")
            let encoded = DispatchSemaphore(value: 0)
            let goOn = DispatchSemaphore(value: 0)
            store.afterEncoding.withLock { $0 = { encoded.signal(); goOn.wait() } }
            let entries = (1...100).map { JournalEntry(position: $0, record: .forgotten(session: "session-\($0)")) }
            let committed = Mutex<Result<Void, any Error>?>(nil)
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                committed.withLock { $0 = Result { try createAndWait(store, Room(name: room).snapshot(), entries, room: room) } }
                done.signal()
            }
            #expect(encoded.wait(timeout: .now() + 30) == .success, "the writer encoded the creation")
            let state = try server.psql("SELECT state FROM pg_stat_activity WHERE pid = \(pid)")
            store.afterEncoding.withLock { $0 = nil }
            goOn.signal()
            #expect(done.wait(timeout: .now() + 30) == .success, "the creation was committed")
            try #require(committed.withLock { $0 }).get()
            #expect(state == "idle", "the writer's session while its records were encoded: \(state)")
            #expect(try store.load(room: room)?.tail.count == 100, "all of it written")
        }
    }

    @Test("a serving node writes a room's records only under its lease: none after the connection that held it was lost")
    func recordsOnlyUnderTheLease() async throws {
        let url = self.url
        try await blocking {
            let node = "fence-\(UInt32.random(in: 0...UInt32.max))"
            let room = node + "-room"
            let store = try PostgresStore(url: url, node: node, advertisedURL: "ws://f.example", claimsNode: true,
                                          logger: storeLogger)
            defer { store.close() }
            #expect(try store.acquire(room: room) == .acquired)
            var driver = try seededRoom(store, room, rounds: 1)
            let made = try store.revisions(room: room, after: 0, through: 100).count
            #expect(made > 0)
            // PostgreSQL ends the writer's session (as when it frees a vanished node's leases); the
            // next store check reconnects first, as a node's does every 5 s.
            let server = try SharedPostgres.server.get()
            let writer = "SELECT pid FROM nodes WHERE node = '\(node)'"
            let before = try server.psql(writer)
            try server.psql("SELECT pg_terminate_backend(\(before))")
            var after = before
            for _ in 0..<200 where after == before {
                _ = try? store.check()
                after = try server.psql(writer)
                Thread.sleep(forTimeInterval: 0.05)
            }
            #expect(after != before, "the check reconnected (its heartbeat names the new session)")
            let position = driver.room.journalPosition
            driver.play(rounds: 1)
            let refused = #expect(throws: StoreError.self) {
                try appendAndWait(store, driver.entries(after: position), room: room)
            }
            #expect(refused?.kind == .unavailable)
            #expect(try store.revisions(room: room, after: 0, through: 100).count == made, "only what was made under the lease")
        }
    }

    /// Whether the keyed answers' index is there and valid, waiting up to 10 s for a build under way.
    /// The tables without the keyed-answers index, and a session holding a transaction that writes the
    /// journal (a build with CREATE INDEX CONCURRENTLY waits for it).
    private func writerWithoutKeysIndex(_ server: PostgresServer, url: String) throws -> PsqlSession {
        try PostgresStore(url: url, node: "t", advertisedURL: "ws://t.example", logger: storeLogger).close()  // the tables
        try server.psql("DROP INDEX IF EXISTS journal_keys")
        let holder = try server.session()
        try holder.run("BEGIN; LOCK TABLE journal IN ROW EXCLUSIVE MODE")
        return holder
    }

    private func keysIndexValid(_ server: PostgresServer) throws -> Bool {
        let query = "SELECT count(*) FROM pg_index WHERE indexrelid = to_regclass('journal_keys') AND indisvalid"
        for _ in 0..<200 {
            if try server.psql(query) == "1" { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    /// Whether a session of the server waits on `pid`'s locks within 10 s (or `done` becomes true first).
    private func waitsOn(_ pid: Int, unless done: () -> Bool = { false }) throws -> Bool {
        let server = try SharedPostgres.server.get()
        for _ in 0..<200 {
            if try server.psql("SELECT count(*) FROM pg_stat_activity WHERE \(pid) = ANY(pg_blocking_pids(pid))") != "0" {
                return true
            }
            if done() { return false }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    @Test("a lane's forget of a deleted room that waits on the room's new life reads the room after it: the new cursor stays")
    func cursorForgetBehindANewLife() async throws {
        let url = self.url
        try await blocking {
            let server = try SharedPostgres.server.get()
            let store = try PostgresStore(url: url, node: "t", advertisedURL: "ws://t.example", logger: storeLogger)
            defer { store.close() }
            let room = "life-\(UInt32.random(in: 0...UInt32.max))", endpoint = "https://life.example/hook"
            // The first life's lane flushed its cursor after the room was deleted: a stale row.
            try store.setWebhookCursor(endpoint: endpoint, room: room, rev: 3, life: nil)
            // The room made again as a node's writer makes it (the room's cursor lock, its snapshot, the
            // endpoint's cursor at 0), the commit not yet made.
            let maker = try server.session()
            defer { maker.close() }
            try maker.run("""
                BEGIN; SELECT pg_advisory_xact_lock(\(PostgresStore.cursorLockKey(room)));
                INSERT INTO snapshots (room, position, revision, floor, state, people, saved_at)
                VALUES ('\(room)', 0, 0, 0, '{"people": []}', 0, 0);
                INSERT INTO webhook_cursors (endpoint, room, rev) VALUES ('\(endpoint)', '\(room)', 0)
                ON CONFLICT (endpoint, room) DO UPDATE SET rev = 0
                """)
            // The lane of the first life forgets the room's cursor meanwhile.
            let forget = Background { try store.resetWebhookCursor(endpoint: endpoint, room: room, to: nil, life: nil) }
            #expect(try waitsOn(maker.pid), "the forget waits for the commit")
            try maker.run("COMMIT")
            try forget.result()
            #expect(try store.webhookCursors(endpoint: endpoint) == [room: 0], "the new life's cursor")
            #expect(try store.deleteRoom(room))
        }
    }

    @Test("a commit that makes a room with webhook cursors, or deletes one, first takes the room's cursor lock")
    func creationAndDeletionTakeTheCursorLock() async throws {
        let url = self.url
        try await blocking {
            let server = try SharedPostgres.server.get()
            let store = try PostgresStore(url: url, node: "t", advertisedURL: "ws://t.example", logger: storeLogger)
            defer { store.close() }
            let room = "locked-\(UInt32.random(in: 0...UInt32.max))", endpoint = "https://locked.example/hook"
            let key = PostgresStore.cursorLockKey(room)
            let holder = try server.session()
            defer { holder.close() }
            try holder.run("SELECT pg_advisory_lock(\(key))")
            var driver = RoomDriver(name: room)
            store.save(driver.room.snapshot(), room: room, notices: [.startsAtZero(endpoint: endpoint, room: room, life: 1_000)])
            #expect(try waitsOn(holder.pid), "the creation waits for the lock")
            #expect(try store.load(room: room) == nil)
            try holder.run("SELECT pg_advisory_unlock(\(key))")
            driver.play(rounds: 1)
            try appendAndWait(store, driver.entries, room: room)
            #expect(try store.webhookCursors(endpoint: endpoint) == [room: 0])

            try holder.run("SELECT pg_advisory_lock(\(key))")
            let deletion = Background { try store.deleteRoom(room) }
            #expect(try waitsOn(holder.pid), "the deletion waits for the lock")
            #expect(try store.load(room: room) != nil)
            try holder.run("SELECT pg_advisory_unlock(\(key))")
            #expect(try deletion.result())
            #expect(try store.webhookCursors(endpoint: endpoint).isEmpty)
        }
    }

    @Test("a store opens beside a transaction holding the lock writes take on every table: no DDL when the schema is there")
    func opensBesideWrites() async throws {
        let url = self.url
        try await blocking {
            let server = try SharedPostgres.server.get()
            try PostgresStore(url: url, node: "t", advertisedURL: "ws://t.example", logger: storeLogger).close()
            let holder = try server.session()
            defer { holder.close() }
            let tables = PostgresStore.schema.compactMap { step in if case .table(let name, _) = step { name } else { nil } }
            try holder.run("BEGIN; LOCK TABLE \(tables.joined(separator: ", ")) IN ROW EXCLUSIVE MODE")
            let open = Background { try PostgresStore(url: url, node: "t", advertisedURL: "ws://t.example", logger: storeLogger) }
            #expect(try !waitsOn(holder.pid, unless: { open.done }), "the open waited on the transaction")
            try holder.run("ROLLBACK")
            try open.result().close()
        }
    }

    @Test("a load reads a room's keyed answers through their own index, which holds those and no other record")
    func keyedAnswersIndexed() async throws {
        let (url, prefix) = (self.url, contract.prefix)
        try await blocking {
            let server = try SharedPostgres.server.get()
            // A serving node's open builds the index (in the background): wait for it.
            let node = try PostgresStore(url: url, node: "t-plan", advertisedURL: "ws://t.example", claimsNode: true,
                                         logger: storeLogger)
            defer { node.close() }
            #expect(try keysIndexValid(server))
            let store = try PostgresStore(url: url, node: "t", advertisedURL: "ws://t.example", logger: storeLogger)
            defer { store.close() }
            let room = prefix + "indexed"
            var driver = try seededRoom(store, room, rounds: 3)
            let position = driver.room.journalPosition
            driver.write(1, key: "k")
            try appendAndWait(store, driver.entries(after: position), room: room)
            // The store's own query, its parameters bound as the store binds them.
            let plan = try server.psql("""
                SET enable_seqscan = off; PREPARE keyed(text, bigint, bigint) AS \(PostgresStore.keyedQuery);
                EXPLAIN EXECUTE keyed('\(room)', 1, 1000)
                """)
            #expect(plan.contains("journal_keys"), "\(plan)")
            let rows = try server.psql("SELECT count(*) FROM journal WHERE room = '\(room)' AND \(PostgresStore.keyedRecord)")
            #expect(rows == "1", "only the keyed answer")
        }
    }

    @Test("a serving node builds a missing (or invalid) keyed-answers index concurrently: its open and the writes go on beside a transaction writing the journal")
    func indexBuiltConcurrently() async throws {
        let (url, prefix) = (self.url, contract.prefix)
        try await blocking {
            let server = try SharedPostgres.server.get()
            let holder = try writerWithoutKeysIndex(server, url: url)
            defer { holder.close() }
            let open = Background {
                try PostgresStore(url: url, node: "builder", advertisedURL: "ws://b.example", claimsNode: true, logger: storeLogger)
            }
            // `result()` waits up to 10 s: the open returns while the transaction holds on (the build, in
            // the background, waits for it).
            let store = try open.result()
            defer { store.close() }
            let room = prefix + "while-building"
            #expect(try store.acquire(room: room) == .acquired)
            var driver = RoomDriver(name: room)
            store.save(driver.room.snapshot(), room: room)
            driver.write(1, key: "k")
            try appendAndWait(store, driver.entries, room: room)
            // The build waits for the transaction (as CONCURRENTLY does), and is there once it ends.
            #expect(try server.psql("SELECT count(*) FROM pg_index WHERE indexrelid = to_regclass('journal_keys') AND indisvalid") == "0")
            try holder.run("ROLLBACK")
            #expect(try keysIndexValid(server), "the index was built once the transaction ended")
            #expect(try store.load(room: room)?.keyed.count == 0, "the snapshot was taken before the key: none read")
            // An index a build left invalid (a node stopped during it) is built again by the next serving node.
            try server.psql("UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass('journal_keys')")
            let next = try PostgresStore(url: url, node: "builder-2", advertisedURL: "ws://b.example", claimsNode: true,
                                         logger: storeLogger)
            defer { next.close() }
            #expect(try keysIndexValid(server), "the invalid index was dropped and built again")
        }
    }

    @Test("a node's close ends the index build it started: the server does not go on with it for a client gone")
    func indexBuildEndsWithItsNode() async throws {
        let url = self.url
        try await blocking {
            let server = try SharedPostgres.server.get()
            let holder = try writerWithoutKeysIndex(server, url: url)
            defer { holder.close() }
            let building = "SELECT count(*) FROM pg_stat_activity WHERE query ILIKE 'create index concurrently%' AND pid <> pg_backend_pid()"
            func waitFor(_ sql: String, _ value: String) throws -> Bool {
                for _ in 0..<100 {
                    if try server.psql(sql) == value { return true }
                    Thread.sleep(forTimeInterval: 0.1)
                }
                return false
            }
            let open = Background {
                try PostgresStore(url: url, node: "stopping", advertisedURL: "ws://s.example", claimsNode: true, logger: storeLogger)
            }
            let store = try open.result()
            #expect(try waitFor(building, "1"), "the build, waiting for the transaction")
            store.close()
            // Before, the server went on with the build (and kept its advisory lock) for as long as the
            // transaction held on, and built the index after it: the next node skipped its build.
            #expect(try waitFor(building, "0"), "the build ended with the node's connection")
            try holder.run("ROLLBACK")
            #expect(try server.psql("SELECT count(*) FROM pg_index WHERE indexrelid = to_regclass('journal_keys') AND indisvalid") == "0")
            let next = try PostgresStore(url: url, node: "next", advertisedURL: "ws://n.example", claimsNode: true, logger: storeLogger)
            defer { next.close() }
            #expect(try keysIndexValid(server), "the next serving node built it")
        }
    }

    @Test("after a commit failed because the database was gone, the check passes once it is back, with no other write")
    func checkRecoversWithoutAWrite() async throws {
        let url = self.url
        try await blocking {
            let server = try SharedPostgres.server.get()
            let store = try PostgresStore(url: url, node: "a", advertisedURL: "ws://a", logger: storeLogger)
            defer { store.close() }
            var driver = try seededRoom(store, "lost-\(UInt32.random(in: 0...UInt32.max))", rounds: 1)
            try store.check()
            server.kill()
            let position = driver.room.journalPosition
            driver.play(rounds: 1)
            let failure = #expect(throws: StoreError.self) {
                try appendAndWait(store, driver.entries(after: position), room: driver.room.name)
            }
            #expect(failure?.kind == .unavailable)
            #expect(throws: StoreError.self) { try store.check() }
            try server.restart()
            // Nobody writes (a load balancer reading /healthz sends no clients): the check alone finds
            // the store working again.
            try store.check()
        }
    }

    @Test("a node keeps a room's lease while its hub or its webhook deliveries need it, and gives it up when neither does")
    func leaseHolders() async throws {
        let url = self.url
        try await blocking {
            let room = "holders-\(UInt32.random(in: 0...UInt32.max))"
            let a = try PostgresStore(url: url, node: "a", advertisedURL: "ws://a.example:8080", logger: storeLogger)
            let b = try PostgresStore(url: url, node: "b", advertisedURL: "ws://b.example:8080", logger: storeLogger)
            defer { a.close(); b.close() }
            #expect(try a.acquire(room: room) == .acquired)
            #expect(try a.acquire(room: room, for: .webhooks) == .acquired)
            a.release(room: room)  // the hub unloads it; deliveries are not done
            #expect(try b.acquire(room: room) == .ownedBy(node: "a", url: "ws://a.example:8080"))
            #expect(try a.acquire(room: room) == .acquired)  // loaded again here meanwhile
            a.release(room: room, for: .webhooks)
            #expect(try b.acquire(room: room, for: .webhooks) == .ownedBy(node: "a", url: "ws://a.example:8080"))
            a.release(room: room)
            #expect(try b.acquire(room: room, for: .webhooks) == .acquired)
            // A holder that holds nothing releases nothing.
            b.release(room: room)
            #expect(try a.acquire(room: room) == .ownedBy(node: "b", url: "ws://b.example:8080"))
        }
    }

    @Test("a node that lost its lease without noticing cannot append over the new owner's records")
    func fencing() async throws {
        let url = self.url
        try await blocking {
            let room = "fence-\(UInt32.random(in: 0...UInt32.max))"
            let a = try PostgresStore(url: url, node: "a", advertisedURL: "ws://a", logger: storeLogger)
            let b = try PostgresStore(url: url, node: "b", advertisedURL: "ws://b", logger: storeLogger)
            defer { a.close(); b.close() }
            var driver = try seededRoom(a, room, rounds: 2)
            // b takes the room from the store and appends; a, still holding its old copy, appends too.
            let stored = try #require(try b.load(room: room))
            var taken = RoomDriver(name: room)
            taken.room = try Room(restoring: stored, policy: RoomPolicy())
            let before = taken.room.journalPosition
            taken.play(rounds: 1)
            try appendAndWait(b, taken.entries(after: before), room: room)
            let stale = driver.room.journalPosition
            driver.play(rounds: 1)
            let fenced = #expect(throws: StoreError.self) { try appendAndWait(a, driver.entries(after: stale), room: room) }
            #expect(fenced?.kind == .conflict)
            // What b acknowledged is what the store holds.
            let final = try #require(try b.load(room: room))
            #expect(try Room(restoring: final, policy: RoomPolicy()).model == taken.room.model)
        }
    }
}
