import PeopleCore

/// Client state machines (`ClientSync`) and one room (`RoomProbe`) on a network whose schedule the
/// fuzzer chooses: the shape of `ConvergenceTests`' network, with bytes instead of a seeded generator.
/// Each direction of each connection is FIFO; a disconnect loses what was on the wire.
struct SyncNetwork {
    struct Peer {
        var client: ClientSync
        var session: SessionID?
        var up: [ClientMessage] = []
        var down: [ServerMessage] = []
        var online = false
    }

    var probe: RoomProbe
    var peers: [Peer]
    var sessionsMade = 0
    /// What happened, for a violation's message.
    var log: [String] = []

    init(start: PeopleModel, policy: RoomPolicy, users: [String]) {
        probe = RoomProbe(seed: start, policy: policy)
        peers = users.map { Peer(client: ClientSync(user: $0)) }
    }

    var settled: Bool { peers.allSatisfy { $0.up.isEmpty && $0.down.isEmpty } }

    mutating func connect(_ i: Int) throws(FuzzViolation) {
        guard !peers[i].online else { return }
        guard case .hello(let hello) = peers[i].client.connect() else {
            throw FuzzViolation("a client connects with hello", "")
        }
        sessionsMade += 1
        let (id, _) = try probe.join(session: "s\(sessionsMade)", user: hello.user, client: "fuzz",
                                     resume: hello.resume, since: hello.since)
        log.append("peer \(i) connects: \(ClientMessage.hello(hello).json.text) → session \(id)")
        peers[i].session = id
        peers[i].online = true
        route(probe.lastActions)
    }

    mutating func disconnect(_ i: Int) throws(FuzzViolation) {
        guard peers[i].online, let id = peers[i].session else { return }
        log.append("peer \(i) drops (\(peers[i].up.count) up, \(peers[i].down.count) down lost)")
        peers[i].online = false
        peers[i].up.removeAll()
        peers[i].down.removeAll()
        peers[i].client.disconnected()
        try probe.leave(id)
        route(probe.lastActions)
    }

    private mutating func route(_ actions: [RoomAction]) {
        for case .send(let message, let to) in actions {
            for i in peers.indices where peers[i].online && to.contains(peers[i].session ?? "") {
                peers[i].down.append(message)
            }
        }
    }

    /// The room reads the oldest frame peer `i` sent.
    mutating func deliverUp(_ i: Int) throws(FuzzViolation) {
        guard peers[i].online, !peers[i].up.isEmpty, let id = peers[i].session else { return }
        let message = peers[i].up.removeFirst()
        log.append("peer \(i) → \(message.json.text)")
        try probe.receive(message, from: id)
        route(probe.lastActions)
    }

    /// Peer `i` reads the oldest frame the room sent it.
    mutating func deliverDown(_ i: Int) throws(FuzzViolation) {
        guard peers[i].online, !peers[i].down.isEmpty else { return }
        let message = peers[i].down.removeFirst()
        let (send, events) = peers[i].client.receive(message)
        peers[i].up += send
        for event in events {
            switch event {
            case .error(let error):
                log.append("peer \(i) ← \(message.json.text)")
                // The name limit is the one refusal a correct client can meet (two users typing into
                // one name at once); every other one means the client sent what it should not have.
                try require(error.code == .invalidOp && error.message.hasPrefix("name is over"),
                            "a correct client is never refused", "peer \(i): \(error)")
            case .needsResync:
                throw FuzzViolation("a client keeps a base the room keeps", "peer \(i)")
            default:
                break
            }
        }
        let client = peers[i].client
        for (name, model) in [("view", client.view), ("confirmed", client.confirmed)] {
            if let violation = model.invariantViolation() {
                throw FuzzViolation("client model invariants", "peer \(i) \(name): \(violation)")
            }
        }
    }

    /// Peer `i` makes a batch on its view (valid there), with tags from its blocks.
    mutating func edit(_ i: Int, _ input: inout FuzzBytes) throws(FuzzViolation) {
        var client = peers[i].client
        let sentinel = 1 << 40
        var next = sentinel
        let batch = FuzzEdits.batch(on: client.view, nextTag: &next, validOnly: true, &input)
        let label: String? = input.pick([nil, "Edit"])
        let coalesce: String? = input.pick([nil, "k", "k", "j"])
        var fresh: [Tag: Tag] = [:]
        for tag in sentinel..<next {
            guard let allocated = client.allocateTag() else { return }  // out of tags: the edit is not made
            fresh[tag] = allocated
        }
        let diffs = batch.map { $0.retagged(fresh) }
        guard !diffs.isEmpty else { return }
        let send: [ClientMessage]
        do { send = try client.edit(diffs, label: label, coalesce: coalesce) } catch {
            throw FuzzViolation("an edit valid on the view is taken", "peer \(i): \(diffs): \(error)")
        }
        log.append("peer \(i) edits \(JSON.array(diffs.map(\.json)).text)")
        peers[i].client = client
        peers[i].up += send
        if client.tagsLeft < 8 && peers[i].online { peers[i].up.append(.tags) }
    }

    mutating func revert(_ i: Int, redo: Bool, scope: Tag?) {
        log.append("peer \(i) \(redo ? "redo" : "undo") scope \(scope.map(String.init) ?? "-")")
        peers[i].up += redo ? peers[i].client.redo(scope: scope) : peers[i].client.undo(scope: scope)
    }

    /// Everyone reconnects and every frame is delivered; then every client shows the room's model,
    /// at its revision, with nothing pending.
    mutating func settle() throws(FuzzViolation) {
        for i in peers.indices { try connect(i) }
        var rounds = 0
        while !settled {
            rounds += 1
            try require(rounds < 10_000, "the network settles")
            for i in peers.indices {
                while !peers[i].up.isEmpty { try deliverUp(i) }
                while !peers[i].down.isEmpty { try deliverDown(i) }
            }
        }
        let room = probe.room
        for (i, peer) in peers.enumerated() {
            try require(peer.client.pendingCount == 0, "a settled client has nothing pending", "peer \(i)")
            try require(peer.client.revision == room.revision, "a settled client is at the head",
                        "peer \(i): \(peer.client.revision) vs \(room.revision)")
            try require(peer.client.confirmed == room.model, "a settled client's confirmed state is the room's",
                        "peer \(i): \(peer.client.confirmed.text) vs \(room.model.text)")
            try require(peer.client.view == room.model, "every client converges",
                        "peer \(i): \(peer.client.view.text) vs \(room.model.text)")
        }
    }
}
