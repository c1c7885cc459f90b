/// A model walked through revisions: back through their exact inverses (from today's model to an
/// older one) or forward through their diffs as applied (from a checkpoint to a later one). People by
/// tag and the tag order are kept apart, so that a field's diff costs a dictionary write and a move's
/// an array shift, not a list rebuild each: going 100,000 revisions in a room of 1,000 people costs
/// what the diffs cost.
///
/// Both directions are exact: an inverse was captured when its diff was applied, and `AppliedDiff.diff`
/// is the diff as applied (resolved index, plain values), so it applies again to the model it met.
/// Who calls it: `Room.model(at:older:checkpoint:)` (restore, `?at=`, the export's first people).
struct ModelWalk {
    private var people: [Tag: Person]
    private var order: [Tag]

    init(_ model: PeopleModel) {
        people = Dictionary(uniqueKeysWithValues: model.people.map { ($0.tag, $0) })
        order = model.tags
    }

    var model: PeopleModel { PeopleModel(people: order.map { people[$0]! }) }

    /// Undoes one revision's applied diffs, newest first (walk revisions newest first).
    mutating func undo(_ applied: [AppliedDiff]) {
        for done in applied.reversed() { apply(done.inverse) }
    }

    /// Applies one revision's diffs again, in order (walk revisions oldest first).
    mutating func redo(_ applied: [AppliedDiff]) {
        for done in applied { apply(done.diff) }
    }

    private mutating func apply(_ diff: Diff) {
        switch diff {
        case .insert(let person, let at):
            people[person.tag] = person
            order.insert(person.tag, at: min(max(at, 0), order.count))
        case .remove(let tag):
            people[tag] = nil
            if let index = order.firstIndex(of: tag) { order.remove(at: index) }
        case .move(let tag, let to):
            guard let from = order.firstIndex(of: tag) else { return }
            order.remove(at: from)
            order.insert(tag, at: min(max(to, 0), order.count))
        case .set(let tag, let value):
            people[tag]?.assign(value)
        case .facialHair(let tag, let style, let present):
            if present { people[tag]?.facialHair.insert(style) } else { people[tag]?.facialHair.remove(style) }
        case .preference(let tag, let topic, let opinion):
            people[tag]?.setOpinion(opinion, on: topic)
        case .text(let tag, let operation):
            if let name = people[tag]?.name, let new = operation.apply(to: name) { people[tag]!.name = new }
        }
    }
}
