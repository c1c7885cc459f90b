import PeopleCore

extension ServerMessage.LogEntry {
    /// The people this revision touched, in the order its ops first name them.
    public var tags: [Tag] {
        ops.reduce(into: []) { tags, diff in if !tags.contains(diff.tag) { tags.append(diff.tag) } }
    }

    /// Its label, or for one that came without, what it did (`RevisionKind.actionLabel`).
    public var actionLabel: String { kind.actionLabel(label, ops: ops) }

    /// A person this revision touched, by their name now; someone no longer in the room by the name
    /// they last had (in `known`: what this client saw, or what the rows at hand say, `lastNames`),
    /// else by their tag, marked `(gone)`: `Kim (gone)`, `tag 7 (gone)`.
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
    /// The last name each person had in these rows (newest first, as a timeline holds them), by tag:
    /// an insert's, then a name set or typed in a later row (typing into a name no row gave makes it
    /// unknown); the empty ones left out. Someone removed since keeps the name they had then: a person
    /// added as "New person" and renamed by typing is "Kim", not "New person".
    public var lastNames: [Tag: String] { lastNamings.mapValues(\.name) }

    /// `lastNames`, each with the revision of the row that gave it. A row that removed someone says the
    /// name they had then (`removed`, this hub's addition): one of the room's first people, removed
    /// before this client came, has a name too.
    public var lastNamings: [Tag: (name: String, rev: Int)] {
        var names: [Tag: (name: String, rev: Int)] = [:]
        for entry in reversed() {
            for diff in entry.ops {
                switch diff {
                case .insert(let person, _): names[person.tag] = (person.name, entry.rev)
                case .set(let tag, .name(let name)): names[tag] = (name, entry.rev)
                case .text(let tag, let edit): names[tag] = names[tag].flatMap { edit.apply(to: $0.name) }.map { ($0, entry.rev) }
                default: break
                }
            }
            for (tag, name) in entry.removed { names[tag] = (name, entry.rev) }
        }
        return names.filter { !$0.value.name.isEmpty }
    }
}

extension ServerMessage.Ops {
    /// Its label, or for one that came without, what it did (`RevisionKind.actionLabel`).
    public var actionLabel: String { kind.actionLabel(label, ops: ops) }
}

extension RevisionKind {
    /// A revision's `label`, or for one that came without (a script's batch), what its `ops` did
    /// (`[Diff].actionLabel`; a restore: "Restore an Earlier Version"), as the web page names it.
    public func actionLabel(_ label: String?, ops: [Diff]) -> String {
        label ?? (self == .restore ? "Restore an Earlier Version" : ops.actionLabel)
    }
}
