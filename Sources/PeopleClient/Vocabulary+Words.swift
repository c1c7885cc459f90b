import PeopleCore

// What a person reading the terminal calls the fields and their values: one vocabulary for the
// screen, the commands' plain output and the notices (US spelling, as the web page: "Hair color").
// The wire keeps its identifiers (`hairColor`); arguments accept both.

extension Field {
    /// As a row or a column names it: "Hair color".
    public var label: String {
        switch self {
        case .name: "Name"
        case .hairColor: "Hair color"
        case .hairLength: "Hair length"
        case .eyeColor: "Eye color"
        case .glasses: "Glasses"
        }
    }

    /// Inside a sentence: "hair color".
    public var words: String { label.lowercased() }
}

extension Field {
    /// The action name of a change to it, as the clients label their own edits (what Undo offers):
    /// "Change Hair Color", "Toggle Glasses".
    public var actionLabel: String {
        switch self {
        case .name: "Change Name"
        case .hairColor: "Change Hair Color"
        case .hairLength: "Change Hair Length"
        case .eyeColor: "Change Eye Color"
        case .glasses: "Toggle Glasses"
        }
    }
}

extension Diff {
    /// The action name of this kind of edit, as the clients label their own edits (what Undo offers):
    /// "Change Hair Length", "Add Person".
    public var actionLabel: String {
        switch self {
        case .set(_, let value): value.field.actionLabel
        case .text: Field.name.actionLabel
        case .facialHair: "Change Facial Hair"
        case .preference: "Change Likes"
        case .insert: "Add Person"
        case .remove: "Delete Person"
        case .move: "Move Person"
        }
    }
}

extension Array where Element == Diff {
    /// What a batch did, named as the clients name their own edits of one kind ("Change Hair Length",
    /// "Add Person"), else "Several Changes" ("No Change" for none): the label the clients give their
    /// own batches, and the web page's `opsLabel` (history-text.js), so a script's unlabelled batch
    /// reads the same on both.
    public var actionLabel: String {
        let kinds = Set(map(\.actionLabel))
        return kinds.count == 1 ? kinds.first! : isEmpty ? "No Change" : "Several Changes"
    }
}

extension FacialHairStyle {
    /// "Facial hair: beard".
    public var label: String { "Facial hair: \(rawValue)" }
    /// "Beard": the label where columns are few.
    public var shortLabel: String { rawValue.capitalizedFirst }
}

extension Topic {
    /// "Sports".
    public var label: String { rawValue.capitalizedFirst }
}

extension String {
    /// The first letter upper-cased, the rest as it is ("sideburns" → "Sideburns").
    fileprivate var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}

extension Opinion {
    /// A topic's register in words: "likes", "dislikes", or "·" for neither.
    public var words: String {
        switch self {
        case .like: "likes"
        case .dislike: "dislikes"
        case .none: "·"
        }
    }
}

/// Glasses and each facial hair style are on or off, wherever the client shows them.
public func onOff(_ on: Bool) -> String { on ? "on" : "off" }

extension FieldValue {
    /// The value in words: `red`, `on` / `off` for glasses, the name itself.
    public var words: String {
        switch self {
        case .name(let v): v
        case .hairColor(let v): v.rawValue
        case .hairLength(let v): v.rawValue
        case .eyeColor(let v): v.rawValue
        case .glasses(let v): onOff(v)
        }
    }
}

/// The words for a field as presence and skip reports carry it (`hairColor`, `facialHair`,
/// `preference`, `position`, or a topic or style this client sends for the row it is on).
public func fieldWords(_ identifier: String) -> String {
    if let field = Field(rawValue: identifier) { return field.words }
    switch identifier {
    case "facialHair": return "facial hair"
    case "preference": return "likes"
    case "position": return "place in the list"
    default: return identifier
    }
}
