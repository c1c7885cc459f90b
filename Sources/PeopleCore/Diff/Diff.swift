/// A scalar field of a person, settable as a whole with `set`.
public enum Field: String, CaseIterable, Hashable, Sendable {
    case name, hairColor, hairLength, eyeColor, glasses
}

/// A value for one scalar field. Names compare by Unicode scalars (`String.sameScalars(as:)`).
public enum FieldValue: Hashable, Sendable {
    case name(String)
    case hairColor(HairColor)
    case hairLength(HairLength)
    case eyeColor(EyeColor)
    case glasses(Bool)

    public var field: Field {
        switch self {
        case .name: .name
        case .hairColor: .hairColor
        case .hairLength: .hairLength
        case .eyeColor: .eyeColor
        case .glasses: .glasses
        }
    }
}

extension FieldValue {
    public static func == (a: FieldValue, b: FieldValue) -> Bool {
        switch (a, b) {
        case (.name(let x), .name(let y)): x.sameScalars(as: y)
        case (.hairColor(let x), .hairColor(let y)): x == y
        case (.hairLength(let x), .hairLength(let y)): x == y
        case (.eyeColor(let x), .eyeColor(let y)): x == y
        case (.glasses(let x), .glasses(let y)): x == y
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(field)
        switch self {
        case .name(let v): v.hashScalars(into: &hasher)
        case .hairColor(let v): hasher.combine(v)
        case .hairLength(let v): hasher.combine(v)
        case .eyeColor(let v): hasher.combine(v)
        case .glasses(let v): hasher.combine(v)
        }
    }
}

extension Person {
    /// The current value of a scalar field.
    public func value(of field: Field) -> FieldValue {
        switch field {
        case .name: .name(name)
        case .hairColor: .hairColor(hairColor)
        case .hairLength: .hairLength(hairLength)
        case .eyeColor: .eyeColor(eyeColor)
        case .glasses: .glasses(glasses)
        }
    }

    /// Writes a scalar field.
    public mutating func assign(_ value: FieldValue) {
        switch value {
        case .name(let v): name = v
        case .hairColor(let v): hairColor = v
        case .hairLength(let v): hairLength = v
        case .eyeColor(let v): eyeColor = v
        case .glasses(let v): glasses = v
        }
    }
}

/// One operational diff. Every diff names the person it touches by tag, never by index alone.
///
/// Positions (`insert.at`, `move.to`) are indices that the hub rebases; they are clamped when applied
/// (`at` to 0…count, `to` to 0…count−1).
public enum Diff: Hashable, Sendable {
    case insert(Person, at: Int)
    case remove(Tag)
    case move(Tag, to: Int)
    case set(Tag, FieldValue)
    case facialHair(Tag, FacialHairStyle, present: Bool)
    case preference(Tag, Topic, Opinion)
    case text(Tag, TextOperation)

    /// The person this diff touches.
    public var tag: Tag {
        switch self {
        case .insert(let person, _): person.tag
        case .remove(let tag), .move(let tag, _), .set(let tag, _), .facialHair(let tag, _, _),
             .preference(let tag, _, _), .text(let tag, _):
            tag
        }
    }

    /// The same diff with its person's tag renamed by `map` (tags not in it stay).
    public func retagged(_ map: [Tag: Tag]) -> Diff {
        guard let new = map[tag] else { return self }
        switch self {
        case .insert(let person, let at): return .insert(person.retagged(new), at: at)
        case .remove: return .remove(new)
        case .move(_, let to): return .move(new, to: to)
        case .set(_, let value): return .set(new, value)
        case .facialHair(_, let style, let present): return .facialHair(new, style, present: present)
        case .preference(_, let topic, let opinion): return .preference(new, topic, opinion)
        case .text(_, let operation): return .text(new, operation)
        }
    }

    /// Whether the diff changes the order of the list (insert, remove, move).
    public var isPositional: Bool {
        switch self {
        case .insert, .remove, .move: true
        default: false
        }
    }

    public var isInsert: Bool {
        if case .insert = self { true } else { false }
    }

    /// What part of the person the diff writes, for last-writer lookups and skip reports.
    public var target: DiffTarget {
        switch self {
        case .insert(let person, _): .person(person.tag)
        case .remove(let tag): .person(tag)
        case .move(let tag, _): .position(tag)
        case .set(let tag, let value): .field(tag, value.field)
        case .text(let tag, _): .field(tag, .name)
        case .facialHair(let tag, let style, _): .facialHair(tag, style)
        case .preference(let tag, let topic, _): .preference(tag, topic)
        }
    }
}

/// The part of a person a diff writes: a register in last-writer-wins terms.
public enum DiffTarget: Hashable, Sendable {
    case person(Tag)
    case position(Tag)
    case field(Tag, Field)
    case facialHair(Tag, FacialHairStyle)
    case preference(Tag, Topic)

    public var tag: Tag {
        switch self {
        case .person(let t), .position(let t), .field(let t, _), .facialHair(let t, _), .preference(let t, _): t
        }
    }
}
