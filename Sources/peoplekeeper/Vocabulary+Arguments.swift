import ArgumentParser
import PeopleCore

/// Reading fields and values from the command line: camel or kebab case, one message listing what is
/// allowed.
enum Words {
    /// `hairColor`, `hair-color`, `HAIRCOLOR` all name the same thing.
    static func key(_ word: String) -> String {
        word.lowercased().filter { $0 != "-" && $0 != "_" }
    }

    static func field(_ word: String) throws -> Field {
        guard let field = Field.allCases.first(where: { key($0.rawValue) == key(word) }) else {
            throw Failure.usage("unknown field \(word): one of \(Field.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return field
    }

    static func value<V: RawRepresentable & CaseIterable>(_ word: String, _ type: V.Type, what: String) throws -> V
    where V.RawValue == String {
        guard let value = V.allCases.first(where: { key($0.rawValue) == key(word) }) else {
            throw Failure.usage("unknown \(what) \(word): one of \(V.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }

    static func bool(_ word: String, what: String) throws -> Bool {
        switch word.lowercased() {
        case "true", "on", "yes": return true
        case "false", "off", "no": return false
        default: throw Failure.usage("\(what) is true or false (also on / off, yes / no), not \(word)")
        }
    }

    /// A field's value from its word.
    static func fieldValue(_ field: Field, _ word: String) throws -> FieldValue {
        switch field {
        case .name:
            guard !word.isEmpty else { throw Failure.usage("a name cannot be empty") }
            return .name(word)
        case .hairColor: return .hairColor(try value(word, HairColor.self, what: "hair color"))
        case .hairLength: return .hairLength(try value(word, HairLength.self, what: "hair length"))
        case .eyeColor: return .eyeColor(try value(word, EyeColor.self, what: "eye color"))
        case .glasses: return .glasses(try bool(word, what: "glasses"))
        }
    }
}
