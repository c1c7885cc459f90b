/// Who wrote something, and when: a user (nil for the seed, which is nobody's) at a revision.
public struct Writer: Hashable, Sendable {
    public var user: String?
    public var rev: Int
    /// Milliseconds since the epoch; nil for revision 0.
    public var time: Int64?

    public init(user: String?, rev: Int, time: Int64?) {
        self.user = user
        self.rev = rev
        self.time = time
    }

    /// The seed's writer: nobody, at revision 0.
    public static let seed = Writer(user: nil, rev: 0, time: nil)
}

/// The parts of a person `blame` names one writer for: the scalar fields and the position.
public enum BlameField: String, CaseIterable, Hashable, Sendable {
    case name, hairColor, hairLength, eyeColor, glasses, position
}

/// Who last wrote each part of one person (HISTORY §5): every scalar field, the position, and each
/// facial-hair style and topic register ever written.
///
/// An insert (a re-insert by an undo or a restore too) writes every field, the position and every
/// element it lists; an element it does not list keeps its last writer from before the person was
/// removed. Undo, redo and restore revisions are writes by their author like edits.
public struct PersonBlame: Hashable, Sendable {
    public var created: Writer
    public var fields: [BlameField: Writer]
    public var facialHair: [FacialHairStyle: Writer]
    public var preference: [Topic: Writer]

    public init(inserted person: Person, by writer: Writer) {
        created = writer
        fields = Dictionary(uniqueKeysWithValues: BlameField.allCases.map { ($0, writer) })
        facialHair = Dictionary(uniqueKeysWithValues: person.facialHair.map { ($0, writer) })
        var preference: [Topic: Writer] = [:]
        for topic in person.likes + person.dislikes { preference[topic] = writer }
        self.preference = preference
    }

    public init(created: Writer, fields: [BlameField: Writer], facialHair: [FacialHairStyle: Writer],
                preference: [Topic: Writer]) {
        self.created = created
        self.fields = fields
        self.facialHair = facialHair
        self.preference = preference
    }

    /// Files a diff (other than insert and remove) as applied to this person by `writer`.
    mutating func record(_ diff: Diff, by writer: Writer) {
        switch diff {
        case .set(_, let value): fields[BlameField(value.field)] = writer
        case .text: fields[.name] = writer
        case .move: fields[.position] = writer
        case .facialHair(_, let style, _): facialHair[style] = writer
        case .preference(_, let topic, _): preference[topic] = writer
        case .insert, .remove: break
        }
    }
}

extension Person {
    /// Whether inserting this person (a re-insert by an undo, redo or restore included) writes `target`:
    /// every field and the position, and only the facial-hair styles and topics it lists (HISTORY §5,
    /// decision 17). The blame record, a report's `by` and the undo guards all read writes this way.
    func insertWrites(_ target: DiffTarget) -> Bool {
        switch target {
        case .person, .position, .field: true
        case .facialHair(_, let style): facialHair.contains(style)
        case .preference(_, let topic): opinion(on: topic) != .none
        }
    }
}

extension BlameField {
    init(_ field: Field) {
        switch field {
        case .name: self = .name
        case .hairColor: self = .hairColor
        case .hairLength: self = .hairLength
        case .eyeColor: self = .eyeColor
        case .glasses: self = .glasses
        }
    }
}

/// The last writers of every person present in a room, kept up to date revision by revision.
struct BlameIndex: Hashable, Sendable {
    private(set) var people: [Tag: PersonBlame] = [:]

    /// The seed's people, written by nobody at revision 0.
    init(seed: PeopleModel) {
        for person in seed.people { people[person.tag] = PersonBlame(inserted: person, by: .seed) }
    }

    /// `departed`: the records of people removed, oldest removal first (the last `departedKept` are kept).
    init(people: [Tag: PersonBlame], departed: [(tag: Tag, record: PersonBlame)] = []) {
        self.people = people
        // An older snapshot may hold more (in tag order): only the last are gone through.
        for (tag, record) in departed.suffix(Self.departedKept) { depart(tag, record) }
    }

    subscript(tag: Tag) -> PersonBlame? { people[tag] }

    /// The records of people removed, kept for the elements a re-insert does not list and for skip
    /// reports' `by`: those of the `departedKept` people removed last (`removals`, oldest first). A
    /// room that adds and removes people for ever kept every record, in memory and in each snapshot
    /// (757 bytes each: 96 % of a generated 100,000-revision room's snapshot). Someone put back by a
    /// restore or an undo after more removals than that is blamed as a new insert by that revision
    /// (the product contract's "elements ever written" reads as "since they were last put back"
    /// there; docs/HISTORY.md).
    private(set) var departed: [Tag: PersonBlame] = [:]
    /// The tags of `departed`, in the order they were removed.
    private(set) var removals: [Tag] = []
    static let departedKept = 1_000

    /// The people removed, oldest removal first: what a snapshot keeps.
    var departedInOrder: [(tag: Tag, record: PersonBlame)] { removals.compactMap { tag in departed[tag].map { (tag, $0) } } }

    private mutating func depart(_ tag: Tag, _ record: PersonBlame) {
        if departed.updateValue(record, forKey: tag) != nil { removals.removeAll { $0 == tag } }
        removals.append(tag)
        if removals.count > Self.departedKept { departed[removals.removeFirst()] = nil }
    }

    /// Files a committed revision's applied diffs.
    mutating func record(_ revision: Revision) {
        let writer = Writer(user: revision.author, rev: revision.number, time: revision.timestamp)
        for done in revision.applied {
            switch done.diff {
            case .insert(let person, _):
                var record = PersonBlame(inserted: person, by: writer)
                if let old = departed.removeValue(forKey: person.tag) {
                    removals.removeAll { $0 == person.tag }
                    record.facialHair.merge(old.facialHair) { new, _ in new }
                    record.preference.merge(old.preference) { new, _ in new }
                }
                people[person.tag] = record
            case .remove(let tag):
                if let record = people.removeValue(forKey: tag) { depart(tag, record) }
            default:
                people[done.diff.tag]?.record(done.diff, by: writer)
            }
        }
    }
}

extension Room {
    /// Who a report's `by` names: the latest user who wrote that field, position, style or register of
    /// a present person, as `blame` says it (an insert, re-inserts by an undo or a restore included:
    /// they write every field); for a person, the latest remover or inserter. Nil for the seed's values.
    func writer(of target: DiffTarget) -> String? {
        // A person removed since keeps their record (the elements a re-insert does not list keep it
        // too), so the writer of a field of someone an undo is putting back is still blame's.
        guard let record = blame[target.tag] ?? blame.departed[target.tag] else { return history.writer(of: target) }
        switch target {
        case .person: return history.writer(of: target)
        case .position: return record.fields[.position]?.user
        case .field(_, let field): return record.fields[BlameField(field)]?.user
        // An element nobody ever wrote (the insert did not list it) has no writer.
        case .facialHair(_, let style): return record.facialHair[style]?.user
        case .preference(_, let topic): return record.preference[topic]?.user
        }
    }
}
