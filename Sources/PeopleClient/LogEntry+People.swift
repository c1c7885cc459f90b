import PeopleCore

extension ServerMessage.LogEntry {
    /// The people this revision touched, in the order its ops first name them.
    public var tags: [Tag] {
        ops.reduce(into: []) { tags, diff in if !tags.contains(diff.tag) { tags.append(diff.tag) } }
    }

    /// Its label, or for one that came without, what it did (`[Diff].actionLabel`; a restore:
    /// "Restore an Earlier Version"), as the web page names it.
    public var actionLabel: String {
        label ?? (kind == .restore ? "Restore an Earlier Version" : ops.actionLabel)
    }

    /// A person this revision touched, by their name now; someone no longer in the room by the name an
    /// insert gave them (in `known`: what the rows at hand inserted), else by their tag, marked
    /// `(gone)`: `Kim (gone)`, `tag 7 (gone)`.
    public func name(of tag: Tag, now people: PeopleModel, known: [Tag: String] = [:]) -> String {
        if let person = people[tag] { return person.name.isEmpty ? "tag \(tag)" : person.name }
        return "\(known[tag] ?? "tag \(tag)") (gone)"
    }

    /// Everyone this revision touched, by `name(of:now:known:)`: `Joan, Sam`.
    public func peopleWords(now people: PeopleModel, known: [Tag: String] = [:]) -> String {
        tags.map { name(of: $0, now: people, known: known) }.joined(separator: ", ")
    }
}

extension Sequence<ServerMessage.LogEntry> {
    /// The people the inserts in these rows put in, by tag (the newest row's where several did), to
    /// name people who are no longer in the room.
    public var insertedPeople: [Tag: Person] {
        var people: [Tag: Person] = [:]
        for entry in self {
            for case .insert(let person, _) in entry.ops where people[person.tag] == nil { people[person.tag] = person }
        }
        return people
    }

    /// The names `insertedPeople` gave (the empty ones left out).
    public var insertedNames: [Tag: String] {
        insertedPeople.compactMapValues { $0.name.isEmpty ? nil : $0.name }
    }
}
