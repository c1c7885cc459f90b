import PeopleCore
import Synchronization

/// The in-memory twin of the durable stores: rooms live as long as the process.
///
/// Used by tests and by `storage.kind: memory`. Appends are durable at once (as durable as memory
/// is) and cost no encoding on the caller's thread: records are kept as values, and a snapshot is
/// encoded only when a room is loaded, as a durable store hands it back. Thread-safe.
public final class InMemoryStore: PeopleStore {
    private struct Stored {
        var snapshot: RoomSnapshot?
        var journal: [JournalEntry] = []
    }

    private let rooms = Mutex<[String: Stored]>([:])

    public init() {}

    public var kind: String { "memory" }

    public func append(_ entries: [JournalEntry], room: String,
                       whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        rooms.withLock { $0[room, default: Stored()].journal.append(contentsOf: entries) }
        return .durable
    }

    public func save(_ snapshot: RoomSnapshot, room: String) {
        rooms.withLock { $0[room, default: Stored()].snapshot = snapshot }
    }

    public func load(room: String) throws(StoreError) -> StoredRoom? {
        guard let stored = rooms.withLock({ $0[room] }), let snapshot = stored.snapshot else { return nil }
        let window = stored.journal.compactMap(\.record.revision)
            .filter { $0.number > snapshot.floor && $0.number <= snapshot.revision }
        let tail = stored.journal.filter { $0.position > snapshot.position }
        return StoredRoom(snapshot: snapshot.json, window: window, tail: tail)
    }

    public func revisions(room: String, after: Int, through: Int) throws(StoreError) -> [Revision] {
        let journal = rooms.withLock { $0[room]?.journal ?? [] }
        return journal.compactMap(\.record.revision).filter { $0.number > after && $0.number <= through }
    }

    public func check() throws(StoreError) {}

    public func close() {}
}
