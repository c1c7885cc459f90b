import Foundation
import PeopleClient
import PeopleCore

extension Screen {
    /// Where `style` starts a style: the terminal's escape character itself is written only by `fit`,
    /// which writes every control character of the text it is given escaped (`TerminalText`), so that
    /// no escape sequence in a name, a user name or a label reaches the terminal. (A name holding this
    /// private-use character followed by digits and `m` can at most colour its own line.)
    static let styleMark: Character = "\u{E000}"

    func style(_ text: String, _ codes: String) -> String {
        terminal.colors ? "\(Self.styleMark)\(codes)m\(text)\(Self.styleMark)0m" : text
    }

    /// The pieces of a line: the text to show (control characters written escaped) and the styles.
    private enum Piece {
        case text(String, columns: Int)
        case style(Substring)
    }

    private func pieces(_ line: String) -> [Piece] {
        var out: [Piece] = []
        var index = line.startIndex
        while index < line.endIndex {
            let character = line[index]
            index = line.index(after: index)
            if character == Self.styleMark,
               let m = line[index...].firstIndex(where: { !($0.isASCII && ($0.isNumber || $0 == ";")) }),
               line[m] == "m" {
                out.append(.style(line[index..<m]))
                index = line.index(after: m)
                continue
            }
            let shown = TerminalText.escaped(String(character))
            out.append(.text(shown, columns: TerminalText.columns(shown)))
        }
        return out
    }

    /// Pads or cuts `text` (which may hold styles) to `width` columns; a cut one ends with `…`, so a
    /// line cut short never reads as whole ("glasses of", "Kim" for "Kim (gone)"). Columns are the
    /// terminal's (a CJK name or an emoji takes two per character), and a character from the room
    /// that is a control is written escaped.
    func fit(_ text: String, _ width: Int) -> String {
        let pieces = pieces(text)
        let total = pieces.reduce(0) { if case .text(_, let columns) = $1 { $0 + columns } else { $0 } }
        let cut = total > width
        let room = cut ? width - 1 : width
        var used = 0
        var full = false
        var out = ""
        for piece in pieces {
            switch piece {
            case .style(let codes):
                if terminal.colors { out += "\u{1B}[\(codes)m" }
            case .text(let shown, let columns):
                guard !full, used + columns <= room else { full = true; continue }
                out += shown
                used += columns
            }
        }
        if cut && width > 0 {
            out.append("…")
            used += 1
        }
        return out + String(repeating: " ", count: max(0, width - used)) + (terminal.colors ? "\u{1B}[0m" : "")
    }

    /// How many columns of `text` show (styles do not; an escaped control shows as its escape).
    func visibleCount(_ text: String) -> Int {
        pieces(text).reduce(0) { if case .text(_, let columns) = $1 { $0 + columns } else { $0 } }
    }

    /// `text` broken into lines of at most `width` columns, at spaces where it can be.
    private func wrap(_ text: String, _ width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in TerminalText.escaped(text).split(separator: " ") {
            var word = Substring(word)
            while TerminalText.columns(word) > width {
                if !line.isEmpty { lines.append(line); line = "" }
                let head = TerminalText.prefix(word, columns: width).text
                guard !head.isEmpty else { break }
                lines.append(String(head))
                word = word.dropFirst(head.count)
            }
            if line.isEmpty {
                line = String(word)
            } else if TerminalText.columns(line) + 1 + TerminalText.columns(word) <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }

    func render() {
        let (width, height) = terminal.size
        guard width >= 20, height >= 8 else {
            return terminal.draw("\u{1B}[H\u{1B}[2J" + "window too small")
        }
        var lines: [String] = []
        let sync = room.sync
        let connection: String = switch room.link {
        case .online: style("● online", "32")
        case .connecting: style("◌ connecting", "33")
        case .offline(let retryAt, _):
            style("○ offline, retry in \(max(0, Int(retryAt.timeIntervalSinceNow.rounded(.up)))) s", "31")
        case .refused where room.tokenEnded: style("✕ token refused: t for a new one", "31")
        case .refused where room.deleted: style("✕ room deleted by an admin", "31")
        case .refused(let why): style("✕ refused: \(why)", "31")
        }
        // The connection and the waiting count first; the product's name goes when the line is too
        // long for the window, then what is at the end (the revision, then the user, then the room).
        // In a room an admin deleted, what waited can go nowhere: it was not made (the status says so).
        let waiting = sync.pendingCount == 0 ? ""
            : " · \(sync.pendingCount) change\(sync.pendingCount == 1 ? "" : "s") \(room.deleted ? "not made" : "waiting")"
        let role = sync.session == nil ? "" : sync.role == .viewer ? " (viewer: view only)" : " (editor)"
        let about = " · room \(room.room) · you are \(sync.user)\(role) · rev \(sync.revision)"
        let product = " · PeopleKeeper"
        let long = visibleCount(connection + waiting + product + about) < width
        lines.append(fit(" " + connection + waiting + (long ? " · " + style("PeopleKeeper", "1") : "") + about, width))
        lines.append(String(repeating: "─", count: width))

        let body = height - 7
        let left = min(32, max(18, width / 3))
        if showingHistory && !isHelp {
            lines += historyPane(width: width, height: body).map { fit($0, width) }
        } else if isHelp && left < Self.helpWidth {
            // Too narrow a list pane for the help (every line was cut at 40 columns): the whole width.
            lines += listPane(width: width, height: body).map { fit($0, width) }
        } else {
            let right = width - left - 3
            let listLines = listPane(width: left, height: body)
            let detailLines = detailPane(width: right, height: body)
            for i in 0..<body {
                lines.append(fit(listLines[i], left) + " │ " + fit(detailLines[i], right))
            }
        }
        lines.append(String(repeating: "─", count: width))
        let here = sync.presence.map { entry -> String in
            var text = entry.user
            if let tag = entry.viewing {
                let name = sync.view[tag]?.name ?? "tag \(tag)"
                text += " (\(name)\(entry.field.map { " · \(fieldWords($0))" } ?? ""))"
            }
            return text
        }
        // Who is here is what the hub last said: not known while it cannot be asked (a second history
        // pass found teammates listed long after the hub had gone).
        let present = switch room.link {
        case .online: here.joined(separator: ", ")
        case .connecting: "(connecting…)"
        case .refused where room.deleted: "(nobody: the room was deleted)"
        case .offline, .refused: "(not known until you are online again)"
        }
        let status = restoreQuestion ?? shownReport ?? connectionNote
        let said = Self.statusRows(status.map { " " + $0.text } ?? "", width: width)
        if said.count == 1 { lines.append(fit(" here: " + present, width)) }
        lines.append(fit(" " + undoLine, width))
        for row in said { lines.append(fit(status?.warning == true ? style(row, "33") : row, width)) }
        lines.append(fit(style(" " + keyHints.line(width: width - 1), "2"), width))
        // Each line at its own row, with line wrapping off while drawing: a line the terminal draws
        // wider than counted (a joined emoji some terminals show as its parts) loses its end, it does
        // not wrap onto the next line and scroll the screen.
        let rows = lines.enumerated().map { "\u{1B}[\($0.offset + 1);1H" + $0.element }
        terminal.draw("\u{1B}[?7l" + rows.joined() + "\u{1B}[?7h")
    }

    /// The status line's rows: one, or two when it is wider than the window, broken at a space (it then
    /// takes the `here:` row: what the user's action led to says more than who is here, and cut at 80
    /// columns it lost its point, "…was overwritten b…": a black-box pass). Past two rows it is cut.
    static func statusRows(_ text: String, width: Int) -> [String] {
        guard TerminalText.columns(text) > width, width > 8 else { return [text] }
        let head = TerminalText.prefix(text, columns: width).text
        guard let space = head.lastIndex(of: " "), space > head.index(after: head.startIndex) else { return [text] }
        let rest = text[text.index(after: space)...]
        return [String(text[..<space]), " " + rest]
    }

    /// Undo and redo with the action names; while an edit is queued, the undo names it (an undo
    /// pressed now takes it back). A viewer has neither.
    private var undoLine: String {
        guard room.sync.session != nil else { return "" }
        guard !isViewer else { return "view only: the hub lets a viewer look, not edit, undo or redo" }
        // Nothing of the room can be undone once it is deleted (it offered the last step as before).
        guard !room.deleted else { return style("u Undo    r Redo", "2") }
        let offer = room.sync.undoOffer
        let undo = offer.canUndo ? "u Undo \(offer.undoLabel ?? "")" : style("u Undo", "2")
        let redo = offer.canRedo ? "r Redo \(offer.redoLabel ?? "")" : style("r Redo", "2")
        // "U / R: only …" needs someone to be only about (an empty room said "only the selected person").
        guard let person = selected else { return "\(undo)    \(redo)" }
        return "\(undo)    \(redo)    U / R: only \(person.name)"
    }

    /// The keys of the mode, ranked so that `? help` and `q quit` always fit (KeyHints).
    var keyHints: KeyHints {
        switch mode {
        case .normal where room.tokenEnded:
            return KeyHints([("t new access token", 0), ("↑↓/jk move", 2), ("? help", 0), ("q quit", 0)])
        case .renewing(let token):
            // The token itself is never drawn: its length says the paste arrived.
            let got = token.isEmpty ? "paste the new access token" : "new access token: \(token.count) characters"
            return KeyHints([(got, 0), ("Enter uses it", 0), ("Esc cancels", 1)])
        case .normal where room.sync.session == nil:
            // Nothing to move through or edit before the room has been opened once.
            return KeyHints([("? help", 0), ("q quit", 0)])
        case .normal where showingHistory && isViewer:
            return KeyHints([("view only", 0), ("↑↓/jk move", 1), ("Esc/h back", 1), ("? help", 0), ("q quit", 0)])
        case .normal where showingHistory:
            return KeyHints([("↑↓/jk move", 1), ("Enter undo yours (↶)", 1), ("R restore to here", 1), ("Esc/h back", 1),
                             ("u/r undo/redo", 2), ("? help", 0), ("q quit", 0)])
        case .normal where people.isEmpty && isViewer:
            return KeyHints([("view only", 0), ("h history", 2), ("? help", 0), ("q quit", 0)])
        case .normal where people.isEmpty:
            // Nobody to move through, delete or show (a black-box pass: d, Tab and U / R were offered
            // and did nothing, unsaid): what an empty room can do.
            return KeyHints([("a add", 0), ("u/r undo/redo", 1), ("h history", 2), ("? help", 0), ("q quit", 0)])
        case .normal where isViewer:
            return KeyHints([("view only", 0), ("↑↓/jk move", 1), (inDetails ? "Esc/← list" : "Tab/→ details", 1),
                             ("h history", 2), ("H their history", 3), ("? help", 0), ("q quit", 0)])
        case .normal where inDetails:
            let enter = Row.all[row].choices != nil ? "Enter choose" : Row.all[row] == .field(.name) ? "Enter type" : "Enter on/off"
            return KeyHints([("↑↓/jk move", 1), (enter, 1), ("Esc/← list", 2), ("a add", 3), ("d delete", 3),
                             ("u/r undo/redo", 2), ("h history", 3), ("/ find", 3), ("U/R this person", 4), ("H their history", 5), ("? help", 0), ("q quit", 0)])
        case .normal:
            return KeyHints([("↑↓/jk move", 1), ("Tab/→ details", 1), ("a add", 2), ("d delete", 2), ("m move", 3),
                             ("u/r undo/redo", 2), ("h history", 3), ("/ find", 3), ("U/R this person", 4), ("H their history", 5), ("? help", 0), ("q quit", 0)])
        case .confirmRestore(let rev):
            return KeyHints([("y restores the room to rev \(rev), any other key keeps it as it is", 0)])
        case .editingName:
            return KeyHints([("typing the name:", 0), ("←→ move", 1), ("Backspace/Delete", 2), ("Enter or Esc when done", 0)])
        case .adding:
            return KeyHints([("new person's name:", 0), ("←→ move", 2), ("Backspace/Delete", 3), ("Enter adds", 0),
                             ("Esc cancels", 1)])
        case .confirmDelete(let tag):
            // A long name is cut here (the list pane's question has it too), never the keys.
            let shown = TerminalText.cut(room.sync.view.called(tag), width: 24).text
            return KeyHints([("delete \(shown)?", 0), ("y deletes", 0), ("any other key keeps them", 1)])
        case .confirmQuit:
            let count = room.sync.pendingCount
            let changes = count == 1 ? "1 change has" : "\(count) changes have"
            return KeyHints([("\(changes) not reached the hub: quit and lose \(count == 1 ? "it" : "them")?", 0),
                             ("y quits", 0), ("any other key stays", 1)])
        case .moving: return KeyHints([("↑↓/jk move the person  Enter or Esc when done", 0)])
        case .finding(let text, _):
            return KeyHints([("find: \(text)▏  ↓ next  Enter stay  Esc back", 0)])
        case .choosing(let row, let index):
            let values = (row.choices ?? []).enumerated().map { $0.offset == index ? "[\($0.element)]" : $0.element }
            return KeyHints([("\(row.label):", 1), (values.joined(separator: " "), 0), ("←→ choose", 0),
                             ("Enter set", 0), ("Esc cancel", 0)])
        case .help(let first):
            guard Self.help.count > helpRows else { return KeyHints([("any key to close the help", 0)]) }
            let shown = "lines \(first + 1)–\(min(Self.help.count, first + helpRows)) of \(Self.help.count)"
            return KeyHints([("help \(shown):", 1), ("↑↓ scroll", 0), ("any other key closes it", 0)])
        }
    }

    private func listPane(width: Int, height: Int) -> [String] {
        var out: [String] = []
        if case .help(let first) = mode {
            return (Self.help.dropFirst(first) + Array(repeating: "", count: height)).prefix(height).map { String($0) }
        }
        // The add prompt and the delete question take the pane's last line: a full list hid them.
        var prompt: String?
        if case .adding(let name, let cursor) = mode {
            prompt = style("+ " + Self.withCaret(name, at: cursor, columns: width - 2), "1")
        }
        if case .confirmDelete(let tag) = mode {
            let shown = TerminalText.cut(room.sync.view.called(tag), width: max(2, width - 14)).text
            prompt = style("delete \(shown)? y/n", "31")
        }
        let rows = prompt == nil ? height : max(0, height - 1)
        let index = selectedIndex ?? 0
        let first = max(0, min(index - rows / 2, people.count - rows))
        // Who looks at a person is what the hub last said, as on the bottom line: not shown while it
        // cannot be asked (a black-box pass saw `[bob]` kept offline beside "not known").
        let online = if case .online = room.link { true } else { false }
        for (i, person) in people.enumerated().dropFirst(first).prefix(rows) {
            let viewers = !online ? [] : room.sync.presence.filter { $0.viewing == person.tag && $0.user != room.sync.user }.map(\.user)
            let marker = i == index ? (inDetails ? "›" : "▶") : " "
            var text = "\(marker) \(person.name)"
            if !viewers.isEmpty { text += " " + style("[\(viewers.joined(separator: ","))]", "36") }
            out.append(i == index && !inDetails ? style(text, "7") : text)
        }
        if people.isEmpty { out += emptyList(width: width) }
        out = Array(out.prefix(rows))
        if let prompt { out.append(prompt) }
        return (out + Array(repeating: "", count: height)).prefix(height).map { String($0) }
    }

    /// What an empty list says: why there is nobody to show when the room is not open (refused, not
    /// reached yet), else that the room is empty.
    private func emptyList(width: Int) -> [String] {
        let text: String
        if room.sync.session != nil {
            text = isViewer ? "(nobody yet)" : "(nobody yet: a to add)"
        } else {
            switch room.link {
            case .refused(let why): text = "you may not open room \(room.room): \(why)"
            case .offline(_, let why): text = "(\(why.sentence))"
            case .connecting, .online: text = "(connecting…)"
            }
        }
        return wrap(text, width - 2).map { "  " + $0 }
    }

    private func detailPane(width: Int, height: Int) -> [String] {
        guard let person = selected else { return Array(repeating: "", count: height) }
        // Who last wrote each part, once the hub has said (asked when the selection changes and after
        // each revision touching this person).
        let record = room.reader.watched == person.tag ? room.reader.attribution : nil
        // A value the hub has not confirmed yet is this user's own, waiting to be sent or answered: the
        // hub's last writer of that field is not who the screen shows.
        let confirmed = room.sync.confirmed[person.tag]
        let now = room.hubNow  // a revision's time is the hub's clock
        var out: [String] = [style("\(person.name)", "1") + "  tag \(person.tag)", record.map { style(addedLine($0, now: now), "2") } ?? ""]
        // Labels take 24 columns where that leaves a value and its writer room; on a narrow pane the
        // short labels (`Mustache` for `Facial hair: mustache`) take 12, so values still show.
        let wide = width - 2 - 24 >= 16
        let labelWidth = wide ? 24 : 12
        // The writer's column: after the longest value but a name (8 columns) and two spaces (one on
        // a narrow pane).
        let writerColumn = labelWidth + (wide ? 10 : 9)
        // The rows under the name and the line under it (none on a window of 8 lines: it crashed there).
        let rows = max(0, height - 2)
        let first = max(0, min(row - rows / 2, Row.all.count - rows))
        for (i, r) in Row.all.enumerated().dropFirst(first).prefix(rows) {
            var value = r.value(of: person)
            if r == .field(.name), case .editingName(let cursor) = mode {
                value = Self.withCaret(person.name, at: cursor, columns: width - 2 - labelWidth)
            }
            if case .choosing(let chosen, let index) = mode, chosen == r, let choices = r.choices {
                value = style("‹ \(choices[index]) ›", "1")
            }
            let label = wide ? r.label : r.shortLabel
            var text = TerminalText.fit(label, width: labelWidth) + value
            // A value being typed or chosen is the user's, not yet anyone's: no writer beside it (the
            // chooser's marks pushed the writer a column right of the others').
            let editing = switch mode {
            case .editingName: r == .field(.name)
            case .choosing(let chosen, _): chosen == r
            default: false
            }
            let waiting = confirmed.map { r.value(of: $0) != r.value(of: person) } ?? true
            // A value of this user's not yet confirmed says so even before the hub has said who wrote
            // the others (offline, or a person selected since: a black-box pass found no word of it).
            if !editing, record != nil || waiting {
                // The writer in a column of its own (values are at most 8 characters but for names);
                // on a narrow pane without "ago", or shorter still; left out, with the gap before
                // it, where even that is cut (a 40-column window showed `·   …`).
                let gap = String(repeating: " ", count: max(2, writerColumn - visibleCount(text)))
                let room = width - 2 - visibleCount(text + gap)
                let writer = record.map { r.writer(in: $0) }
                let forms = waiting ? (self.room.deleted ? [Self.notMadeWriter, "not made"] : [Self.waitingWriter, "waiting"])
                    : writer.map { [$0.words(now: now), $0.words(now: now, ago: false)] } ?? []
                if let words = forms.first(where: { visibleCount($0) <= room }) { text += gap + style(words, "2") }
            }
            out.append(inDetails && i == row ? style("▶ " + text, "7") : "  " + text)
        }
        return (out + Array(repeating: "", count: height)).prefix(height).map { String($0) }
    }

    /// `text` with the caret (`▏`) at scalar offset `cursor`: a name being typed, or the add prompt's.
    /// With `columns`, a name too long for them scrolls: cut in front (`…`) so that the caret and
    /// what comes just before it show (what follows it is cut at the end, as any value).
    static func withCaret(_ text: String, at cursor: Int, columns: Int = .max) -> String {
        let scalars = Array(text.unicodeScalars)
        let before = String(String.UnicodeScalarView(scalars.prefix(cursor)))
        let after = String(String.UnicodeScalarView(scalars.dropFirst(cursor)))
        // Room for the caret, and for the `…` that cuts the end when something follows.
        let room = columns - 1 - (after.isEmpty ? 0 : 1)
        guard columns >= 4, TerminalText.columns(before) > room else { return before + "▏" + after }
        return "…" + TerminalText.suffix(before, columns: room - 1).text + "▏" + after
    }

    /// The writer shown for a value of this user's the hub has not confirmed yet.
    static let waitingWriter = "you · waiting"
    /// The same in a room an admin deleted: it will never be sent.
    static let notMadeWriter = "you · not made"

    /// Who added the person (and moved them last, if someone did since), under their name.
    private func addedLine(_ record: PersonBlame, now: Date) -> String {
        let added = record.created.user == nil ? "in the room from the start" : "added by \(record.created.words(now: now))"
        let moved = record.positionWriter
        guard moved.rev != record.created.rev else { return added }
        return added + "; moved by \(moved.words(now: now))"
    }

    /// The body's rows, where the help is shown (the window less the title, two rules and four lines
    /// under them).
    var helpRows: Int { max(1, terminal.size.rows - 7) }

    /// The help pane's width: the list pane of an 80-column window (a narrower window shows the help
    /// across the body).
    static let helpWidth = 25

    /// The help pane (lines of at most `helpWidth` characters; at most 17: the body of a 24-line one).
    static let help = [
        "Keys",
        "↑↓ jk PgUp/PgDn g/G move",
        "Tab → ←  list / details",
        "Enter    on a field: type",
        "         the name, choose",
        "         a value (← →,",
        "         Enter), or turn",
        "         it on / off",
        "/ n      find name / next",
        "a d m    add/delete/move",
        "u / r    undo / redo yours",
        "U / R    … this person's",
        "h        history: Enter",
        "         undoes yours, R",
        "         restores (asks)",
        "H        … one person's",
        "? help   q quit",
    ]
}
