import Foundation
import PeopleCore
import Synchronization

/// The in-memory twin of the durable stores: rooms live as long as the process.
///
/// Used by tests and by `storage.kind: memory`. Appends are durable at once (as durable as memory
/// is) and cost no encoding on the caller's thread: records are kept as values, and a snapshot is
/// encoded only when a room is loaded or listed, as a durable store hands it back. Thread-safe.
public final class InMemoryStore: PeopleStore {
    private struct Stored {
        var snapshot: RoomSnapshot?
        /// When the latest snapshot was saved (milliseconds since the epoch).
        var savedAt: Int64 = 0
        var journal: [JournalEntry] = []
        /// Revision → the people then, one per snapshot saved.
        var checkpoints: [Int: Checkpoint] = [:]
    }

    private struct State {
        var rooms: [String: Stored] = [:]
        /// Endpoint → room → last delivered revision, and the room's life it counts in.
        var cursors: [String: [String: WebhookCursor]] = [:]
        /// Room events not yet delivered, in the order kept.
        var notices: [WebhookNotice] = []
        /// Deleted room → when (`deletion(of:)`).
        var deletions: [String: Int64] = [:]

        func held(by endpoint: String) -> StoredWebhookEndpoint {
            let notices = self.notices.filter { $0.endpoint == endpoint }
            let owed = notices.count { $0.revision != nil }
            return StoredWebhookEndpoint(endpoint: endpoint, cursors: cursors[endpoint]?.count ?? 0,
                                         events: notices.count - owed, owedRevisions: owed)
        }

        mutating func keep(_ new: [WebhookNotice]) {
            for notice in new where notice.isCursorStart {
                cursors[notice.endpoint, default: [:]][notice.room] = WebhookCursor(rev: 0, life: notice.time)
            }
            for notice in new where !notice.isCursorStart && !notices.contains(notice) { notices.append(notice) }
        }

        mutating func save(_ snapshot: RoomSnapshot, room: String, notices: [WebhookNotice]) {
            rooms[room, default: Stored()].snapshot = snapshot
            rooms[room]!.savedAt = Int64(Date().timeIntervalSince1970 * 1000)
            rooms[room]!.checkpoints[snapshot.revision] = snapshot.checkpoint
            keep(notices)
        }
    }

    private let state = Mutex(State())
    private let clock = Mutex<@Sendable () -> Int64>({ Int64(Date().timeIntervalSince1970 * 1000) })

    public init() {}

    /// Times deletions by `clock` (milliseconds since the epoch) instead of the wall clock: a test's
    /// hub and its store then agree on when things happened.
    public func timeDeletions(by clock: @escaping @Sendable () -> Int64) { self.clock.withLock { $0 = clock } }

    public var kind: String { "memory" }

    public func append(_ entries: [JournalEntry], room: String,
                       whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        state.withLock { $0.rooms[room, default: Stored()].journal.append(contentsOf: entries) }
        return .durable
    }

    public func save(_ snapshot: RoomSnapshot, room: String, notices: [WebhookNotice]) {
        state.withLock { $0.save(snapshot, room: room, notices: notices) }
    }

    public func create(_ snapshot: RoomSnapshot, notices: [WebhookNotice], entries: [JournalEntry],
                       checkpoints: [Checkpoint], room: String,
                       whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        state.withLock {
            $0.save(snapshot, room: room, notices: notices)
            $0.rooms[room]!.journal.append(contentsOf: entries)
            for past in checkpoints where $0.rooms[room]!.checkpoints[past.revision] == nil {
                $0.rooms[room]!.checkpoints[past.revision] = past
            }
        }
        return .durable
    }

    public func load(room: String) throws(StoreError) -> StoredRoom? {
        guard let stored = state.withLock({ $0.rooms[room] }), let snapshot = stored.snapshot else { return nil }
        let window = stored.journal.compactMap(\.record.revision)
            .filter { $0.number > snapshot.floor && $0.number <= snapshot.revision }
        let tail = stored.journal.filter { $0.position > snapshot.position }
        let json = snapshot.json
        let keyed = StoredRoom.keyedPositions(inSnapshot: json).map { range in
            stored.journal.filter { range.contains($0.position) && $0.keepsKey }
        } ?? []
        return StoredRoom(snapshot: json, window: window, keyed: keyed, tail: tail)
    }

    public func revisions(room: String, after: Int, through: Int) throws(StoreError) -> [Revision] {
        let journal = state.withLock { $0.rooms[room]?.journal ?? [] }
        return journal.compactMap(\.record.revision).filter { $0.number > after && $0.number <= through }
    }

    /// O(the room's checkpoints).
    public func checkpoint(room: String, atOrBelow rev: Int) throws(StoreError) -> Checkpoint? {
        state.withLock { state in
            state.rooms[room]?.checkpoints.values.filter { $0.revision <= rev }.max { $0.revision < $1.revision }
        }
    }

    public func keepCheckpoint(_ checkpoint: Checkpoint, room: String) throws(StoreError) {
        state.withLock { state in
            guard state.rooms[room] != nil, state.rooms[room]!.checkpoints[checkpoint.revision] == nil else { return }
            state.rooms[room]!.checkpoints[checkpoint.revision] = checkpoint
        }
    }

    /// Encodes each listed room's snapshot to count its people: O(the page's rooms' size).
    public func listRooms(after: String?, prefix: String?, limit: Int) throws(StoreError) -> [StoredRoomSummary] {
        let page = state.withLock { state in
            state.rooms.filter { $0.value.snapshot != nil && StoredRoomSummary.listed($0.key, after: after, prefix: prefix) }
                .sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                .prefix(max(limit, 0))
        }
        return page.map { name, stored in
            let head = stored.journal.last { $0.record.revision != nil }?.record.revision
            return StoredRoomSummary(name: name, rev: head?.number ?? 0,
                                     people: StoredRoomSummary.people(inSnapshot: stored.snapshot!.json),
                                     updated: head?.timestamp ?? stored.savedAt)
        }
    }

    public func deleteRoom(_ room: String, notices: [WebhookNotice]) throws(StoreError) -> Bool {
        state.withLock { state in
            var kept: [WebhookNotice] = []
            for notice in notices {
                guard notice.isOwedRequest else { kept.append(notice); continue }
                guard let cursor = state.cursors[notice.endpoint]?[room]?.rev else { continue }
                for entry in state.rooms[room]?.journal ?? [] {
                    guard let revision = entry.record.revision, revision.number > cursor else { continue }
                    kept.append(WebhookNotice(endpoint: notice.endpoint, room: room, event: notice.event,
                                              time: notice.time, revision: revision))
                }
            }
            for endpoint in state.cursors.keys { state.cursors[endpoint]![room] = nil }
            state.keep(kept)
            guard state.rooms.removeValue(forKey: room) != nil else { return false }
            let now = self.now()
            state.deletions = state.deletions.filter { DeletedRooms.isRemembered($0.value, now: now) }
            state.deletions[room] = now
            return true
        }
    }

    public func deletion(of room: String) throws(StoreError) -> Int64? {
        guard let deletedAt = state.withLock({ $0.deletions[room] }),
              DeletedRooms.isRemembered(deletedAt, now: now()) else { return nil }
        return deletedAt
    }

    private func now() -> Int64 { clock.withLock { $0 }() }

    public func webhookNotices(endpoint: String) throws(StoreError) -> [WebhookNotice] {
        state.withLock { state in
            state.notices.filter { $0.endpoint == endpoint && $0.revision == nil }.enumerated()
                .sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
        }
    }

    public func owedRevisions(endpoint: String, room: String, after: OwedPosition?, limit: Int) throws(StoreError) -> [WebhookNotice] {
        state.withLock { state in
            Array(state.notices.filter { notice in
                guard notice.endpoint == endpoint, notice.room == room, let position = notice.owedPosition else { return false }
                return after.map { position > $0 } ?? true
            }.sorted { $0.owedPosition! < $1.owedPosition! }.prefix(max(limit, 0)))
        }
    }

    public func revisionsOwed(endpoint: String) throws(StoreError) -> [String: Int] {
        state.withLock { state in
            state.notices.filter { $0.endpoint == endpoint && $0.revision != nil }.reduce(into: [:]) { $0[$1.room, default: 0] += 1 }
        }
    }

    public func removeWebhookNotice(_ notice: WebhookNotice) throws(StoreError) {
        state.withLock { $0.notices.removeAll { $0 == notice } }
    }

    public func webhookCursorRecords(endpoint: String) throws(StoreError) -> [String: WebhookCursor] {
        state.withLock { $0.cursors[endpoint] ?? [:] }
    }

    @discardableResult
    public func setWebhookCursor(endpoint: String, room: String, rev: Int, life: Int64?) throws(StoreError) -> Bool {
        state.withLock { state in
            let stored = state.cursors[endpoint]?[room]
            guard stored == nil || stored?.life == life else { return false }
            state.cursors[endpoint, default: [:]][room] = WebhookCursor(rev: max(stored?.rev ?? rev, rev), life: life)
            return true
        }
    }

    public func resetWebhookCursor(endpoint: String, room: String, to rev: Int?, life: Int64?) throws(StoreError) {
        state.withLock { state in
            switch (rev, state.rooms[room] != nil) {
            case (let rev?, true): state.cursors[endpoint, default: [:]][room] = WebhookCursor(rev: rev, life: life)
            case (nil, false): _ = state.cursors[endpoint]?.removeValue(forKey: room)
            default: break
            }
        }
    }

    public func webhookEndpoints() throws(StoreError) -> [StoredWebhookEndpoint] {
        state.withLock { state in
            let endpoints = Set(state.cursors.filter { !$0.value.isEmpty }.keys).union(state.notices.map(\.endpoint))
            return endpoints.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { state.held(by: $0) }
        }
    }

    public func forgetWebhookEndpoint(_ endpoint: String) throws(StoreError) -> StoredWebhookEndpoint? {
        state.withLock { state in
            let held = state.held(by: endpoint)
            guard !held.isEmpty else { return nil }
            state.cursors[endpoint] = nil
            state.notices.removeAll { $0.endpoint == endpoint }
            return held
        }
    }

    public func check() throws(StoreError) {}

    public func close() {}
}
