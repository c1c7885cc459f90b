import Foundation
import IdentifiedCollections
import PeopleClient
import PeopleCore

/// The interactive screen: the people on the left, the selected person's fields on the right, who
/// else is here, the connection, the undo / redo labels and a status line. All of it runs on `queue`.
///
/// Keys are `Screen+Keys.swift`, drawing is `Screen+Drawing.swift`, the detail rows `Screen+Row.swift`,
/// the history view (`h`: the timeline, selective undo, restore) `Screen+History.swift`.
/// The status line shows `report` (what the user's latest action, or a teammate's, led to: it goes
/// with the user's next action) or else what `room.link` says about the connection: the link is the
/// one account of the connection, so that note can never outlive it.
final class Screen: @unchecked Sendable {
    enum Mode: Equatable {
        case normal
        /// Typing in the selected person's name, the caret at `cursor` (in scalars).
        case editingName(cursor: Int)
        /// Typing the name of a person to add, the caret at `cursor` (in scalars).
        case adding(name: String, cursor: Int)
        case confirmDelete(Tag)
        case moving
        /// "/": finding a person by name as `text` is typed; Esc goes back to `from`.
        case finding(text: String, from: Tag?)
        /// Picking one value of `row` (the index into `row.choices`); Enter sets it, Esc leaves it.
        case choosing(Row, index: Int)
        /// In the history view: `y` restores the room to revision `rev`, any other key keeps it.
        case confirmRestore(rev: Int)
        /// The help, from its line `first` (it scrolls on a window too short for all of it).
        case help(first: Int)
        /// Pasting (or typing) a new access token after the hub refused the old one in an open room
        /// (`LiveRoom.tokenEnded`: it expired); Enter carries the room on with it, Esc cancels.
        case renewing(token: String)
        /// `q` with changes the hub cannot be sent now (the link is down): `y` quits and loses them,
        /// any other key stays (a black-box pass: `q` offline dropped them unasked).
        case confirmQuit
    }

    var isHelp: Bool { if case .help = mode { true } else { false } }

    /// One line for the status line.
    struct Report: Equatable {
        var text: String
        var warning: Bool
        var lasts: Lasts = .untilReplaced

        /// How long a report stays on the status line.
        enum Lasts: Equatable {
            /// Until the next report (the user's next action, a teammate's edit, …).
            case untilReplaced
            /// Says the hub is unreachable: no longer shown once it is back.
            case whileOffline
            /// About where the history view stands: it goes with the next key there.
            case untilKey
        }
    }

    /// How the status line starts when the hub's room turned out to have another history (`welcome.reset`).
    static let resetNote = "room reset on the hub"

    /// This user's changes the hub had saved and no longer has, for the reset's line: `your 2 saved
    /// changes are gone: Change Hair Color, Add Person` (three named at most), or when which cannot be
    /// told, `your saved changes since it went back may be gone`; nil when none.
    static func lostSaved(_ gone: [ServerMessage.LogEntry], perhapsMore: Bool) -> String? {
        guard !gone.isEmpty else { return perhapsMore ? "your saved changes since it went back may be gone" : nil }
        let labels = gone.map(\.actionLabel)
        let named = labels.prefix(3).joined(separator: ", ") + (labels.count > 3 ? ", …" : "")
        return (gone.count == 1 ? "your saved change is gone: " : "your \(gone.count) saved changes are gone: ") + named
    }

    let room: LiveRoom
    let terminal: Terminal
    let queue: DispatchQueue
    var mode = Mode.normal
    var selectedTag: Tag?
    /// The last text looked for with "/" (what `n` looks for next).
    var lastFind = ""
    /// Where the selection was last seen: if that person goes, the selection stays at this place.
    var lastIndex = 0
    var inDetails = false
    /// The name as it was when the caret was last placed in it: a change since is a teammate's (or the
    /// hub's answer reshaping this user's own), which moves the caret with the text (`settle`).
    var caretName: String?
    /// The details' current row (an index into `Row.all`), which also scrolls the pane.
    var row = 0
    /// Whose details `row` is in: another person's start from the top (`settle`). A pass found every
    /// person shown from `Facial hair` on, after G in one person's details and back to the list.
    private var rowOf: Tag?
    /// The history view (`h`) is shown instead of the list and the details.
    var showingHistory = false
    /// The revision selected in the history view (by revision, so it stays on its row as rows come);
    /// nil: the newest.
    var historyRev: Int?
    /// The revision of the history view's first row shown, once it is scrolled down (nil: at the top,
    /// where rows arriving show). It moves only as far as keeps the selection in sight; while it stays,
    /// the count of newer rows above grows.
    var historyTopRev: Int?
    /// End / G in the history view: the selection follows the oldest row as older pages come, until
    /// rev 0 or `Screen.oldestReach` rows.
    var seekingOldest = false
    /// How many rows were loaded when End / G was pressed.
    var oldestFrom = 0
    /// The rows End / G loads at most before it stops and says so (one more press loads as many more).
    static let oldestReach = 1_000
    /// What the latest action (the user's or a teammate's) led to; nil after the user's next action.
    var report: Report?
    /// The name of everyone this screen has shown or the history rows named, by tag (`remember`).
    var knownNames = KnownNames()
    /// A teammate renaming someone a letter at a time (one revision a letter): who, whom, the name
    /// before the run (empty: none), and when its last letter was made (the hub's time). Within
    /// `renameRunMillis` of it, the next letter's notice keeps the first name ("bob renamed Sam to
    /// Samuel", not "Samue to Samuel").
    private var renameRun: RenameRun?
    struct RenameRun {
        var author: String
        var tag: Tag
        var from: String
        var at: Int64

        /// Whether a rename of `tag` by `author` made at `at` goes on this run.
        func goesOn(author: String, tag: Tag, at: Int64) -> Bool {
            author == self.author && tag == self.tag && abs(at - self.at) < Screen.renameRunMillis
        }
    }
    /// The last skip report, while it names someone gone by tag and the hub is asked their name
    /// (`LiveRoom.nameGone`): said again once the answer comes, if still on the line.
    private var unnamed: Unnamed?
    struct Unnamed {
        var reports: [SkipReport]
        var before: PeopleModel
        var redo: Bool
        var done: String?
        /// The line it was said with last.
        var said = Report(text: "", warning: true)
    }
    /// The room's deletion has been shown: its note took the status line from the last report once.
    private var saidDeleted = false
    static let renameRunMillis: Int64 = 5_000
    /// What the answers to requests queued offline said, until the "sent" line says it with it (at
    /// most `keptForSent`: the line is one line).
    private var saidWhileResending: [Report] = []
    /// Why the link last went down, until it is back (or refused): the status line keeps saying it
    /// through the attempts to reconnect (`◌ connecting`), which are not yet the hub answering.
    private var lastLoss: LiveRoom.Loss?
    /// What the last reset said of this user's saved changes gone, and of the queued changes that no
    /// longer apply ("1 queued change no longer applies"), for the line that later says the rest were sent.
    private var resetSaved: String?
    private var resetLost: String?
    static let keptForSent = 4
    /// Why the hub refused this user's access (`unauthorized`: no token, a wrong or an expired one),
    /// until a new token is sent (`t`, the only way on from a refusal): `open` ends with 77 then, as a
    /// command the hub refuses does (it ended with 0).
    var accessRefusal: String?
    var onQuit: (() -> Void)?

    init(room: LiveRoom, terminal: Terminal, queue: DispatchQueue) {
        self.room = room
        self.terminal = terminal
        self.queue = queue
    }

    /// The room's people as this screen shows them (not copied: a room of a thousand is read often
    /// per key).
    var people: IdentifiedArrayOf<Person> { room.sync.view.people }

    var selectedIndex: Int? {
        guard !people.isEmpty else { return nil }
        if let tag = selectedTag, let index = room.sync.view.index(of: tag) { return index }
        return min(lastIndex, people.count - 1)
    }

    var selected: Person? { selectedIndex.map { people[$0] } }

    /// The hub has said this user only views the room (the key line offers no edits then).
    var isViewer: Bool { room.sync.session != nil && room.sync.role == .viewer }

    // MARK: Updates from the room

    func update(_ notices: [LiveRoom.Notice]) {
        switch room.link {
        case .offline(_, let why): lastLoss = why
        case .online, .refused: lastLoss = nil
        case .connecting: break
        }
        if room.deleted, !saidDeleted {
            // What the last action led to ("undid Change Hair Color") is over with the room: the
            // deletion's note takes the line (it stayed under the old report: a black-box pass); a
            // question asked, or a name being typed, ends with it (a review).
            saidDeleted = true
            report = nil
            switch mode {
            case .help, .finding: break
            default: mode = .normal
            }
        }
        let hasSent = notices.contains { if case .sent = $0 { true } else { false } }
        // The step an undo or redo did, said with its skips when the same answer has some.
        var done: String?
        // What the answers to the requests queued offline said (a queued undo's skips, an undo that went
        // with its edit), kept for the "sent" line: each answer comes in a call of its own, and the
        // line replaced what the earlier ones said (a review found a skip lost when an edit was queued
        // after the undo). Kept only while those answers come.
        func keepForSent(_ said: Report) {
            if room.isResending || hasSent {
                saidWhileResending = Array((saidWhileResending + [said]).suffix(Self.keptForSent))
            }
        }
        for notice in notices {
            if case .error(let error) = notice, error.code == .unauthorized { accessRefusal = error.terminalWords }
            switch notice {
            case .stepDone(let redo, let label):
                done = "\(redo ? "redid" : "undid") \(label ?? "a change")"
                report = Report(text: done!, warning: false)
            case .nothingToDo(let redo):
                // As the command says it (`nothing to undo`, exit 1): a press that did nothing says so.
                report = Report(text: "nothing of yours to \(redo ? "redo" : "undo")", warning: false)
            case .skipped(let reports, let before, let redo):
                var skip = Unnamed(reports: reports, before: before, redo: redo, done: done)
                skip.said = skipReport(skip)
                report = skip.said
                keepForSent(skip.said)
                // Someone removed before this screen came is named by tag until the hub says who.
                let gone = reports.map(\.tag).filter { before[$0] == nil && knownNames[$0] == nil }
                unnamed = gone.isEmpty ? nil : skip
                if !gone.isEmpty { room.nameGone(gone) }
            case .named(let rows):
                knownNames.read(rows, present: room.sync.view)
                // The skip's line is said again with the names, if it is still the one shown (or kept
                // for the "sent" line).
                guard var skip = unnamed else { break }
                let named = skipReport(skip)
                if report == skip.said { report = named }
                saidWhileResending = saidWhileResending.map { $0 == skip.said ? named : $0 }
                skip.said = named
                unnamed = skip
            case .error(let error) where error.code == .unauthorized && room.tokenEnded:
                // The link's note says it, with what to do (t), for as long as it is true.
                report = nil
            case .error(let error):
                // In the hub's words, without its code (`(invalid-op)` told a user nothing; a
                // black-box pass). Commands print the code: scripts read it.
                report = Report(text: "the hub refused: \(error.terminalWords)", warning: true)
            case .remote(let summary, let before, let after):
                // The room went back on the hub: that says more than a teammate's edit (the list shows
                // theirs), so it keeps the line until this user's next action.
                if let shown = report, shown.text.hasPrefix(Self.resetNote) { break }
                // A rename goes on a run of the same teammate's renames of the same person made a few
                // seconds apart at most (a name typed a letter a revision), by the revisions' times
                // (a screen back online gets an hour's renames at once), whatever was said between.
                let at = summary.time ?? HubClock.localMilliseconds()
                var run: RenameRun?
                if let tag = summary.renamed {
                    if let last = renameRun, last.goesOn(author: summary.author, tag: tag, at: at) {
                        run = RenameRun(author: last.author, tag: tag, from: last.from, at: at)
                    } else {
                        run = RenameRun(author: summary.author, tag: tag, from: before[tag]?.name ?? "", at: at)
                    }
                }
                let from: String? = run.flatMap { $0.from.isEmpty ? nil : $0.from }
                report = Report(text: summary.sentence(people: before, me: room.sync.user, after: after,
                                                       renamedFrom: from), warning: false)
                renameRun = run
            case .offline:
                // The connection's note (from the link) takes the line until the hub is back.
                report = nil
            case .undoDropped(let label, let why):
                let undo = label.map { "your undo of \($0)" } ?? "your undo"
                let dropped = "\(undo) had nothing to take back: " + why.joined(separator: "; ")
                report = Report(text: dropped, warning: false)
                keepForSent(report!)
            case .restored(let rev, let made?):
                // Every revision between `rev` and the restore's own.
                let count = made - 1 - rev
                report = Report(text: "restored the room to rev \(rev), taking back \(count) change\(count == 1 ? "" : "s"): u undoes the restore",
                                warning: false)
            case .restored(let rev, nil):
                report = Report(text: "the room already looked as it did at rev \(rev): the restore changed nothing", warning: false)
            case .reset(let kept, let notSent, let gone, let perhapsMore):
                let lost = "\(notSent) queued change\(notSent == 1 ? "" : "s") no longer appl\(notSent == 1 ? "ies" : "y")"
                let tail = switch (kept, notSent) {
                case (0, 0): ""
                case (0, _): "; " + lost
                case (_, 0): "; your queued edits that apply are kept"
                default: "; \(kept) queued kept, " + lost
                }
                // What this user had saved that the hub no longer has (an operator restored an older
                // copy): said first, it is what they may want to do again.
                let saved = Self.lostSaved(gone, perhapsMore: perhapsMore)
                report = Report(text: Self.resetNote + ": showing its copy" + (saved.map { "; " + $0 } ?? "") + tail,
                                warning: true)
                (resetSaved, resetLost) = (saved, notSent > 0 ? lost : nil)
            case .sent(let count):
                // After a reset the reset says more: it stays, saying the edits went.
                // (It keeps saying what no longer applied: an operator's drill saw that go at once.)
                // (Without "showing its copy": the line is one line, and what was lost matters more.)
                if let shown = report, shown.text.hasPrefix(Self.resetNote) {
                    let parts = [resetSaved, resetLost, resetLost == nil ? "your queued edits were sent" : "the rest were sent"]
                    report = Report(text: Self.resetNote + ": " + parts.compactMap { $0 }.joined(separator: "; "), warning: true)
                    break
                }
                let sent = "back online: your \(count) queued change\(count == 1 ? " was" : "s were") sent"
                // An offline undo whose every part was skipped says so with it (it was lost under this
                // line, and the ↶ mark went without a word).
                let said = saidWhileResending
                saidWhileResending = []
                report = Report(text: ([sent] + said.map(\.text)).joined(separator: "; "), warning: said.contains(where: \.warning))
            }
        }
        // The answers to the queued requests are over without a "sent" line (what was left of them
        // no longer applied, or the room was reset): what they said goes, not into a later line.
        if !room.isResending, !hasSent, !saidWhileResending.isEmpty {
            saidWhileResending = []
        }
        remember()
        settle()
        render()
    }

    /// A skip report as the status line says it, with the names known now.
    private func skipReport(_ skip: Unnamed) -> Report {
        let skipped = skip.reports.sentences(people: skip.before, known: knownNames.byTag, me: room.sync.user, redo: skip.redo)
        return Report(text: skip.done.map { "\($0); skipped: " + skipped.joined(separator: "; ") }
                          ?? skipped.map { $0 + " — skipped" }.joined(separator: "; "),
                      warning: true)
    }

    /// Keeps the name of everyone the screen has shown, or whom the history rows at hand named (the
    /// newer of the two), so that a report about someone deleted since names them ("Zed was removed by
    /// bob", not "tag 8104").
    private func remember() {
        knownNames.saw(room.sync.view, at: room.sync.revision)
        knownNames.read(room.reader.rows, present: room.sync.view)
    }

    /// What the status line says about the connection, from the link: nothing while online, nor while
    /// connecting the first time; while connecting again, why it was lost (it is not back yet: a hub
    /// that never answers the attempts left the line empty but for the moment between them).
    var connectionNote: Report? {
        func lost(_ why: LiveRoom.Loss) -> Report {
            Report(text: why.sentence + (isViewer ? "" : "; your edits are kept and sent when it is back"), warning: true)
        }
        return switch room.link {
        case .offline(_, let why): lost(why)
        case .connecting: lastLoss.map(lost)
        case .refused(let why) where room.tokenEnded:
            // The room stays open with what was not sent: a new token carries it on.
            renewNote(expired: why.contains("expired"))
        case .refused where room.deleted:
            Report(text: "an admin deleted this room: q to quit; peoplekeeper open \(room.room) makes a new one"
                + (room.sync.pendingCount > 0 ? " (your changes not sent were not made)" : ""), warning: true)
        case .refused(let why):
            Report(text: "the hub refused you: \(why)", warning: true)
        case .online:
            nil
        }
    }

    /// What the status line says when the hub refused the token of an open room: `t` pastes a new one,
    /// and what waits is kept. Within 80 columns, the count of what waits included (a second history
    /// pass found it cut off the end of a longer line).
    func renewNote(expired: Bool) -> Report {
        let waiting = room.sync.pendingCount
        let kept = waiting == 0 ? " to carry on" : "; \(waiting) change\(waiting == 1 ? "" : "s") waiting, kept"
        return Report(text: (expired ? "access token expired" : "access token refused") + ": press t and paste a new one" + kept,
                      warning: true)
    }

    /// After any change: the selection stays on the same person (by tag) whatever moved, or at the same
    /// place if they are gone; another person's details show from the top; the name cursor stays inside
    /// the name; a chooser closes with its person; the history's selection stays on its revision; the
    /// others are told what this user is looking at, and the selected person's writers are asked for
    /// (`LiveRoom.attribute`: only when it changes).
    func settle() {
        if selectedTag == nil || room.sync.view[selectedTag!] == nil { selectedTag = selected?.tag }
        if let index = selectedIndex { lastIndex = index }
        if selected?.tag != rowOf {
            row = 0
            rowOf = selected?.tag
        }
        switch mode {
        case .editingName(let cursor):
            if let person = selected {
                let name = person.name
                mode = .editingName(cursor: caretName.map { NameCaret.following(cursor, from: $0, to: name) }
                                        ?? NameCaret.snapped(cursor, in: name))
                caretName = name
            } else {
                mode = .normal
            }
        case .choosing, .confirmDelete, .moving:
            if selected == nil { mode = .normal }
        default: break
        }
        // The history's selection is pinned to a revision once there are rows, so that rows arriving
        // above it do not move it (R must restore to the row the user chose).
        if showingHistory, historyRev == nil, let newest = historyRows.first { historyRev = newest.rev }
        if showingHistory, seekingOldest { seekOldest() }
        tellPresence()
        room.attribute(selected?.tag)
    }

    func say(_ text: String, warning: Bool, lasts: Report.Lasts = .untilReplaced) {
        report = Report(text: text, warning: warning, lasts: lasts)
    }

    /// The hub cannot be asked now (unreachable, connecting again, or it refused the token): who is
    /// here and the history rows are as last read. (A reconnecting attempt can wait 10 s for a hub
    /// that does not answer: a review found teammates listed through each.)
    var isAway: Bool { room.link != .online }

    /// The user's report, unless it says the hub is unreachable and it is back.
    var shownReport: Report? {
        guard let report, report.lasts == .whileOffline, room.link == .online else { return report }
        return nil
    }

    func tellPresence() {
        room.view(tag: selected?.tag, field: inDetails ? Row.all[row].presenceField : nil)
    }
}
