/// The caret of a name being typed in the terminal client, as an offset in Unicode scalars (the unit of
/// a `text` edit), kept where a user expects it:
///
/// - It moves, and Backspace and Delete take, one grapheme cluster at a time (what the user sees as
///   one letter), never part of one: not half of a flag or of a joined emoji (which would leave a
///   stray joiner in the name for everyone), not the accent of an `é` written as `e` + U+0301 apart
///   from its letter.
/// - A teammate's edit of the same name moves it as it moves the text around it: the letters on
///   either side of the caret stay on either side (`following`), as the web page's caret does.
///
/// Pure functions of the name; the screen keeps the offset and the name it was last placed in.
public enum NameCaret {
    /// The scalar offsets where `name`'s grapheme clusters begin, and its end.
    public static func boundaries(in name: String) -> [Int] {
        var offsets = [0]
        var offset = 0
        for character in name {
            offset += character.unicodeScalars.count
            offsets.append(offset)
        }
        return offsets
    }

    /// The cluster boundary before `offset` (0 at the start).
    public static func left(of offset: Int, in name: String) -> Int {
        boundaries(in: name).last { $0 < offset } ?? 0
    }

    /// The cluster boundary after `offset` (the end at the end).
    public static func right(of offset: Int, in name: String) -> Int {
        let all = boundaries(in: name)
        return all.first { $0 > offset } ?? all.last!
    }

    /// `offset` inside the name and on a cluster boundary: the first at or after it (a mark a teammate
    /// joined to the letter before the caret keeps the caret after the letter it now belongs to).
    public static func snapped(_ offset: Int, in name: String) -> Int {
        let all = boundaries(in: name)
        return all.first { $0 >= offset } ?? all.last!
    }

    /// Where the caret at `offset` in `old` goes in `new`, for a change this user did not make: the
    /// change is taken as replacing the part between the two names' common start and common end, so
    /// a caret before that part stays, one after it moves by the change in length, and one inside it
    /// (whatever was around it was replaced) goes to the end of what replaced it. Then snapped.
    public static func following(_ offset: Int, from old: String, to new: String) -> Int {
        guard old != new else { return snapped(offset, in: new) }
        let a = Array(old.unicodeScalars)
        let b = Array(new.unicodeScalars)
        var start = 0
        while start < a.count, start < b.count, a[start] == b[start] { start += 1 }
        var end = 0  // common end, not reaching into the common start of either
        while end < a.count - start, end < b.count - start, a[a.count - 1 - end] == b[b.count - 1 - end] { end += 1 }
        let moved: Int
        if offset <= start {
            moved = offset
        } else if offset >= a.count - end {
            moved = offset + b.count - a.count
        } else {
            moved = b.count - end
        }
        return snapped(min(max(0, moved), b.count), in: new)
    }
}
