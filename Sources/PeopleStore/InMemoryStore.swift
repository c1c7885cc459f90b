import PeopleCore
import Synchronization

/// The in-memory twin of the durable stores: revisions live as long as the process.
///
/// Used by tests and, until the SQLite store lands (issue 4), by `storage.kind: memory`. Appends are
/// durable at once (as durable as memory is). Thread-safe.
public final class InMemoryStore: PeopleStore {
    private let rooms = Mutex<[String: [Revision]]>([:])

    public init() {}

    public var kind: String { "memory" }

    public func append(_ revisions: [Revision], room: String,
                       whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        rooms.withLock { $0[room, default: []].append(contentsOf: revisions) }
        return .durable
    }

    public func revisions(room: String, after revision: Int) throws(StoreError) -> [Revision] {
        rooms.withLock { rooms in (rooms[room] ?? []).filter { $0.number > revision } }
    }
}
