import Foundation
import PeopleClient
import PeopleCore

/// The history view (`h`): the room's timeline, newest first, in the columns `peoplekeeper log` prints,
/// or (`H`) the selected person's: the revisions that named them (`log --tag`),
/// with older pages loaded as the selection nears the end (`LiveRoom.reader`). Enter on one of this
/// user's rows still on their undo stack (marked `↶`) undoes it selectively; `R` restores the room to
/// the selected row after a confirmation that says how many changes it takes back; Esc or `h` goes
/// back. A viewer may look, not undo or restore (`editing` says so).
///
/// A run of revisions that are one action (a name typed a letter a revision, a person moved a place at
/// a time: `LogEntry+Runs.swift`) is one row, as on the web page: Enter undoes the run's undo entry, R
/// restores to after its newest revision.
///
/// The selection is a revision, not an index, so it stays on its row while rows arrive above it (or
/// its run grows).
extension Screen {
    /// One row of the view: a run of revisions of the timeline (newest first; most often one), or
    /// (once the oldest page is in) the room as it began, revision 0, which has no entry.
    struct HistoryRow {
        var run: [ServerMessage.LogEntry]
        /// The newest revision of the run (what R restores to).
        var rev: Int { run.first?.rev ?? 0 }
        /// Its oldest.
        var first: Int { run.last?.rev ?? 0 }
        /// The newest revision's entry.
        var entry: ServerMessage.LogEntry? { run.first }

        func contains(_ rev: Int) -> Bool { first <= rev && rev <= self.rev }
    }

    var historyRows: [HistoryRow] {
        let reader = room.reader
        var rows = reader.rows.runs.map { HistoryRow(run: $0) }
        // The room as it began ends the room's timeline (R restores to it), not a person's.
        if reader.loaded && !reader.more && reader.person == nil { rows.append(HistoryRow(run: [])) }
        return rows
    }

    /// The selected row: the one that holds `historyRev`, or the first older one if that revision is
    /// not loaded now.
    var historyIndex: Int? {
        let rows = historyRows
        guard !rows.isEmpty else { return nil }
        guard let rev = historyRev else { return 0 }
        return rows.firstIndex { $0.first <= rev } ?? rows.count - 1
    }

    /// Opens the room's history, or with `person` that person's.
    func openHistory(of person: Tag? = nil) {
        showingHistory = true
        historyRev = nil
        historyTopRev = nil
        room.openTimeline(person: person)
    }

    func closeHistory() {
        showingHistory = false
        room.closeTimeline()
    }

    /// A key in the history view (normal mode).
    func historyKey(_ key: Key) {
        let page = max(1, terminal.size.rows - 10)
        seekingOldest = false
        if report?.lasts == .untilKey { report = nil }
        switch key {
        case .char("q"), .ctrl("d"): quitOrAsk()
        case .ctrl("c"): onQuit?()
        case .char("t") where room.tokenEnded: mode = .renewing(token: "")
        case .char("?"): mode = .help(first: 0)
        case .escape, .left, .char("h"): closeHistory()
        case .up, .char("k"): stepHistory(-1)
        case .down, .char("j"): stepHistory(1)
        case .pageUp: stepHistory(-page)
        case .pageDown: stepHistory(page)
        case .home, .char("g"): stepHistory(-1_000_000)
        case .end, .char("G"):
            stepHistory(1_000_000)
            seekingOldest = true
            oldestFrom = historyRows.count
        case .enter: editing { undoSelectedRow() }
        case .char("R"): editing { askRestore() }
        case .char("u"): editing { room.undo() }
        case .char("r"): editing { room.redo() }
        default: break
        }
    }

    /// End / G: the selection on the oldest row loaded, and the next older page asked for, until the
    /// rows reach rev 0 or `oldestReach` more than when the key was pressed.
    func seekOldest() {
        let rows = historyRows
        guard let last = rows.last else { return }
        historyRev = last.rev
        if !room.reader.more {
            seekingOldest = false
        } else if rows.count - oldestFrom >= Self.oldestReach {
            seekingOldest = false
            let revisions = rows.reduce(0) { $0 + $1.run.count }  // a run is one row of several
            say("\(revisions) revisions loaded: End (G) again loads older ones", warning: false, lasts: .untilKey)
        } else {
            room.loadOlder()
        }
    }

    /// Moves the selection; near the end of the rows loaded, the next older page is asked for.
    private func stepHistory(_ delta: Int) {
        let rows = historyRows
        guard let index = historyIndex else { return }
        let next = min(max(0, index + delta), rows.count - 1)
        historyRev = rows[next].rev
        if next >= rows.count - 10 { room.loadOlder() }
    }

    /// Enter: a selective undo of the row's entry, if it is one of this user's still on their stack.
    private func undoSelectedRow() {
        guard let index = historyIndex else { return }
        guard let row = historyRows[index].entry else {
            return say("rev 0 is the room as it began: R restores the room to it", warning: false)
        }
        guard let entry = row.entry else {
            let whose = row.author == room.sync.user ? "this one left your undo stack" : "this one is \(row.author)'s"
            return say("only rows marked ↶ can be undone here: \(whose)", warning: true)
        }
        guard !room.sync.isQueued(undoOf: entry) else {
            // Online it may be on its way already (sent, its answer not back yet).
            return say(room.link == .online ? "your undo of rev \(row.rev) is already on its way to the hub"
                                            : "your undo of rev \(row.rev) already waits to be sent", warning: false)
        }
        room.undo(entry: entry)
    }

    /// R: asks before restoring (the key line takes the answer). A restore is computed by the hub when
    /// it gets there, so it is not queued while the hub is unreachable: the count asked about would not
    /// be what it takes back. A room that already looks as it did at the row's revision (its changes
    /// since were taken back, or made again) has nothing to restore, and is not asked about: the client
    /// walks its state back through the revisions it has seen (`ClientSync.model(at:)`; the web page
    /// asks the hub, `GET ?at=`); further back, the hub's answer says so after the restore.
    private func askRestore() {
        guard let index = historyIndex else { return }
        let rev = historyRows[index].rev
        guard room.link == .online else {
            if room.tokenEnded {
                return say("restoring needs the hub, which refused your access token: press t and paste a new one, then R",
                           warning: true, lasts: .whileOffline)
            }
            let which = if case .offline(_, .closedByHub) = room.link { "closed the connection" } else { "is unreachable now" }
            return say("restoring needs the hub, which \(which): try again when it is back", warning: true,
                       lasts: .whileOffline)
        }
        guard room.sync.revision > rev else {
            return say("the room is as it was at rev \(rev): nothing to restore", warning: false)
        }
        if room.sync.model(at: rev) == room.sync.confirmed {
            return say("the room already looks as it did at rev \(rev): nothing to restore", warning: false)
        }
        mode = .confirmRestore(rev: rev)
    }

    /// Whether the screen shows times that go stale (`2 min ago`): the history view, the details' writers.
    var showsTimes: Bool { showingHistory || room.reader.attribution != nil }

    /// How many revisions a restore to `rev` takes back: every one since.
    func changesSince(_ rev: Int) -> Int { max(0, room.sync.revision - rev) }

    /// The confirmation's question, on the status line while it is asked.
    var restoreQuestion: Report? {
        guard case .confirmRestore(let rev) = mode else { return nil }
        guard room.link == .online else {
            let why = if case .offline(_, let loss) = room.link { loss.headline } else { "the hub is unreachable" }
            return Report(text: "\(why): no restore now (y restores nothing; any key closes)", warning: true)
        }
        let count = changesSince(rev)
        let which = count == 1 ? "the change since (rev \(rev + 1))" : "the \(count) changes since (revs \(rev + 1)–\(rev + count))"
        return Report(text: "restore the room to rev \(rev)? It takes back \(which)", warning: true)
    }

    /// `y` to the confirmation. The hub computes the restore: the status line says what it did once it
    /// answers (the room may already look as it did then: the count asked about is every revision since).
    func restore(to rev: Int) {
        report = nil
        room.restore(to: rev)
        say("restoring the room to rev \(rev)…", warning: false)
    }

    // MARK: Drawing

    /// The column widths of a row after the selection mark, for a body `width` wide: rev, when, who,
    /// action, undo mark; the people take the rest. Rev, who and the mark are as wide as the rows
    /// need (an entry id of 1,000 or more keeps its space), when as its longest words
    /// (`historyWhenWidth`); what is left is shared by the action (up
    /// to its longest label) and the people, who keep at least a third of it (a second pass found
    /// the people gone at 60 columns and the action cut at 100).
    static func historyColumns(width: Int, rows: [ServerMessage.LogEntry], revs: [String], actions: [String]) -> [Int] {
        let digits = { (n: Int) in String(n).count }
        let rev = max(3, revs.map { TerminalText.columns($0) }.max() ?? 0) + 2
        let when = historyWhenWidth
        let who = min(11, max(7, (rows.map { TerminalText.columns($0.author) }.max() ?? 0) + 1))
        let undo = max(5, 3 + digits(rows.compactMap(\.entry).max() ?? 0))
        let rest = max(0, width - 2 - rev - when - who - undo)
        let people = min(max(8, rest / 3), 30)
        let longest = actions.map { TerminalText.columns($0) }.max() ?? 6
        let action = max(8, min(longest + 1, rest - people))
        return [rev, when, who, action, undo]
    }

    /// The when column: the longest of `TimeWords.ago`'s words (`29 days ago`; `59 min ago`, `23 h ago`
    /// and a date such as `2026-10-01` are shorter) and a space before who. Fixed, so that the columns
    /// do not move as time passes. It was 11: `29 days ago` was cut (`29 days a…`), and `10 min ago`
    /// left one space before who, where shorter times left two (a black-box pass, session 39).
    static let historyWhenWidth = TerminalText.columns("29 days ago") + 1

    private func historyLine(_ mark: String, _ cells: [String], columns: [Int]) -> String {
        var line = mark
        for (cell, width) in zip(cells, columns) {
            // In columns (a CJK name takes two per character); a cut cell keeps a space before the next.
            let cell = TerminalText.escaped(cell)
            line += TerminalText.columns(cell) < width ? TerminalText.fit(cell, width: width)
                : TerminalText.fit(cell, width: width - 1) + " "
        }
        return line + (cells.count > columns.count ? cells[columns.count] : "")
    }

    /// The view's lines (the body, full width): a title, the column names, the rows around the
    /// selection, and at the bottom what the selected revision did, with its exact time.
    func historyPane(width: Int, height: Int) -> [String] {
        let reader = room.reader
        // Rows read before the hub went away stay, said to be as last read (they come again when it is back).
        let away = isAway
        let whose = reader.person.map { tag in
            "History of " + (room.sync.view[tag]?.name ?? knownNames[tag] ?? "tag \(tag)") + " (tag \(tag)): the changes that named them"
        } ?? "History of room \(room.room)"
        let why: String = switch room.link {
        case _ where room.tokenEnded: "the hub refused your access token"
        case _ where room.deleted: "an admin deleted this room"
        case .connecting: "connecting again"
        case .offline(_, let loss): loss.headline
        case .online, .refused: "the hub is unreachable"
        }
        var out = [style(whose, "1")
                   + (away && reader.loaded ? " · as last read: \(why)"
                                             : " · newest first" + (isViewer || room.deleted ? "" : " · ↶ yours to undo"))]
        guard reader.loaded else {
            let waiting: String = switch room.link {
            case .offline(_, let why): "(\(why.sentence); the history comes when it is back)"
            case .refused where room.deleted: "(an admin deleted this room and its history)"
            case .refused(let why): "(the hub refused you: \(why))"
            case .online, .connecting: "(loading the history…)"
            }
            return (out + ["", "  " + waiting] + Array(repeating: "", count: height)).prefix(height).map { String($0) }
        }
        let rows = historyRows
        let entries = rows.compactMap(\.entry)
        let columns = Self.historyColumns(width: width, rows: entries, revs: rows.map(Self.revCell),
                                          actions: rows.map(action) + ["the room as it began"])
        out.append(style(historyLine("  ", ["REV", "WHEN", "WHO", "ACTION", "UNDO", "PEOPLE"], columns: columns), "2"))
        let index = historyIndex ?? 0
        if rows.isEmpty { out += ["", "  (no changes have named this person yet)"] }
        // The rows scroll only as far as keeps the selection in sight (`ScrollWindow`); rows above the
        // first shown are said to be there.
        let top = historyTopRev.flatMap { rev in rows.firstIndex { $0.contains(rev) } }
        let window = ScrollWindow(rows: rows.count, selected: index, space: height - 3 - (reader.more ? 1 : 0), top: top)
        let (first, visible) = (window.first, window.visible)
        historyTopRev = first > 0 ? rows[first].rev : nil
        // Revisions, not rows (a run is one row of several), as the web page counts them.
        let above = rows.prefix(first).reduce(0) { $0 + max(1, $1.run.count) }
        if first > 0 { out.append(style("  ↑ \(above) newer revision\(above == 1 ? "" : "s") (g goes to the newest)", "2")) }
        let now = room.hubNow  // a revision's time is the hub's clock
        let people = room.sync.view
        // Names seen here, and the rows' last names of the others (`remember`, at every update).
        let known = knownNames.byTag
        // The bottom line names people no longer in the room by the names they last had.
        let named = PeopleModel(people: Array(people.people)
                                    + known.filter { people[$0.key] == nil }.map { Person(tag: $0.key, name: $0.value) })
        for (i, row) in rows.enumerated().dropFirst(first).prefix(visible) {
            let mark = i == index ? "▶ " : "  "
            let line: String
            if let e = row.entry {
                line = historyLine(mark, [Self.revCell(row), e.time.map { TimeWords.ago($0, now: now) } ?? "-", e.author,
                                          action(row), e.entry.flatMap { room.deleted ? nil : "↶ \($0)" } ?? "",
                                          e.peopleWords(now: people, known: known)],
                                   columns: columns)
            } else {
                line = historyLine(mark, ["0", "-", Writer.seedWords, "the room as it began", "", ""], columns: columns)
            }
            out.append(i == index ? style(line, "7") : line)
        }
        if reader.more {
            out.append(style(away ? "  ↓ older revisions load when you are online again" : "  ↓ older revisions load as you scroll", "2"))
        }
        var lines = Array((out + Array(repeating: "", count: height)).prefix(max(0, height - 1)))
        lines.append(rows.indices.contains(index) ? selectedRevision(rows[index], people: named, older: rows[(index + 1)...]) : "")
        return lines
    }

    /// What the row's action is called: its label (one that came without is named from its changes,
    /// as on the web page), with Undo / Redo before an undone or redone one, and a run's count of
    /// revisions: `Change Name ×6`.
    private func action(_ row: HistoryRow) -> String {
        guard let e = row.entry else { return "" }
        let label = e.actionLabel
        let run = row.run.count > 1 ? " ×\(row.run.count)" : ""
        switch e.kind {
        case .undo: return "Undo \(label)"
        case .redo: return "Redo \(label)"
        case .edit, .restore: return label + run
        }
    }

    /// The REV cell: `14`, or a run's `9–14`.
    static func revCell(_ row: HistoryRow) -> String {
        row.run.count > 1 ? "\(row.first)–\(row.rev)" : String(row.rev)
    }

    /// The bottom line: `rev 14 · 2026-11-25 14:50:34 · ann: Joan's hair color to red` (a run's: `revs
    /// 9–14 · … · ann: Kim's name typed (6 changes)`, its newest revision's time). People are
    /// named as they are now, so a name set says the tag it renamed (not "Joanie's name to Joanie").
    /// - Parameter older: the rows older than `row` (newest first), for the name a rename replaced.
    private func selectedRevision(_ row: HistoryRow, people: PeopleModel, older: ArraySlice<HistoryRow>) -> String {
        guard let e = row.entry else { return style(" rev 0 · the room as it began", "1") }
        let when = e.time.map { " · " + TimeWords.exact($0) } ?? ""
        let revs = row.run.count > 1 ? "revs \(row.first)–\(row.rev)" : "rev \(e.rev)"
        // A name set whole is said with the name it replaced, when the older rows or the revisions this
        // client saw give it (a person of the seed renamed before this client came has no row that
        // named them: then by tag). "Joanie's name to Joanie" said nothing.
        var before: [Tag: String]?
        func nameBefore(_ tag: Tag) -> String? {
            before = before ?? older.flatMap(\.run).lastNames
            return before?[tag] ?? room.sync.model(at: e.rev - 1)?[tag]?.name
        }
        // Typing is a text edit per key: "Kim's name typed" once, not once per letter. Places in the
        // list count from 1, as the list shows them (the commands' `--at` / `move` take indices from 0,
        // and say them so; "moved Bob to 2" read as the second place, or a revision: a black-box pass).
        let what = e.ops.map { diff in
            switch diff {
            case .set(let tag, .name(let name)): "renamed \(nameBefore(tag) ?? "tag \(tag)") to \(name)"
            case .move(let tag, let to): "moved \(people.called(tag)) to place \(to + 1)"
            case .insert(let p, let at): "added \(p.name) (tag \(p.tag)) at place \(at + 1)"
            default: diff.phrase(people: people)
            }
        }.reduce(into: [String]()) { phrases, phrase in if phrases.last != phrase { phrases.append(phrase) } }
         .joined(separator: "; ")
        // A run says what its newest revision did (the name typed, the last place moved to), and how
        // many revisions it holds.
        let count = row.run.count > 1 ? " (\(row.run.count) changes)" : ""
        return style(" \(revs)\(when) · \(e.author): ", "1") + (what.isEmpty ? "no change" : what) + count
            + (stepBeyond(row).map { "; Enter takes back the whole step, revs \($0.first)–\($0.last)" } ?? "")
    }

    /// The undo step of this user's that `row` is part of, when it holds more than the row (a teammate's
    /// change came in the middle of the typing, or its first revisions are on a page not read): its
    /// first revision (the entry's id) and its last one read. Enter takes back the whole step (a
    /// black-box pass: the row said `×7`, and 20 letters went).
    func stepBeyond(_ row: HistoryRow) -> (first: Int, last: Int)? {
        guard let id = row.entry?.entry else { return nil }
        let last = room.reader.rows.lazy.filter { $0.entry == id }.map(\.rev).max() ?? row.rev
        return id < row.first || last > row.rev ? (id, last) : nil
    }
}
