import IdentifiedCollections

/// The authoritative state of one room: an ordered list of people keyed by tag.
///
/// A value type: copies are cheap until written (copy-on-write of the underlying storage).
public struct PeopleModel: Hashable, Sendable {
    public var people: IdentifiedArrayOf<Person>

    public init(people: [Person] = []) {
        self.people = IdentifiedArray(uniqueElements: people)
    }

    public init(people: IdentifiedArrayOf<Person>) {
        self.people = people
    }

    public var count: Int { people.count }
    public var tags: [Tag] { people.ids.elements }
    public subscript(tag: Tag) -> Person? { people[id: tag] }
    public func index(of tag: Tag) -> Int? { people.index(id: tag) }
    public func contains(_ tag: Tag) -> Bool { people.ids.contains(tag) }

    /// The seed people of the People Keeper tutorial (Bob, Joan and Sam), tags 1…3.
    public static let tutorialSeed = PeopleModel(people: [
        Person(tag: 1, name: "Bob", hairColor: .brown, hairLength: .short, eyeColor: .blue,
               glasses: true, facialHair: [.beard], likes: [.sports, .food], dislikes: [.politics]),
        Person(tag: 2, name: "Joan", hairColor: .red, hairLength: .long, eyeColor: .green,
               glasses: false, facialHair: [], likes: [.books, .art], dislikes: [.sports]),
        Person(tag: 3, name: "Sam", hairColor: .black, hairLength: .medium, eyeColor: .brown,
               glasses: false, facialHair: [.mustache, .stubble], likes: [.music, .technology],
               dislikes: [.weather]),
    ])
}

extension PeopleModel {
    /// A broken invariant, named.
    public struct InvariantViolation: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Checks every invariant of SEMANTICS §1 and returns the first one broken, if any.
    ///
    /// Uniqueness of tags holds by construction (identified array); likes/dislikes exclusivity holds
    /// by construction (one register per topic). What is checked: tags are positive, names are within
    /// the limit and hold no lone surrogate (Swift strings cannot), registers never store `.none`.
    public func invariantViolation() -> InvariantViolation? {
        var seen = Set<Tag>()
        for person in people {
            if person.tag <= 0 { return .init(description: "tag \(person.tag) is not positive") }
            if !seen.insert(person.tag).inserted { return .init(description: "tag \(person.tag) twice") }
            if !NameLimit.allows(person.name) {
                return .init(description: "name of \(person.tag) is over \(NameLimit.maxUTF8Bytes) bytes")
            }
            if person.opinions.values.contains(.none) {
                return .init(description: "register of \(person.tag) stores none")
            }
            if Set(person.likes).intersection(person.dislikes).isEmpty == false {
                return .init(description: "a topic of \(person.tag) is both liked and disliked")
            }
        }
        return nil
    }

    /// Traps when an invariant is broken. Called after every apply in debug builds and in tests.
    public func checkInvariants() {
        if let violation = invariantViolation() {
            preconditionFailure("PeopleModel invariant broken: \(violation)")
        }
    }
}
