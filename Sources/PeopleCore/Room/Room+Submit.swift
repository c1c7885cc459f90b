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
        if submit.base < 0 {
            return fail(ProtocolError(.badMessage, "base \(submit.base) is not a revision (0 or more)"))
        }
        if submit.base > history.head {
            return fail(ProtocolError(.badMessage, "base \(submit.base) is newer than revision \(history.head)"))
        }
        if submit.base < lastAckRevision, !Self.isAgent(id) {
            return fail(ProtocolError(.badMessage,
                "base \(submit.base) is older than this session's last ack at \(lastAckRevision)"))
        }
        if submit.base < history.floor {
            return fail(ProtocolError(.staleBase,
                "base \(submit.base) is older than the kept history (from \(history.floor)); start again from the room's current state"))
        }
        if let invalid = validateAtBase(submit.ops, base: submit.base, user: user) {
            return fail(invalid.protocolError)
        }
        let moving = submit.ops.reduce(0) { $0 + ($1.isPositional ? 1 : 0) }
        if moving > 0, submit.base < history.head {
            let since = history.positionalCount(after: submit.base)
            if Double(moving) * Double(since) * Double(model.people.count + 1) > policy.maxListWork {
                return fail(ProtocolError(.staleBase, "rebasing this batch's \(moving) inserts, removes and moves over the \(since) made since revision \(submit.base) would take too long; send it again on the room's current revision"))
            }
        }

        var diffs = submit.ops
        var overwritten: [DiffTarget] = []
        if submit.base < history.head {
            let positional = diffs.contains(where: \.isPositional)
            var order = positional ? order(at: submit.base) : []
            // A re-insert under another name replaces the name whole (decision 19).
            var renames = ReinsertRenames()
            let typed = Set(diffs.compactMap { diff -> Tag? in if case .text(let tag, _) = diff { tag } else { nil } })
            for revision in history.revisions(after: submit.base) {
                let applied = renames.diffs(of: revision, watching: typed)
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
            // On the head, the batch applies as made: an absent tag is invalid (the check at the base).
            // Rebased, a diff whose person a teammate removed since becomes a reported no-op (§3 rule 2);
            // the only refusal left is a name pushed over the limit by concurrent typing (§3 rule 6).
            result = try model.apply(batch: diffs, absentTags: submit.base == history.head ? .reject : .skip)
        } catch {
            return fail(error.protocolError)
        }
        var reports = overwritten.map { SkipReport(reason: .overwritten, target: $0, by: writer(of: $0)) }
        reports += result.absent.map {
            SkipReport(reason: .targetRemoved, tag: $0.diff.tag, by: history.writer(of: .person($0.diff.tag)))
        }

        guard !result.applied.isEmpty else {
            sessions[id]!.lastAckRevision = history.head
            let reply = ServerMessage.ack(.init(seq: submit.seq, rev: history.head, time: headTime, ops: [], noop: reports))
            return (reply, nil, .none, [.send(reply, to: [id])])
        }

        let number = history.head + 1
        let revision = Revision(number: number, author: user, kind: .edit, label: submit.label,
                                applied: result.applied, timestamp: revisionTime(now), session: id, seq: submit.seq)
        let reply = ServerMessage.ack(.init(seq: submit.seq, rev: number, time: revision.timestamp, ops: revision.diffs,
                                            noop: reports))
        sessions[id]!.lastAckRevision = number
        let before = stacks(of: user).shape
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

    /// Decides the batch's validity at its base (SEMANTICS §7 reading 4), whatever teammates did since:
    /// inserted tags are new to the room and in the user's blocks, and the batch applies, diff by diff,
    /// to the people it names as they were at `base` (a tag absent there, a diff on a person the batch
    /// removed earlier, a text span past the end of the name, a name over the limit are `invalid-op`).
    /// On the head the real apply is that check; behind it, the named people are taken back to `base`.
    func validateAtBase(_ diffs: [Diff], base: Int, user: String) -> InvalidOp? {
        var inserted = Set<Tag>()
        var named = Set<Tag>()
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
            } else if !inserted.contains(diff.tag) {
                named.insert(diff.tag)
            }
        }
        guard base < history.head else { return nil }
        var view = people(named, at: base)
        do {
            try view.apply(batch: diffs, absentTags: .reject)
        } catch {
            return error
        }
        return nil
    }

    /// The people among `tags` that were present at revision `base`, as they were then (their order
    /// is not kept): each one now, taken back through the exact inverses of the later diffs on its
    /// tag, newest first. Cost: the events on those tags since `base`.
    func people(_ tags: Set<Tag>, at base: Int) -> PeopleModel {
        var view = PeopleModel()
        for tag in tags.sorted() {
            var one = PeopleModel(people: model[tag].map { [$0] } ?? [])
            for event in history.events(on: tag, after: base, index: Int.max) {
                guard let done = history.revision(event.revision)?.applied[event.index] else { continue }
                do { try one.apply(done.inverse) } catch {
                    assertionFailure("exact inverse failed to apply at revision \(event.revision): \(error)")
                }
            }
            view.people.append(contentsOf: one.people)
        }
        return view
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
