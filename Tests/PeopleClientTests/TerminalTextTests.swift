import PeopleClient
import Testing

/// What the terminal client writes of the room's text, and the columns it counts for it (an
/// international-names pass found CJK and emoji names breaking the screen's layout, names cut inside
/// an emoji in `list`, and a name's escape sequences obeyed by every teammate's terminal).
@Suite("Terminal text")
struct TerminalTextTests {
    @Test("control characters are written as escapes; other text is left as it is")
    func escapes() {
        #expect(TerminalText.escaped("Ann\u{1B}[31mRED") == "Ann\\u{1B}[31mRED")
        #expect(TerminalText.escaped("Ann\nEve\r\t") == "Ann\\nEve\\r\\t")
        #expect(TerminalText.escaped("a\u{85}b\u{2028}c\u{2029}\u{7F}\u{9B}") == "a\\u{85}b\\u{2028}c\\u{2029}\\u{7F}\\u{9B}")
        // A right-to-left override reversed the rest of a `list` row on a terminal that does bidi.
        #expect(TerminalText.escaped("Ann\u{202E}tsil") == "Ann\\u{202E}tsil")
        #expect(TerminalText.escaped("\u{2066}x\u{2069}") == "\\u{2066}x\\u{2069}")
        for plain in ["José", "Jose\u{301}", "李小龙", "👩🏽‍💻 Ada", "محمد", "a\u{200B}b", ""] {
            #expect(TerminalText.escaped(plain) == plain)
        }
        // Escaping twice changes nothing more (a line escaped once may pass a second time).
        let once = TerminalText.escaped("x\u{1B}y\n")
        #expect(TerminalText.escaped(once) == once)
    }

    @Test("columns are per letter as a terminal draws it: wide CJK and emoji two, marks and joiners none")
    func columns() {
        #expect(TerminalText.columns("Bob") == 3)
        #expect(TerminalText.columns("李小龙") == 6)
        #expect(TerminalText.columns("山田 太郎") == 9)
        #expect(TerminalText.columns("Jose\u{301}") == 4)
        #expect(TerminalText.columns("José") == 4)
        #expect(TerminalText.columns("👩🏽‍💻 Ada") == 6)  // one joined emoji (2), a space, three letters
        #expect(TerminalText.columns("🇳🇴 Ola") == 6)
        #expect(TerminalText.columns("❤️") == 2)  // text presentation turned to emoji by U+FE0F
        #expect(TerminalText.columns("❤") == 1)
        #expect(TerminalText.columns("ｱ") == 1)  // halfwidth katakana
        #expect(TerminalText.columns("Ａ") == 2)  // fullwidth A
        #expect(TerminalText.columns("한국") == 4)
        #expect(TerminalText.columns("\u{200B}") == 0)
        #expect(TerminalText.columns("Nguyễn Thị Minh") == 15)
        #expect(TerminalText.columns("שרה") == 3)
    }

    @Test("a cut never splits a letter, and a wide one that would straddle the edge is left out")
    func prefixAndFit() {
        #expect(TerminalText.prefix("👩🏽‍💻 Ada", columns: 1).text == "")
        #expect(TerminalText.prefix("👩🏽‍💻 Ada", columns: 2).text == "👩🏽‍💻")
        #expect(TerminalText.prefix("李小龙", columns: 5) == ("李小", 4))
        // A tail, as a long name being typed shows before its caret.
        #expect(TerminalText.suffix("Ada 👩🏽‍💻", columns: 1).text == "")
        #expect(TerminalText.suffix("Ada 👩🏽‍💻", columns: 3) == (" 👩🏽‍💻", 3))
        #expect(TerminalText.suffix("李小龙", columns: 5) == ("小龙", 4))
        #expect(TerminalText.suffix("Jose\u{301}", columns: 1).text == "e\u{301}")
        #expect(TerminalText.suffix("Ann", columns: 9) == ("Ann", 3))
        #expect(TerminalText.fit("李小龙", width: 6) == "李小龙")
        #expect(TerminalText.fit("李小龙", width: 8) == "李小龙  ")
        #expect(TerminalText.fit("李小龙", width: 5) == "李小…")
        #expect(TerminalText.fit("李小龙", width: 4) == "李… ")  // 小 would straddle the edge
        #expect(TerminalText.fit("Jose\u{301} Ramos", width: 6) == "Jose\u{301} …")
        for width in 1...12 {
            #expect(TerminalText.columns(TerminalText.fit("🇳🇴 Ola 李小龙", width: width)) == width)
        }
    }
}

/// The terminal client's caret in a name being typed: by letter, and following a teammate's edit.
@Suite("Name caret")
struct NameCaretTests {
    @Test("the caret moves over a whole letter: a flag, a joined emoji, a letter with its accent")
    func moves() {
        let flag = "Ola 🇳🇴"  // the flag is two scalars
        #expect(NameCaret.left(of: 6, in: flag) == 4)
        #expect(NameCaret.right(of: 4, in: flag) == 6)
        let ada = "👩🏽‍💻 Ada"  // woman, skin tone, joiner, laptop: four scalars, one letter
        #expect(NameCaret.right(of: 0, in: ada) == 4)
        #expect(NameCaret.left(of: 4, in: ada) == 0)
        let jose = "Jose\u{301}"
        #expect(NameCaret.left(of: 5, in: jose) == 3)
        #expect(NameCaret.right(of: 3, in: jose) == 5)
        #expect(NameCaret.left(of: 0, in: jose) == 0)
        #expect(NameCaret.right(of: 5, in: jose) == 5)
        #expect(NameCaret.snapped(1, in: ada) == 4)
        #expect(NameCaret.snapped(99, in: "Bo") == 2)
    }

    @Test("a teammate's edit moves the caret with the letters around it")
    func follows() {
        // The pass's case: "Abcd▏ef", a teammate puts "xyz" in front: "xyzAbcd▏ef".
        #expect(NameCaret.following(4, from: "Abcdef", to: "xyzAbcdef") == 7)
        // After the caret: it stays.
        #expect(NameCaret.following(2, from: "Abcdef", to: "Abcdefxyz") == 2)
        // A deletion before it.
        #expect(NameCaret.following(5, from: "Abcdef", to: "Aef") == 2)
        // Around it: the caret goes to the end of what replaced the part it was in.
        #expect(NameCaret.following(3, from: "Abcdef", to: "AXf") == 2)
        // "🇳🇴李" put in front of "👩🏽‍💻 Ada" with the caret after the emoji: still after it.
        #expect(NameCaret.following(4, from: "👩🏽‍💻 Ada", to: "🇳🇴李👩🏽‍💻 Ada") == 7)
        // An accent joined to the letter before the caret: the caret stays after that letter.
        #expect(NameCaret.following(4, from: "Jose", to: "Jose\u{301}") == 5)
        // Nothing changed.
        #expect(NameCaret.following(3, from: "Bob", to: "Bob") == 3)
    }
}
