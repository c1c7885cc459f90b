import PeopleCore
import Synchronization

/// The in-memory twin of the durable stores: rooms live as long as the process.
///
/// Used by tests and by `storage.kind: memory`. Appends are durable at once (as durable as memory
/// is). Records and snapshots are kept encoded, as a durable store keeps them, so the same decoding
/// runs. Thread-safe.
public final class InMemoryStore: PeopleStore {
    private struct Stored {
        var snapshot: (position: Int, revision: Int, floor: Int, json: [UInt8])?
        var journal: [(position: Int, revision: Int?, json: [UInt8])] = []
    }

    private let rooms = Mutex<[String: Stored]>([:])

    public init() {}

    public var kind: String { "memory" }

    public func append(_ entries: [JournalEntry], room: String,
                       whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        let encoded = entries.map { ($0.position, $0.record.revision?.number, $0.record.json.bytes) }
        rooms.withLock { $0[room, default: Stored()].journal.append(contentsOf: encoded) }
        return .durable
    }

    public func save(_ snapshot: RoomSnapshot, room: String) {
        let json = snapshot.json.bytes
        rooms.withLock { $0[room, default: Stored()].snapshot = (snapshot.position, snapshot.revision, snapshot.floor, json) }
    }

    public func load(room: String) throws(StoreError) -> StoredRoom? {
        guard let stored = rooms.withLock({ $0[room] }), let snapshot = stored.snapshot else { return nil }
        do {
            let window = try stored.journal
                .filter { ($0.revision ?? 0) > snapshot.floor && ($0.revision ?? 0) <= snapshot.revision }
                .map { try Self.revision(from: $0.json) }
            let tail = try stored.journal.filter { $0.position > snapshot.position }
                .map { JournalEntry(position: $0.position, record: try RoomRecord(json: JSON.parse($0.json))) }
            return StoredRoom(snapshot: try JSON.parse(snapshot.json), window: window, tail: tail)
        } catch {
            throw StoreError("room \(room) is damaged: \(error)")
        }
    }

    public func revisions(room: String, after: Int, through: Int) throws(StoreError) -> [Revision] {
        let journal = rooms.withLock { $0[room]?.journal ?? [] }
        do {
            return try journal.filter { ($0.revision ?? 0) > after && ($0.revision ?? 0) <= through }
                .map { try Self.revision(from: $0.json) }
        } catch {
            throw StoreError("room \(room) is damaged: \(error)")
        }
    }

    public func close() {}

    static func revision(from bytes: [UInt8]) throws -> Revision {
        guard let revision = try RoomRecord(json: JSON.parse(bytes)).revision else {
            throw StoreError("a journal entry filed as a revision holds none")
        }
        return revision
    }
}
