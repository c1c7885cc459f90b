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

    /// What the change does, as a teammate's notice says it: "changed Sam's glasses", "added Kim".
    func clause(people: PeopleModel) -> String {
        switch self {
        case .insert(let p, _): "added \(p.name.isEmpty ? "tag \(p.tag)" : p.name)"
        case .remove(let tag): "removed \(people.called(tag))"
        case .move(let tag, _): "moved \(people.called(tag))"
        case .set(let tag, let value): "changed \(people.called(tag))'s \(value.field.words)"
        case .facialHair(let tag, _, _): "changed \(people.called(tag))'s facial hair"
        case .preference(let tag, _, _): "changed \(people.called(tag))'s likes"
        case .text(let tag, _): "changed \(people.called(tag))'s name"
        }
    }

    /// The person the diff touches, by name.
    func who(people: PeopleModel) -> String {
        switch self {
        case .insert(let p, _): p.name.isEmpty ? "tag \(p.tag)" : p.name
        case .remove(let tag), .move(let tag, _), .set(let tag, _), .facialHair(let tag, _, _),
             .preference(let tag, _, _), .text(let tag, _): people.called(tag)
        }
    }
}

extension Revision.Summary {
    /// A teammate's revision as one sentence naming whom it touched, with the people as they were
    /// before it: "carol changed Sam's glasses", "bob added Kim", "bob undid Toggle Glasses for Sam".
    /// One by `me` (this user, from another window, a script or the HTTP API) reads "you (elsewhere)
    /// changed Sam's glasses".
    ///
    /// An edit that only renames one person (a name typed or set) says the new name too, from
    /// `after` (the people now): "bob renamed Sam to Samuel"; `renamedFrom` is the name the person had
    /// when a run of such edits began (a name typed a letter at a time is one revision a letter: the
    /// screen keeps the first name, not "Samue to Samuel"). Before, "bob changed Sam's name" left the
    /// reader to find out what it was now (a black-box pass of the terminal client).
    public func sentence(people: PeopleModel, me: String? = nil, after: PeopleModel? = nil,
                         renamedFrom: String? = nil) -> String {
        let author = me != nil && self.author == me ? "you (elsewhere)" : self.author
        if let tag = renamed, let now = after?[tag]?.name, !now.isEmpty {
            let was = renamedFrom ?? people.called(tag)
            return was == now ? "\(author) changed \(now)'s name" : "\(author) renamed \(was) to \(now)"
        }
        func distinct(_ words: [String]) -> [String] { words.reduce(into: []) { if !$0.contains($1) { $0.append($1) } } }
        func list(_ words: [String]) -> String {
            words.count <= 2 ? words.joined(separator: " and ")
                : words.prefix(2).joined(separator: ", ") + " and \(words.count - 2) more"
        }
        switch kind {
        case .edit:
            let clauses = distinct(diffs.map { $0.clause(people: people) })
            return "\(author) \(clauses.isEmpty ? "changed nothing" : list(clauses))"
        case .undo, .redo:
            let verb = kind == .undo ? "undid" : "redid"
            let whom = distinct(diffs.map { $0.who(people: people) })
            return "\(author) \(verb) \(label ?? "a change")\(whom.isEmpty ? "" : " for " + list(whom))"
        case .restore:
            return "\(author) restored the room: \(label ?? "an earlier revision")"
        }
    }

    /// The person an edit only renames (its diffs all type or set that person's name), or nil.
    public var renamed: Tag? {
        guard kind == .edit, let tag = diffs.first?.tag else { return nil }
        let renames = diffs.allSatisfy { diff in
            switch diff {
            case .text(let t, _), .set(let t, .name): t == tag
            default: false
            }
        }
        return renames ? tag : nil
    }
}
