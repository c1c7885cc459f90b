/// One step on a user's undo or redo stack: a batch the user made, or a coalesced run of them.
public struct UndoEntry: Hashable, Sendable {
    /// One batch of the entry: what it applied, at which revision.
    public struct Part: Hashable, Sendable {
        public var revision: Int
        public var applied: [AppliedDiff]

        public init(revision: Int, applied: [AppliedDiff]) {
            self.revision = revision
            self.applied = applied
        }
    }

    public var label: String?
    /// Oldest first; undone newest first.
    public var parts: [Part]
    public var tags: Set<Tag>

    public init(label: String?, parts: [Part]) {
        self.label = label
        self.parts = parts
        self.tags = Set(parts.flatMap { $0.applied.map(\.diff.tag) })
    }

    mutating func append(_ part: Part) {
        parts.append(part)
        tags.formUnion(part.applied.map(\.diff.tag))
    }

    /// The oldest revision the entry needs history after.
    var oldestRevision: Int { parts.first?.revision ?? 0 }

    /// The entry's id (HISTORY §1): the revision of the first batch it recorded (for an entry pushed
    /// by an undo or a redo, that revision). Unique in a room, and the same after a restart.
    public var id: Int { oldestRevision }
}

/// A user's undo and redo stacks in one room, and the coalescing run in progress.
public struct UndoStacks: Hashable, Sendable {
    public internal(set) var undo: [UndoEntry] = []
    public internal(set) var redo: [UndoEntry] = []
    /// The run the newest undo entry may still grow: its key and the time of its last batch.
    var run: Run?

    struct Run: Hashable, Sendable {
        var key: String
        var time: Int64
    }

    public init() {}

    public var summary: HistorySummary {
        HistorySummary(canUndo: !undo.isEmpty, canRedo: !redo.isEmpty, undoLabel: undo.last?.label,
                       redoLabel: redo.last?.label)
    }

    /// What `history` says, and which steps the stacks hold: a step added or consumed whose label
    /// leaves the summary as it was (a new step labelled as the one before, a selective undo of an
    /// older one) changes the stacks too, and the user's other connections read their marks again on
    /// `history` (a black-box pass, session 43: a step another tab undid kept its "Undo this"). A batch
    /// added to a coalescing run changes no step.
    struct Shape: Equatable {
        var summary: HistorySummary
        var undoCount: Int, redoCount: Int
        var undoTop: Int?, redoTop: Int?
    }

    var shape: Shape {
        Shape(summary: summary, undoCount: undo.count, redoCount: redo.count, undoTop: undo.last?.id, redoTop: redo.last?.id)
    }

    /// Index of the newest entry (touching `scope`, if given).
    static func newest(in stack: [UndoEntry], scope: Tag?) -> Int? {
        guard let scope else { return stack.indices.last }
        return stack.lastIndex { $0.tags.contains(scope) }
    }

    static func push(_ entry: UndoEntry, onto stack: inout [UndoEntry], depth: Int) {
        stack.append(entry)
        if depth > 0, stack.count > depth { stack.removeFirst(stack.count - depth) }
    }
}
