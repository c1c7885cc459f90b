extension Room {
    /// An `undo` or `redo` request: take the user's newest entry (touching `scope`), revert it, and
    /// (with cascade) go on while entries change nothing. Pushes the inverse of what was applied onto
    /// the other stack (redo is computed at undo time). Any request ends the user's coalescing run.
    mutating func revert(
        _ request: ClientMessage.UndoRequest, redo: Bool, from id: SessionID, now: Int64
    ) -> Handled {
        if let entry = request.entry, !redo { return undo(entry: entry, request, from: id, now: now) }
        let user = sessions[id]!.user
        // Taken out while they change, so the arrays are uniquely referenced (no copy-on-write).
        var stacks = users[user, default: UserState()].takeStacks()
        let before = stacks.shape
        stacks.run = nil
        var applied: [AppliedDiff] = []
        var inverts: [DiffRef?] = []
        var skipped: [SkipReport] = []
        var label: String?
        var firstLabel: String?
        var consumed: [Int] = []
        while let index = UndoStacks.newest(in: redo ? stacks.redo : stacks.undo, scope: request.scope) {
            let entry = redo ? stacks.redo.remove(at: index) : stacks.undo.remove(at: index)
            if consumed.isEmpty { firstLabel = entry.label }
            consumed.append(index)
            let outcome = revert(entry, by: user)
            skipped += outcome.skipped
            if !outcome.applied.isEmpty {
                applied = outcome.applied
                inverts = outcome.inverts
                label = entry.label
                break
            }
            if !policy.undo.cascade { break }
        }

        // With nothing applied, the label names the step the user asked for (its reports say why).
        var result = ServerMessage.UndoResult(seq: request.seq, label: firstLabel, skipped: skipped)
        var revision: Revision?
        if !applied.isEmpty {
            let number = history.head + 1
            revision = Revision(number: number, author: user, kind: redo ? .redo : .undo, label: label,
                                applied: applied, timestamp: revisionTime(now), session: id, seq: request.seq,
                                inverts: inverts)
            pushOpposite(of: revision!, redo: redo, onto: &stacks)
            result.rev = number
            result.time = revision!.timestamp
            result.ops = revision!.diffs
            result.label = label
        }
        users[user, default: UserState()].stacks = stacks
        let reply: ServerMessage = redo ? .redone(result) : .undone(result)
        let sent = revision.map { commit($0, reply: reply, sender: id) } ?? [.send(reply, to: [id])]
        return (reply, revision, .revert(redo: redo, consumed: consumed), sent + historyActions(user: user, before: before))
    }

    /// Selective undo (HISTORY §2): the user's entry `id`, wherever it is on the undo stack, rebased over
    /// everything after it (the user's own later revisions included) and guarded against every later
    /// write by anyone; no cascade; the entry is consumed even when it changes nothing, and the inverse
    /// of what was applied goes on top of the redo stack. An id not on the stack is `no-entry` (the
    /// coalescing run stays as it was).
    mutating func undo(entry id: Int, _ request: ClientMessage.UndoRequest, from session: SessionID,
                       now: Int64) -> Handled {
        let user = sessions[session]!.user
        guard let index = stacks(of: user).undo.firstIndex(where: { $0.id == id }) else {
            let reply = ServerMessage.error(.init(seq: request.seq, ProtocolError(.noEntry,
                "entry \(id) is not on \(user)'s undo stack")))
            return (reply, nil, .none, [.send(reply, to: [session])])
        }
        var stacks = users[user, default: UserState()].takeStacks()
        let before = stacks.shape
        stacks.run = nil
        let entry = stacks.undo.remove(at: index)
        let outcome = revert(entry, by: user, selective: true)
        var result = ServerMessage.UndoResult(seq: request.seq, label: entry.label, skipped: outcome.skipped, entry: id)
        var revision: Revision?
        if !outcome.applied.isEmpty {
            let number = history.head + 1
            revision = Revision(number: number, author: user, kind: .undo, label: entry.label,
                                applied: outcome.applied, timestamp: revisionTime(now), session: session,
                                seq: request.seq, inverts: outcome.inverts)
            pushOpposite(of: revision!, redo: false, onto: &stacks)
            result.rev = number
            result.time = revision!.timestamp
            result.ops = revision!.diffs
        }
        users[user, default: UserState()].stacks = stacks
        let reply = ServerMessage.undone(result)
        let sent = revision.map { commit($0, reply: reply, sender: session) } ?? [.send(reply, to: [session])]
        return (reply, revision, .revert(redo: false, consumed: [index]),
                sent + historyActions(user: user, before: before))
    }

    /// What reverting one entry did: the diffs applied (empty when the model ended up unchanged) and
    /// the parts skipped.
    struct RevertOutcome {
        var applied: [AppliedDiff] = []
        /// For each applied diff, the diff of the entry it reverts.
        var inverts: [DiffRef?] = []
        var skipped: [SkipReport] = []
        /// The list work each placement by `rebasedGap` may cost: `RoomPolicy.maxListWork` shared among
        /// the entry's inserts, removes and moves.
        var placementWork = Double.infinity
    }

    /// Reverts an entry on the model: each part's inverse, newest first, rebased over what happened
    /// since and guarded by the conflict policy. Cost: the events on the entry's tags since the entry.
    mutating func revert(_ entry: UndoEntry, by user: String, selective: Bool = false) -> RevertOutcome {
        var outcome = RevertOutcome()
        if entry.oldestRevision < history.floor {
            outcome.skipped = entry.tags.sorted().map { SkipReport(reason: .expired, tag: $0) }
            return outcome
        }
        let snapshot = entry.tags.map { (tag: $0, index: model.index(of: $0), person: model[$0]) }
        let count = model.count
        let positional = entry.parts.reduce(0) { $0 + $1.applied.reduce(0) { $0 + ($1.diff.isPositional ? 1 : 0) } }
        outcome.placementWork = policy.maxListWork / Double(max(1, positional))
        for part in entry.parts.reversed() {
            for (index, done) in part.applied.enumerated().reversed() {
                let step = inverse(of: done, at: part.revision, index: index, by: user, inProgress: outcome,
                                   selective: selective ? Set(entry.parts.map(\.revision)) : nil)
                switch step {
                case .skip(let report):
                    outcome.skipped.append(report)
                case .apply(let diff):
                    do {
                        if let applied = try model.apply(diff) {
                            outcome.applied.append(applied)
                            outcome.inverts.append(DiffRef(revision: part.revision, index: index))
                        }
                    } catch {
                        outcome.skipped.append(SkipReport(reason: .invariant, target: done.diff.target, by: nil))
                    }
                case .nothing:
                    break
                }
            }
        }
        let unchanged = model.count == count && snapshot.allSatisfy { old in
            model.index(of: old.tag) == old.index && model[old.tag] == old.person
        }
        if unchanged && !outcome.applied.isEmpty {
            model.rollBack(outcome.applied)
            outcome.applied = []
            outcome.inverts = []
        }
        return outcome
    }

    enum RevertStep {
        case apply(Diff)
        case skip(SkipReport)
        case nothing
    }

    /// The rebased, guarded inverse of one applied diff of an entry (SEMANTICS §2 table and §4).
    ///
    /// `selective`: the revisions of the entry being undone selectively (HISTORY §2). Then every later
    /// write by anyone (the user included) guards, except the entry's own batches: a field, element,
    /// register or position last written since by an edit, redo or restore is `overwritten` (by that
    /// writer), an inserted person touched since is `editedByOthers` (by the latest toucher).
    func inverse(
        of done: AppliedDiff, at revision: Int, index: Int, by user: String, inProgress: RevertOutcome,
        selective own: Set<Int>? = nil
    ) -> RevertStep {
        let guarded = policy.undo.conflicts == .skip
        let tag = done.diff.tag
        let later = history.events(on: tag, after: revision, index: index)
        /// Whether an event wrote `target`: a write to it, or a (re-)insert of its person, which writes
        /// every field, the position and the elements it lists (HISTORY §5, decision 17). A remove
        /// writes nothing: what it takes away comes back, as it was, only with a re-insert.
        func wrote(_ event: RoomHistory.TagEvent, _ target: DiffTarget) -> Bool {
            if event.target == target { return true }
            guard event.target == .person(tag),
                  case .insert(let person, _)? = history.revision(event.revision)?.applied[event.index].diff
            else { return false }
            return person.insertWrites(target)
        }
        /// The latest write since the entry that guards (selective undo only).
        func latestGuarding(_ target: DiffTarget?) -> RoomHistory.TagEvent? {
            guard let own else { return nil }
            return later.first { !own.contains($0.revision) && (target == nil || wrote($0, target!)) }
        }
        func removed() -> RevertStep {
            .skip(SkipReport(reason: .targetRemoved, tag: tag, by: history.writer(of: .person(tag))))
        }
        func overwritten(_ target: DiffTarget) -> RevertStep {
            .skip(SkipReport(reason: .overwritten, target: target, by: writer(of: target)))
        }
        /// The value there is a teammate's even if it equals ours: their edit or redo was the last write
        /// to `target` since this entry. (An undo only restores an earlier state and claims nothing, so
        /// SEMANTICS §5.3 holds: after B undoes over A's value, A's undo still applies.)
        func claimed(_ target: DiffTarget) -> Bool {
            if own != nil {
                guard let last = latestGuarding(target) else { return false }
                return last.kind != .undo
            }
            guard let last = later.first(where: { wrote($0, target) }) else { return false }
            return last.author != user && last.kind != .undo
        }
        func overwrittenOrClaimed(_ target: DiffTarget) -> RevertStep {
            if own != nil, let last = latestGuarding(target), last.kind != .undo {
                return .skip(SkipReport(reason: .overwritten, target: target, by: last.author))
            }
            return overwritten(target)
        }

        switch (done.diff, done.inverse) {
        case (.set(_, let written), .set(_, let old)):
            guard let person = model[tag] else { return removed() }
            if guarded && (person.value(of: written.field) != written || claimed(done.diff.target)) {
                return overwrittenOrClaimed(done.diff.target)
            }
            return .apply(.set(tag, old))

        case (.facialHair(_, let style, let present), .facialHair(_, _, let previous)):
            guard let person = model[tag] else { return removed() }
            if guarded && (person.facialHair.contains(style) != present || claimed(done.diff.target)) {
                return overwrittenOrClaimed(done.diff.target)
            }
            return .apply(.facialHair(tag, style, present: previous))

        case (.preference(_, let topic, let written), .preference(_, _, let old)):
            guard let person = model[tag] else { return removed() }
            if guarded && (person.opinion(on: topic) != written || claimed(done.diff.target)) {
                return overwrittenOrClaimed(done.diff.target)
            }
            return .apply(.preference(tag, topic, old))

        case (.text, .text(_, var operation)):
            guard model.contains(tag) else { return removed() }
            // Rebased character-wise over every later edit of the name, ours included, with each
            // edit-and-revert pair that nothing separates taken out (it changed nothing).
            // A re-insert under another name replaces the name whole, like a `set(name)` (decision 19).
            var edits: [(ref: DiffRef, diff: Diff)] = []
            func add(_ ref: DiffRef, _ inverts: DiffRef?, _ diff: Diff) {
                if let inverts, edits.last?.ref == inverts { edits.removeLast() } else { edits.append((ref, diff)) }
            }
            var renames = ReinsertRenames()
            for event in later.reversed() {
                guard let done = history.revision(event.revision)?.applied[event.index] else { continue }
                switch event.target {
                case .field(_, .name): add(event.ref, event.inverts, done.diff)
                case .person: if let set = renames.rename(by: done) { add(event.ref, event.inverts, set) }
                default: break
                }
            }
            let pending = history.head + 1
            for (k, done) in inProgress.applied.enumerated() where done.diff.target == .field(tag, .name) {
                add(DiffRef(revision: pending, index: k), inProgress.inverts[k], done.diff)
            }
            for edit in edits {
                switch edit.diff {
                case .set(_, .name): return overwritten(.field(tag, .name))
                case .text(_, let theirs): operation = operation.transformed(over: theirs, selfFirst: false)
                default: break
                }
            }
            return .apply(.text(tag, operation))

        case (.insert, .remove):
            guard model.contains(tag) else { return removed() }
            if guarded, own != nil, let toucher = latestGuarding(nil) {
                return .skip(SkipReport(reason: .editedByOthers, tag: tag, by: toucher.author))
            }
            if guarded, own == nil, let other = later.first(where: { $0.author != user }) {
                return .skip(SkipReport(reason: .editedByOthers, tag: tag, by: other.author))
            }
            return .apply(.remove(tag))

        case (.remove, .insert(let person, let at)):
            guard !model.contains(tag) else { return overwritten(.person(tag)) }
            let placed = place(tag: nil, neighbours: done.neighbours,
                               fallback: rebasedGap(of: done.inverse, after: revision, index: index,
                                                    inProgress: inProgress.applied, work: inProgress.placementWork) ?? at)
            return .apply(.insert(person, at: placed))

        case (.move, .move(_, let from)):
            guard model.contains(tag) else { return removed() }
            if guarded, own != nil, let mover = latestGuarding(.position(tag)), mover.kind != .undo {
                return .skip(SkipReport(reason: .overwritten, tag: tag, field: "position", by: mover.author))
            }
            if guarded, own == nil, later.contains(where: { $0.author != user && $0.target == .position(tag) }) {
                // `by` is the latest writer of the position, who may be the undoer (SEMANTICS §4).
                return .skip(SkipReport(reason: .overwritten, tag: tag, field: "position",
                                        by: writer(of: .position(tag))))
            }
            let placed = place(tag: tag, neighbours: done.neighbours,
                               fallback: rebasedGap(of: done.inverse, after: revision, index: index,
                                                    inProgress: inProgress.applied, work: inProgress.placementWork) ?? from)
            return .apply(.move(tag, to: placed))

        default:
            return .nothing
        }
    }

    /// Where a person goes back (SEMANTICS §4): after its old previous neighbour if present, else before
    /// its old next neighbour if present, else at `fallback`. For a move, `tag` is the moved person and
    /// indices are in the list without it.
    /// `fallback` is worked out only when it is needed (it costs the positional diffs since × people).
    func place(tag: Tag?, neighbours: Neighbours?, fallback: @autoclosure () -> Int) -> Int {
        let own = tag.flatMap { model.index(of: $0) }
        func withoutSelf(_ index: Int) -> Int { own.map { index > $0 ? index - 1 : index } ?? index }
        if let before = neighbours?.before, let index = model.index(of: before) { return withoutSelf(index) + 1 }
        if let after = neighbours?.after, let index = model.index(of: after) { return withoutSelf(index) }
        return fallback()
    }

    /// The gap an inverse insert or move (made right after diff `index` of `revision`) lands at when
    /// it is rebased over every positional diff since, as a concurrent submit's would be: positions
    /// are gaps in the list without the person, and at an equal gap what the hub applied earlier stays
    /// first (SEMANTICS §3 rule 3, §7 reading 5). Only used when both old neighbours are gone. Cost:
    /// the positional diffs since × people; nil (the old gap, unrebased) when that is over `work`.
    func rebasedGap(of inverse: Diff, after revision: Int, index: Int, inProgress: [AppliedDiff],
                    work: Double = .infinity) -> Int? {
        let since = history.positional.reversed().prefix { ($0.revision, $0.index) > (revision, index) }
        let moving = inProgress.reduce(0) { $0 + ($1.diff.isPositional ? 1 : 0) }
        guard Double(since.count + moving) * Double(model.people.count + 1) <= work else { return nil }
        var later: [Diff] = since.reversed().compactMap { history.revision($0.revision)?.applied[$0.index].diff }
        var inverses: [Diff] = since.compactMap { history.revision($0.revision)?.applied[$0.index].inverse }
        for done in inProgress where done.diff.isPositional {
            later.append(done.diff)
            inverses.insert(done.inverse, at: 0)
        }
        // The tag order the inverse was made on: today's, with the later positional diffs taken back.
        var order = model.tags
        for undone in inverses { Transform.applyOrder(undone, to: &order) }
        var rebased = inverse
        for diff in later {
            if case .diff(let next) = Transform.transform(rebased, over: diff, order: order) { rebased = next }
            Transform.applyOrder(diff, to: &order)
        }
        switch rebased {
        case .insert(_, let at): return at
        case .move(_, let to): return to
        default: return nil
        }
    }
}
