/// The server side of one room: the authoritative model, its history, every user's undo stacks and
/// tag blocks, and the sessions. A pure state machine: `join`, `leave` and `receive` return the
/// actions the hub performs (persist, send); time is passed in, session ids are chosen by the caller.
///
/// It follows PROTOCOL.md's "rules of the exchange": replies to each seq are cached and replayed,
/// bases are checked, batches that change nothing make no revision, `since` catches up.
public struct Room: Sendable {
    /// One connection's protocol state; it outlives the connection so a `resume` can continue it.
    struct Session: Sendable {
        let user: String
        let role: Role
        var client: String?
        var connected: Bool
        var tags: TagBlock
        var lastSeq = 0
        var lastAckRevision: Int
        var replies: [Int: ServerMessage] = [:]
        var replyOrder: [Int] = []
        var viewing: Tag?
        var field: String?
        /// An agent session's idempotency keys and their first answers (Room+Agent.swift).
        var keys = IdempotencyKeys()
    }

    /// What belongs to a user in this room, shared by all the user's sessions.
    struct UserState: Sendable {
        var stacks = UndoStacks()
        var tagBlocks: [TagBlock] = []

        /// Moves the stacks out (leaving empty ones), so the caller can change them without a copy.
        mutating func takeStacks() -> UndoStacks {
            defer { stacks = UndoStacks() }
            return stacks
        }
    }

    public let name: String
    public let policy: RoomPolicy
    public internal(set) var model: PeopleModel
    var history: RoomHistory
    var sessions: [SessionID: Session] = [:]
    var users: [String: UserState] = [:]
    var usedTags: Set<Tag>
    var nextTag: Tag
    /// Who last wrote each part of each person present (HISTORY §5).
    var blame: BlameIndex
    /// Position of the last journal record this room made or replayed.
    public internal(set) var journalPosition = 0
    /// Disconnected sessions, oldest first; beyond `policy.keptSessions` the oldest are forgotten.
    var disconnectedOrder: [SessionID] = []
    /// When the room was made (ms since the epoch), as revision 0's time: a welcome at revision 0 says
    /// it, and a client there sends it back (`hello.sinceTime` with `since: 0`), so that a room made
    /// again under the name (a hub without storage restarted, a room deleted) is told from this one;
    /// no revision 0 had a time before, and such a client was caught up with another room's revisions
    /// on top of its people (a black-box pass, session 39). Nil for a room made before, or imported
    /// with its history (whose revisions keep their own times).
    public internal(set) var created: Int64?

    /// A new room at revision 0 holding `seed` (which is nobody's edit: in no undo stack), made at
    /// `created` (ms; nil when unknown).
    public init(name: String, seed: PeopleModel = .tutorialSeed, policy: RoomPolicy = RoomPolicy(), created: Int64? = nil) {
        self.name = name
        self.created = created
        self.policy = policy
        self.model = seed
        self.history = RoomHistory()
        self.usedTags = Set(seed.tags)
        self.nextTag = (seed.tags.max() ?? 0) + 1
        self.blame = BlameIndex(seed: seed)
    }

    /// The newest revision.
    public var revision: Int { history.head }
    /// Revisions up to this one are no longer kept: older bases are `stale-base`.
    public var oldestKeptBase: Int { history.floor }

    /// The revision with this number, if still kept.
    public func revision(_ number: Int) -> Revision? { history.revision(number) }

    /// The kept revisions numbered `after + 1 ... through`, oldest first (those memory still holds).
    public func revisions(after: Int, through: Int) -> [Revision] {
        let from = max(after, history.floor), to = min(through, history.head)
        guard from < to else { return [] }
        return Array(history.revisions(after: from).prefix(to - from))
    }

    /// A user's stacks (empty for a user never seen).
    public func stacks(of user: String) -> UndoStacks { users[user]?.stacks ?? UndoStacks() }

    /// Sessions connected now, in join order (kept up to date by `join` and `leave`: every broadcast
    /// reads it).
    public private(set) var connectedSessions: [SessionID] = []

    func connectedSessions(of user: String) -> [SessionID] {
        connectedSessions.filter { sessions[$0]?.user == user }
    }

    /// The presence list: one entry per connection.
    public var presence: [PresenceEntry] {
        connectedSessions.compactMap { id in
            sessions[id].map { PresenceEntry(user: $0.user, viewing: $0.viewing, field: $0.field) }
        }
    }

    // MARK: Joining and leaving

    /// A connection said `hello` (already authenticated by the hub).
    ///
    /// With `resume` naming a known session of the same user, that session continues (its seq replies
    /// stay); otherwise `session` starts a new one. Returns the session id in use and the actions:
    /// `welcome` (full state, or with a servable `since` no people and the missed `ops` frames after
    /// it), then a `presence` to everyone. A new session's tag block is journalled before the welcome.
    ///
    /// A `since` ahead of the head, or one whose revision has another time than `sinceTime` (the
    /// client's copy of it), names another history than this room's: the welcome carries the full
    /// state with `reset`.
    ///
    /// `earlier` holds the store's revisions that `storeReadForJoin` asked for, oldest first.
    public mutating func join(
        session: SessionID, user: String, role: Role, client: String? = nil,
        resume: SessionID? = nil, since: Int? = nil, sinceTime: Int64? = nil, earlier: [Revision] = []
    ) -> (session: SessionID, actions: [RoomAction]) {
        let id: SessionID
        var actions: [RoomAction] = []
        if let resume, !Self.isAgent(resume), var old = sessions[resume], old.user == user, old.role == role {
            id = resume
            old.connected = true
            old.client = client ?? old.client
            sessions[id] = old
            disconnectedOrder.removeAll { $0 == id }
            connectedSessions.removeAll { $0 == id }  // a resume on a new connection: it joined again
        } else {
            id = session
            let block = allocateTagBlock(for: user)
            sessions[id] = Session(user: user, role: role, client: client, connected: true, tags: block,
                                   lastAckRevision: 0)
            actions.append(journal(.opened(session: id, user: user, role: role, client: client, tags: block)))
        }
        connectedSessions.append(id)
        if users[user] == nil { users[user] = UserState() }
        let reset = since.map { namesOtherHistory(since: $0, sinceTime: sinceTime, earlier: earlier) } ?? false
        // Catch-up from memory, or from `earlier` (revisions the store read) joined to memory.
        var missed: [Revision]?
        let after = earlier.drop(while: { $0.number <= since ?? 0 })
        if let since, reset || since < 0 || history.head - since > policy.maxCatchUp {
            missed = nil  // not a revision of this room, or too far behind: the full state
        } else if let since, since >= history.floor {
            missed = Array(history.revisions(after: since))
        } else if let since, let first = after.first, first.number == since + 1,
                  let last = after.last, last.number >= history.floor, last.number <= history.head {
            missed = Array(after) + history.revisions(after: last.number)
        }
        let welcome = ServerMessage.Welcome(
            // At revision 0, when the room was made (a client there sends it back as `sinceTime`).
            session: id, user: user, role: role, rev: history.head, time: history.head == 0 ? created : headTime, reset: reset,
            people: missed == nil ? model.people.elements : nil,
            tags: sessions[id]!.tags, history: stacks(of: user).summary, presence: presence)
        actions.append(.send(.welcome(welcome), to: [id]))
        if let missed {
            for revision in missed {
                let own = revision.session == id ? revision.seq : nil
                actions.append(.send(revision.opsMessage(seq: own), to: [id]))
            }
        }
        actions.append(.send(.presence(presence), to: connectedSessions))
        return (id, actions)
    }

    /// Whether a `since` (and its `sinceTime`) names a revision of another history than this room's:
    /// one ahead of the head, or one whose time is not the client's (revision 0's is when the room was
    /// made; a room that does not know it had none to give). Unknown (the revision is neither in memory
    /// nor in `earlier`): not other, as far as the room can tell. The hub asks it too, before a join, of
    /// a room whose name the store remembers deleting (a client of the deleted room is turned away).
    public func namesOtherHistory(since: Int, sinceTime: Int64?, earlier: [Revision] = []) -> Bool {
        if since > history.head { return true }
        guard let sinceTime, since >= 0 else { return false }
        if since == 0 { return created != sinceTime }
        let revision = since > history.floor ? history.revision(since) : earlier.first { $0.number == since }
        return revision.map { $0.timestamp != sinceTime } ?? false
    }

    /// The store's revisions a `hello` needs before it joins, as a read of the revisions after `after`
    /// through `through`; nil when memory serves it. A `since` older than the memory window but within
    /// `policy.maxCatchUp` of the head reads from there up to memory (further behind, the welcome
    /// carries the full state); with a `sinceTime`, the read starts at revision `since` itself when
    /// memory does not hold it, to compare its time.
    public func storeReadForJoin(since: Int?, sinceTime: Int64? = nil) -> (after: Int, through: Int)? {
        guard let since, since >= 0, since <= history.head else { return nil }
        let checkTime = sinceTime != nil && since > 0 && since <= history.floor
        if history.head - since <= policy.maxCatchUp && since < history.floor {
            return (checkTime ? since - 1 : since, history.floor)
        }
        return checkTime ? (since - 1, since) : nil
    }

    /// The connection of `session` closed; the session is kept for a `resume`, up to
    /// `policy.keptSessions` disconnected sessions (the oldest are forgotten, and that is journalled).
    public mutating func leave(session: SessionID) -> [RoomAction] {
        guard sessions[session]?.connected == true else { return [] }
        sessions[session]!.connected = false
        connectedSessions.removeAll { $0 == session }
        disconnectedOrder.append(session)
        var actions: [RoomAction] = []
        while disconnectedOrder.count > policy.keptSessions {
            let old = disconnectedOrder.removeFirst()
            sessions[old] = nil
            actions.append(journal(.forgotten(session: old)))
        }
        actions.append(.send(.presence(presence), to: connectedSessions))
        return actions
    }

    /// Number of connected sessions.
    public var connectionCount: Int { connectedSessions.count }

    mutating func allocateTagBlock(for user: String) -> TagBlock {
        let block = TagBlock(from: nextTag, to: nextTag + policy.tagBlockSize - 1)
        nextTag = block.to + 1
        users[user, default: UserState()].tagBlocks.append(block)
        return block
    }

    // MARK: Messages

    /// A message from a connected session after its `hello`.
    public mutating func receive(_ message: ClientMessage, from id: SessionID, now: Int64) -> [RoomAction] {
        receive(message, from: id, now: now, older: [], log: nil)
    }

    /// A message handed back after `readHistory`, with the revisions the store read (oldest first),
    /// for a `log` the page filled so far, and for a `restore` the checkpoint those revisions start
    /// after, if the store gave one (`HistoryRead.modelAt`).
    public mutating func receive(_ message: ClientMessage, from id: SessionID, now: Int64,
                                 older: [Revision], log resume: LogResume?,
                                 checkpoint: Checkpoint? = nil) -> [RoomAction] {
        guard let session = sessions[id], session.connected else { return [] }
        switch message {
        case .log(let request):
            return log(request, for: session.user, from: id, older: older, resume: resume)
        case .blame(let request):
            return blame(request, from: id)
        case .restore(let request):
            if sessions[id]!.replies[request.seq] == nil, session.role == .editor,
               let read = modelRead(request.rev, message: message, session: id, older: older, checkpoint: checkpoint) {
                return [.readHistory(read)]
            }
            return sequenced(request.seq, from: id) { room in
                room.restore(request, from: id, now: now, older: older, checkpoint: checkpoint)
            }
        case .hello:
            return [.send(.error(.init(ProtocolError(.badMessage, "hello was already received"))), to: [id])]
        case .ping(let seq):
            return [.send(.pong(seq: seq, time: now), to: [id])]
        case .tags:
            let block = allocateTagBlock(for: session.user)
            sessions[id]!.tags = block
            return [journal(.tags(session: id, block: block)), .send(.tags(block), to: [id])]
        case .presence(let update):
            sessions[id]!.viewing = update.viewing
            sessions[id]!.field = update.field
            return [.send(.presence(presence), to: connectedSessions)]
        case .submit(let submit):
            return sequenced(submit.seq, from: id) { room in room.submit(submit, from: id, now: now) }
        case .undo(let request):
            return sequenced(request.seq, from: id) { room in room.revert(request, redo: false, from: id, now: now) }
        case .redo(let request):
            return sequenced(request.seq, from: id) { room in room.revert(request, redo: true, from: id, now: now) }
        }
    }

    /// A sequenced request (`submit`, `undo`, `redo`, `restore`) whose frame carried `seq` but could not
    /// be read (`error`). The seq rules come first, as for any request: a seq already answered gets its
    /// reply again (the resend of a request that was answered, whatever it says now), one not above the
    /// last is `bad-message`. Then the error: one inside `ops` (`invalid-op`: the envelope was well
    /// formed) is the room's refusal of the request and uses up the seq, as an op the room refuses does
    /// (a viewer's is `forbidden`, as any edit of theirs); a malformed envelope (`bad-message`) uses up
    /// nothing.
    public mutating func receiveUnreadable(seq: Int, error: ProtocolError, from id: SessionID) -> [RoomAction] {
        guard let session = sessions[id], session.connected else { return [] }
        guard error.code == .invalidOp else {
            return seqRules(seq, from: id) ?? [.send(.error(.init(seq: seq, error)), to: [id])]
        }
        return sequenced(seq, from: id) { _ in
            let reply = ServerMessage.error(.init(seq: seq, error))
            return (reply, nil, .none, [.send(reply, to: [id])])
        }
    }

    /// The seq rules' answer, if they decide: a known seq's reply replayed verbatim, or `bad-message`
    /// for a seq not above the last one; nil for a new seq.
    func seqRules(_ seq: Int, from id: SessionID) -> [RoomAction]? {
        if let reply = sessions[id]!.replies[seq] { return [.send(reply, to: [id])] }
        let lastSeq = sessions[id]!.lastSeq
        guard seq > lastSeq else {
            let error = ProtocolError(.badMessage, "seq \(seq) is not above the last seq \(lastSeq)")
            return [.send(.error(.init(seq: seq, error)), to: [id])]
        }
        return nil
    }

    /// What handling a sequenced request decided: the reply, the revision (if any), the effect on the
    /// user's stacks, and the sends (reply, broadcast, history), which wait for the journal record.
    typealias Handled = (reply: ServerMessage, revision: Revision?, effect: RoomRecord.StackEffect, sends: [RoomAction])

    /// Applies the seq rules: a known seq gets its reply replayed verbatim before any other check; a seq
    /// not above the last one is `bad-message`; otherwise `handle` runs, its reply is kept, and the
    /// answer is journalled before anything is sent.
    mutating func sequenced(
        _ seq: Int, from id: SessionID, key: String? = nil, now: Int64 = 0, _ handle: (inout Room) -> Handled
    ) -> [RoomAction] {
        if let decided = seqRules(seq, from: id) { return decided }
        sessions[id]!.lastSeq = seq
        if sessions[id]!.role == .viewer {
            let reply = ServerMessage.error(.init(seq: seq, ProtocolError(.forbidden, "viewers cannot edit")))
            keep(reply, seq: seq, for: id)
            let answer = RoomRecord.Answer(session: id, seq: seq, reply: reply, revision: nil, effect: .none)
            return [journal(.answered(answer)), .send(reply, to: [id])]
        }
        let handled = handle(&self)
        keep(handled.reply, seq: seq, for: id)
        var answer = RoomRecord.Answer(session: id, seq: seq, reply: handled.reply, revision: handled.revision,
                                       effect: handled.effect)
        // An error applied nothing: it is not kept for the key, so a retry with the same key (after a
        // 503, or with a fresher base after a 409) is tried again instead of refused for 24 hours.
        let keyed = key.flatMap { handled.reply.isError ? nil : $0 }
        if let keyed {
            answer.key = keyed
            answer.keyTime = now
        }
        let persist = journal(.answered(answer))
        if let keyed { keep(handled.reply, key: keyed, time: now, position: journalPosition, for: id) }
        return [persist] + handled.sends
    }

    /// Keeps an agent's answer for its idempotency key, journalled at `position` (`IdempotencyKeys`:
    /// for `keyLifetime`, the newest `policy.keysKept` at least).
    mutating func keep(_ reply: ServerMessage, key: String, time: Int64, position: Int, for id: SessionID) {
        sessions[id]!.keys.keep(reply, key: key, time: time, position: position, lifetime: Self.keyLifetime,
                                limit: policy.keysKept)
        // The other callers' keys past their 24 hours go too (their pass is due by time), whether or not
        // they write again: in the live room and, replaying this record, in a restored one alike.
        for (other, session) in sessions where other != id && !session.keys.isEmpty {
            sessions[other]!.keys.expire(now: time, lifetime: Self.keyLifetime, limit: policy.keysKept)
        }
    }

    mutating func keep(_ reply: ServerMessage, seq: Int, for id: SessionID) {
        sessions[id]!.replies[seq] = reply
        sessions[id]!.replyOrder.append(seq)
        if sessions[id]!.replyOrder.count > policy.repliesKept {
            let old = sessions[id]!.replyOrder.removeFirst()
            sessions[id]!.replies[old] = nil
        }
    }

    /// Sends `history` to all the user's connections when their stacks changed (`UndoStacks.Shape`).
    func historyActions(user: String, before: UndoStacks.Shape) -> [RoomAction] {
        let after = stacks(of: user).shape
        guard after != before else { return [] }
        return [.send(.history(after.summary), to: connectedSessions(of: user))]
    }

    /// Commits a new revision (history, used tags) and returns its sends: reply and broadcast.
    mutating func commit(_ revision: Revision, reply: ServerMessage, sender: SessionID) -> [RoomAction] {
        record(revision)
        let others = connectedSessions.filter { $0 != sender }
        return [.send(reply, to: [sender]), .send(revision.opsMessage(), to: others)]
    }
}
