@testable import PeopleCore
import PeopleTestSupport

/// Random people, diffs and batches that are valid where they are made.
enum RandomEdits {
    static let letters: [String] = ["a", "b", "c", "x", "é", "😀", "Z"]

    static func name(_ rng: inout SeededRandom) -> String {
        (0..<rng.int(0...4)).map { _ in rng.pick(letters) }.joined()
    }

    static func person(tag: Tag, _ rng: inout SeededRandom) -> Person {
        var likes = Set<Topic>()
        var dislikes = Set<Topic>()
        for topic in Topic.allCases {
            switch rng.int(0...3) {
            case 0: likes.insert(topic)
            case 1: dislikes.insert(topic)
            default: break
            }
        }
        return Person(tag: tag, name: name(&rng), hairColor: rng.pick(HairColor.allCases),
                      hairLength: rng.pick(HairLength.allCases), eyeColor: rng.pick(EyeColor.allCases),
                      glasses: rng.chance(0.5), facialHair: Set(FacialHairStyle.allCases.filter { _ in rng.chance(0.3) }),
                      likes: likes, dislikes: dislikes)
    }

    static func model(_ rng: inout SeededRandom, count: ClosedRange<Int> = 2...6) -> PeopleModel {
        PeopleModel(people: (1...rng.int(count)).map { person(tag: $0, &rng) })
    }

    static func textOperation(on name: String, _ rng: inout SeededRandom) -> TextOperation {
        let length = name.unicodeScalars.count
        var components: [TextOperation.Component] = []
        var position = 0
        for _ in 0..<rng.int(1...3) {
            let skip = rng.int(0...(length - position))
            components.append(.retain(skip))
            position += skip
            if rng.chance(0.5) || position == length {
                components.append(.insert(rng.pick(letters) + (rng.chance(0.3) ? rng.pick(letters) : "")))
            } else {
                let count = rng.int(1...(length - position))
                components.append(.delete(count))
                position += count
            }
        }
        return TextOperation(components)
    }

    /// One diff valid on `model`; inserts take tags from `nextTag`.
    static func diff(on model: PeopleModel, nextTag: inout Tag, _ rng: inout SeededRandom) -> Diff {
        guard let tag = model.tags.isEmpty ? nil : rng.pick(model.tags), let person = model[tag] else {
            defer { nextTag += 1 }
            return .insert(self.person(tag: nextTag, &rng), at: 0)
        }
        switch rng.int(0...9) {
        case 0:
            defer { nextTag += 1 }
            return .insert(self.person(tag: nextTag, &rng), at: rng.int(0...model.count))
        case 1:
            return .remove(tag)
        case 2:
            return .move(tag, to: rng.int(0...(model.count - 1)))
        case 3:
            let value: FieldValue = switch rng.int(0...4) {
            case 0: .name(name(&rng))
            case 1: .hairColor(rng.pick(HairColor.allCases))
            case 2: .hairLength(rng.pick(HairLength.allCases))
            case 3: .eyeColor(rng.pick(EyeColor.allCases))
            default: .glasses(rng.chance(0.5))
            }
            return .set(tag, value)
        case 4:
            return .facialHair(tag, rng.pick(FacialHairStyle.allCases), present: rng.chance(0.5))
        case 5:
            return .preference(tag, rng.pick(Topic.allCases), rng.pick(Opinion.allCases))
        case 6, 7:
            return .text(tag, textOperation(on: person.name, &rng))
        default:
            return .set(tag, .hairColor(rng.pick(HairColor.allCases)))
        }
    }

    /// A batch of 1…`size` diffs, each valid on the state the previous one left.
    static func batch(on model: PeopleModel, nextTag: inout Tag, size: ClosedRange<Int> = 1...3,
                      _ rng: inout SeededRandom) -> [Diff] {
        var scratch = model
        var diffs: [Diff] = []
        for _ in 0..<rng.int(size) {
            let d = diff(on: scratch, nextTag: &nextTag, &rng)
            if (try? scratch.apply(d)) != nil { diffs.append(d) }
        }
        return diffs
    }

    /// Random JSON values, often shaped like diffs, for the garbage tests.
    static func garbage(_ rng: inout SeededRandom, depth: Int = 0) -> JSON {
        let keys = ["op", "tag", "to", "at", "field", "value", "person", "style", "present", "topic", "edits",
                    "retain", "insert", "delete", "name"]
        let words: [JSON] = [.string("insert"), .string("remove"), .string("move"), .string("set"), .string("text"),
                             .string("facialHair"), .string("preference"), .string("name"), .string("red"),
                             .string("beard"), .string("like"), .int(1), .int(2), .int(0), .int(-3),
                             .int(Int.max), .double(1.5), .bool(true), .null, .loneSurrogate, .string("")]
        switch depth > 3 ? 0 : rng.int(0...3) {
        case 0: return rng.pick(words)
        case 1: return .array((0..<rng.int(0...3)).map { _ in garbage(&rng, depth: depth + 1) })
        default:
            return .object((0..<rng.int(0...5)).map { _ in JSON.Member(rng.pick(keys), garbage(&rng, depth: depth + 1)) })
        }
    }
}
