import PeopleClient
import PeopleCore

extension Screen {
    /// The rows of the detail pane, in order.
    enum Row: Equatable {
        case field(Field)
        case facialHair(FacialHairStyle)
        case topic(Topic)

        static let all: [Row] = Field.allCases.map(Row.field) + FacialHairStyle.allCases.map(Row.facialHair)
            + Topic.allCases.map(Row.topic)

        /// A topic's registers in the order a chooser offers them.
        static let opinions: [Opinion] = [.none, .like, .dislike]

        /// What presence says this user is looking at: the field, or the style or topic itself (so
        /// that others read `Joan · music`, not `Joan · preference`).
        var presenceField: String {
            switch self {
            case .field(let f): f.rawValue
            case .facialHair(let style): style.rawValue
            case .topic(let topic): topic.rawValue
            }
        }

        var label: String {
            switch self {
            case .field(let f): f.label
            case .facialHair(let style): style.label
            case .topic(let topic): topic.label
            }
        }

        /// The label of a narrow pane (at most 11 columns).
        var shortLabel: String {
            switch self {
            case .facialHair(let style): style.shortLabel
            default: label
            }
        }

        func value(of person: Person) -> String {
            switch self {
            case .field(let f): person.value(of: f).words
            case .facialHair(let style): onOff(person.facialHair.contains(style))
            case .topic(let topic): person.opinion(on: topic).words
            }
        }

        /// Who last wrote this row's value, as `record` has it.
        func writer(in record: PersonBlame) -> Writer {
            switch self {
            case .field(let f): record.writer(of: f)
            case .facialHair(let style): record.writer(of: style)
            case .topic(let topic): record.writer(of: topic)
            }
        }

        /// The values a chooser offers on this row, in order; nil on the rows Enter edits otherwise
        /// (the name is typed, glasses and facial hair toggle).
        var choices: [String]? {
            switch self {
            case .field(.hairColor): HairColor.allCases.map(\.rawValue)
            case .field(.hairLength): HairLength.allCases.map(\.rawValue)
            case .field(.eyeColor): EyeColor.allCases.map(\.rawValue)
            case .topic: Self.opinions.map { $0 == .none ? "neither" : $0.words }
            case .field, .facialHair: nil
            }
        }

        /// Where the chooser starts: the person's value.
        func choiceIndex(of person: Person) -> Int {
            switch self {
            case .field(.hairColor): HairColor.allCases.firstIndex(of: person.hairColor) ?? 0
            case .field(.hairLength): HairLength.allCases.firstIndex(of: person.hairLength) ?? 0
            case .field(.eyeColor): EyeColor.allCases.firstIndex(of: person.eyeColor) ?? 0
            case .topic(let topic): Self.opinions.firstIndex(of: person.opinion(on: topic)) ?? 0
            case .field, .facialHair: 0
            }
        }

        /// The edit that sets choice `index` on `person`; nil when that is the value already (choosing
        /// it again changes nothing and sends nothing).
        func change(to index: Int, of person: Person) -> Diff? {
            guard index != choiceIndex(of: person) else { return nil }
            let tag = person.tag
            switch self {
            case .field(.hairColor): return .set(tag, .hairColor(HairColor.allCases[index]))
            case .field(.hairLength): return .set(tag, .hairLength(HairLength.allCases[index]))
            case .field(.eyeColor): return .set(tag, .eyeColor(EyeColor.allCases[index]))
            case .topic(let topic): return .preference(tag, topic, Self.opinions[index])
            case .field, .facialHair: return nil
            }
        }
    }
}
