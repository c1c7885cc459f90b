import PeopleCore

/// People, diffs and batches built from fuzzer bytes.
///
/// Names and inserted text come from small pools chosen to reach the core's edges: the empty name,
/// names just under the 200-byte limit (so typing pushes them over), a name under the limit only when
/// measured on its NFC form (99 × e + U+0301: 297 bytes as sent, 198 in NFC), combining marks, astral
/// scalars, flag halves, and the precomposed é, so that an edit can turn a name into a canonically
/// equivalent one with other scalars (é for e + U+0301): a change, since names compare by scalars
/// (SEMANTICS §7 reading 7; Tests/Fuzz/regressions/README.md, apply 1).
enum FuzzEdits {
    static let names: [String] = [
        "", "Ann", "Bob", "Joan", "e\u{301}", "😀x", "🇫🇷", "a\u{301}\u{302}b",
        String(repeating: "x", count: 199), String(repeating: "e\u{301}", count: 99), "\u{E9}",
    ]

    static let snippets: [String] = ["a", "Z", "e", "\u{301}", "😀", "🇫", " ", String(repeating: "y", count: 120), "\u{E9}"]

    static func person(tag: Tag, _ bytes: inout FuzzBytes) -> Person {
        let facial = bytes.byte()
        var likes = Set<Topic>()
        var dislikes = Set<Topic>()
        for (k, topic) in Topic.allCases.enumerated() where k < 8 || bytes.bool() {
            switch bytes.int(0...3) {
            case 0: likes.insert(topic)
            case 1: dislikes.insert(topic)
            default: break
            }
        }
        let styles = FacialHairStyle.allCases.enumerated().filter { Int(facial) & (1 << $0.offset) != 0 }.map(\.element)
        return Person(
            tag: tag, name: bytes.pick(names), hairColor: bytes.pick(HairColor.allCases),
            hairLength: bytes.pick(HairLength.allCases), eyeColor: bytes.pick(EyeColor.allCases),
            glasses: bytes.bool(), facialHair: Set(styles), likes: likes, dislikes: dislikes)
    }

    /// 1…5 people tagged 1…n.
    static func model(_ bytes: inout FuzzBytes) -> PeopleModel {
        PeopleModel(people: (1...bytes.int(1...5)).map { person(tag: $0, &bytes) })
    }

    /// A text edit of `name`, from untrusted counts: it may reach past the end (nil when the wire
    /// decoder would refuse it).
    static func textOperation(on name: String, _ bytes: inout FuzzBytes) -> TextOperation? {
        let length = name.unicodeScalars.count
        var components: [TextOperation.Component] = []
        for _ in 0..<bytes.int(1...4) {
            switch bytes.int(0...2) {
            case 0: components.append(.retain(1 + bytes.int(0...(min(length, 250)))))
            case 1: components.append(.delete(1 + bytes.int(0...(min(length, 250)))))
            default: components.append(.insert(bytes.pick(snippets)))
            }
        }
        return try? TextOperation.validated(components).get()
    }

    /// One diff on `model`, not necessarily valid there: the tag may be absent, a text span may reach
    /// past the end, a name may be over the limit. Inserts take their tag from `nextTag`.
    static func diff(on model: PeopleModel, nextTag: inout Tag, _ bytes: inout FuzzBytes) -> Diff? {
        let kind = bytes.int(0...7)
        let choice = bytes.byte()
        // Mostly a present tag; one in eight names a tag absent here (removed, or never there).
        let tag: Tag = model.count > 0 && choice % 8 != 7 ? model.tags[Int(choice) % model.count] : Int(choice % 16) + 1
        switch kind {
        case 0:
            defer { nextTag += 1 }
            return .insert(person(tag: nextTag, &bytes), at: bytes.position(count: model.count))
        case 1:
            return .remove(tag)
        case 2:
            return .move(tag, to: bytes.position(count: model.count))
        case 3:
            let value: FieldValue = switch bytes.int(0...4) {
            case 0: .name(bytes.bool() ? bytes.pick(names) : bytes.pick(names) + bytes.pick(snippets))
            case 1: .hairColor(bytes.pick(HairColor.allCases))
            case 2: .hairLength(bytes.pick(HairLength.allCases))
            case 3: .eyeColor(bytes.pick(EyeColor.allCases))
            default: .glasses(bytes.bool())
            }
            return .set(tag, value)
        case 4:
            return .facialHair(tag, bytes.pick(FacialHairStyle.allCases), present: bytes.bool())
        case 5:
            return .preference(tag, bytes.pick(Topic.allCases), bytes.pick(Opinion.allCases))
        default:
            return textOperation(on: model[tag]?.name ?? "", &bytes).map { .text(tag, $0) }
        }
    }

    /// 0…4 diffs made on `model`. With `validOnly`, each diff that does not apply on the state the
    /// previous ones left is dropped, so the batch applies on `model`; otherwise it is kept as made.
    static func batch(on model: PeopleModel, nextTag: inout Tag, validOnly: Bool, _ bytes: inout FuzzBytes) -> [Diff] {
        var scratch = model
        var diffs: [Diff] = []
        for _ in 0..<bytes.int(0...4) {
            guard let d = diff(on: scratch, nextTag: &nextTag, &bytes) else { continue }
            let applies: Bool
            do { _ = try scratch.apply(d); applies = true } catch { applies = false }
            if applies || !validOnly { diffs.append(d) }
        }
        return diffs
    }
}

extension PeopleModel {
    /// The people in wire form, for messages.
    var text: String { JSON.array(people.map(\.json)).text }
}

extension Diff {
    /// The same diff naming `map[tag]` instead of each tag `map` has.
    func retagged(_ map: [Tag: Tag]) -> Diff {
        func t(_ tag: Tag) -> Tag { map[tag] ?? tag }
        switch self {
        case .insert(let person, let at): return .insert(person.retagged(t(person.tag)), at: at)
        case .remove(let tag): return .remove(t(tag))
        case .move(let tag, let to): return .move(t(tag), to: to)
        case .set(let tag, let value): return .set(t(tag), value)
        case .facialHair(let tag, let style, let present): return .facialHair(t(tag), style, present: present)
        case .preference(let tag, let topic, let opinion): return .preference(t(tag), topic, opinion)
        case .text(let tag, let operation): return .text(t(tag), operation)
        }
    }
}

extension Person {
    /// The same person under another tag.
    func retagged(_ tag: Tag) -> Person {
        Person(tag: tag, name: name, hairColor: hairColor, hairLength: hairLength, eyeColor: eyeColor, glasses: glasses,
               facialHair: facialHair, likes: Set(likes), dislikes: Set(dislikes))
    }
}
