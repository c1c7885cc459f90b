import PeopleCore

/// Two users, A and B, editing one room through a `RoomProbe`, with what each reply must be worked
/// out independently of the room: the transform of the batch over the revisions since its base, on
/// the tag order of each revision as this program saw it made.
struct EditProgram {
    var probe: RoomProbe
    let users = ["A", "B"]
    var sessions: [SessionID] = ["", ""]
    var nextTag = [0, 0]
    var seq = [0, 0]
    var lastAck = [0, 0]
    /// Each user's last sequenced request and the reply it got.
    var last: [(message: ClientMessage, reply: ServerMessage)?] = [nil, nil]
    /// What happened, in wire form, for a violation's message.
    var log: [String] = []

    init(start: PeopleModel, policy: RoomPolicy) {
        probe = RoomProbe(seed: start, policy: policy)
    }

    var head: Int { probe.room.revision }
    var policy: RoomPolicy { probe.room.policy }

    /// The start, the policy and the log, to put after a violation's detail.
    var trace: String {
        let p = policy
        return "policy: \(p.undo.conflicts.rawValue), cascade \(p.undo.cascade), depth \(p.undo.depth), "
            + "kept \(p.keptRevisions), max people \(p.maxPeople)\nstart: \(probe.models[0]!.text)\n"
            + log.joined(separator: "\n")
    }

    mutating func joinBoth() throws(FuzzViolation) {
        for user in 0...1 {
            let (id, welcome) = try probe.join(session: "s\(users[user])", user: users[user])
            sessions[user] = id
            nextTag[user] = welcome.tags.from
        }
    }

    /// `user` submits `batch` made at `base`. `validAtBase`: every diff was valid where it was made, so
    /// only the name limit, a stale base or the people limit may refuse it.
    mutating func submit(
        user: Int, _ batch: [Diff], base: Int, validAtBase: Bool, label: String? = nil, coalesce: String? = nil
    ) throws(FuzzViolation) {
        seq[user] += 1
        let message = ClientMessage.submit(.init(seq: seq[user], base: base, ops: batch, label: label, coalesce: coalesce))
        let before = probe.room.model
        let expected = expectedOutcome(of: batch, base: base)
        let floor = probe.room.oldestKeptBase
        guard let reply = try probe.receive(message, from: sessions[user]) else {
            throw FuzzViolation("a submit is answered", "\(message)")
        }
        last[user] = (message, reply)
        log.append("\(users[user]) \(message.json.text) → \(reply.json.text)")
        switch reply {
        case .ack(let ack):
            guard let expected else {
                throw FuzzViolation("a stale base is refused", "base \(base), floor \(floor)")
            }
            try require(!overPeopleLimit(expected.diffs), "the people limit refuses", "\(expected.diffs)")
            guard case .success(let model) = expected.model else {
                throw FuzzViolation("the room agrees with the transform", "acked, expected \(expected.model)")
            }
            try require(probe.room.model == model, "the room agrees with the transform",
                        "room \(probe.room.model.text) vs \(model.text)")
            try require(ack.rev == head, "an ack names the head", "\(ack.rev) vs \(head)")
            lastAck[user] = ack.rev
        case .error(let error):
            try require(probe.room.model == before, "a refused submit changes nothing")
            switch error.code {
            case .staleBase:
                try require(expected == nil, "stale-base only below the floor", "base \(base), floor \(floor)")
            case .roomFull:
                try require(expected.map { overPeopleLimit($0.diffs) } ?? false, "room-full only over the people limit",
                            "\(String(describing: expected?.diffs))")
            case .invalidOp where validAtBase:
                // Valid where it was made, so the rebase must keep it valid: only the name limit (two
                // users typing into one name at once) may refuse it.
                guard let expected, case .failure(let refusal) = expected.model else {
                    throw FuzzViolation("a batch valid at its base is refused only by the name limit",
                                        "refused: \(error.message); expected \(String(describing: expected))")
                }
                try require(refusal.reason.hasPrefix("name is over"), "a rebased batch applies but for the name limit",
                            "\(refusal)")
            case .invalidOp:
                break  // unchecked diffs: anything may be wrong with them
            default:
                throw FuzzViolation("a submit is acked or refused for a reason", "\(error)")
            }
        default:
            throw FuzzViolation("a submit is answered by ack or error", "\(reply)")
        }
    }

    /// The hub's outcome for `batch` made at `base`, worked out here: the batch rebased over every
    /// revision since, on the tag order this program saw at each, then applied to the model (diffs on
    /// absent people skipped). nil when the revisions since `base` are no longer kept.
    func expectedOutcome(of batch: [Diff], base: Int) -> (diffs: [Diff], model: Result<PeopleModel, InvalidOp>)? {
        guard base >= probe.room.oldestKeptBase else { return nil }
        var diffs = batch
        for number in stride(from: base + 1, through: head, by: 1) {
            guard let revision = probe.room.revision(number), let order = probe.models[number - 1]?.tags else { return nil }
            diffs = Transform.transform(diffs, over: revision.diffs, order: order).diffs
        }
        var model = probe.room.model
        do { try model.apply(batch: diffs, absentTags: .skip) } catch { return (diffs, .failure(error)) }
        return (diffs, .success(model))
    }

    /// Whether the room's people limit refuses `diffs` (rebased): more people than the limit, and more
    /// than now.
    func overPeopleLimit(_ diffs: [Diff]) -> Bool {
        var present = Set(probe.room.model.tags)
        for diff in diffs {
            switch diff {
            case .insert(let person, _): present.insert(person.tag)
            case .remove(let tag): present.remove(tag)
            default: break
            }
        }
        return policy.maxPeople > 0 && present.count > policy.maxPeople && present.count > probe.room.model.count
    }

    /// Every tag this program has seen in a model, for undo scopes.
    var knownTags: [Tag] { Set(probe.models.values.flatMap(\.tags)).sorted() }

    mutating func revert(user: Int, redo: Bool, scope: Tag?) throws(FuzzViolation) {
        seq[user] += 1
        let request = ClientMessage.UndoRequest(seq: seq[user], scope: scope)
        let message: ClientMessage = redo ? .redo(request) : .undo(request)
        let stacksBefore = probe.room.stacks(of: users[user])
        guard let reply = try probe.receive(message, from: sessions[user]) else {
            throw FuzzViolation("an undo or redo is answered", "\(message)")
        }
        last[user] = (message, reply)
        log.append("\(users[user]) \(message.json.text) → \(reply.json.text)")
        let result: ServerMessage.UndoResult
        switch (reply, redo) {
        case (.undone(let r), false), (.redone(let r), true): result = r
        default: throw FuzzViolation("undo is answered by undone, redo by redone", "\(message) → \(reply)")
        }
        let stack = redo ? stacksBefore.redo : stacksBefore.undo
        if stack.isEmpty {
            try require(result.rev == nil && result.ops.isEmpty, "an empty stack changes nothing", "\(reply)")
        }
        if let rev = result.rev {
            try require(rev == head && result.ops == probe.room.revision(rev)?.diffs, "an undo's reply is its revision")
        }
    }

    /// Sends `user`'s last request again: the same reply, nothing changes.
    mutating func resend(user: Int) throws(FuzzViolation) {
        guard let (message, reply) = last[user] else { return }
        log.append("\(users[user]) resends seq \(message.seq ?? 0)")
        let before = probe.room.model
        let head = self.head
        let again = try probe.receive(message, from: sessions[user])
        try require(again == reply, "a resent seq gets the same reply", "\(String(describing: again)) vs \(reply)")
        try require(probe.room.model == before && self.head == head, "a resent seq changes nothing")
    }

    /// `user`'s connection drops and comes back with `resume` and `since`.
    mutating func reconnect(user: Int, since: Int) throws(FuzzViolation) {
        log.append("\(users[user]) reconnects since \(since)")
        try probe.leave(sessions[user])
        let (id, _) = try probe.join(session: "s\(users[user])-new", user: users[user], resume: sessions[user],
                                     since: since)
        try require(id == sessions[user], "resume continues a kept session", "\(id) vs \(sessions[user])")
    }

    /// `user` undoes every entry, then redoes what those undos did, with nothing else between: the
    /// model is back where it was (SEMANTICS §6 case 9, in general). Only when every revision is kept and the
    /// stacks are deep enough for the redo stack to hold all the undos.
    mutating func undoAllRedoAll(user: Int) throws(FuzzViolation) {
        guard policy.keptRevisions == 0, policy.undo.depth == 0 || policy.undo.depth >= 100 else { return }
        let before = probe.room.model
        log.append("\(users[user]) undoes all, then redoes all")
        let undos = probe.room.stacks(of: users[user]).undo.count
        let redosBefore = probe.room.stacks(of: users[user]).redo.count
        for _ in 0..<undos { try revert(user: user, redo: false, scope: nil) }
        try require(probe.room.stacks(of: users[user]).undo.isEmpty, "undo n times empties the stack")
        // Redo what these undos did (not the redo entries that were there before them).
        let redos = probe.room.stacks(of: users[user]).redo.count - redosBefore
        for _ in 0..<redos { try revert(user: user, redo: true, scope: nil) }
        try require(probe.room.model == before, "undo n then redo n is the identity",
                    "\(users[user]): \(probe.room.model.text) vs \(before.text)")
    }
}
