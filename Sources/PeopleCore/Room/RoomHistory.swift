/// A room's kept history: the revisions after `floor`, and an index of them by tag.
///
/// The index is what keeps undo cheap: an undo looks at the events of the people its entry touched
/// (and, only when both old neighbours of a removed or moved person are gone, at the positional diffs), never at
/// the whole history.
struct RoomHistory: Sendable {
    /// One diff as applied, filed under its tag.
    struct TagEvent: Hashable, Sendable {
        var revision: Int
        var index: Int
        var author: String
        var kind: RevisionKind
        var target: DiffTarget
        var inverts: DiffRef?

        var ref: DiffRef { DiffRef(revision: revision, index: index) }
    }

    /// Revisions up to and including `floor` are no longer kept.
    private(set) var floor: Int
    private var kept: [Revision] = []
    private var keptStart = 0
    private(set) var events: [Tag: [TagEvent]] = [:]
    private(set) var lastWriter: [DiffTarget: String] = [:]
    /// Where each kept positional diff (insert, remove, move) is, oldest first.
    private(set) var positional: [DiffRef] = []

    /// How many kept positional diffs were made after `revision` (binary search).
    func positionalCount(after revision: Int) -> Int {
        var low = 0, high = positional.count
        while low < high {
            let mid = (low + high) / 2
            if positional[mid].revision <= revision { low = mid + 1 } else { high = mid }
        }
        return positional.count - low
    }

    init(floor: Int = 0) { self.floor = floor }

    /// The newest revision number.
    var head: Int { floor + kept.count - keptStart }

    func revision(_ number: Int) -> Revision? {
        guard number > floor, number <= head else { return nil }
        return kept[keptStart + number - floor - 1]
    }

    /// Revisions after `number` (which must be ≥ floor), oldest first.
    func revisions(after number: Int) -> ArraySlice<Revision> {
        precondition(number >= floor && number <= head)
        return kept[(keptStart + number - floor)...]
    }

    mutating func append(_ revision: Revision) {
        precondition(revision.number == head + 1, "revisions are appended in order")
        kept.append(revision)
        for (index, done) in revision.applied.enumerated() {
            let target = done.diff.target
            events[target.tag, default: []].append(
                TagEvent(revision: revision.number, index: index, author: revision.author, kind: revision.kind,
                         target: target, inverts: revision.inverts[index]))
            lastWriter[target] = revision.author  // insert and remove both write `.person(tag)`
            if done.diff.isPositional { positional.append(DiffRef(revision: revision.number, index: index)) }
        }
    }

    /// Forgets revisions so that at most `count` are kept (0 = keep all). Raises `floor`.
    mutating func trim(keeping count: Int) {
        guard count > 0, head - floor > count + count / 2 else { return }
        let newFloor = head - count
        keptStart += newFloor - floor
        floor = newFloor
        if keptStart > kept.count / 2 {
            kept.removeFirst(keptStart)
            keptStart = 0
        }
        positional.removeAll { $0.revision <= newFloor }
        for (tag, list) in events {
            let trimmed = list.filter { $0.revision > newFloor }
            events[tag] = trimmed.isEmpty ? nil : trimmed
        }
    }

    /// Events on `tag` after position (revision, index), newest first.
    func events(on tag: Tag, after revision: Int, index: Int) -> some Sequence<TagEvent> {
        (events[tag] ?? []).reversed().lazy.prefix { ($0.revision, $0.index) > (revision, index) }
    }

    /// The user who last wrote `target`, if any.
    func writer(of target: DiffTarget) -> String? { lastWriter[target] }
}
