import Foundation
import PeopleClient
import PeopleCore

/// The interactive screen: the people on the left, the selected person's fields on the right, who
/// else is here, the connection, the undo / redo labels and a status line. All of it runs on `queue`.
final class Screen: @unchecked Sendable {
    enum Mode: Equatable {
        case normal
        case editingName(cursor: Int)
        case adding(name: String)
        case confirmDelete(Tag)
        case moving
        case help
    }

    /// The rows of the detail pane, in order.
    enum Row: Equatable {
        case field(Field)
        case facialHair(FacialHairStyle)
        case topic(Topic)

        static let all: [Row] = Field.allCases.map(Row.field) + FacialHairStyle.allCases.map(Row.facialHair)
            + Topic.allCases.map(Row.topic)

        var presenceField: String {
            switch self {
            case .field(let f): f.rawValue
            case .facialHair: "facialHair"
            case .topic: "preference"
            }
        }
    }

    let room: LiveRoom
    let terminal: Terminal
    let queue: DispatchQueue
    private(set) var mode = Mode.normal
    private var selectedTag: Tag?
    /// Where the selection was last seen: if that person goes, the selection stays at this place.
    private var lastIndex = 0
    private var inDetails = false
    private var row = 0
    private var status = ""
    private var statusIsWarning = false
    var onQuit: (() -> Void)?

    init(room: LiveRoom, terminal: Terminal, queue: DispatchQueue) {
        self.room = room
        self.terminal = terminal
        self.queue = queue
    }

    private var people: [Person] { Array(room.sync.view.people) }

    private var selectedIndex: Int? {
        guard !people.isEmpty else { return nil }
        if let tag = selectedTag, let index = room.sync.view.index(of: tag) { return index }
        return min(lastIndex, people.count - 1)
    }

    private var selected: Person? { selectedIndex.map { people[$0] } }

    // MARK: Updates from the room

    func update(_ notices: [LiveRoom.Notice]) {
        for notice in notices {
            switch notice {
            case .skipped(let reports, let before):
                var sentences: [String] = []
                for report in reports {
                    let sentence = report.sentence(people: before) + " — skipped"
                    if !sentences.contains(sentence) { sentences.append(sentence) }
                }
                say(sentences.joined(separator: "; "), warning: true)
            case .error(let error):
                say("the hub refused: \(error.message) (\(error.code.rawValue))", warning: true)
            case .remote(let summary):
                let what = summary.label ?? "a change"
                switch summary.kind {
                case .edit: say("\(summary.author): \(what)", warning: false)
                case .undo: say("\(summary.author) undid: \(what)", warning: false)
                case .redo: say("\(summary.author) redid: \(what)", warning: false)
                case .restore: say("\(summary.author) restored: \(what)", warning: false)
                }
            case .offline(let why):
                say("the hub is unreachable (\(why)); your edits are kept and sent when it is back", warning: true)
            }
        }
        settle()
        render()
    }

    /// After any change: the selection stays on the same person (by tag) whatever moved, or at the same
    /// place if they are gone; the name cursor stays inside the name; the others are told what this
    /// user is looking at.
    private func settle() {
        if selectedTag == nil || room.sync.view[selectedTag!] == nil { selectedTag = selected?.tag }
        if let index = selectedIndex { lastIndex = index }
        if case .editingName(let cursor) = mode, let person = selected {
            mode = .editingName(cursor: min(cursor, person.name.unicodeScalars.count))
        }
        tellPresence()
    }

    private func say(_ text: String, warning: Bool) {
        status = text
        statusIsWarning = warning
    }

    // MARK: Keys

    func handle(_ key: Key) {
        switch mode {
        case .help:
            mode = .normal
        case .confirmDelete(let tag):
            if key == .char("y") || key == .char("Y") {
                perform([.remove(tag)], label: "Remove Person")
            }
            mode = .normal
        case .adding(let name):
            switch key {
            case .enter:
                mode = .normal
                add(name: name)
            case .escape: mode = .normal
            case .backspace: mode = .adding(name: String(name.dropLast()))
            case .char(let c): mode = .adding(name: name + String(c))
            default: break
            }
        case .editingName(let cursor):
            editName(key, cursor: cursor)
        case .moving:
            switch key {
            case .up, .char("k"): move(by: -1)
            case .down, .char("j"): move(by: 1)
            case .enter, .escape, .char("m"): mode = .normal
            default: break
            }
        case .normal:
            normal(key)
        }
        settle()
        render()
    }

    private func normal(_ key: Key) {
        switch key {
        case .char("q"), .ctrl("c"), .ctrl("d"): onQuit?()
        case .char("?"): mode = .help
        case .up, .char("k"): step(-1)
        case .down, .char("j"): step(1)
        case .tab: inDetails.toggle()
        case .right, .char("l"): if selected != nil { inDetails = true }
        case .left, .char("h"), .escape: inDetails = false
        case .enter:
            if inDetails { activate() } else if selected != nil { inDetails = true }
        case .char("a"): mode = .adding(name: "")
        case .char("d"): if let person = selected { mode = .confirmDelete(person.tag) }
        case .char("m"): if selected != nil { mode = .moving }
        case .char("u"): room.undo()
        case .char("r"): room.redo()
        case .char("U"): if let person = selected { room.undo(scope: person.tag) }
        case .char("R"): if let person = selected { room.redo(scope: person.tag) }
        default: break
        }
    }

    private func step(_ delta: Int) {
        if inDetails {
            row = min(max(0, row + delta), Row.all.count - 1)
        } else if let index = selectedIndex {
            let next = min(max(0, index + delta), people.count - 1)
            selectedTag = people[next].tag
        }
    }

    private func tellPresence() {
        room.view(tag: selected?.tag, field: inDetails ? Row.all[row].presenceField : nil)
    }

    /// Enter on a detail row: edit the name, or change the value (colours and lengths cycle,
    /// glasses and facial hair toggle, a topic goes none → like → dislike → none).
    private func activate() {
        guard let person = selected else { return }
        let tag = person.tag
        switch Row.all[row] {
        case .field(.name): mode = .editingName(cursor: person.name.unicodeScalars.count)
        case .field(.hairColor): perform([.set(tag, .hairColor(Self.next(person.hairColor)))], label: "Change Hair Color")
        case .field(.hairLength): perform([.set(tag, .hairLength(Self.next(person.hairLength)))], label: "Change Hair Length")
        case .field(.eyeColor): perform([.set(tag, .eyeColor(Self.next(person.eyeColor)))], label: "Change Eye Color")
        case .field(.glasses): perform([.set(tag, .glasses(!person.glasses))], label: "Toggle Glasses")
        case .facialHair(let style):
            perform([.facialHair(tag, style, present: !person.facialHair.contains(style))], label: "Change Facial Hair")
        case .topic(let topic):
            let next: Opinion = switch person.opinion(on: topic) { case .none: .like; case .like: .dislike; case .dislike: .none }
            perform([.preference(tag, topic, next)], label: "Change Likes")
        }
    }

    static func next<V: CaseIterable & Equatable>(_ value: V) -> V {
        let all = Array(V.allCases)
        let index = all.firstIndex(of: value) ?? 0
        return all[(index + 1) % all.count]
    }

    /// Typing in a name: each character (and each deletion) is one `text` edit, all coalesced into
    /// one undo step by the key `name:TAG`.
    private func editName(_ key: Key, cursor: Int) {
        guard let person = selected else { mode = .normal; return }
        let length = person.name.unicodeScalars.count
        func text(_ components: [TextOperation.Component]) {
            perform([.text(person.tag, TextOperation(components))], label: "Change Name", coalesce: "name:\(person.tag)")
        }
        switch key {
        case .enter, .escape: mode = .normal
        case .left: mode = .editingName(cursor: max(0, cursor - 1))
        case .right: mode = .editingName(cursor: min(length, cursor + 1))
        case .home, .ctrl("a"): mode = .editingName(cursor: 0)
        case .end, .ctrl("e"): mode = .editingName(cursor: length)
        case .backspace:
            guard cursor > 0 else { return }
            text((cursor > 1 ? [.retain(cursor - 1)] : []) + [.delete(1)])
            mode = .editingName(cursor: cursor - 1)
        case .delete:
            guard cursor < length else { return }
            text((cursor > 0 ? [.retain(cursor)] : []) + [.delete(1)])
        case .char(let c):
            text((cursor > 0 ? [.retain(cursor)] : []) + [.insert(String(c))])
            mode = .editingName(cursor: cursor + c.unicodeScalars.count)
        default: break
        }
    }

    private func add(name: String) {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return say("a person needs a name", warning: true) }
        guard let tag = room.allocateTag() else {
            return say("no tags left for new people until the hub is reachable again", warning: true)
        }
        let at = selectedIndex.map { $0 + 1 } ?? 0
        perform([.insert(Person(tag: tag, name: trimmed), at: at)], label: "Add Person")
        selectedTag = tag
    }

    private func move(by delta: Int) {
        guard let index = selectedIndex, let person = selected else { return }
        let to = index + delta
        guard to >= 0, to < people.count else { return }
        perform([.move(person.tag, to: to)], label: "Move Person", coalesce: "move:\(person.tag)")
    }

    private func perform(_ diffs: [Diff], label: String, coalesce: String? = nil) {
        do { try room.edit(diffs, label: label, coalesce: coalesce) } catch {
            say("not applied: \(error)", warning: true)
        }
    }

    // MARK: Drawing

    private func style(_ text: String, _ codes: String) -> String {
        terminal.colors ? "\u{1B}[\(codes)m\(text)\u{1B}[0m" : text
    }

    /// Pads or cuts `text` (which may hold style codes) to `width` visible characters.
    private func fit(_ text: String, _ width: Int) -> String {
        var visible = 0
        var out = ""
        var inEscape = false
        for c in text {
            if c == "\u{1B}" { inEscape = true }
            if inEscape {
                out.append(c)
                if c == "m" { inEscape = false }
                continue
            }
            guard visible < width else { continue }
            out.append(c)
            visible += 1
        }
        return out + String(repeating: " ", count: max(0, width - visible)) + (terminal.colors ? "\u{1B}[0m" : "")
    }

    func render() {
        let (width, height) = terminal.size
        guard width >= 20, height >= 8 else {
            return terminal.write("\u{1B}[H\u{1B}[2J" + "window too small")
        }
        var lines: [String] = []
        let sync = room.sync
        let connection: String = switch room.link {
        case .online: style("● online", "32")
        case .connecting: style("◌ connecting", "33")
        case .offline(let retryAt, _):
            style("○ offline, retry in \(max(0, Int(retryAt.timeIntervalSinceNow.rounded(.up)))) s", "31")
        case .refused(let why): style("✕ refused: \(why)", "31")
        }
        // The connection and the waiting count first: a long room name is what gets cut.
        let waiting = sync.pendingCount > 0 ? " · \(sync.pendingCount) change\(sync.pendingCount == 1 ? "" : "s") waiting" : ""
        lines.append(fit(" " + connection + waiting + " · " + style("PeopleKeeper", "1")
                         + " · room \(room.room) · you are \(sync.user) · rev \(sync.revision)", width))
        lines.append(String(repeating: "─", count: width))

        let body = height - 7
        let left = min(32, max(18, width / 3))
        let right = width - left - 3
        let listLines = listPane(width: left, height: body)
        let detailLines = detailPane(width: right, height: body)
        for i in 0..<body {
            lines.append(fit(listLines[i], left) + " │ " + fit(detailLines[i], right))
        }
        lines.append(String(repeating: "─", count: width))
        let here = sync.presence.map { entry -> String in
            var text = entry.user
            if let tag = entry.viewing {
                let name = sync.view[tag]?.name ?? "tag \(tag)"
                text += " (\(name)\(entry.field.map { " · \($0)" } ?? ""))"
            }
            return text
        }
        lines.append(fit(" here: " + here.joined(separator: ", "), width))
        let h = sync.history
        let undo = h.canUndo ? "u Undo \(h.undoLabel ?? "")" : style("u Undo", "2")
        let redo = h.canRedo ? "r Redo \(h.redoLabel ?? "")" : style("r Redo", "2")
        lines.append(fit(" \(undo)    \(redo)    U / R: only \(selected?.name ?? "the selected person")", width))
        lines.append(fit(" " + (statusIsWarning ? style(status, "33") : status), width))
        lines.append(fit(style(" " + keyHelp, "2"), width))
        terminal.write("\u{1B}[H" + lines.joined(separator: "\r\n"))
    }

    private var keyHelp: String {
        switch mode {
        case .normal: "↑↓/jk move  Tab/→ details  Enter edit  a add  d delete  m move  u/r undo/redo  U/R this person  ? help  q quit"
        case .editingName: "typing the name: ←→ move  Backspace/Delete  Enter or Esc when done"
        case .adding: "new person's name, then Enter (Esc: cancel)"
        case .confirmDelete: "y to delete, any other key to keep"
        case .moving: "↑↓/jk move the person  Enter or Esc when done"
        case .help: "any key to close the help"
        }
    }

    private func listPane(width: Int, height: Int) -> [String] {
        var out: [String] = []
        if case .help = mode {
            return (Self.help + Array(repeating: "", count: height)).prefix(height).map { String($0) }
        }
        let index = selectedIndex ?? 0
        let first = max(0, min(index - height / 2, people.count - height))
        for (i, person) in people.enumerated().dropFirst(first).prefix(height) {
            let viewers = room.sync.presence.filter { $0.viewing == person.tag && $0.user != room.sync.user }.map(\.user)
            let marker = i == index ? (inDetails ? "›" : "▶") : " "
            var text = "\(marker) \(person.name)"
            if !viewers.isEmpty { text += " " + style("[\(viewers.joined(separator: ","))]", "36") }
            out.append(i == index && !inDetails ? style(text, "7") : text)
        }
        if people.isEmpty { out.append("  (nobody yet: a to add)") }
        if case .adding(let name) = mode { out.append(style("+ \(name)▏", "1")) }
        if case .confirmDelete(let tag) = mode { out.append(style("delete \(room.sync.view[tag]?.name ?? "")? y/n", "31")) }
        return (out + Array(repeating: "", count: height)).prefix(height).map { String($0) }
    }

    private func detailPane(width: Int, height: Int) -> [String] {
        guard let person = selected else { return Array(repeating: "", count: height) }
        var out: [String] = [style("\(person.name)", "1") + "  tag \(person.tag)", ""]
        let first = max(0, min(row - (height - 2) / 2, Row.all.count - (height - 2)))
        for (i, r) in Row.all.enumerated().dropFirst(first).prefix(height - 2) {
            let label: String
            let value: String
            switch r {
            case .field(let f):
                label = f.rawValue
                if f == .name, case .editingName(let cursor) = mode {
                    let scalars = Array(person.name.unicodeScalars)
                    let head = String(String.UnicodeScalarView(scalars.prefix(cursor)))
                    let tail = String(String.UnicodeScalarView(scalars.dropFirst(cursor)))
                    value = head + "▏" + tail
                } else {
                    value = Words.text(person.value(of: f))
                }
            case .facialHair(let style):
                label = "facial hair: \(style.rawValue)"
                value = person.facialHair.contains(style) ? "yes" : "no"
            case .topic(let topic):
                label = topic.rawValue
                value = switch person.opinion(on: topic) { case .like: "likes"; case .dislike: "dislikes"; case .none: "·" }
            }
            let text = label.padding(toLength: max(24, label.count + 1), withPad: " ", startingAt: 0) + value
            out.append(inDetails && i == row ? style("▶ " + text, "7") : "  " + text)
        }
        return (out + Array(repeating: "", count: height)).prefix(height).map { String($0) }
    }

    static let help = [
        "Keys",
        "↑ ↓ / j k   move",
        "Tab → ←     list / details",
        "Enter       edit the field,",
        "            cycle a value,",
        "            toggle an element",
        "a           add a person",
        "d           delete (asks)",
        "m           move the person",
        "u / r       undo / redo yours",
        "U / R       … on this person",
        "?           this help",
        "q           quit",
    ]
}
