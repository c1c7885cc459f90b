import Foundation
import PeopleCore
import PeopleStore
import PeopleTestSupport
import Synchronization
import Testing

/// A room in a store that one user edits: each `edit` makes one revision durable in the store, as the
/// hub would, and returns its number (the test then tells the dispatcher, as the hub does).
struct RoomFeed {
    let store: any PeopleStore
    private(set) var room: Room
    private let session: SessionID
    private var seq = 0
    private var now: Int64

    /// Creates the room in `store` (its first snapshot, with `notices`, as the hub keeps them); `clock`
    /// is the time of its first revision.
    init(_ store: any PeopleStore, name: String, clock: Int64 = 1_700_000_000_000, notices: [WebhookNotice] = []) throws {
        self.store = store
        room = Room(name: name)
        now = clock
        let (session, actions) = room.join(session: "s-\(name)", user: "ann", role: .editor)
        self.session = session
        store.save(room.snapshot(), room: name, notices: notices)
        try append(actions)
    }

    /// `RoomFeed(...)` off Swift's cooperative pool (it waits for the store): tests run in parallel on
    /// that pool, and a test that blocks it starves the others' dispatchers.
    static func start(_ store: any PeopleStore, name: String, clock: Int64 = 1_700_000_000_000,
                      notices: [WebhookNotice] = []) async throws -> RoomFeed {
        try await blocking { try RoomFeed(store, name: name, clock: clock, notices: notices) }
    }

    /// `editNow` off the cooperative pool.
    mutating func edit(_ count: Int) async throws -> [Int] {
        let (revisions, edited) = try await blocking { [self] in
            var copy = self
            return (try copy.editNow(count), copy)
        }
        self = edited
        return revisions
    }

    /// `count` revisions (hair colours and names in turn), durable on return; their numbers. Blocks
    /// until the store has them.
    mutating func editNow(_ count: Int) throws -> [Int] {
        var revisions: [Int] = []
        for _ in 0..<count {
            seq += 1
            now += 1_000
            let change: Diff = seq % 2 == 0 ? .set(1, .hairColor(seq % 4 == 0 ? .red : .black)) : .set(2, .name("Sam \(seq)"))
            let actions = room.receive(.submit(.init(seq: seq, base: room.revision, ops: [change], label: "Edit \(seq)",
                                                     coalesce: nil)), from: session, now: now)
            try append(actions)
            revisions.append(room.revision)
        }
        return revisions
    }

    /// `importNow` off the cooperative pool.
    mutating func imports(_ count: Int, at importedAt: Int64) async throws -> [Int] {
        let (revisions, imported) = try await blocking { [self] in
            var copy = self
            return (try copy.importNow(count, at: importedAt), copy)
        }
        self = imported
        return revisions
    }

    /// `count` revisions brought in as an import made at `importedAt` would (by bob, with the times of
    /// an old export: the same revisions whenever they are imported), durable on return; their numbers.
    mutating func importNow(_ count: Int, at importedAt: Int64) throws -> [Int] {
        var revisions: [Int] = []
        for index in 1...count {
            let actions = try room.importRevision(author: "bob", kind: .edit, label: "Imported \(index)",
                                                  time: 1_600_000_000_000 + Int64(index),
                                                  ops: [.set(2, .name("Imported \(index)"))], importedAt: importedAt)
            try append(actions)
            revisions.append(room.revision)
        }
        return revisions
    }

    private mutating func append(_ actions: [RoomAction]) throws {
        let entries = actions.compactMap { action -> JournalEntry? in
            if case .persist(let entry) = action { entry } else { nil }
        }
        guard !entries.isEmpty else { return }
        let error = Mutex<StoreError??>(nil)
        let done = DispatchSemaphore(value: 0)
        if store.append(entries, room: room.name, whenDurable: { failure in
            error.withLock { $0 = .some(failure) }
            done.signal()
        }) == .pending {
            #expect(done.wait(timeout: .now() + 30) == .success)
            if let failure = error.withLock({ $0 }) ?? nil { throw failure }
        }
    }
}
