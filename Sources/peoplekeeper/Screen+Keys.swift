import Foundation
import PeopleClient
import PeopleCore

extension Screen {
    func handle(_ key: Key) {
        switch key {
        case .ctrl("c"):
            onQuit?()  // from anywhere, as the help says (it did nothing while typing a name)
            return
        case .ctrl("z"):
            return terminal.suspend { render() }
        case .ignored:
            return
        default: break
        }
        switch mode {
        case .help(let first):
            // ↑↓ (and j k, PgUp PgDn) scroll a help taller than the window; any other key closes it.
            let last = max(0, Self.help.count - helpRows)
            let step: Int? = switch key {
            case .down, .char("j"): 1
            case .up, .char("k"): -1
            case .pageDown: helpRows
            case .pageUp: -helpRows
            default: nil
            }
            if let step, last > 0 { mode = .help(first: min(last, max(0, first + step))) } else { mode = .normal }
        case .confirmRestore(let rev):
            mode = .normal
            guard key == .char("y") || key == .char("Y") else { break }
            // Asked online, answered after the hub went away: a queued restore would take back what
            // teammates send meanwhile, which the question never counted.
            if room.link == .online {
                restore(to: rev)
            } else {
                let gone = if case .offline(_, .closedByHub) = room.link { "the hub closed the connection" }
                    else { "the hub became unreachable" }
                say("\(gone): nothing restored (what it would take back can only be counted "
                    + "once it is back); press R again then", warning: true)
            }
        case .confirmDelete(let tag):
            mode = .normal
            if key == .char("y") || key == .char("Y") {
                perform([.remove(tag)])
            }
        case .confirmQuit:
            mode = .normal
            if key == .char("y") || key == .char("Y") { onQuit?() }
        case .adding(let name, let cursor):
            addKey(key, name: name, cursor: cursor)
        case .renewing(let token):
            renewKey(key, token: token)
        case .editingName(let cursor):
            editName(key, cursor: cursor)
        case .moving:
            switch key {
            case .up, .char("k"): move(by: -1)
            case .down, .char("j"): move(by: 1)
            case .pageUp: move(by: -listPage)
            case .pageDown: move(by: listPage)
            case .home, .char("g"): move(by: -people.count)
            case .end, .char("G"): move(by: people.count)
            case .enter, .escape, .char("m"): mode = .normal
            default: break
            }
        case .choosing(let row, let index):
            choose(key, row: row, index: index)
        case .finding(let text, let from):
            find(key, text: text, from: from)
        case .normal where showingHistory:
            historyKey(key)
        case .normal:
            normal(key)
        }
        settle()
        render()
    }

    /// `q`: quits, but first asks when changes of the user's cannot reach the hub now but would once it
    /// is back (the link is down): quitting loses them. Online, changes on their way are
    /// waited for as they were (Open.swift). Ctrl-C quits at once, from anywhere.
    func quitOrAsk() {
        let waiting = switch room.link {
        case .offline, .connecting: true   // they go once it is back: worth staying for
        case .online, .refused: false      // on their way (waited for), or never going (said on stderr)
        }
        if room.sync.pendingCount > 0, waiting {
            mode = .confirmQuit
        } else {
            onQuit?()
        }
    }

    private func normal(_ key: Key) {
        switch key {
        case .char("q"), .ctrl("d"): quitOrAsk()
        case .char("t") where room.tokenEnded: mode = .renewing(token: "")
        case .char("?"): mode = .help(first: 0)
        case .up, .char("k"): step(-1)
        case .down, .char("j"): step(1)
        // A big room: a page, or the first / last person, at once (in the details: the first / last row).
        case .pageUp: step(-listPage)
        case .pageDown: step(listPage)
        case .home, .char("g"): step(-max(people.count, Row.all.count))
        case .end, .char("G"): step(max(people.count, Row.all.count))
        case .char("/"): inDetails = false; mode = .finding(text: "", from: selectedTag)
        case .char("n"): findNext(lastFind, after: selectedTag)
        case .tab: inDetails.toggle()
        case .right, .char("l"): if selected != nil { inDetails = true }
        case .left, .escape: inDetails = false
        case .char("h"): openHistory()
        case .char("H"): if let person = selected { openHistory(of: person.tag) }
        case .enter:
            if inDetails { editing { activate() } } else if selected != nil { inDetails = true }
        case .char("a"): editing { mode = .adding(name: "", cursor: 0) }
        case .char("d"): editing { if let person = selected { mode = .confirmDelete(person.tag) } }
        case .char("m"): editing { if selected != nil { mode = .moving } }
        case .char("u"): editing { room.undo() }
        case .char("r"): editing { room.redo() }
        case .char("U"): editing { if let person = selected { room.undo(scope: person.tag) } }
        case .char("R"): editing { if let person = selected { room.redo(scope: person.tag) } }
        default: break
        }
    }

    /// A new access token, typed or pasted (white space and line ends dropped: a token has none);
    /// Enter carries the room on with it.
    private func renewKey(_ key: Key, token: String) {
        switch key {
        case .char(let c) where !c.isWhitespace: mode = .renewing(token: token + String(c))
        case .paste(let pasted): mode = .renewing(token: token + pasted.filter { !$0.isWhitespace })
        case .backspace: mode = .renewing(token: String(token.dropLast()))
        case .escape: mode = .normal
        case .enter:
            mode = .normal
            guard !token.isEmpty else { return }
            report = nil
            accessRefusal = nil
            room.renew(token: token)
        default: break
        }
    }

    /// What an action that would change a room an admin deleted says (`editing`, `perform`).
    static let nothingChangesInADeletedRoom = "an admin deleted this room: nothing can change in it now"

    /// An action that changes the room: it starts a new report (the last one went with the previous
    /// action), or, for a viewer, says why nothing happens.
    func editing(_ action: () -> Void) {
        report = nil
        guard !isViewer else {
            return say("view only: a viewer can look but not change the room", warning: true)
        }
        guard !room.deleted else {
            return say(Self.nothingChangesInADeletedRoom, warning: true)
        }
        action()
    }

    private func step(_ delta: Int) {
        if inDetails {
            row = min(max(0, row + delta), Row.all.count - 1)
        } else if let index = selectedIndex {
            let next = min(max(0, index + delta), people.count - 1)
            selectedTag = people[next].tag
        }
    }

    /// Enter on a detail row: type the name; open a chooser on a colour, a length or a topic; turn
    /// glasses or a facial hair style on or off.
    private func activate() {
        guard let person = selected else { return }
        let tag = person.tag
        let current = Row.all[row]
        if current.choices != nil { return mode = .choosing(current, index: current.choiceIndex(of: person)) }
        switch current {
        case .field(.name):
            mode = .editingName(cursor: person.name.unicodeScalars.count)
            caretName = person.name
        case .field(.glasses): perform([.set(tag, .glasses(!person.glasses))])
        case .facialHair(let style):
            perform([.facialHair(tag, style, present: !person.facialHair.contains(style))])
        case .field, .topic: break
        }
    }

    /// A chooser: ← → (or ↑ ↓, h l, j k) move along the values, a digit picks one at once, Enter sets
    /// the one chosen (one edit, or none when it is the value already), Esc leaves the value as it was.
    private func choose(_ key: Key, row: Row, index: Int) {
        let count = row.choices?.count ?? 1
        switch key {
        case .left, .up, .char("h"), .char("k"): mode = .choosing(row, index: max(0, index - 1))
        case .right, .down, .char("l"), .char("j"): mode = .choosing(row, index: min(count - 1, index + 1))
        case .char(let c) where c.wholeNumberValue.map({ (1...count).contains($0) }) == true:
            mode = .normal
            pick(row, c.wholeNumberValue! - 1)
        case .enter:
            mode = .normal
            pick(row, index)
        case .escape: mode = .normal
        default: break
        }
    }

    private func pick(_ row: Row, _ index: Int) {
        guard let person = selected, let diff = row.change(to: index, of: person) else { return }
        perform([diff])
    }

    /// Typing in a name: each character (and each deletion) is one `text` edit, coalesced into one
    /// undo step by the key `name:TAG` while the keys come within the hub's `undo.coalesceMillis` of
    /// each other. The caret moves and deletes a whole letter (grapheme cluster) at a time (`NameCaret`).
    private func editName(_ key: Key, cursor: Int) {
        guard let person = selected else { mode = .normal; return }
        let name = person.name
        let length = name.unicodeScalars.count
        func text(_ components: [TextOperation.Component], caret: Int) {
            perform([.text(person.tag, TextOperation(components))], coalesce: "name:\(person.tag)")
            // Where this user's own edit leaves the caret (the name as shown now has it); a refused
            // edit (a name over the limit) changed nothing, and the caret stays.
            let now = selected?.name ?? name
            mode = .editingName(cursor: now == name ? cursor : NameCaret.snapped(caret, in: now))
            caretName = now
        }
        switch key {
        case .enter, .escape: mode = .normal
        case .left: mode = .editingName(cursor: NameCaret.left(of: cursor, in: name))
        case .right: mode = .editingName(cursor: NameCaret.right(of: cursor, in: name))
        case .home, .ctrl("a"): mode = .editingName(cursor: 0)
        case .end, .ctrl("e"): mode = .editingName(cursor: length)
        case .backspace:
            guard cursor > 0 else { return }
            let from = NameCaret.left(of: cursor, in: name)
            guard !Self.leavesBlank(name, removing: from..<cursor) else { return refuseEmptyName() }
            text((from > 0 ? [.retain(from)] : []) + [.delete(cursor - from)], caret: from)
        case .delete:
            guard cursor < length else { return }
            let to = NameCaret.right(of: cursor, in: name)
            guard !Self.leavesBlank(name, removing: cursor..<to) else { return refuseEmptyName() }
            text((cursor > 0 ? [.retain(cursor)] : []) + [.delete(to - cursor)], caret: cursor)
        case .char(let c):
            text((cursor > 0 ? [.retain(cursor)] : []) + [.insert(String(c))], caret: cursor + c.unicodeScalars.count)
        case .paste(let pasted):
            let typed = Self.typed(pasted)
            guard !typed.isEmpty else { return }
            text((cursor > 0 ? [.retain(cursor)] : []) + [.insert(typed)], caret: cursor + typed.unicodeScalars.count)
        default: break
        }
    }

    /// Backspace or Delete on a name's last letter: nothing is sent and the letter stays. Each key of a
    /// name is sent as it is typed, so taking the last letter stored a blank person that `/` cannot
    /// find (a black-box pass, session 39), where `set … name ''` and the add prompt refuse an empty
    /// name.
    private func refuseEmptyName() {
        say("a person needs a name: type the new name before deleting the last letter", warning: true)
    }

    /// Whether taking the scalars `range` out of `name` leaves nothing but white space (a blank row,
    /// as the add prompt refuses; a review found " " let through where "" was not).
    static func leavesBlank(_ name: String, removing range: Range<Int>) -> Bool {
        let scalars = Array(name.unicodeScalars)
        var left = String.UnicodeScalarView()
        left.append(contentsOf: scalars[..<range.lowerBound])
        left.append(contentsOf: scalars[range.upperBound...])
        return String(left).trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
    }

    /// Pasted text as it goes into a name: line breaks and tabs become spaces, other control characters
    /// go (a name is typed on one line).
    static func typed(_ pasted: String) -> String {
        var out = String.UnicodeScalarView()
        var lastWasBreak = false
        for scalar in pasted.unicodeScalars {
            let isBreak = scalar == "\n" || scalar == "\r" || scalar == "\t"
            if isBreak {
                if !lastWasBreak { out.append(" ") }
            } else if scalar.properties.generalCategory != .control {
                out.append(scalar)
            }
            lastWasBreak = isBreak
        }
        return String(out)
    }

    /// Typing the name of a person to add: the same caret as in a name (`NameCaret`), nothing sent
    /// until Enter.
    private func addKey(_ key: Key, name: String, cursor: Int) {
        let scalars = Array(name.unicodeScalars)
        func replaced(_ range: Range<Int>, with text: String) -> String {
            var out = String.UnicodeScalarView(scalars[..<range.lowerBound])
            out.append(contentsOf: text.unicodeScalars)
            out.append(contentsOf: scalars[range.upperBound...])
            return String(out)
        }
        switch key {
        case .enter:
            mode = .normal
            add(name: name)
        case .escape: mode = .normal
        case .left: mode = .adding(name: name, cursor: NameCaret.left(of: cursor, in: name))
        case .right: mode = .adding(name: name, cursor: NameCaret.right(of: cursor, in: name))
        case .home, .ctrl("a"): mode = .adding(name: name, cursor: 0)
        case .end, .ctrl("e"): mode = .adding(name: name, cursor: scalars.count)
        case .backspace where cursor > 0:
            let from = NameCaret.left(of: cursor, in: name)
            let next = replaced(from..<cursor, with: "")
            mode = .adding(name: next, cursor: NameCaret.snapped(from, in: next))
        case .delete where cursor < scalars.count:
            mode = .adding(name: replaced(cursor..<NameCaret.right(of: cursor, in: name), with: ""), cursor: cursor)
        case .char(let c):
            let next = replaced(cursor..<cursor, with: String(c))
            mode = .adding(name: next, cursor: NameCaret.snapped(cursor + c.unicodeScalars.count, in: next))
        case .paste(let pasted):
            let typed = Self.typed(pasted)
            let next = replaced(cursor..<cursor, with: typed)
            mode = .adding(name: next, cursor: NameCaret.snapped(cursor + typed.unicodeScalars.count, in: next))
        default: break
        }
    }

    private func add(name: String) {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return say("a person needs a name", warning: true) }
        guard let tag = room.allocateTag() else {
            // Online the hub's next block of tags is on its way: the name is not taken, and the line
            // stays (a report marked offline-only was hidden at once, so nothing was said).
            guard room.link == .online else {
                return say("no tags left for new people until the hub is reachable again", warning: true, lasts: .whileOffline)
            }
            return say("waiting for new tags from the hub: add \(trimmed) again in a moment", warning: true)
        }
        let at = selectedIndex.map { $0 + 1 } ?? 0
        perform([.insert(Person(tag: tag, name: trimmed), at: at)])
        selectedTag = tag
    }

    /// A key while finding a person: each character narrows the search and selects the first person
    /// (from where the search began, round the list) whose name holds it, case and accents ignored;
    /// ↓ the next one; Enter stays there; Esc goes back.
    private func find(_ key: Key, text: String, from: Tag?) {
        switch key {
        case .enter:
            mode = .normal
            lastFind = text
        case .escape:
            mode = .normal
            if let from, people.contains(where: { $0.tag == from }) { selectedTag = from }
        case .down, .tab:
            findNext(text, after: selectedTag)
        case .backspace, .char, .paste:
            let next: String
            switch key {
            case .char(let c): next = text + String(c)
            case .paste(let pasted): next = text + Self.typed(pasted)
            default: next = String(text.dropLast())
            }
            mode = .finding(text: next, from: from)
            if next.isEmpty {
                if let from { selectedTag = from }
            } else {
                findNext(next, after: from, including: true)
            }
        default: break
        }
    }

    /// Selects the first person after `after` (or at it, `including`), round the list, whose name holds
    /// `text`; says so when nobody's does.
    func findNext(_ text: String, after: Tag?, including: Bool = false) {
        guard !text.isEmpty, !people.isEmpty else { return }
        let needle = SearchFold.folded(text)
        let start = after.flatMap { tag in people.firstIndex { $0.tag == tag } } ?? (including ? 0 : -1)
        for step in (including ? 0 : 1)...people.count {
            let person = people[((start + step) % people.count + people.count) % people.count]
            if SearchFold.folded(person.name).contains(needle) {
                selectedTag = person.tag
                return
            }
        }
        say("nobody's name has “\(text)”", warning: true)
    }

    /// Moves the selected person `delta` places, stopping at either end (a page or Home / End moves
    /// as far as it can in one edit).
    private func move(by delta: Int) {
        guard let index = selectedIndex, let person = selected else { return }
        let to = min(max(0, index + delta), people.count - 1)
        guard to != index else { return }
        perform([.move(person.tag, to: to)], coalesce: "move:\(person.tag)")
    }

    /// People per PgUp / PgDn: the list's height on this terminal.
    private var listPage: Int { max(1, terminal.size.rows - 6) }

    /// Every edit goes through here, labelled with its action name (`actionLabel`, what Undo offers):
    /// the report of the action before goes with it.
    private func perform(_ diffs: [Diff], coalesce: String? = nil) {
        report = nil
        // A question or a name being typed when the room was deleted ends with it (`update`); what got
        // here meanwhile is not made either (a review: `y` to a delete question removed the person
        // on the screen and counted a change never to be sent).
        guard !room.deleted else { return say(Self.nothingChangesInADeletedRoom, warning: true) }
        do { try room.edit(diffs, label: diffs.actionLabel, coalesce: coalesce) } catch {
            say("not applied: \(error)", warning: true)
        }
    }
}
