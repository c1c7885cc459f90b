@testable import PeopleCore
import Testing
import PeopleTestSupport

/// Client state machines and one room over a seeded random network (the shape of Yjs' test helper):
/// each direction of each connection is FIFO, connections are interleaved at random, clients drop
/// and reconnect (losing what was on the wire) and resend; random edits, undos and redos. At
/// quiescence every client's model equals the room's.
struct Network {
    struct Peer {
        var client: ClientSync
        var session: SessionID?
        var up: [ClientMessage] = []
        var down: [ServerMessage] = []
        var online = false
    }

    var rng: SeededRandom
    var room: Room
    var peers: [Peer]
    var now: Int64 = 0
    var sessionsMade = 0
    /// Errors clients received: a correct client never makes the hub refuse a batch.
    var errors: [ProtocolError] = []
    /// Every record the room journalled, and snapshots taken along the way (what a store would hold).
    var journal: [JournalEntry] = []
    var snapshots: [RoomSnapshot] = []
    /// Chance per step of a snapshot, and of the room being restarted from the journal.
    var snapshotChance = 0.0
    var restartChance = 0.0
    var restarts = 0

    init(seed: UInt64, clients: Int, policy: RoomPolicy = RoomPolicy()) {
        rng = SeededRandom(seed: seed)
        room = Room(name: "sim", seed: PeopleModel(people: Fixtures.start), policy: policy)
        peers = (0..<clients).map { Peer(client: ClientSync(user: "u\($0 % 3)")) }
        snapshots = [room.snapshot()]
        for i in peers.indices { connect(i) }
    }

    mutating func connect(_ i: Int) {
        guard !peers[i].online else { return }
        guard case .hello(let hello) = peers[i].client.connect() else { return }
        sessionsMade += 1
        let (id, actions) = room.join(session: "s\(sessionsMade)", user: hello.user, role: .editor,
                                      resume: hello.resume, since: hello.since)
        peers[i].session = id
        peers[i].online = true
        route(actions)
    }

    mutating func disconnect(_ i: Int) {
        guard peers[i].online, let id = peers[i].session else { return }
        peers[i].online = false
        peers[i].up.removeAll()
        peers[i].down.removeAll()
        peers[i].client.disconnected()
        route(room.leave(session: id))
    }

    mutating func route(_ actions: [RoomAction]) {
        for action in actions {
            switch action {
            case .persist(let entry):
                journal.append(entry)
            case .send(let message, let to):
                for i in peers.indices where peers[i].online && to.contains(peers[i].session ?? "") {
                    peers[i].down.append(message)
                }
            case .readHistory:
                Issue.record("a room that keeps every revision asks the store for none")
            }
        }
    }

    mutating func deliverUp(_ i: Int) {
        guard peers[i].online, !peers[i].up.isEmpty, let id = peers[i].session else { return }
        let message = peers[i].up.removeFirst()
        now += Int64(rng.int(1...300))
        route(room.receive(message, from: id, now: now))
        #expect(room.model.invariantViolation() == nil)
    }

    mutating func deliverDown(_ i: Int) {
        guard peers[i].online, !peers[i].down.isEmpty else { return }
        let message = peers[i].down.removeFirst()
        let (send, events) = peers[i].client.receive(message)
        for case .error(let error) in events { errors.append(error) }
        peers[i].up += send
    }

    /// An edit, labelled `label`, also while offline (queued then).
    mutating func offlineEdit(_ i: Int, label: String) { edit(i, label: label) }

    mutating func edit(_ i: Int, label: String = "Edit") {
        if peers[i].client.tagsLeft < 4, peers[i].online { peers[i].up.append(.tags) }
        // Two fresh tags in a row from the client's blocks (a batch inserts at most two people).
        guard let first = peers[i].client.allocateTag(), let second = peers[i].client.allocateTag(),
              second == first + 1 else { return }
        var next = first
        let ops = RandomEdits.batch(on: peers[i].client.view, nextTag: &next, size: 1...2, &rng)
        let key: String? = rng.chance(0.3) ? "k\(rng.int(0...1))" : nil
        guard let send = try? peers[i].client.edit(ops, label: label, coalesce: key) else { return }
        if peers[i].online { peers[i].up += send }
    }

    mutating func step() {
        if snapshotChance > 0, rng.chance(snapshotChance) { snapshots.append(room.snapshot()) }
        if restartChance > 0, rng.chance(restartChance) { restart() }
        let i = rng.int(0...(peers.count - 1))
        switch rng.int(0...99) {
        case 0..<20: edit(i)
        // Undos and redos while offline too: queued, and shown at once when they take a queued step.
        case 20..<25:
            let send = peers[i].client.undo(scope: rng.chance(0.3) ? rng.int(1...3) : nil)
            if peers[i].online { peers[i].up += send }
        case 25..<28:
            let send = peers[i].client.redo()
            if peers[i].online { peers[i].up += send }
        case 28..<60: deliverUp(i)
        case 60..<95: deliverDown(i)
        case 95..<97: disconnect(i)
        default: connect(i)
        }
    }

    /// Reconnects everyone and delivers until nothing is left anywhere.
    mutating func settle() {
        for i in peers.indices { connect(i) }
        var rounds = 0
        while peers.contains(where: { !$0.up.isEmpty || !$0.down.isEmpty }), rounds < 100_000 {
            rounds += 1
            for i in peers.indices {
                deliverUp(i)
                deliverDown(i)
            }
        }
    }
}

@Suite("Convergence", .cpuBound)
struct ConvergenceTests {
    static func run(seed: UInt64, clients: Int, steps: Int, policy: RoomPolicy = RoomPolicy(),
                    allowed: Set<ErrorCode> = []) {
        var net = Network(seed: seed, clients: clients, policy: policy)
        for _ in 0..<steps { net.step() }
        net.settle()
        let unexpected = net.errors.filter { !allowed.contains($0.code) }
        #expect(unexpected.isEmpty, "seed \(seed): \(unexpected)")
        for peer in net.peers {
            #expect(peer.client.pendingCount == 0, "seed \(seed)")
            #expect(peer.client.revision == net.room.revision, "seed \(seed)")
            #expect(peer.client.confirmed == net.room.model, "seed \(seed)")
            #expect(peer.client.view == net.room.model, "seed \(seed)")
        }
    }

    @Test("3–5 clients with random edits, undos, redos and reconnects converge", arguments: 0..<60)
    func randomRuns(seed: Int) {
        Self.run(seed: UInt64(seed) &* 7919 &+ 17, clients: 3 + seed % 3, steps: 1000)
    }

    @Test("with a short kept history, reconnects past it resync from the full state and converge", arguments: 0..<20)
    func shortHistoryRuns(seed: Int) {
        // A resent request whose base fell out of the kept history is refused as stale-base (and the
        // client resyncs); undo entries past it expire. Nothing else may be refused.
        Self.run(seed: UInt64(seed) &+ 50_000, clients: 4, steps: 1000, policy: RoomPolicy(keptRevisions: 8),
                 allowed: [.staleBase])
    }

    @Test("the same under the force policy", arguments: 0..<10)
    func forceRuns(seed: Int) {
        Self.run(seed: UInt64(seed) &+ 90_001, clients: 4, steps: 600,
                 policy: RoomPolicy(undo: UndoPolicy(conflicts: .force)))
    }
}
