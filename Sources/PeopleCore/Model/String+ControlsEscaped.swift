extension String {
    /// This text with each control character (Unicode's Cc: C0, DEL and C1; the line and paragraph
    /// separators; and the bidirectional embeddings, overrides and isolates, U+202A–202E and
    /// U+2066–2069, which reorder the rest of a line on a terminal that does bidirectional text)
    /// written as an escape: `\n`, `\r`, `\t`, else `\u{1B}`; itself, not copied, when it has none.
    /// Escaping twice changes nothing more.
    ///
    /// Names, user names and labels are stored as sent (the product contract lets them hold any text):
    /// what writes them where a control character would be obeyed (the hub's text log, a terminal)
    /// writes them through this.
    public var controlsEscaped: String {
        guard unicodeScalars.contains(where: Self.needsEscape) else { return self }
        var out = String.UnicodeScalarView()
        for scalar in unicodeScalars {
            guard Self.needsEscape(scalar) else { out.append(scalar); continue }
            let escape = switch scalar {
            case "\n": "\\n"
            case "\r": "\\r"
            case "\t": "\\t"
            default: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            }
            out.append(contentsOf: escape.unicodeScalars)
        }
        return String(out)
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control || scalar == "\u{2028}" || scalar == "\u{2029}"
            || (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }
}
