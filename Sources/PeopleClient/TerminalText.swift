import PeopleCore

/// Text as a terminal shows it: what may be written to one at all, and how many columns it takes.
///
/// A room's names, user names and action labels are stored as sent (the product contract allows any
/// text), so they may hold control characters: written raw, an escape sequence in a teammate's name
/// would be obeyed by every terminal showing it (colours, cursor moves, a title change) and a line
/// break would split a table row. `escaped` writes each control character as an escape instead, as
/// the hub's text log does. Everything the terminal client prints that came from the room goes
/// through it.
///
/// Columns count per grapheme cluster (a `Character`: what a user sees as one letter), not per code
/// point or UTF-16 unit: a CJK ideograph or an emoji takes two columns, a combining accent or a zero
/// width joiner none, so `李小龙` is six columns wide, `José` (with U+0301) four and `👩🏽‍💻` two. This is
/// Unicode's East Asian Width (Wide and Fullwidth: two columns) and emoji presentation, as current
/// terminals draw a cluster; a terminal that draws a joined emoji sequence as its parts will show it
/// wider than counted (the screen turns line wrapping off while it draws, so that costs only the end
/// of that line).
public enum TerminalText {
    /// `text` with each control character written as an escape (`\n`, `\u{1B}`: `controlsEscaped`).
    public static func escaped(_ text: String) -> String {
        text.controlsEscaped
    }

    /// How many columns a terminal gives `character`: 2 for an East Asian wide or fullwidth one and for
    /// an emoji shown as an emoji (emoji presentation, or text presentation turned by U+FE0F, or a flag's
    /// two regional indicators), 0 for one made only of marks and format characters (a lone combining
    /// accent, a zero width space or joiner), else 1. A control character counts 1 (it is escaped before
    /// it is shown).
    public static func columns(of character: Character) -> Int {
        var scalars = character.unicodeScalars.makeIterator()
        guard let first = scalars.next() else { return 0 }
        // Most text is ASCII: one column, nothing to look up.
        if first.value < 0x7F, character.unicodeScalars.count == 1 { return 1 }
        if isWide(first) { return 2 }
        var visible = !isZeroWidth(first)
        var emoji = first.properties.isEmojiPresentation  // a flag's regional indicators are, too
        for scalar in character.unicodeScalars.dropFirst() {
            if scalar == "\u{FE0F}" && first.properties.isEmoji { emoji = true }
            if scalar.properties.isEmojiPresentation { emoji = true }
            if !isZeroWidth(scalar) { visible = true }
        }
        if emoji { return 2 }
        return visible ? 1 : 0
    }

    /// The columns of `text`: the sum of its characters'.
    public static func columns(_ text: some StringProtocol) -> Int {
        var total = 0
        for character in text { total += columns(of: character) }
        return total
    }

    /// The longest start of `text` that fits in `columns` columns, and the columns it takes (a wide
    /// character that would straddle the edge is left out whole).
    public static func prefix(_ text: some StringProtocol, columns limit: Int) -> (text: Substring, columns: Int) {
        let text = Substring(text)
        var used = 0
        var end = text.startIndex
        for index in text.indices {
            let width = columns(of: text[index])
            guard used + width <= limit else { break }
            used += width
            end = text.index(after: index)
        }
        return (text[..<end], used)
    }

    /// The longest tail of `text` (whole characters) that takes at most `limit` columns.
    public static func suffix(_ text: some StringProtocol, columns limit: Int) -> (text: Substring, columns: Int) {
        let text = Substring(text)
        var used = 0
        var start = text.endIndex
        while start > text.startIndex {
            let previous = text.index(before: start)
            let width = columns(of: text[previous])
            guard used + width <= limit else { break }
            used += width
            start = previous
        }
        return (text[start...], used)
    }

    /// `text` cut to at most `width` columns, its last column an ellipsis when it was longer.
    public static func cut(_ text: some StringProtocol, width: Int) -> (text: String, columns: Int) {
        guard width > 0 else { return ("", 0) }
        let total = columns(text)
        if total <= width { return (String(text), total) }
        let (head, used) = prefix(text, columns: width - 1)
        return (String(head) + "…", used + 1)
    }

    /// `text` cut to `width` columns (its last column an ellipsis when it was longer) and padded with
    /// spaces to exactly `width`.
    public static func fit(_ text: some StringProtocol, width: Int) -> String {
        let (shown, used) = cut(text, width: width)
        return shown + String(repeating: " ", count: max(0, width - used))
    }

    static func isWide(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        guard value >= 0x1100 else { return false }
        var low = 0
        var high = eastAsianWideRanges.count - 1
        while low <= high {
            let middle = (low + high) / 2
            let (lower, upper) = eastAsianWideRanges[middle]
            if value < lower { high = middle - 1 } else if value > upper { low = middle + 1 } else { return true }
        }
        return false
    }

    /// A mark that joins the character before it, or a format character (zero width space and joiner,
    /// variation selectors, bidirectional controls): no column of its own.
    static func isZeroWidth(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: true
        default: scalar.properties.isVariationSelector || (0x1160...0x11FF).contains(scalar.value)
        }
    }
}
