extension Room {
    /// The next journal entry for `record`, as the action that makes it durable.
    mutating func journal(_ record: RoomRecord) -> RoomAction {
        journalPosition += 1
        return .persist(JournalEntry(position: journalPosition, record: record))
    }

    /// The room's durable state now, for the store (O(1) here: encode it elsewhere with `json`).
    public func snapshot() -> RoomSnapshot { RoomSnapshot(room: self) }

    /// Applies a journal entry read back from the store, exactly as the live room applied it.
    ///
    /// Entries must come in order, right after the snapshot or the previous entry. A revision is
    /// applied as recorded (never transformed again); stacks, tag blocks, sessions and replies change
    /// as they did live. Sessions come back disconnected.
    public mutating func replay(_ entry: JournalEntry) throws(RestoreError) {
        guard entry.position == journalPosition + 1 else {
            throw RestoreError("room \(name): journal entry \(entry.position) follows \(journalPosition)")
        }
        switch entry.record {
        case .opened(let session, let user, let role, let client, let block):
            guard sessions[session] == nil else { throw RestoreError("room \(name): session \(session) opened twice") }
            sessions[session] = Session(user: user, role: role, client: client, connected: false, tags: block,
                                        lastAckRevision: 0)
            addBlock(block, for: user)
            if !Self.isAgent(session) { disconnectedOrder.append(session) }
        case .tags(let session, let block):
            guard let user = sessions[session]?.user else { throw unknown(session) }
            sessions[session]!.tags = block
            addBlock(block, for: user)
        case .forgotten(let session):
            sessions[session] = nil
            disconnectedOrder.removeAll { $0 == session }
        case .imported(let revision):
            try replayRevision(revision)
        case .answered(let answer):
            guard let user = sessions[answer.session]?.user else { throw unknown(answer.session) }
            sessions[answer.session]!.lastSeq = answer.seq
            keep(answer.reply, seq: answer.seq, for: answer.session)
            if let key = answer.key {
                keep(answer.reply, key: key, time: answer.keyTime ?? 0, position: entry.position, for: answer.session)
            }
            if case .ack(let ack) = answer.reply { sessions[answer.session]!.lastAckRevision = ack.rev }
            if let revision = answer.revision {
                guard revision.author == user else {
                    throw RestoreError("room \(name): revision \(revision.number) is not by \(user)")
                }
                try replayRevision(revision)
            }
            switch answer.effect {
            case .none:
                break
            case .edit(let key):
                guard let revision = answer.revision else { throw RestoreError("room \(name): an edit without a revision") }
                recordEdit(revision, coalesce: key, now: revision.timestamp)
            case .revert(let redo, let consumed):
                var stacks = users[user, default: UserState()].takeStacks()
                stacks.run = nil
                for index in consumed {
                    let count = redo ? stacks.redo.count : stacks.undo.count
                    guard index >= 0 && index < count else {
                        throw RestoreError("room \(name): \(redo ? "redo" : "undo") of \(user) has no entry \(index)")
                    }
                    if redo { stacks.redo.remove(at: index) } else { stacks.undo.remove(at: index) }
                }
                if let revision = answer.revision { pushOpposite(of: revision, redo: redo, onto: &stacks) }
                users[user, default: UserState()].stacks = stacks
            }
        }
        journalPosition = entry.position
    }

    /// A recorded revision: it must follow the head and apply as recorded.
    private mutating func replayRevision(_ revision: Revision) throws(RestoreError) {
        guard revision.number == history.head + 1 else {
            throw RestoreError("room \(name): revision \(revision.number) does not follow \(history.head)")
        }
        for done in revision.applied {
            do {
                guard try model.apply(done.diff) != nil else { continue }
            } catch {
                throw RestoreError("room \(name): revision \(revision.number) does not apply: \(error)")
            }
        }
        record(revision)
    }

    private func unknown(_ session: SessionID) -> RestoreError {
        RestoreError("room \(name): a record names session \(session), which is not open")
    }

    private mutating func addBlock(_ block: TagBlock, for user: String) {
        users[user, default: UserState()].tagBlocks.append(block)
        nextTag = max(nextTag, block.to + 1)
    }

    /// Files a committed revision in the history window and the used tags (an imported revision's
    /// tags come from no block: later blocks start above them).
    mutating func record(_ revision: Revision) {
        history.append(revision)
        history.trim(keeping: policy.keptRevisions)
        blame.record(revision)
        for done in revision.applied {
            guard case .insert(let person, _) = done.diff else { continue }
            usedTags.insert(person.tag)
            nextTag = max(nextTag, person.tag + 1)
        }
    }

    /// Pushes the inverse of what an undo (redo) applied onto the redo (undo) stack.
    mutating func pushOpposite(of revision: Revision, redo: Bool, onto stacks: inout UndoStacks) {
        let opposite = UndoEntry(label: revision.label,
                                 parts: [UndoEntry.Part(revision: revision.number, applied: revision.applied)])
        if redo {
            UndoStacks.push(opposite, onto: &stacks.undo, depth: policy.undo.depth)
        } else {
            UndoStacks.push(opposite, onto: &stacks.redo, depth: policy.undo.depth)
        }
    }

    // MARK: Restoring

    /// Rebuilds a room from what a store holds: the snapshot, the revisions of its memory window, and
    /// the journal after it. `policy` is today's (it may differ from the one the room was made under).
    public init(restoring stored: StoredRoom, policy: RoomPolicy) throws(RestoreError) {
        let s: WireFields
        do { s = try WireFields(stored.snapshot, context: "snapshot", code: .serverError) } catch { throw RestoreError(error.message) }
        do {
            guard try s.int("format") == RoomSnapshot.format else {
                throw RestoreError("snapshot format \(try s.int("format")) is not \(RoomSnapshot.format)")
            }
            let floor = try s.int("floor")
            let revision = try s.int("rev")
            var people: [Person] = []
            for p in try s.array("people") { people.append(try Person(json: p, code: .serverError)) }
            self.init(name: try s.string("room"), seed: PeopleModel(people: people), policy: policy)
            journalPosition = try s.int("position")
            history = RoomHistory(floor: floor)
            nextTag = try s.int("nextTag")
            created = try s.optionalTime("created")
            for tag in try s.array("retiredTags") {
                guard case .int(let tag) = tag else { throw s.fail("retiredTags must hold integers") }
                usedTags.insert(tag)
            }
            for u in try s.array("users") {
                let f = try WireFields(u, context: "user", code: .serverError)
                var state = UserState()
                state.stacks.undo = try Self.entries(f.array("undo"))
                state.stacks.redo = try Self.entries(f.array("redo"))
                if let run = f.raw("run") {
                    let r = try WireFields(run, context: "run", code: .serverError)
                    state.stacks.run = UndoStacks.Run(key: try r.string("key"), time: Int64(try r.int("time")))
                }
                for b in try f.array("blocks") { state.tagBlocks.append(try Self.block(b)) }
                users[try f.string("user")] = state
            }
            var keysFrom: [SessionID: Int] = [:]
            for x in try s.array("sessions") {
                let f = try WireFields(x, context: "session", code: .serverError)
                let id = try f.string("id")
                let roleText = try f.string("role")
                guard let role = Role(rawValue: roleText) else { throw f.fail("unknown role \(roleText)") }
                var session = Session(user: try f.string("user"), role: role, client: try f.optionalString("client"),
                                      connected: false, tags: try Self.block(f.raw("tags") ?? .null),
                                      lastAckRevision: try f.int("lastAck"))
                session.lastSeq = try f.int("lastSeq")
                for r in try f.array("replies") {
                    let g = try WireFields(r, context: "reply", code: .serverError)
                    let seq = try g.int("seq")
                    session.replies[seq] = try ServerMessage(json: g.raw("reply") ?? .null)
                    session.replyOrder.append(seq)
                }
                // Keys from before positions were kept (the others come back from the journal, below,
                // from this session's `keysFrom` on).
                if let start = try f.optionalInt("keysFrom") { keysFrom[id] = start }
                for k in try f.optionalArray("keys") ?? [] {
                    let g = try WireFields(k, context: "key", code: .serverError)
                    session.keys.restore(try ServerMessage(json: g.raw("reply") ?? .null), key: try g.string("key"),
                                         time: Int64(try g.int("time")), position: nil)
                }
                sessions[id] = session
                if !Self.isAgent(id) { disconnectedOrder.append(id) }
            }
            // The keys kept: the journal's keyed answers from the snapshot's `keysFrom` up to it, each
            // session's from its own `keysFrom` on.
            let position = journalPosition
            let from = try s.optionalInt("keysFrom")
            for entry in stored.keyed {
                guard case .answered(let answer) = entry.record, let key = answer.key else { continue }
                guard let from, entry.position >= from, entry.position <= position else {
                    throw RestoreError("room \(name): keyed answer at \(entry.position) is outside \(from.map(String.init) ?? "none")...\(position)")
                }
                guard sessions[answer.session] != nil else { throw unknown(answer.session) }
                guard let start = keysFrom[answer.session], entry.position >= start else { continue }
                sessions[answer.session]!.keys.restore(answer.reply, key: key, time: answer.keyTime ?? 0,
                                                       position: entry.position)
            }
            // Who wrote what (kept since this field came in; an older snapshot's people count as the seed's).
            if let records = try s.optionalArray("blame") {
                var people: [Tag: PersonBlame] = [:]
                for r in records {
                    let f = try WireFields(r, context: "blame", code: .serverError)
                    people[try f.int("tag")] = try PersonBlame(fields: f)
                }
                // Oldest removal first (before session 40: in tag order, taken as that order).
                var departed: [(tag: Tag, record: PersonBlame)] = []
                for r in try s.optionalArray("blameDeparted") ?? [] {
                    let f = try WireFields(r, context: "blame", code: .serverError)
                    departed.append((try f.int("tag"), try PersonBlame(fields: f)))
                }
                blame = BlameIndex(people: people, departed: departed)
            } else {
                blame = BlameIndex(seed: model)
            }
            for windowRevision in stored.window where windowRevision.number > floor && windowRevision.number <= revision {
                guard windowRevision.number == history.head + 1 else {
                    throw RestoreError("room \(name): the window misses revision \(history.head + 1)")
                }
                history.append(windowRevision)
            }
            guard history.head == revision else {
                throw RestoreError("room \(name): the window ends at \(history.head), the snapshot is at \(revision)")
            }
        } catch let error as ProtocolError {
            throw RestoreError("room snapshot: \(error.message)")
        } catch let error as RestoreError {
            throw error
        } catch {
            throw RestoreError("room snapshot: \(error)")
        }
        for entry in stored.tail { try replay(entry) }
    }

    private static func entries(_ list: [JSON]) throws(ProtocolError) -> [UndoEntry] {
        var out: [UndoEntry] = []
        for e in list {
            let f = try WireFields(e, context: "undo entry", code: .serverError)
            var parts: [UndoEntry.Part] = []
            for p in try f.array("parts") {
                let g = try WireFields(p, context: "part", code: .serverError)
                parts.append(UndoEntry.Part(revision: try g.int("rev"), applied: try AppliedDiff.list(g.array("applied"))))
            }
            out.append(UndoEntry(label: try f.optionalString("label"), parts: parts))
        }
        return out
    }

    static func block(_ json: JSON) throws(ProtocolError) -> TagBlock {
        let f = try WireFields(json, context: "tag block", code: .serverError)
        return TagBlock(from: try f.int("from"), to: try f.int("to"))
    }
}

extension RoomSnapshot {
    /// The encoding's version, checked on restore.
    static let format = 1

    /// The snapshot's stored form: everything durable in the room (not its history window, which the
    /// store's journal holds). O(people + stacks + sessions): call it off the service thread.
    public var json: JSON {
        let people = room.model.people
        let retired = room.usedTags.filter { !people.ids.contains($0) }.sorted()
        let users = room.users.sorted { $0.key < $1.key }.map { user, state -> JSON in
            .object([
                "user": .string(user),
                "undo": .array(state.stacks.undo.map(\.json)),
                "redo": .array(state.stacks.redo.map(\.json)),
                "run": state.stacks.run.map { .object(["key": .string($0.key), "time": .int(Int($0.time))]) },
                "blocks": .array(state.tagBlocks.map(\.json)),
            ])
        }
        let agents = room.sessions.keys.filter(Room.isAgent).sorted()
        let order = room.disconnectedOrder + agents + room.connectedSessions
        // Where each session's kept keys start in the journal (one pass over each session's keys).
        let keysFrom = room.sessions.compactMapValues(\.keys.from)
        let sessions = order.compactMap { id -> JSON? in
            guard let s = room.sessions[id] else { return nil }
            let unplaced = s.keys.unplaced
            return .object([
                "id": .string(id), "user": .string(s.user), "role": .string(s.role.rawValue),
                "client": s.client.map(JSON.string), "tags": s.tags.json,
                "lastSeq": .int(s.lastSeq), "lastAck": .int(s.lastAckRevision),
                "replies": .array(s.replyOrder.compactMap { seq in
                    s.replies[seq].map { .object(["seq": .int(seq), "reply": $0.json]) }
                }),
                "keys": unplaced.isEmpty ? nil : .array(unplaced.map { key, kept in
                    .object(["key": .string(key), "time": .int(Int(kept.time)), "reply": (try? JSON.parse(kept.encoded)) ?? .null])
                }),
                "keysFrom": keysFrom[id].map(JSON.int),
            ])
        }
        return .object([
            "format": .int(Self.format), "room": .string(room.name), "position": .int(position),
            "rev": .int(revision), "floor": .int(floor), "nextTag": .int(room.nextTag),
            "created": room.created.map { .int(Int($0)) },
            "people": .array(people.map(\.json)), "retiredTags": .array(retired.map(JSON.int)),
            "users": .array(users), "sessions": .array(sessions),
            "keysFrom": keysFrom.values.min().map(JSON.int),
            "blame": .array(people.compactMap { person in
                room.blame[person.tag].map { .object([.init("tag", .int(person.tag))] + $0.members) }
            }),
            "blameDeparted": .array(room.blame.departedInOrder.map { tag, record in
                .object([.init("tag", .int(tag))] + record.members)
            }),
        ])
    }
}

extension TagBlock {
    var json: JSON { .object(["from": .int(from), "to": .int(to)]) }
}

extension UndoEntry {
    var json: JSON {
        .object([
            "label": label.map(JSON.string),
            "parts": .array(parts.map { .object(["rev": .int($0.revision), "applied": .array($0.applied.map(\.json))]) }),
        ])
    }
}

extension AppliedDiff {
    /// Stored form: the diff, its exact inverse, and the neighbours of a remove or move.
    public var json: JSON {
        .object([
            "diff": diff.json, "inverse": inverse.json,
            "neighbours": neighbours.map { .object(["before": $0.before.map(JSON.int), "after": $0.after.map(JSON.int)]) },
        ])
    }

    public init(json: JSON) throws(ProtocolError) {
        let f = try WireFields(json, context: "applied diff", code: .serverError)
        var neighbours: Neighbours?
        if let n = f.raw("neighbours") {
            let g = try WireFields(n, context: "neighbours", code: .serverError)
            neighbours = Neighbours(before: try g.optionalInt("before"), after: try g.optionalInt("after"))
        }
        self.init(diff: try Diff(json: f.raw("diff") ?? .null), inverse: try Diff(json: f.raw("inverse") ?? .null),
                  neighbours: neighbours)
    }

    static func list(_ list: [JSON]) throws(ProtocolError) -> [AppliedDiff] {
        var out: [AppliedDiff] = []
        for a in list { out.append(try AppliedDiff(json: a)) }
        return out
    }
}
