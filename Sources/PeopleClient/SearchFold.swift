import Foundation

/// A name or a search as finding a person compares them (the terminal client's `/`; the web page's
/// "Find a person" folds the same way, `fold` in Web/js/people-list.js): case and accents ignored,
/// composed or not, and the letters that carry their mark inside them (no decomposition takes it off)
/// written as the letters people type for them: "oyvind" finds Øyvind, "lukasz" Łukasz, "strasse"
/// Straße.
public enum SearchFold {
    public static func folded(_ text: String) -> String {
        let folded = text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
        guard folded.contains(where: { letters[$0] != nil }) else { return folded }
        return folded.reduce(into: "") { out, c in
            if let plain = letters[c] { out += plain } else { out.append(c) }
        }
    }

    static let letters: [Character: String] = [
        "ø": "o", "ł": "l", "đ": "d", "ħ": "h", "ı": "i", "æ": "ae", "œ": "oe", "þ": "th", "ß": "ss",
        "ŧ": "t", "ð": "d", "ŀ": "l",
    ]
}
