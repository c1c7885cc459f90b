import PeopleCore

/// A `Room` driven the way the hub drives it, with every action it returns checked.
///
/// After each call: the model's invariants hold; the journal positions run on without gaps and each
/// record comes back equal from its own encoding; each message sent comes back equal from its own
/// bytes (what a client reads is what the hub meant); a sequenced request gets exactly one reply with
/// its seq; a revision is the next number, its diffs replay the change exactly (what a client does
/// with a broadcast) and its inverses undo it exactly; no revision means no change.
/// `checkRestore()` rebuilds the room from its first snapshot and the journal, through text.
struct RoomProbe {
    private(set) var room: Room
    private let initial: JSON
    private(set) var journal: [JournalEntry] = []
    /// The model at each revision number this probe saw made.
    private(set) var models: [Int: PeopleModel]
    /// What the room returned for the last call, checked (for a caller that routes the sends).
    private(set) var lastActions: [RoomAction] = []
    var now: Int64 = 0

    init(seed: PeopleModel, policy: RoomPolicy) {
        room = Room(name: "fuzz", seed: seed, policy: policy)
        initial = room.snapshot().json
        models = [0: seed]
    }

    /// A connection said hello; returns the session in use and the welcome.
    mutating func join(
        session: SessionID, user: String, role: Role = .editor, client: String? = nil,
        resume: SessionID? = nil, since: Int? = nil
    ) throws(FuzzViolation) -> (session: SessionID, welcome: ServerMessage.Welcome) {
        let before = room.model
        let (id, actions) = room.join(session: session, user: user, role: role, client: client, resume: resume,
                                      since: since)
        try check(actions, context: "join \(user) since \(since.map(String.init) ?? "-")")
        try require(room.model == before, "join changes no person")
        let welcomes = actions.compactMap { action -> ServerMessage.Welcome? in
            if case .send(.welcome(let w), let to) = action, to == [id] { w } else { nil }
        }
        try require(welcomes.count == 1, "a join sends one welcome", "\(actions)")
        let welcome = welcomes[0]
        try require(welcome.session == id && welcome.rev == room.revision, "the welcome names the session and head",
                    "\(welcome)")
        if let people = welcome.people {
            try require(people == room.model.people.elements, "a full welcome carries the model")
        } else {
            // Catch-up: the missed revisions, in order, bring `since` to the head.
            let frames = actions.compactMap { action -> ServerMessage.Ops? in
                if case .send(.ops(let o), let to) = action, to == [id] { o } else { nil }
            }
            guard let since, var model = models[since] else {
                throw FuzzViolation("a welcome without people answers a since of this room", "\(welcome)")
            }
            for frame in frames {
                do { try model.apply(batch: frame.ops) } catch {
                    throw FuzzViolation("catch-up ops replay", "rev \(frame.rev): \(error)")
                }
            }
            try require(model == room.model, "catch-up reaches the model", "since \(since)")
        }
        return (id, welcome)
    }

    mutating func leave(_ session: SessionID) throws(FuzzViolation) {
        let before = room.model
        try check(room.leave(session: session), context: "leave \(session)")
        try require(room.model == before, "leave changes no person")
    }

    /// Delivers `message` from `session`; returns the reply to a submit, undo or redo.
    @discardableResult
    mutating func receive(_ message: ClientMessage, from session: SessionID) throws(FuzzViolation) -> ServerMessage? {
        now += 150
        let before = room.model
        let head = room.revision
        let actions = room.receive(message, from: session, now: now)
        try check(actions, context: "\(message)")
        var reply: ServerMessage?
        if let seq = message.seq, message.isSequenced {
            let replies = actions.compactMap { action -> ServerMessage? in
                guard case .send(let m, let to) = action, to == [session] else { return nil }
                switch m {
                case .ack(let a) where a.seq == seq: return m
                case .undone(let r) where r.seq == seq: return m
                case .redone(let r) where r.seq == seq: return m
                case .error(let e) where e.seq == seq: return m
                default: return nil
                }
            }
            try require(replies.count == 1, "one reply per seq", "\(message) → \(actions)")
            reply = replies.first
        }
        if room.revision == head {
            try require(room.model == before, "no revision, no change", "\(message)")
        } else {
            try require(room.revision == head + 1, "one message, at most one revision", "\(message)")
            guard let revision = room.revision(room.revision) else {
                throw FuzzViolation("the newest revision is kept", "\(room.revision)")
            }
            try require(!revision.applied.isEmpty, "a revision changes something", "\(revision)")
            if case .error? = reply { throw FuzzViolation("a refused request makes no revision", "\(message)") }
            var replayed = before
            do { try replayed.apply(batch: revision.diffs) } catch {
                throw FuzzViolation("a revision's diffs replay", "\(revision.diffs) on \(before): \(error)")
            }
            try require(replayed == room.model, "a revision's diffs replay to the model",
                        "\(revision.diffs): \(replayed) vs \(room.model)")
            var reverted = room.model
            reverted.rollBack(revision.applied)
            try require(reverted == before, "a revision's inverses restore the model before it",
                        "\(revision.applied): \(reverted) vs \(before)")
            models[revision.number] = room.model
        }
        return reply
    }

    /// Checks what the room asked the hub to do.
    private mutating func check(_ actions: [RoomAction], context: String) throws(FuzzViolation) {
        lastActions = actions
        if let violation = room.model.invariantViolation() {
            throw FuzzViolation("model invariants", "\(violation) after \(context)")
        }
        for action in actions {
            switch action {
            case .persist(let entry):
                try require(entry.position == (journal.last?.position ?? 0) + 1, "journal positions have no gaps",
                            "\(entry.position) after \(journal.last?.position ?? 0)")
                let decoded: RoomRecord
                do { decoded = try RoomRecord(json: JSON.parse(entry.record.json.bytes)) } catch {
                    throw FuzzViolation("journal record round trip", "\(entry.record): \(error)")
                }
                try require(decoded == entry.record, "journal record round trip", "\(entry.record) vs \(decoded)")
                journal.append(entry)
            case .send(let message, _):
                try requireRoundTrip(message)
            case .readHistory:
                // The probe's rooms keep their whole history in memory: they never need the store.
                throw FuzzViolation("a room that keeps every revision asks for none", context)
            }
        }
        try require((journal.last?.position ?? 0) == room.journalPosition, "the journal ends at the room's position")
    }

    /// The room rebuilt from its first snapshot and the whole journal, each through its text, is the
    /// room that ran: the same snapshot (sessions in id order) and the same history window.
    func checkRestore() throws(FuzzViolation) {
        let restored: Room
        do {
            let tail = try journal.map { entry throws in
                JournalEntry(position: entry.position, record: try RoomRecord(json: JSON.parse(entry.record.json.bytes)))
            }
            let stored = StoredRoom(snapshot: try JSON.parse(initial.bytes), window: [], tail: tail)
            restored = try Room(restoring: stored, policy: room.policy)
        } catch {
            throw FuzzViolation("snapshot + journal restore", "\(error)")
        }
        try require(Self.durable(restored) == Self.durable(room), "snapshot + journal rebuild the room",
                    "\(Self.durable(restored).text) vs \(Self.durable(room).text)")
        try require(restored.oldestKeptBase == room.oldestKeptBase && restored.revision == room.revision,
                    "restore keeps the history window")
        for number in (room.oldestKeptBase + 1)...max(room.oldestKeptBase + 1, room.revision) where number <= room.revision {
            try require(restored.revision(number) == room.revision(number), "restore keeps revision \(number)")
        }
    }

    /// The snapshot's encoding with sessions in id order (connection order is not durable).
    private static func durable(_ room: Room) -> JSON {
        guard case .object(var members) = room.snapshot().json,
              let i = members.firstIndex(where: { $0.key == "sessions" }),
              case .array(let sessions) = members[i].value else { return room.snapshot().json }
        members[i].value = .array(sessions.sorted { $0["id"]?.text ?? "" < $1["id"]?.text ?? "" })
        return .object(members)
    }
}

extension ClientMessage {
    /// Submit, undo and redo: the requests the room answers once per seq.
    var isSequenced: Bool {
        switch self {
        case .submit, .undo, .redo: true
        default: false
        }
    }
}

/// A hub message comes back equal from its own bytes (an empty text edit included: SEMANTICS §7
/// reading 6).
func requireRoundTrip(_ message: ServerMessage) throws(FuzzViolation) {
    let bytes = message.json.bytes
    let decoded = ServerMessage.decode(bytes)
    try require(decoded == .success(message), "server message round trip",
                "\(message) → \(String(decoding: bytes, as: UTF8.self)) → \(decoded)")
}
