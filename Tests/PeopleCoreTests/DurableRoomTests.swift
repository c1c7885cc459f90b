@testable import PeopleCore
import Testing
import PeopleTestSupport

extension StoredRoom {
    /// What a store would hand back for the snapshot: its encoding (through text, as stored), the
    /// revisions of its window, the keyed answers from its `keysFrom` on, and the journal after it
    /// (each record through text too).
    static func stored(from snapshot: RoomSnapshot, journal: [JournalEntry]) throws -> StoredRoom {
        func roundTrip(_ json: JSON) throws -> JSON { try JSON.parse(json.bytes) }
        func roundTrip(_ entry: JournalEntry) throws -> JournalEntry {
            JournalEntry(position: entry.position, record: try RoomRecord(json: roundTrip(entry.record.json)))
        }
        let window = try journal.compactMap(\.record.revision)
            .filter { $0.number > snapshot.floor && $0.number <= snapshot.revision }
            .map { try Revision(json: roundTrip($0.json)) }
        let json = try roundTrip(snapshot.json)
        // As the stores find them: by the marker in the record's text.
        let keyed = try StoredRoom.keyedPositions(inSnapshot: json).map { range in
            try journal.filter { range.contains($0.position) && $0.record.json.text.contains(JournalEntry.keyMarker) }.map(roundTrip)
        } ?? []
        let tail = try journal.filter { $0.position > snapshot.position }.map(roundTrip)
        return StoredRoom(snapshot: json, window: window, keyed: keyed, tail: tail)
    }
}

extension Network {
    /// What a store would hand back for the snapshot (`StoredRoom.stored(from:journal:)`).
    func stored(from snapshot: RoomSnapshot) throws -> StoredRoom {
        try StoredRoom.stored(from: snapshot, journal: journal)
    }

    /// The hub "crashes" and comes back: the room is rebuilt from a random snapshot and the journal;
    /// it must equal the room that ran, and it replaces it. Every client loses its connection (and
    /// what was on the wire) and will reconnect with `resume` and `since`.
    mutating func restart() {
        let snapshot = snapshots[rng.int(0...(snapshots.count - 1))]
        do {
            let restored = try Room(restoring: stored(from: snapshot), policy: room.policy)
            #expect(DurableState(restored) == DurableState(room), "restart \(restarts) from \(snapshot.position)")
            room = restored
        } catch {
            Issue.record("restore failed: \(error)")
        }
        restarts += 1
        for i in peers.indices where peers[i].online {
            peers[i].online = false
            peers[i].up.removeAll()
            peers[i].down.removeAll()
            peers[i].client.disconnected()
        }
    }
}

/// Everything about a room that must outlive a restart, comparable: the snapshot encoding (sessions
/// in id order, since connection order is not durable) and the history window.
struct DurableState: Equatable, CustomStringConvertible {
    var snapshot: JSON
    var floor: Int
    var window: [Revision]
    /// Each session's idempotency keys (a snapshot says only where they start in the journal).
    var keys: [SessionID: IdempotencyKeys]

    init(_ room: Room) {
        keys = room.sessions.filter { !$0.value.keys.isEmpty }.mapValues(\.keys)
        var json = room.snapshot().json
        if case .object(var members) = json, let i = members.firstIndex(where: { $0.key == "sessions" }),
           case .array(let sessions) = members[i].value {
            members[i].value = .array(sessions.sorted { "\($0["id"]!)" < "\($1["id"]!)" })
            json = .object(members)
        }
        snapshot = json
        floor = room.oldestKeptBase
        window = room.revision > floor ? (floor + 1...room.revision).compactMap { room.revision($0) } : []
    }

    var description: String {
        "floor \(floor), \(window.count) revisions, \(keys.values.map(\.count).reduce(0, +)) keys, \(String(decoding: snapshot.bytes, as: UTF8.self))"
    }
}

@Suite("Durable room: snapshot + journal rebuild the room exactly", .cpuBound)
struct DurableRoomTests {
    static func run(seed: UInt64, policy: RoomPolicy, allowed: Set<ErrorCode> = []) {
        var net = Network(seed: seed, clients: 4, policy: policy)
        net.snapshotChance = 0.01
        net.restartChance = 0.004
        for _ in 0..<1500 { net.step() }
        net.settle()
        #expect(net.restarts > 0, "seed \(seed)")
        // One last restart from the oldest snapshot: the whole journal replayed.
        net.snapshots = [net.snapshots[0]]
        net.restart()
        net.settle()
        let unexpected = net.errors.filter { !allowed.contains($0.code) }
        #expect(unexpected.isEmpty, "seed \(seed): \(unexpected)")
        for peer in net.peers {
            #expect(peer.client.pendingCount == 0, "seed \(seed)")
            #expect(peer.client.view == net.room.model, "seed \(seed)")
        }
    }

    @Test("random sessions with restarts from random snapshots: the rebuilt room equals the one that ran, and clients converge",
          arguments: 0..<12)
    func restarts(seed: Int) {
        Self.run(seed: UInt64(seed) &+ 1_000_003, policy: RoomPolicy())
    }

    @Test("the same with a moving history floor, few kept replies and few kept sessions", arguments: 0..<8)
    func restartsWithSmallWindows(seed: Int) {
        // With fewer kept sessions than clients some sessions are forgotten (and journalled so); their
        // clients lose the reply cache, so a resent insert can be refused as already used.
        let policy = RoomPolicy(undo: UndoPolicy(depth: 5), keptRevisions: 8, repliesKept: 3, keptSessions: 2)
        Self.run(seed: UInt64(seed) &+ 2_000_003, policy: policy, allowed: [.staleBase, .invalidOp])
    }

    @Test("a record out of order is refused, naming the positions")
    func outOfOrder() throws {
        var room = Room(name: "r")
        let entry = JournalEntry(position: 2, record: .forgotten(session: "x"))
        #expect(throws: RestoreError.self) { try room.replay(entry) }
    }

    @Test("a snapshot of another format is refused")
    func wrongFormat() throws {
        var json = Room(name: "r").snapshot().json
        if case .object(var members) = json {
            members.removeAll { $0.key == "format" }
            members.append(.init("format", .int(99)))
            json = .object(members)
        }
        #expect(throws: RestoreError.self) { try Room(restoring: StoredRoom(snapshot: json, window: [], tail: []), policy: RoomPolicy()) }
    }
}
