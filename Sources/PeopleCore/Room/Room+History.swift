/// History people can see and act on (HISTORY.md): the timeline (`log`), who wrote what (`blame`),
/// and `restore` to any revision. Selective undo is in `Room+Undo.swift`.
///
/// Every revision since the room began can be read, whatever `rooms.keptRevisions` is: what the room's
/// memory window no longer holds, the hub reads from the store when the room asks (`readHistory`), and
/// hands the message back with those revisions (`older`).
extension Room {
    // MARK: Times

    /// The time of a new revision: the clock, never earlier than the previous revision's, nor than
    /// when the room was made (revision 0's time): a node whose clock is behind the one that made
    /// the room (cluster mode), or a clock stepped back, could give revision 1 a time before it, and
    /// before a deletion of the name the room was made after, which turned its clients away from it
    /// as clients of the deleted room (a review, session 40).
    func revisionTime(_ now: Int64) -> Int64 {
        max(now, history.revision(history.head)?.timestamp ?? created ?? now)
    }

    /// The time of the head revision (nil at revision 0).
    var headTime: Int64? { history.revision(history.head)?.timestamp }

    // MARK: Log

    /// A page of the timeline, newest first, among the revisions below `request.before`. What memory
    /// holds is read first; below it, the store's revisions come in chunks of 1,000 (`readHistory`,
    /// carrying the page so far in `resume`), until the page is full or revision 1 was read.
    func log(_ request: ClientMessage.LogRequest, for user: String, from id: SessionID,
             older: [Revision] = [], resume: LogResume? = nil) -> [RoomAction] {
        guard ClientMessage.LogRequest.limits.contains(request.limit) else {
            let limits = ClientMessage.LogRequest.limits
            return [.send(.error(.init(seq: request.seq, ProtocolError(.badMessage,
                "log limit must be \(limits.lowerBound) to \(limits.upperBound)"))), to: [id])]
        }
        var entryOf: [Int: Int] = [:]
        for entry in stacks(of: user).undo { for part in entry.parts { entryOf[part.revision] = entry.id } }
        let top = min(history.head, (request.before ?? Int.max) - 1)
        var entries = resume?.entries ?? []
        var more = false
        /// Adds a revision if it belongs on the page; false once the page is full and one more matched.
        func consider(_ revision: Revision) -> Bool {
            guard revision.number <= top else { return true }
            if let tag = request.tag, !revision.applied.contains(where: { $0.diff.tag == tag }) { return true }
            if entries.count == request.limit {
                more = true
                return false
            }
            entries.append(.init(rev: revision.number, time: revision.timestamp, author: revision.author,
                                 kind: revision.kind, label: revision.label, ops: revision.diffs,
                                 entry: entryOf[revision.number], removed: revision.removedNames))
            return true
        }
        var full = false
        var below: Int  // every revision above this one was considered
        if let resume {
            for revision in older.reversed() where revision.number <= resume.below && !full { full = !consider(revision) }
            below = min(resume.below, (older.first?.number ?? 1) - 1)
        } else {
            // Straight to `top`: a page deep in the history costs its size, not its distance from the head.
            var number = top
            while number > history.floor, !full, let revision = history.revision(number) {
                full = !consider(revision)
                number -= 1
            }
            below = history.floor
        }
        let through = min(below, top)
        if !full && through > 0 {
            // Without a tag every revision matches: read just what fills the page (and one more, for
            // `more`); with one, read chunks of 1,000.
            let chunk = request.tag == nil ? request.limit + 1 - entries.count : 1_000
            return [.readHistory(HistoryRead(message: .log(request), session: id, after: max(0, through - chunk),
                                             through: through, log: LogResume(entries: entries, below: through)))]
        }
        return [.send(.log(.init(seq: request.seq, entries: entries, more: more)), to: [id])]
    }

    // MARK: Blame

    func blame(_ request: ClientMessage.BlameRequest, from id: SessionID) -> [RoomAction] {
        guard let record = blame[request.tag] else {
            return [.send(.error(.init(seq: request.seq, ProtocolError(.badMessage,
                "tag \(request.tag) is not present"))), to: [id])]
        }
        return [.send(.blame(.init(seq: request.seq, tag: request.tag, record: record)), to: [id])]
    }

    // MARK: Restore

    /// The model as it was right after revision `rev`: replayed forward from `checkpoint` (at or below
    /// `rev`) through revisions `checkpoint.revision + 1 ... rev` (from `older`, then memory), or else
    /// today's, taken back through the exact inverses of every later revision (from memory, then
    /// `older` for what memory no longer holds). Nil when neither way has every revision it needs.
    /// Assumes 0 ≤ `rev` ≤ head (its callers check). O(the revisions walked), on `ModelWalk`.
    func model(at rev: Int, older: [Revision], checkpoint: Checkpoint? = nil) -> PeopleModel? {
        switch modelSource(at: rev, older: older, checkpoint: checkpoint) {
        case .forward(let start, let revisions)?:
            var walk = ModelWalk(start.people)
            for revision in revisions { walk.redo(revision.applied) }
            return walk.model
        case .back(let revisions)?:
            var walk = ModelWalk(model)
            for revision in revisions { walk.undo(revision.applied) }
            return walk.model
        case nil:
            return nil
        }
    }

    /// Where the model at a revision comes from: a checkpoint and the revisions after it, oldest
    /// first; or today's model and the revisions after the target, newest first.
    enum ModelSource {
        case forward(Checkpoint, [Revision])
        case back([Revision])
    }

    /// How `model(at:older:checkpoint:)` would rebuild revision `rev`, or nil if it cannot: a check that
    /// walks nothing (a room asks the store before it answers a restore).
    func modelSource(at rev: Int, older: [Revision], checkpoint: Checkpoint?) -> ModelSource? {
        if let checkpoint, checkpoint.revision <= rev {
            let stored = older.filter { $0.number > checkpoint.revision && $0.number <= min(rev, history.floor) }
            let kept = rev > history.floor
                ? history.revisions(after: max(checkpoint.revision, history.floor)).prefix { $0.number <= rev } : []
            if stored.count + kept.count == rev - checkpoint.revision {
                return .forward(checkpoint, stored.sorted { $0.number < $1.number } + kept)
            }
        }
        let kept = history.revisions(after: max(rev, history.floor)).reversed()
        guard rev < history.floor else { return .back(Array(kept)) }
        let needed = older.filter { $0.number > rev && $0.number <= history.floor }
        guard needed.count == history.floor - rev else { return nil }
        return .back(kept + needed.sorted { $0.number > $1.number })
    }

    /// What a message that needs the model at `rev` must have read from the store first: nil when
    /// memory, `older` and `checkpoint` already hold what it takes; else revisions `rev + 1 ... floor`,
    /// marked as wanted for the model at `rev` (`modelAt`), so a store with a checkpoint at or below `rev`
    /// may give that and the fewer revisions after it instead.
    func modelRead(_ rev: Int, message: ClientMessage, session: SessionID, older: [Revision],
                   checkpoint: Checkpoint?) -> HistoryRead? {
        guard rev >= 0, rev < history.floor, modelSource(at: rev, older: older, checkpoint: checkpoint) == nil else { return nil }
        return HistoryRead(message: message, session: session, after: rev, through: history.floor, log: nil, modelAt: rev)
    }

    /// A `restore`: one forward revision of kind `restore` that makes the room what it was after
    /// revision `rev`, one undo entry of its author (HISTORY §3). Computed against the head, never
    /// rebased.
    /// `older` (with `checkpoint`, when the store had one) reaches down to `rev` when it is below the
    /// memory window (`receive` asks for it first).
    mutating func restore(_ request: ClientMessage.RestoreRequest, from id: SessionID, now: Int64,
                          older: [Revision], checkpoint: Checkpoint? = nil) -> Handled {
        let user = sessions[id]!.user
        let label = request.label ?? "Restore to revision \(request.rev)"
        guard request.rev >= 0, request.rev <= history.head else {
            let reply = ServerMessage.error(.init(seq: request.seq, ProtocolError(.badMessage,
                "rev \(request.rev) is not a revision of this room (0 to \(history.head))")))
            return (reply, nil, .none, [.send(reply, to: [id])])
        }
        guard let target = model(at: request.rev, older: older, checkpoint: checkpoint) else {
            let reply = ServerMessage.error(.init(seq: request.seq, ProtocolError(.serverError,
                "revisions before \(history.floor) could not be read")))
            return (reply, nil, .none, [.send(reply, to: [id])])
        }
        let batch = Self.restoreBatch(from: model, to: target)
        let result: BatchResult
        do {
            result = try model.apply(batch: batch)
        } catch {
            // Cannot happen (every diff is built against the model it applies to); answer, never crash.
            let reply = ServerMessage.error(.init(seq: request.seq, ProtocolError(.serverError, "restore failed: \(error)")))
            return (reply, nil, .none, [.send(reply, to: [id])])
        }
        guard !result.applied.isEmpty else {
            let reply = ServerMessage.restored(.init(seq: request.seq, label: label))
            return (reply, nil, .none, [.send(reply, to: [id])])
        }
        let number = history.head + 1
        let revision = Revision(number: number, author: user, kind: .restore, label: label, applied: result.applied,
                                timestamp: revisionTime(now), session: id, seq: request.seq)
        let reply = ServerMessage.restored(.init(seq: request.seq, rev: number, time: revision.timestamp,
                                                 ops: revision.diffs, label: label))
        let before = stacks(of: user).shape
        recordEdit(revision, coalesce: nil, now: now)
        var actions = commit(revision, reply: reply, sender: id)
        actions += historyActions(user: user, before: before)
        return (reply, revision, .edit(coalesce: nil), actions)
    }

    /// The one batch that turns `current` into `target` (HISTORY §3): removes, re-inserts with every
    /// field (placed by the neighbour rule in `target`'s order), field / element / register diffs,
    /// then the fewest moves (the longest run already in `target`'s order stays; the others move once,
    /// in `target`'s order). No diff in it changes nothing.
    static func restoreBatch(from current: PeopleModel, to target: PeopleModel) -> [Diff] {
        var batch: [Diff] = []
        var order = current.tags
        // Removes: people present now and absent at the target, in today's order.
        for tag in current.tags where !target.contains(tag) {
            batch.append(.remove(tag))
            order.removeAll { $0 == tag }
        }
        // Re-inserts, in the target's order, each after its previous neighbour there if present, else
        // before its next one, else at its index there (clamped).
        let targetTags = target.tags
        for (index, tag) in targetTags.enumerated() where !current.contains(tag) {
            let at: Int
            if index > 0, let before = order.firstIndex(of: targetTags[index - 1]) {
                at = before + 1
            } else if index + 1 < targetTags.count, let after = order.firstIndex(of: targetTags[index + 1]) {
                at = after
            } else {
                at = min(index, order.count)
            }
            batch.append(.insert(target[tag]!, at: at))
            order.insert(tag, at: at)
        }
        // Fields, elements and registers of the people in both.
        for tag in targetTags {
            guard let now = current[tag], let then = target[tag] else { continue }
            for field in Field.allCases where now.value(of: field) != then.value(of: field) {
                batch.append(.set(tag, then.value(of: field)))
            }
            for style in FacialHairStyle.allCases where now.facialHair.contains(style) != then.facialHair.contains(style) {
                batch.append(.facialHair(tag, style, present: then.facialHair.contains(style)))
            }
            for topic in Topic.allCases where now.opinion(on: topic) != then.opinion(on: topic) {
                batch.append(.preference(tag, topic, then.opinion(on: topic)))
            }
        }
        // Moves: keep the longest run already in the target's relative order.
        let rank = Dictionary(uniqueKeysWithValues: targetTags.enumerated().map { ($1, $0) })
        let keep = Set(longestIncreasingRun(order.map { rank[$0]! }).map { order[$0] })
        for (index, tag) in targetTags.enumerated() where !keep.contains(tag) {
            let from = order.firstIndex(of: tag)!
            order.remove(at: from)
            let to = index == 0 ? 0 : order.firstIndex(of: targetTags[index - 1])! + 1
            order.insert(tag, at: to)
            if to != from { batch.append(.move(tag, to: to)) }
        }
        return batch
    }

    /// Indices of a longest strictly increasing subsequence of `values`; among the longest, the one
    /// that keeps earlier elements (lexicographically smallest indices). O(n²), fine for rooms of
    /// thousands of people; restores are rare.
    static func longestIncreasingRun(_ values: [Int]) -> [Int] {
        let n = values.count
        guard n > 0 else { return [] }
        // length[i]: the longest increasing run starting at i; built from the end so that the run
        // can then be taken greedily from the front, earliest index first.
        var length = [Int](repeating: 1, count: n)
        for i in stride(from: n - 1, through: 0, by: -1) {
            for j in (i + 1)..<n where values[j] > values[i] { length[i] = max(length[i], length[j] + 1) }
        }
        var best = length.max()!
        var out: [Int] = []
        var last = Int.min
        for i in 0..<n where best > 0 && length[i] == best && values[i] > last {
            out.append(i)
            last = values[i]
            best -= 1
        }
        return out
    }
}
