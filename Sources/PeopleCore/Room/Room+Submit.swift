extension Room {
    /// A `submit`: validate at its base, rebase over every revision since, apply atomically, and either
    /// commit a new revision (ack, broadcast, undo entry) or, when it changes nothing, ack at the current
    /// revision with its reports.
    mutating func submit(
        _ submit: ClientMessage.Submit, from id: SessionID, now: Int64
    ) -> Handled {
        let user = sessions[id]!.user
        let lastAckRevision = sessions[id]!.lastAckRevision
        func fail(_ error: ProtocolError) -> Handled {
            let reply = ServerMessage.error(.init(seq: submit.seq, error))
            return (reply, nil, .none, [.send(reply, to: [id])])
        }
        if submit.base > history.head {
            return fail(ProtocolError(.badMessage, "base \(submit.base) is newer than revision \(history.head)"))
        }
        if submit.base < lastAckRevision {
            return fail(ProtocolError(.badMessage,
                "base \(submit.base) is older than this session's last ack at \(lastAckRevision)"))
        }
        if submit.base < history.floor {
            return fail(ProtocolError(.staleBase,
                "base \(submit.base) is older than the kept history (from \(history.floor)); resync with hello"))
        }
        if let invalid = validateAtBase(submit.ops, base: submit.base, user: user) {
            return fail(invalid.protocolError)
        }

        var diffs = submit.ops
        var overwritten: [DiffTarget] = []
        if submit.base < history.head {
            let positional = diffs.contains(where: \.isPositional)
            var order = positional ? order(at: submit.base) : []
            for revision in history.revisions(after: submit.base) {
                let applied = revision.diffs
                let rebased = Transform.transform(diffs, over: applied, order: order)
                diffs = rebased.diffs
                overwritten += rebased.overwritten.map(\.target)
                if positional { order = applied.reduce(order) { Transform.applyOrder($1, to: $0) } }
            }
        }

        if policy.maxPeople > 0, let count = peopleCount(after: diffs), count > policy.maxPeople,
           count > model.people.count {
            return fail(ProtocolError(.roomFull,
                "the room holds at most \(policy.maxPeople) people; this batch would leave \(count)"))
        }

        let result: BatchResult
        do {
            result = try model.apply(batch: diffs, absentTags: .skip)
        } catch {
            return fail(error.protocolError)
        }
        var reports = overwritten.map { SkipReport(reason: .overwritten, target: $0, by: history.writer(of: $0)) }
        reports += result.absent.map {
            SkipReport(reason: .targetRemoved, tag: $0.diff.tag, by: history.writer(of: .person($0.diff.tag)))
        }

        guard !result.applied.isEmpty else {
            sessions[id]!.lastAckRevision = history.head
            let reply = ServerMessage.ack(.init(seq: submit.seq, rev: history.head, ops: [], noop: reports))
            return (reply, nil, .none, [.send(reply, to: [id])])
        }

        let number = history.head + 1
        let revision = Revision(number: number, author: user, kind: .edit, label: submit.label,
                                applied: result.applied, timestamp: now, session: id, seq: submit.seq)
        let reply = ServerMessage.ack(.init(seq: submit.seq, rev: number, ops: revision.diffs, noop: reports))
        sessions[id]!.lastAckRevision = number
        let before = stacks(of: user).summary
        recordEdit(revision, coalesce: submit.coalesce, now: now)
        var actions = commit(revision, reply: reply, sender: id)
        actions += historyActions(user: user, before: before)
        return (reply, revision, .edit(coalesce: submit.coalesce), actions)
    }

    /// How many people the room would hold after `diffs` (removals of absent people are skipped).
    func peopleCount(after diffs: [Diff]) -> Int? {
        var present = Set(model.people.ids)
        for diff in diffs {
            switch diff {
            case .insert(let person, _): present.insert(person.tag)
            case .remove(let tag): present.remove(tag)
            default: break
            }
        }
        return present.count
    }

    /// Checks what can only be checked at the batch's base: every named tag was present there (or was
    /// inserted earlier in the batch); inserted tags are new to the room and in the user's blocks.
    func validateAtBase(_ diffs: [Diff], base: Int, user: String) -> InvalidOp? {
        var inserted = Set<Tag>()
        let blocks = users[user]?.tagBlocks ?? []
        for diff in diffs {
            if case .insert(let person, _) = diff {
                if usedTags.contains(person.tag) || inserted.contains(person.tag) {
                    return InvalidOp("tag \(person.tag) was already used in this room")
                }
                if !blocks.contains(where: { $0.contains(person.tag) }) {
                    return InvalidOp("tag \(person.tag) is outside the tag blocks given to \(user)")
                }
                inserted.insert(person.tag)
            } else if !inserted.contains(diff.tag) && !present(diff.tag, at: base) {
                return InvalidOp("tag \(diff.tag) was not present at base \(base)")
            }
        }
        return nil
    }

    /// Whether `tag` was present at revision `base`: decided by its first insert or remove after `base`.
    /// Cost: the events on that tag since `base`.
    func present(_ tag: Tag, at base: Int) -> Bool {
        var firstChange: Diff?
        for event in history.events(on: tag, after: base, index: Int.max) {
            if case .person = event.target { firstChange = history.revision(event.revision)?.applied[event.index].diff }
        }
        switch firstChange {
        case .insert?: return false
        case .remove?: return true
        default: return model.contains(tag)
        }
    }

    /// The tag order at revision `base`, rebuilt from the current one with the exact inverses of the
    /// positional diffs since. Cost: O(revisions since base × people).
    func order(at base: Int) -> [Tag] {
        var order = model.tags
        for revision in history.revisions(after: base).reversed() {
            for done in revision.applied.reversed() where done.diff.isPositional {
                order = Transform.applyOrder(done.inverse, to: order)
            }
        }
        return order
    }

    /// Files the user's new revision on their undo stack (coalescing runs) and clears their redo stack.
    mutating func recordEdit(_ revision: Revision, coalesce key: String?, now: Int64) {
        let depth = policy.undo.depth
        var stacks = users[revision.author, default: UserState()].takeStacks()
        let part = UndoEntry.Part(revision: revision.number, applied: revision.applied)
        if let key, let run = stacks.run, run.key == key, now - run.time <= policy.undo.coalesceMillis,
           !stacks.undo.isEmpty {
            stacks.undo[stacks.undo.count - 1].append(part)
        } else {
            UndoStacks.push(UndoEntry(label: revision.label, parts: [part]), onto: &stacks.undo, depth: depth)
        }
        stacks.run = key.map { UndoStacks.Run(key: $0, time: now) }
        stacks.redo.removeAll()
        users[revision.author, default: UserState()].stacks = stacks
    }
}
