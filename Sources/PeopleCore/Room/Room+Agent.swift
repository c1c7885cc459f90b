/// Callers without a connection: the HTTP API (the product contract's HTTP API §2).
///
/// An HTTP edit is the same batch, by the same user, as one from a WebSocket: it is validated at its
/// base, transformed, journalled, acked after it is durable and broadcast, and it lands on the user's
/// undo stack, so the user can undo it from any screen. Each user has one *agent session* in a room,
/// `http:USER`, opened on first use (journalled with its tag block like any session) and never
/// connected: it is not in presence, gets no broadcasts, and is never forgotten. Its requests are
/// numbered by the room (an HTTP caller has no seq), may carry an idempotency key, and may leave an
/// insert's tag out (a placeholder from `tagPlaceholders` here), which the room fills from the agent's
/// tag blocks.
extension Room {
    static let agentPrefix = "http:"
    /// Tags that stand for "any new tag" in an agent's insert (no room ever hands out tags this big).
    public static let tagPlaceholders: PartialRangeFrom<Tag> = (1 << 62)...

    /// How long an idempotency key gets its first answer again: 24 hours.
    public static let keyLifetime: Int64 = 24 * 3600 * 1000

    /// The agent session of `user` in a room.
    public static func agentSession(of user: String) -> SessionID { agentPrefix + user }

    /// Whether `id` is an agent session (WebSocket session ids are hex: they never start with `http:`).
    public static func isAgent(_ id: SessionID) -> Bool { id.hasPrefix(agentPrefix) }

    /// An HTTP write as `user`: a `submit`, `undo`, `redo` or `restore` (their `seq` is ignored).
    ///
    /// Answered like the same request from a WebSocket session: the reply goes to the agent session
    /// (`agentSession(of:)`) after the records before it are durable. A `key` already answered for this
    /// user within `keyLifetime` gets that answer again and changes nothing. A restore to a revision
    /// older than memory asks for it (`readHistory`, addressed to the agent session); call again with
    /// the revisions read as `older` (and the store's checkpoint they start after, if any).
    public mutating func request(_ message: ClientMessage, as user: String, key: String?, now: Int64,
                                 older: [Revision] = [], checkpoint: Checkpoint? = nil) -> [RoomAction] {
        let id = Self.agentSession(of: user)
        var actions: [RoomAction] = []
        if sessions[id] == nil {
            let block = allocateTagBlock(for: user)
            sessions[id] = Session(user: user, role: .editor, client: "http", connected: false, tags: block,
                                   lastAckRevision: 0)
            actions.append(journal(.opened(session: id, user: user, role: .editor, client: "http", tags: block)))
        }
        if let key, let kept = sessions[id]!.keys[key], now - kept.time < Self.keyLifetime {
            let reply = kept.reply ?? .error(.init(ProtocolError(.serverError, "the first answer for this key cannot be read")))
            return actions + [.send(reply, to: [id])]
        }
        let seq = sessions[id]!.lastSeq + 1
        switch message {
        case .submit(var submit):
            submit.seq = seq
            submit.ops = fillTags(submit.ops, session: id, actions: &actions)
            return actions + sequenced(seq, from: id, key: key, now: now) { $0.submit(submit, from: id, now: now) }
        case .undo(var request):
            request.seq = seq
            return actions + sequenced(seq, from: id, key: key, now: now) { $0.revert(request, redo: false, from: id, now: now) }
        case .redo(var request):
            request.seq = seq
            request.entry = nil
            return actions + sequenced(seq, from: id, key: key, now: now) { $0.revert(request, redo: true, from: id, now: now) }
        case .restore(var request):
            request.seq = seq
            if let read = modelRead(request.rev, message: .restore(request), session: id, older: older, checkpoint: checkpoint) {
                return actions + [.readHistory(read)]
            }
            return actions + sequenced(seq, from: id, key: key, now: now) {
                $0.restore(request, from: id, now: now, older: older, checkpoint: checkpoint)
            }
        default:
            let error = ProtocolError(.badMessage, "only submit, undo, redo and restore are HTTP writes")
            return actions + [.send(.error(.init(seq: seq, error)), to: [id])]
        }
    }

    /// An HTTP read (`log` or `blame`) for `user` (nil: nobody's entries are marked undoable), answered
    /// to `reader`, an id of the caller's choosing that names no session. A `log` reaching below memory
    /// asks for revisions (`readHistory`); call again with them and the page so far.
    public func read(_ message: ClientMessage, as user: String?, reader: SessionID, older: [Revision] = [],
                     resume: LogResume? = nil) -> [RoomAction] {
        switch message {
        case .log(let request): log(request, for: user ?? "", from: reader, older: older, resume: resume)
        case .blame(let request): blame(request, from: reader)
        default: [.send(.error(.init(ProtocolError(.badMessage, "only log and blame are HTTP reads"))), to: [reader])]
        }
    }

    /// The people right after revision `rev` (0: the seed), or nil when `rev` is not a revision of the
    /// room or needs revisions older than memory that `older` does not hold: revisions
    /// `rev + 1 ..< oldestKeptBase + 1`, or, after `checkpoint` (at or below `rev`), revisions
    /// `checkpoint.revision + 1 ... rev`, oldest first.
    public func people(at rev: Int, older: [Revision] = [], checkpoint: Checkpoint? = nil) -> PeopleModel? {
        guard rev >= 0, rev <= history.head else { return nil }
        return model(at: rev, older: older, checkpoint: checkpoint)
    }

    /// Inserts in an HTTP batch may leave the tag out (a placeholder): each gets the lowest unused
    /// tag of the agent's blocks, a new block being allocated (and journalled) when they run out.
    private mutating func fillTags(_ ops: [Diff], session id: SessionID, actions: inout [RoomAction]) -> [Diff] {
        guard ops.contains(where: { if case .insert(let person, _) = $0 { Self.tagPlaceholders.contains(person.tag) } else { false } }) else {
            return ops
        }
        var taken = Set(ops.compactMap { diff -> Tag? in
            if case .insert(let person, _) = diff, !Self.tagPlaceholders.contains(person.tag) { person.tag } else { nil }
        })
        return ops.map { diff in
            guard case .insert(let person, let at) = diff, Self.tagPlaceholders.contains(person.tag) else { return diff }
            var block = sessions[id]!.tags
            var tag = block.from
            while tag <= block.to, usedTags.contains(tag) || taken.contains(tag) { tag += 1 }
            if tag > block.to {
                block = allocateTagBlock(for: sessions[id]!.user)
                sessions[id]!.tags = block
                actions.append(journal(.tags(session: id, block: block)))
                tag = block.from
            }
            taken.insert(tag)
            return .insert(person.retagged(tag), at: at)
        }
    }
}
