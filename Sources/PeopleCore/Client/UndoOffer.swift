/// What undo and redo offer: the step the next press takes back (or puts back), by its label, also
/// while requests of this user's are still queued (offline, or waiting for the hub).
///
/// The hub's `HistorySummary` is the top of its stacks after the requests it has answered; the outbox
/// holds the requests it has not. A press meets the hub's stacks with the outbox played over them, in
/// order: an edit or a restore pushes a step and clears the redo stack (consecutive edits with one
/// coalesce key are one step, as the hub makes them), an undo moves the newest step (touching its
/// person, when scoped) to the redo stack, a redo the other way. Queued steps are known with their
/// labels; of the hub's stacks only the top is known, so a press that reaches below it, a scoped one
/// that reaches the hub's steps (it may find none) or a selective undo (it may take the top) leaves
/// what follows unknown: the offer then has no label, never another step's.
///
/// Invariant: a label offered is the label of the step the next press takes back. Pure; the web
/// client's `undo-offer.js` is the same rules. An undo that goes with its edit because the edit changed
/// nothing (`forQueuedEdit`) counts as taking that edit back, as the user meant it.
public struct UndoOffer: Hashable, Sendable {
    public var canUndo: Bool
    public var undoLabel: String?
    public var canRedo: Bool
    public var redoLabel: String?
    /// The undo would take back an edit still queued here, not one the hub has answered.
    public var queued: Bool

    public init(canUndo: Bool, undoLabel: String?, canRedo: Bool, redoLabel: String?, queued: Bool) {
        self.canUndo = canUndo
        self.undoLabel = undoLabel
        self.canRedo = canRedo
        self.redoLabel = redoLabel
        self.queued = queued
    }

    /// The offer after `requests` (oldest first) are played over the hub's `history`.
    public init(history: HistorySummary, requests: [ClientSync.Request]) {
        self = Self.play(history: history, requests: requests.enumerated().map { ($0.offset, $0.element) }).offer
    }

    /// The stacks after `requests` (each with an id of the caller's) are played over the hub's
    /// `history`, and the offer they make. `ClientSync` reads the steps to show an undo or a redo of a
    /// queued edit at once (`Step.requests`, `Step.movedBy`).
    static func play(history: HistorySummary, requests: [(id: Int, request: ClientSync.Request)]) -> Play {
        var undo = Stack(hub: .known(can: history.canUndo, label: history.undoLabel))
        var redo = Stack(hub: .known(can: history.canRedo, label: history.redoLabel))
        // The coalesce key of the queued edit on top of the undo stack, while the next may join it.
        var run: String?
        for (id, request) in requests {
            switch request {
            case .submit(let ops, let label, let coalesce):
                let tags = Set(ops.map(\.tag))
                if let coalesce, coalesce == run, let top = undo.steps.indices.last {
                    undo.steps[top].tags?.formUnion(tags)
                    undo.steps[top].requests.append(id)
                } else {
                    undo.steps.append(Step(label: label, tags: tags, requests: [id]))
                }
                run = coalesce
                redo.clear()
            case .restore(let rev, let label):
                undo.steps.append(Step(label: label ?? "Restore to revision \(rev)", tags: nil, requests: [id], restore: true))
                run = nil
                redo.clear()
            case .undo(let scope):
                run = nil
                Stack.moveNewest(from: &undo, to: &redo, scope: scope, by: id)
            case .redo(let scope):
                run = nil
                Stack.moveNewest(from: &redo, to: &undo, scope: scope, by: id)
            case .undoEntry:
                // One of the hub's steps, perhaps its top, or one an undo and a redo brought back on top
                // of the queued ones: what is on top afterwards is not known. (Queued edits have no
                // entry id yet: a selective undo cannot take them.)
                run = nil
                if undo.steps.contains(where: \.fromHub) { undo.forget() } else { undo.hub = .unknown }
                redo.forget()
            }
        }
        let (canUndo, undoLabel) = undo.top
        let (canRedo, redoLabel) = redo.top
        // A step an undo and a redo brought back off the hub's top is the hub's, not a queued edit.
        let offer = UndoOffer(canUndo: canUndo, undoLabel: undoLabel, canRedo: canRedo, redoLabel: redoLabel,
                              queued: undo.steps.last.map { !$0.fromHub } ?? false)
        return Play(undo: undo.steps, redo: redo.steps, offer: offer)
    }

    /// The known steps of both stacks, oldest first, after a play.
    struct Play {
        var undo: [Step]
        var redo: [Step]
        var offer: UndoOffer
    }

    /// A step on a stack: its label (nil when it came without one), the people it touches (nil: any),
    /// and whether it is one of the hub's (taken off its known top), not a queued request's.
    struct Step {
        var label: String?
        var tags: Set<Tag>?
        var fromHub = false
        /// The queued requests that made it (its edits, several when they coalesce; or a restore).
        var requests: [Int] = []
        var restore = false
        /// The undo or redo that last moved it from one stack to the other (nil: never moved).
        var movedBy: Int?
    }

    /// The hub's part of one stack: its top as the summary gave it, or unknown once passed.
    private enum HubTop {
        case known(can: Bool, label: String?)
        case unknown
    }

    private struct Stack {
        var steps: [Step] = []
        var hub: HubTop

        /// An edit or a restore clears the redo stack: nothing is left to redo, the hub's steps included.
        mutating func clear() {
            steps = []
            hub = .known(can: false, label: nil)
        }

        /// A stack that may or may not have gained a step: neither its top nor its depth is known.
        mutating func forget() {
            steps = []
            hub = .unknown
        }

        var top: (Bool, String?) {
            if let step = steps.last { return (true, step.label) }
            switch hub {
            case .known(let can, let label): return (can, label)
            case .unknown: return (true, nil)
            }
        }

        /// One press: the newest step of `from` (touching `scope`, when given) goes on top of `to`. Of
        /// the hub's steps only the top is known, and only an unscoped press surely takes it; any other
        /// press that reaches the hub's steps may take one or none, so what `to` holds is then unknown.
        /// A scoped press that meets a step whose people are not known (one of the hub's, a restore)
        /// may take it or pass it: neither stack's top is known then.
        static func moveNewest(from: inout Stack, to: inout Stack, scope: Tag?, by press: Int) {
            for index in from.steps.indices.reversed() {
                if let scope {
                    guard let tags = from.steps[index].tags else {
                        from.forget()
                        to.forget()
                        return
                    }
                    guard tags.contains(scope) else { continue }
                }
                var step = from.steps.remove(at: index)
                step.movedBy = press
                to.steps.append(step)
                return
            }
            if case .known(false, _) = from.hub { return }  // the hub will answer that there is nothing
            if case .known(_, let label) = from.hub, scope == nil {
                to.steps.append(Step(label: label, tags: nil, fromHub: true))
            } else {
                to.forget()
            }
            from.hub = .unknown
        }
    }
}
