/// A person's tag: positive, unique in a room, never reused for a different person.
public typealias Tag = Int

/// One person in a room, identified by `tag`.
///
/// Likes and dislikes are stored as one register per topic (`opinions`), so a topic can never be in
/// both sets: `likes` and `dislikes` are views of that register, not stored sets. Names compare by
/// Unicode scalars, not by Swift's canonical equivalence (SEMANTICS §7 reading 7): "é" and "e\u{301}"
/// are different names.
public struct Person: Identifiable, Hashable, Sendable {
    public let tag: Tag
    public var name: String
    public var hairColor: HairColor
    public var hairLength: HairLength
    public var eyeColor: EyeColor
    public var glasses: Bool
    public var facialHair: Set<FacialHairStyle>
    /// One register per topic; a topic absent from the dictionary is `.none`. Never stores `.none`.
    public private(set) var opinions: [Topic: Opinion]

    public var id: Tag { tag }

    public init(
        tag: Tag,
        name: String,
        hairColor: HairColor = .brown,
        hairLength: HairLength = .short,
        eyeColor: EyeColor = .brown,
        glasses: Bool = false,
        facialHair: Set<FacialHairStyle> = [],
        likes: Set<Topic> = [],
        dislikes: Set<Topic> = []
    ) {
        self.tag = tag
        self.name = name
        self.hairColor = hairColor
        self.hairLength = hairLength
        self.eyeColor = eyeColor
        self.glasses = glasses
        self.facialHair = facialHair
        var opinions: [Topic: Opinion] = [:]
        for topic in dislikes { opinions[topic] = .dislike }
        for topic in likes { opinions[topic] = .like }
        self.opinions = opinions
    }

    /// The same person under another tag.
    public func retagged(_ tag: Tag) -> Person {
        var copy = Person(tag: tag, name: name, hairColor: hairColor, hairLength: hairLength, eyeColor: eyeColor,
                          glasses: glasses, facialHair: facialHair)
        copy.opinions = opinions
        return copy
    }

    /// The topic's register.
    public func opinion(on topic: Topic) -> Opinion { opinions[topic] ?? .none }

    /// Writes the topic's register; `.none` clears it.
    public mutating func setOpinion(_ opinion: Opinion, on topic: Topic) {
        opinions[topic] = opinion == .none ? nil : opinion
    }

    /// Topics this person likes, in vocabulary order.
    public var likes: [Topic] { Topic.allCases.filter { opinions[$0] == .like } }

    /// Topics this person dislikes, in vocabulary order.
    public var dislikes: [Topic] { Topic.allCases.filter { opinions[$0] == .dislike } }

    /// Facial hair styles in vocabulary order.
    public var facialHairInOrder: [FacialHairStyle] { FacialHairStyle.allCases.filter(facialHair.contains) }
}

extension Person {
    public static func == (a: Person, b: Person) -> Bool {
        a.tag == b.tag && a.name.sameScalars(as: b.name) && a.hairColor == b.hairColor
            && a.hairLength == b.hairLength && a.eyeColor == b.eyeColor && a.glasses == b.glasses
            && a.facialHair == b.facialHair && a.opinions == b.opinions
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(tag)
        name.hashScalars(into: &hasher)
        hasher.combine(hairColor)
        hasher.combine(hairLength)
        hasher.combine(eyeColor)
        hasher.combine(glasses)
        hasher.combine(facialHair)
        hasher.combine(opinions)
    }
}

extension String {
    /// Whether both hold the same Unicode scalars: how names, values and inserted text compare
    /// (SEMANTICS §7 reading 7). Swift's `==` is canonical equivalence ("é" == "e\u{301}"), which would
    /// make an edit that only changes a name's normalization look like no change.
    @inlinable
    public func sameScalars(as other: String) -> Bool { utf8.elementsEqual(other.utf8) }

    /// Feeds the hasher what `sameScalars(as:)` compares.
    func hashScalars(into hasher: inout Hasher) {
        hasher.combine(utf8.count)
        for byte in utf8 { hasher.combine(byte) }
    }
}
