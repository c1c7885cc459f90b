import PeopleCore

extension PeopleModel {
    /// A person's name for a sentence: the name, or "tag N" when the person is gone or unnamed.
    public func called(_ tag: Tag) -> String {
        guard let name = self[tag]?.name, !name.isEmpty else { return "tag \(tag)" }
        return name
    }
}

extension Diff {
    /// The change in a few words, in the client's one vocabulary, naming the person as `people` has
    /// them: "Ann's glasses off", "Ann's hair color to red", "Joan likes music", "added Kim (tag 104)
    /// at 0". What `set` prints after "set " and what `watch` prints for each diff.
    public func phrase(people: PeopleModel) -> String {
        switch self {
        case .insert(let p, let at): return "added \(p.name) (tag \(p.tag)) at \(at)"
        case .remove(let tag): return "removed \(people.called(tag))"
        case .move(let tag, let to): return "moved \(people.called(tag)) to \(to)"
        case .set(let tag, .glasses(let on)): return "\(people.called(tag))'s glasses \(onOff(on))"
        case .set(let tag, let value): return "\(people.called(tag))'s \(value.field.words) to \(value.words)"
        case .facialHair(let tag, let style, let present): return "\(people.called(tag))'s \(style.rawValue) \(onOff(present))"
        case .preference(let tag, let topic, let opinion):
            let verb = switch opinion { case .like: "likes"; case .dislike: "dislikes"; case .none: "is neutral on" }
            return "\(people.called(tag)) \(verb) \(topic.rawValue)"
        case .text(let tag, _): return "\(people.called(tag))'s name typed"
        }
    }
}
