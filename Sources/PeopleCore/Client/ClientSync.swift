/// The client side of a room: optimistic local edits, at most one request in flight, and rebasing of
/// pending edits over what the hub sends (ot.js / Wave style).
///
/// `confirmed` is exactly the hub's model at `revision` (the hub's ops are applied as they are);
/// `view` is `confirmed` plus the pending edits, rebased, and is what a screen shows. Requests wait in
/// an outbox and go one at a time, so an undo pressed after an edit undoes that edit. After a
/// reconnect the request in flight is resent with its seq; the hub answers it once.
///
/// An undo or redo pressed while the step it takes is still queued here (an edit not yet answered,
/// offline or in flight) shows at once: its `predicted` ops (the exact inverse of the step as the view
/// applied it, or for a redo the inverse of that undo's) join the view like an edit's, and what is
/// queued after it is made on top of them. When the hub answers with other ops (a teammate's change
/// was skipped, or the hub's step was not the one foreseen) the later requests are rebased over the
/// prediction taken back and the hub's ops. Undos and redos that reach the hub's own steps, scoped
/// presses that pass the newest step, selective undos and restores wait for the hub, as before.
///
/// Questions (`log`, `blame`) go at once, beside the requests: their seqs are not part of the session's
/// counter on the hub, but they are numbered from this client's, so that an answer or an error for one
/// is never taken for a request's.
public struct ClientSync: Sendable {
    /// A request not yet answered by the hub.
    public enum Request: Hashable, Sendable {
        case submit(ops: [Diff], label: String?, coalesce: String?)
        case undo(scope: Tag?)
        case redo(scope: Tag?)
        /// Selective undo: one of this user's entries, by id, wherever it is on the stack (HISTORY §2).
        case undoEntry(Int)
        /// Make the room what it was right after revision `rev` (HISTORY §3).
        case restore(rev: Int, label: String?)
    }

    struct Pending: Hashable, Sendable {
        var seq: Int
        var request: Request
        /// The base it was sent with, once sent.
        var sentBase: Int?
        /// An undo pressed for the edit queued just before it (unsent or in flight): it goes with
        /// that edit when the edit turns out to change nothing, or is dropped, since the hub would
        /// otherwise take back the user's entry before it.
        var forQueuedEdit = false
        /// This client's id for it (stable while it waits; `UndoOffer.play` names steps by it).
        var id = 0
        /// An undo or redo shown at once: the ops it is expected to have (see the type's comment).
        var predicted: [Diff]?
        /// For a predicted undo or redo: the queued edits its step is made of. One that turns out
        /// to make no undo step at the hub (it changed nothing, was refused, or no longer applied)
        /// leaves the step; a step left with none means the press has nothing to take: it goes.
        var step: [Int] = []
    }

    /// What happened, for a screen to show.
    public enum Event: Hashable, Sendable {
        case welcomed(session: SessionID)
        /// Someone else's revision arrived.
        case remote(Revision.Summary)
        case skipped([SkipReport])
        case history(HistorySummary)
        case presence([PresenceEntry])
        case error(ProtocolError)
        /// The hub no longer has our base: reconnect without `since` to get the full state.
        case needsResync
        case redirect(String)
        /// A page of the room's timeline arrived (the answer to a `log`).
        case log(ServerMessage.LogPage)
        /// Who wrote what of one person (the answer to a `blame`).
        case blame(ServerMessage.Blame)
        /// The hub answered the question `seq` (a `log` or `blame` sent with `ask`) with an error.
        case unanswered(seq: Int, ProtocolError)
        /// An undo pressed for a queued edit went with that edit, unsent: the edit (`label`, its `ops`
        /// as last queued) changed nothing or no longer applied, so the undo had nothing to take back
        /// (see `forQueuedEdit`). The hub's reports for the edit, if any, come in the same list.
        case undoDropped(label: String?, ops: [Diff])
        /// The hub answered our restore to `rev`: `made` is the revision it made, nil when the room
        /// already was as it had been at `rev` (a restore that changes nothing makes no revision).
        case restoreAnswered(rev: Int, made: Int?)
        /// The hub's room has another history than the one this client had (`welcome.reset`: restored
        /// from an older backup, or a hub restarted without its data): the view is the hub's state plus
        /// the queued edits that still apply; `dropped` undos, redos and restores that named steps
        /// of the old history went unsent. `lost`: this user's own revisions the hub had acknowledged
        /// and no longer has (numbered past its head now), newest last; `perhapsMore`: the hub's head
        /// is at or past what this client had seen, so its history parted from this one at a revision
        /// this client cannot tell, and earlier ones of this user's may be gone too.
        case reset(dropped: Int, lost: [ServerMessage.LogEntry], perhapsMore: Bool)
    }

    public let user: String
    public private(set) var confirmed: PeopleModel
    public private(set) var revision: Int
    /// The time of `revision` as the hub gave it (for revision 0, when the room was made; nil when none
    /// was given): sent back as `hello.sinceTime`, so that a hub with another history says `reset`
    /// instead of catching this client up on a state it does not have.
    public private(set) var revisionTime: Int64?
    /// The names people had in `confirmed` when the hub removed them, until they are re-inserted
    /// (`renamed(_:)`).
    private var removedNames: [Tag: String] = [:]
    /// The hub's latest revisions as they were applied to `confirmed` (with their exact inverses),
    /// oldest first and without gaps up to `revision`, at most `keptRevisions`: `model(at:)` walks
    /// back through them. A full state starts them again.
    private var recent: [(rev: Int, applied: [AppliedDiff])] = []
    /// This user's own revisions as the hub acknowledged them (at most `keptOwnRevisions`, oldest
    /// first): what a `reset` says is gone.
    private var ownRevisions: [ServerMessage.LogEntry] = []
    static let keptOwnRevisions = 200
    /// How many of the hub's revisions `model(at:)` can go back through.
    public static let keptRevisions = 1_000
    public private(set) var view: PeopleModel
    public private(set) var session: SessionID?
    public private(set) var role: Role = .editor
    public private(set) var history = HistorySummary()
    public private(set) var presence: [PresenceEntry] = []
    public private(set) var connected = false
    /// The queued edits whose undo went with them since the last `receive` (reported there).
    private var droppedUndos: [Request] = []
    var outbox: [Pending] = []
    /// The next `Pending.id`.
    private var nextPendingID = 1
    /// The coalesce key of the hub's newest undo step of ours, when the last request it answered was an
    /// edit with one: the next edit with that key may join that step at the hub (within its coalescing
    /// window), so an undo of it is not predicted (it may take back more than the queued edit).
    private var lastAnsweredCoalesce: String?
    var inFlight = false
    var nextSeq = 1
    var tagBlocks: [TagBlock] = []
    /// Every block ever received: a resumed session's welcome repeats its block, which may be used up.
    var knownBlocks: Set<TagBlock> = []
    var nextTag: Tag?
    var hasState = false
    /// The seqs of questions sent on this connection and not yet answered.
    var questions: Set<Int> = []

    public init(user: String) {
        self.user = user
        self.confirmed = PeopleModel()
        self.revision = 0
        self.view = PeopleModel()
    }

    /// Requests not yet answered (the first may be in flight).
    public var pendingCount: Int { outbox.count }

    /// What undo and redo offer now: the hub's history with the requests not yet answered played over
    /// it (`UndoOffer`; the web client's `undo-offer.js` says the same).
    public var undoOffer: UndoOffer { UndoOffer(history: history, requests: outbox.map(\.request)) }

    /// The hub's model at revision `rev` (`confirmed` taken back through the revisions since), or nil
    /// when `rev` is ahead of `revision` or further back than this client has seen (at most
    /// `keptRevisions`, none before its last full state). The terminal client asks it before a
    /// restore: a room that already looks as it did then has nothing to restore.
    public func model(at rev: Int) -> PeopleModel? {
        guard rev >= 0, rev <= revision else { return nil }
        if rev == revision { return confirmed }
        guard let first = recent.first, first.rev <= rev + 1 else { return nil }
        var model = confirmed
        for step in recent.reversed() where step.rev > rev { model.rollBack(step.applied) }
        return model
    }

    // MARK: Connection

    /// The `hello` to send on a new connection: resumes the session and catches up when it can.
    public mutating func connect(client: String? = nil, token: String? = nil) -> ClientMessage {
        connected = false
        inFlight = false
        questions = []
        return .hello(.init(user: user, token: token, client: client, resume: session,
                            since: hasState ? revision : nil, sinceTime: hasState ? revisionTime : nil))
    }

    /// The connection dropped: the request in flight will be resent on the next connection.
    public mutating func disconnected() {
        connected = false
        inFlight = false
        questions = []
    }

    // MARK: Local actions

    /// A fresh tag for an insert, from this user's blocks; nil when none is left (ask with `.tags`).
    public mutating func allocateTag() -> Tag? {
        while let block = tagBlocks.first {
            let candidate = nextTag ?? block.from
            if candidate <= block.to {
                nextTag = candidate + 1
                return candidate
            }
            tagBlocks.removeFirst()
            nextTag = nil
        }
        return nil
    }

    /// Tags left in this client's blocks.
    public var tagsLeft: Int {
        guard let first = tagBlocks.first else { return 0 }
        return (first.to - (nextTag ?? first.from) + 1) + tagBlocks.dropFirst().reduce(0) { $0 + $1.to - $1.from + 1 }
    }

    /// Applies a local edit to the view at once and queues it. Throws (changing nothing) when the batch
    /// is invalid on the view. Returns what to send now.
    public mutating func edit(_ diffs: [Diff], label: String? = nil, coalesce: String? = nil) throws(InvalidOp) -> [ClientMessage] {
        var probe = view
        let result = try probe.apply(batch: diffs)
        guard !result.applied.isEmpty else { return [] }
        view = probe
        // Typing into one name while a request is in flight: one batch, as it would be one undo step.
        if let key = coalesce, let last = outbox.last, last.sentBase == nil,
           case .submit(let ops, let label, key?) = last.request {
            outbox[outbox.count - 1].request = .submit(ops: ops + diffs, label: label, coalesce: key)
        } else {
            enqueue(Pending(seq: 0, request: .submit(ops: diffs, label: label, coalesce: coalesce)))
        }
        return flush()
    }

    /// Takes back the newest step; shown at once when that step is still queued here.
    public mutating func undo(scope: Tag? = nil) -> [ClientMessage] {
        var pending = Pending(seq: 0, request: .undo(scope: scope))
        if case .submit(let ops, _, _)? = outbox.last?.request {
            pending.forQueuedEdit = scope.map { tag in ops.contains { $0.tag == tag } } ?? true
        }
        predict(&pending, undo: true, scope: scope)
        enqueue(pending)
        rebuildView()
        return flush()
    }

    /// Puts back the newest step undone; shown at once when its undo was.
    public mutating func redo(scope: Tag? = nil) -> [ClientMessage] {
        var pending = Pending(seq: 0, request: .redo(scope: scope))
        predict(&pending, undo: false, scope: scope)
        enqueue(pending)
        rebuildView()
        return flush()
    }

    /// Whether a selective undo of entry `id` waits in the outbox (sent or not, not yet answered).
    public func isQueued(undoOf id: Int) -> Bool {
        outbox.contains { $0.request == .undoEntry(id) }
    }

    /// Selective undo of this user's entry `id` (HISTORY §2); queued like any request.
    public mutating func undo(entry id: Int) -> [ClientMessage] {
        enqueue(Pending(seq: 0, request: .undoEntry(id)))
        return flush()
    }

    /// Makes the room what it was right after revision `rev`, as one revision of this user's
    /// (HISTORY §3); queued like any request, and computed by the hub when it gets there.
    public mutating func restore(to rev: Int, label: String? = nil) -> [ClientMessage] {
        enqueue(Pending(seq: 0, request: .restore(rev: rev, label: label)))
        return flush()
    }

    private mutating func enqueue(_ pending: Pending) {
        var pending = pending
        pending.id = nextPendingID
        nextPendingID += 1
        outbox.append(pending)
    }

    /// The ops a pending request adds to the view: an edit's (its local copy once sent), a predicted
    /// undo's or redo's; none for the rest.
    private func viewOps(_ pending: Pending) -> [Diff] {
        if case .submit(let ops, _, _) = pending.request { return localOps(pending) ?? ops }
        return pending.predicted ?? []
    }

    /// Gives an undo (`undo`) or redo pressed now its predicted ops, when the step it takes is known
    /// and still queued here: the newest step of its stack (touching `scope`, when given), made of
    /// queued edits (or last moved by a predicted press). The ops are exact inverses of what the view
    /// applied for the step, and apply to the view as it is: everything queued after the step nets to
    /// nothing (later steps are undone, LIFO).
    private func predict(_ pending: inout Pending, undo: Bool, scope: Tag?) {
        let play = UndoOffer.play(history: history, requests: outbox.map { ($0.id, $0.request) })
        guard let step = (undo ? play.undo : play.redo).last, !step.fromHub, !step.restore else { return }
        if let scope { guard step.tags?.contains(scope) == true else { return } }
        if undo, step.movedBy == nil, let first = step.requests.first, outbox.first?.id == first,
           case .submit(_, _, let key?)? = outbox.first?.request, key == lastAnsweredCoalesce { return }
        // What the view applied for each pending request, in order.
        var model = confirmed
        var applied: [Int: [AppliedDiff]] = [:]
        for queued in outbox {
            guard let result = try? model.apply(batch: viewOps(queued), absentTags: .skip) else { return }
            applied[queued.id] = result.applied
        }
        // An undo takes back what last applied the step: its edits, or the redo that put it back; a
        // redo takes back the undo that removed it.
        let by: [Int]
        if undo {
            by = step.movedBy.map { [$0] } ?? step.requests
        } else {
            guard let undoer = step.movedBy else { return }
            by = [undoer]
        }
        var ops: [Diff] = []
        for id in by.reversed() {
            guard let queued = outbox.first(where: { $0.id == id }), let done = applied[id] else { return }
            if case .submit = queued.request {} else if queued.predicted == nil { return }
            ops += done.reversed().map(\.inverse)
        }
        pending.predicted = ops
        pending.step = step.requests
    }

    /// A question for the hub (`log`, `blame`), made with its seq and sent at once, beside any request
    /// in flight. Nil when not connected: a question is not queued (ask again after the next welcome);
    /// one sent is lost with its connection. The answer comes as a `.log` or `.blame` event with this
    /// seq, or as `.unanswered(seq:)`.
    public mutating func ask(_ make: (Int) -> ClientMessage) -> (seq: Int, message: ClientMessage)? {
        guard connected else { return nil }
        let seq = nextSeq
        nextSeq += 1
        questions.insert(seq)
        return (seq, make(seq))
    }

    /// Sends the first request of the outbox if nothing is in flight.
    mutating func flush() -> [ClientMessage] {
        guard connected, !inFlight, !outbox.isEmpty else { return [] }
        if outbox[0].sentBase == nil {
            outbox[0].seq = nextSeq
            nextSeq += 1
            outbox[0].sentBase = revision
        }
        inFlight = true
        let pending = outbox[0]
        switch pending.request {
        case .submit(let ops, let label, let coalesce):
            return [.submit(.init(seq: pending.seq, base: pending.sentBase!, ops: ops, label: label, coalesce: coalesce))]
        case .undo(let scope): return [.undo(.init(seq: pending.seq, scope: scope))]
        case .redo(let scope): return [.redo(.init(seq: pending.seq, scope: scope))]
        case .undoEntry(let id): return [.undo(.init(seq: pending.seq, entry: id))]
        case .restore(let rev, let label): return [.restore(.init(seq: pending.seq, rev: rev, label: label))]
        }
    }

    // MARK: From the hub

    /// Handles one hub message; returns what to send and what happened.
    public mutating func receive(_ message: ServerMessage) -> (send: [ClientMessage], events: [Event]) {
        var events: [Event] = []
        switch message {
        case .welcome(let w):
            session = w.session
            role = w.role
            connected = true
            history = w.history
            presence = w.presence
            if w.reset {
                // Before the welcome's state replaces `revision`: what this client had seen.
                let lost = ownRevisions.filter { $0.rev > w.rev }
                ownRevisions = []
                events.append(.reset(dropped: forgetHistory(tags: w.tags), lost: lost, perhapsMore: w.rev >= revision))
            }
            if knownBlocks.insert(w.tags).inserted { tagBlocks.append(w.tags) }
            if let people = w.people {
                confirmed = PeopleModel(people: people)
                removedNames = [:]
                recent = []
                revision = w.rev
                revisionTime = w.time
                hasState = true
                // A predicted undo or redo in flight may be in this state already (its answer then
                // comes replayed) or not (it is resent): the view waits for its answer, and the
                // answer rebases what follows as for an unpredicted one.
                for index in outbox.indices where outbox[index].sentBase != nil { outbox[index].predicted = nil }
                // The queued edits were made on a state that cannot be rebased onto this one: keep
                // what still applies.
                pruneUnsent()
            }
            rebuildView()
            events.append(.welcomed(session: w.session))
            events.append(.history(w.history))
        case .ops(let o):
            if let seq = o.seq, answer(seq: seq, rev: o.rev, time: o.time, ops: o.ops) {
                break
            }
            guard o.rev > revision else { break }
            applyConfirmed(o.ops, rev: o.rev, time: o.time, rebaseQueued: true)
            rebuildView()
            events.append(.remote(.init(rev: o.rev, author: o.author, kind: o.kind, label: o.label, diffs: o.ops, time: o.time)))
        case .ack(let a):
            _ = answer(seq: a.seq, rev: a.rev, time: a.time, ops: a.ops)
            if !a.noop.isEmpty { events.append(.skipped(a.noop)) }
        case .undone(let r), .redone(let r):
            _ = answer(seq: r.seq, rev: r.rev, time: r.time, ops: r.ops)
            if !r.skipped.isEmpty { events.append(.skipped(r.skipped)) }
        case .restored(let r):
            let target: Int? = if let first = outbox.first, first.seq == r.seq, case .restore(let rev, _) = first.request { rev } else { nil }
            if answer(seq: r.seq, rev: r.rev, time: r.time, ops: r.ops), let target { events.append(.restoreAnswered(rev: target, made: r.rev)) }
        case .log(let page):
            if let seq = page.seq { questions.remove(seq) }
            events.append(.log(page))
        case .blame(let blame):
            if let seq = blame.seq { questions.remove(seq) }
            events.append(.blame(blame))
        case .history(let h):
            history = h
            events.append(.history(h))
        case .presence(let users):
            presence = users
            events.append(.presence(users))
        case .error(let e):
            if let seq = e.seq, questions.remove(seq) != nil {
                // A question's error: the requests are not concerned.
                events.append(.unanswered(seq: seq, ProtocolError(e.code, e.message)))
                break
            }
            if let seq = e.seq, let first = outbox.first, first.seq == seq, first.sentBase != nil {
                outbox.removeFirst()
                inFlight = false
                if case .submit = first.request { noUndoStep(first) }
                if let shown = first.predicted { takeBack(shown) }
                // Edits queued behind the refused batch may depend on it (a person it inserted).
                pruneUnsent()
                rebuildView()
            }
            if e.code == .staleBase { events.append(.needsResync) }
            events.append(.error(ProtocolError(e.code, e.message)))
        case .redirect(let url):
            events.append(.redirect(url))
        case .tags(let block):
            if knownBlocks.insert(block).inserted { tagBlocks.append(block) }
        case .pong:
            break
        }
        for case .submit(let ops, let label, _) in droppedUndos { events.append(.undoDropped(label: label, ops: ops)) }
        droppedUndos = []
        return (flush(), events)
    }

    /// The hub answered our request `seq` (an ack, an undone / redone, or its own revision in a
    /// catch-up). Returns false when `seq` is not the request in flight.
    private mutating func answer(seq: Int, rev: Int?, time: Int64?, ops: [Diff]) -> Bool {
        guard let first = outbox.first, first.seq == seq, first.sentBase != nil else { return false }
        outbox.removeFirst()
        inFlight = false
        // An edit that changed nothing left no undo entry: an undo pressed for it has nothing to take back.
        if case .submit = first.request, ops.isEmpty { noUndoStep(first) }
        switch first.request {
        case .submit(_, _, let key): if !ops.isEmpty { lastAnsweredCoalesce = key }
        default: lastAnsweredCoalesce = nil
        }
        if let rev {
            let (kind, label): (RevisionKind, String?) = switch first.request {
            case .submit(_, let label, _): (.edit, label)
            case .undo, .undoEntry: (.undo, nil)
            case .redo: (.redo, nil)
            case .restore(_, let label): (.restore, label)
            }
            ownRevisions.append(.init(rev: rev, time: time, author: user, kind: kind, label: label, ops: ops))
            if ownRevisions.count > Self.keptOwnRevisions { ownRevisions.removeFirst() }
        }
        if let rev, rev > revision {
            if let shown = first.predicted {
                // The requests queued after it were made on top of what the view showed for it.
                applyConfirmed(ops, rev: rev, time: time, rebaseQueued: shown != ops, replacing: shown)
            } else {
                // Edits queued behind an undo / redo were made without its effect: rebase them over it.
                // (Edits queued behind a submit were made on top of it already.)
                let isSubmit = if case .submit = first.request { true } else { false }
                applyConfirmed(ops, rev: rev, time: time, rebaseQueued: !isSubmit)
            }
        } else {
            // The hub made no revision for a predicted undo or redo (nothing to take back, every part
            // skipped): what was queued after it goes back over its prediction.
            if let shown = first.predicted { takeBack(shown) }
            // Answered at a revision the confirmed state is already past (a replayed reply after a
            // full-state welcome): its effect is in the state or was undone since, and edits queued
            // behind it may no longer apply.
            pruneUnsent()
        }
        rebuildView()
        return true
    }

    /// `edit` (just taken off the outbox) made no undo step at the hub: it changed nothing, or was
    /// refused. An undo tied to it (`forQueuedEdit`) goes; so does a predicted undo or redo whose step
    /// it was alone. Their predictions and the edit's ops net to nothing in the view, so nothing
    /// queued after them moves.
    private mutating func noUndoStep(_ edit: Pending) {
        if let next = outbox.first, next.forQueuedEdit, next.predicted == nil, next.sentBase == nil {
            outbox.removeFirst()
            droppedUndos.append(edit.request)
        }
        var kept: [Pending] = []
        for var pending in outbox {
            if pending.predicted != nil, let index = pending.step.firstIndex(of: edit.id) {
                pending.step.remove(at: index)
                if pending.step.isEmpty, pending.sentBase == nil {
                    if case .undo = pending.request { droppedUndos.append(edit.request) }
                    continue
                }
            }
            kept.append(pending)
        }
        outbox = kept
    }

    /// A prediction the hub did not make come true at all: the requests queued after it were made on
    /// top of `shown`, so they are rebased over its exact inverse.
    private mutating func takeBack(_ shown: [Diff]) {
        guard !shown.isEmpty, let (inverse, order) = inverse(of: shown) else { return }
        rebaseOutbox(over: inverse, order: order)
    }

    /// The exact inverse of a prediction, taken on `confirmed` (where the request it was made for
    /// applies: it is the next one), and the order of people it starts from; nil if it does not apply.
    private func inverse(of shown: [Diff]) -> (ops: [Diff], order: [Tag])? {
        var probe = confirmed
        guard let undone = try? probe.apply(batch: shown, absentTags: .skip) else { return nil }
        return (undone.applied.reversed().map(\.inverse), probe.tags)
    }

    /// A revision of the hub's: applied to `confirmed` as it is (ops as applied are never transformed
    /// again), and the queued edits rebased over it when they were made without it. With `replacing`
    /// (a predicted undo's or redo's ops, which the requests queued after it were made on top of),
    /// they are rebased over those taken back, then over `ops`.
    private mutating func applyConfirmed(_ ops: [Diff], rev: Int, time: Int64?, rebaseQueued: Bool, replacing shown: [Diff] = []) {
        var order = confirmed.tags
        var seen = renamed(ops)
        if rebaseQueued, !shown.isEmpty, let (inverse, from) = inverse(of: shown) {
            seen = inverse + seen
            order = from
        }
        let result = try? confirmed.apply(batch: ops, absentTags: .skip)
        if let result, result.absent.isEmpty, rev == revision + 1 {
            recent.append((rev, result.applied))
            if recent.count > Self.keptRevisions { recent.removeFirst(recent.count - Self.keptRevisions) }
        } else {
            recent = []  // not the hub's next revision as it made it: nothing before it can be walked back
        }
        revision = rev
        revisionTime = time
        if rebaseQueued { rebaseOutbox(over: seen, order: order) }
    }

    /// The hub has another history than this client's (`welcome.reset`, before its full state is
    /// taken): every request goes again as new (the one in flight was made for the old history, and
    /// the hub never applied it); undos, redos and restores that name the old history's steps are
    /// dropped (those shown for queued edits stay with them); the tag blocks are the welcome's only,
    /// and queued inserts get tags from it (the old blocks may be a teammate's now). Returns how many
    /// requests were dropped.
    private mutating func forgetHistory(tags block: TagBlock) -> Int {
        tagBlocks = []
        knownBlocks = []
        nextTag = nil
        lastAnsweredCoalesce = nil
        let before = outbox.count
        outbox = outbox.filter { pending in
            if case .submit = pending.request { return true }
            return pending.predicted != nil || pending.forQueuedEdit
        }
        let dropped = before - outbox.count
        knownBlocks.insert(block)
        tagBlocks = [block]
        var retag: [Tag: Tag] = [:]
        for pending in outbox {
            guard case .submit(let ops, _, _) = pending.request else { continue }
            for case .insert(let person, _) in ops where !block.contains(person.tag) && retag[person.tag] == nil {
                guard let fresh = allocateTag() else { break }
                retag[person.tag] = fresh
            }
        }
        for index in outbox.indices {
            outbox[index].sentBase = nil
            outbox[index].predicted = outbox[index].predicted?.map { $0.retagged(retag) }
            switch outbox[index].request {
            case .submit(let ops, let label, let coalesce):
                outbox[index].request = .submit(ops: ops.map { $0.retagged(retag) }, label: label, coalesce: coalesce)
            case .undo(let scope?): outbox[index].request = .undo(scope: retag[scope] ?? scope)
            case .redo(let scope?): outbox[index].request = .redo(scope: retag[scope] ?? scope)
            default: break
            }
        }
        sentLocal = [:]
        return dropped
    }

    /// `ops` as a queued text edit must see them (call before applying them to `confirmed`): each
    /// re-insert of a person the hub removed earlier, under another name than it was removed with,
    /// followed by the `set(name)` it amounts to, for the people a queued edit types into. A re-insert
    /// replaces the name whole (decision 19), so the hub reports such a stale text edit `overwritten`
    /// and changes nothing; rebased as if the name had stayed, the view would show the typing in the
    /// new name until the ack. The room does the same (`ReinsertRenames`). Records the names of the
    /// people `ops` remove.
    private mutating func renamed(_ ops: [Diff]) -> [Diff] {
        let typed = Set(outbox.flatMap { pending -> [Tag] in
            guard case .submit(let wire, _, _) = pending.request else { return [] }
            return (localOps(pending) ?? wire).compactMap { if case .text(let tag, _) = $0 { tag } else { nil } }
        })
        var out: [Diff] = []
        for diff in ops {
            out.append(diff)
            switch diff {
            case .remove(let tag):
                if let person = confirmed[tag] { removedNames[tag] = person.name }
            case .insert(let person, _):
                if let old = removedNames.removeValue(forKey: person.tag), typed.contains(person.tag),
                   !old.sameScalars(as: person.name) {
                    out.append(.set(person.tag, .name(person.name)))
                }
            default:
                break
            }
        }
        return out
    }

    /// Rebases every pending submit over `incoming` (made on `order`, ordered before them by the hub;
    /// `confirmed` already includes it).
    ///
    /// Batches not yet sent are then pruned to what still applies (see `pruneUnsent`).
    private mutating func rebaseOutbox(over incoming: [Diff], order: [Tag]) {
        var incoming = incoming
        var order = order
        var kept: [Pending] = []
        for var pending in outbox {
            if let shown = pending.predicted {
                // A predicted undo or redo is in the view like an edit (never on the wire).
                pending.predicted = Transform.transform(shown, over: incoming, order: order).diffs
                incoming = Transform.transform(incoming, over: shown, order: order, incomingFirst: true).diffs
                order = shown.reduce(order) { Transform.applyOrder($1, to: $0) }
                kept.append(pending)
                continue
            }
            guard case .submit(let wire, let label, let coalesce) = pending.request else {
                kept.append(pending)
                continue
            }
            let ops = localOps(pending) ?? wire
            let mine = Transform.transform(ops, over: incoming, order: order).diffs
            incoming = Transform.transform(incoming, over: ops, order: order, incomingFirst: true).diffs
            order = ops.reduce(order) { Transform.applyOrder($1, to: $0) }
            if pending.sentBase == nil {
                pending.request = .submit(ops: mine, label: label, coalesce: coalesce)
            } else {
                // A batch already sent keeps its wire form (a resend must be identical); its local
                // copy is only used for the view.
                sentLocal[pending.seq] = mine
            }
            kept.append(pending)
        }
        outbox = kept
        pruneUnsent()
    }

    /// Keeps, in each batch not yet sent, only the diffs that apply on the state it will be sent
    /// from (`confirmed` plus the batches before it); drops batches left empty. The hub would refuse
    /// the others as `invalid-op` (a person now absent, a span past a shortened name), and they could
    /// change nothing there anyway.
    private mutating func pruneUnsent() {
        var model = confirmed
        var kept: [Pending] = []
        var previousDropped: Request?
        // Edits dropped here, by id: a predicted undo or redo whose step was only those goes too.
        var dropped: [Int: Request] = [:]
        for var pending in outbox {
            if let shown = pending.predicted {
                let left = pending.step.filter { dropped[$0] == nil }
                if left.isEmpty, !pending.step.isEmpty, pending.sentBase == nil {
                    if case .undo = pending.request, let edit = pending.step.compactMap({ dropped[$0] }).last { droppedUndos.append(edit) }
                    previousDropped = nil
                    continue
                }
                pending.step = left
                _ = try? model.apply(batch: shown, absentTags: .skip)
                previousDropped = nil
                kept.append(pending)
                continue
            }
            guard case .submit(let wire, let label, let coalesce) = pending.request else {
                // The undo of an edit dropped here goes with it.
                if let dropped = previousDropped, pending.forQueuedEdit, pending.sentBase == nil {
                    droppedUndos.append(dropped)
                    previousDropped = nil
                    continue
                }
                previousDropped = nil
                kept.append(pending)
                continue
            }
            previousDropped = nil
            guard pending.sentBase == nil else {
                _ = try? model.apply(batch: localOps(pending) ?? wire, absentTags: .skip)
                kept.append(pending)
                continue
            }
            let fitting = wire.filter { diff in (try? model.apply(diff)) != nil }
            if fitting.isEmpty {
                previousDropped = pending.request
                dropped[pending.id] = pending.request
                continue
            }
            pending.request = .submit(ops: fitting, label: label, coalesce: coalesce)
            kept.append(pending)
        }
        outbox = kept
    }

    /// Local (rebased) copies of batches already sent, for the view.
    var sentLocal: [Int: [Diff]] = [:]

    private func localOps(_ pending: Pending) -> [Diff]? {
        pending.sentBase == nil ? nil : sentLocal[pending.seq]
    }

    /// `view` = `confirmed` + the pending submits, each applied leniently (absent tags skip).
    private mutating func rebuildView() {
        sentLocal = sentLocal.filter { seq in outbox.contains { $0.seq == seq.key } }
        var model = confirmed
        for pending in outbox {
            _ = try? model.apply(batch: viewOps(pending), absentTags: .skip)
        }
        view = model
    }
}

extension Revision {
    /// A revision as a client sees it.
    public struct Summary: Hashable, Sendable {
        public var rev: Int
        public var author: String
        public var kind: RevisionKind
        public var label: String?
        public var diffs: [Diff]
        /// When the hub made it (nil from a hub that does not say).
        public var time: Int64?

        public init(rev: Int, author: String, kind: RevisionKind, label: String?, diffs: [Diff], time: Int64? = nil) {
            (self.rev, self.author, self.kind, self.label, self.diffs, self.time) = (rev, author, kind, label, diffs, time)
        }
    }
}
