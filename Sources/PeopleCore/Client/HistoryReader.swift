/// What a screen shows of a room's history (HISTORY §4, §5): the timeline, newest first, a page at a
/// time and kept fresh as revisions arrive; and who last wrote each part of one watched person.
///
/// A state machine in the core's shape: events in, the questions to ask out. The driver (the terminal's
/// `LiveRoom`) sends each question (`ClientSync.ask`) and hands its answer back with the question.
///
/// - At most one `log` question is out at a time. A revision (or a change of this user's stacks, which
///   moves the `entry` marks) arriving meanwhile marks the timeline stale, and a refresh follows the
///   answer; so the rows never lag behind for long and the hub is never asked twice at once.
/// - A refresh asks for the newest rows, as many as are loaded (up to the hub's 200), and puts them in
///   place of the loaded rows down to the oldest it returns; if it does not reach the rows loaded before
///   (more than that many revisions since), the older rows go, and scrolling loads them again.
/// - Older pages are asked for only below the oldest row loaded, so a late answer cannot leave a gap.
/// - The timeline may be one person's (`open(person:)`: `log` with `tag`, the revisions that named
///   them); a revision that does not name them leaves it as it is. Opened for someone else, the rows
///   go, and an answer about the one before is not used.
/// - The watched person is asked about when watching starts and after each revision that touches
///   them; only a person the hub has (`present`) is asked about, so a person still being added is asked
///   about once the revision that inserts them arrives. One `blame` question is out at a time.
/// - A connection lost loses the questions out: `reconnected()` asks again.
public struct HistoryReader: Sendable {
    /// What to ask the hub.
    public enum Question: Hashable, Sendable {
        /// A page of the timeline: at most `limit` revisions below `before` (nil: the newest); with
        /// `tag`, only those that named that person.
        case log(before: Int?, limit: Int, tag: Tag? = nil)
        /// Who last wrote each part of the person `tag`.
        case blame(Tag)
    }

    /// Rows asked for per page.
    public static let pageSize = 50

    /// Whether the timeline is wanted (shown) now.
    public private(set) var isOpen = false
    /// Whose timeline it is: one person's (their tag), or the whole room's (nil).
    public private(set) var person: Tag?
    /// The timeline's rows loaded so far, newest first.
    public private(set) var rows: [ServerMessage.LogEntry] = []
    /// Whether the hub has older rows than the last one loaded.
    public private(set) var more = false
    /// Whether a first page has arrived (on this connection; a closed timeline keeps what it read, so
    /// reopened while the hub is unreachable it still shows the rows as last read).
    public private(set) var loaded = false
    /// The `log` question out, if any.
    private(set) var asking: Question?
    /// A refresh is due once the question out is answered.
    private(set) var stale = false

    /// The person whose writers are wanted.
    public private(set) var watched: Tag?
    /// Who last wrote each part of `watched`, once the hub has said.
    public private(set) var attribution: PersonBlame?
    /// The person a `blame` question out is about.
    private(set) var blaming: Tag?
    /// Ask about `watched` again once the question out is answered.
    private var blameStale = false

    public init() {}

    // MARK: The timeline

    /// The timeline is shown, the whole room's or one `person`'s: its newest page is asked for. Rows
    /// read for someone else go.
    public mutating func open(person: Tag? = nil) -> [Question] {
        if person != self.person {
            self.person = person
            rows = []
            more = false
            loaded = false
        }
        isOpen = true
        return refresh()
    }

    /// The timeline is no longer shown: its rows stay as last read (a late answer is ignored; the next
    /// `open` reads them again).
    public mutating func close() {
        isOpen = false
        stale = false
    }

    /// The reader has scrolled near the end of the rows: the next older page, if there is one and no
    /// question is out.
    public mutating func wantOlder() -> [Question] {
        guard isOpen, loaded, more, asking == nil, let oldest = rows.last else { return [] }
        return ask(.log(before: oldest.rev, limit: Self.pageSize, tag: person))
    }

    /// A revision reached this client (anyone's, this user's answers too), with its diffs as applied.
    public mutating func revised(_ diffs: [Diff]) -> [Question] {
        let listed = person.map { tag in diffs.contains { $0.tag == tag } } ?? true
        var questions = isOpen && listed ? refresh() : []
        if let tag = watched, diffs.contains(where: { $0.tag == tag }) { questions += askBlame(tag) }
        return questions
    }

    /// This user's undo / redo stacks changed: the `entry` marks may have moved.
    public mutating func stacksChanged() -> [Question] {
        isOpen ? refresh() : []
    }

    /// The newest rows, as many as are loaded (at least a page, at most what the hub gives at once).
    private mutating func refresh() -> [Question] {
        guard asking == nil else {
            stale = true
            return []
        }
        let limit = min(ClientMessage.LogRequest.limits.upperBound, max(Self.pageSize, rows.count))
        return ask(.log(before: nil, limit: limit, tag: person))
    }

    private mutating func ask(_ question: Question) -> [Question] {
        asking = question
        return [question]
    }

    // MARK: Attribution

    /// The person whose writers are wanted (nil: nobody); `present` says whether the hub has them yet.
    public mutating func watch(_ tag: Tag?, present: Bool) -> [Question] {
        guard tag != watched else { return [] }
        watched = tag
        attribution = nil
        guard let tag, present else { return [] }
        return askBlame(tag)
    }

    private mutating func askBlame(_ tag: Tag) -> [Question] {
        guard blaming == nil else {
            blameStale = true
            return []
        }
        blaming = tag
        return [.blame(tag)]
    }

    // MARK: Answers

    /// The hub's answer to `question` (a `log`).
    public mutating func answered(_ question: Question, with page: ServerMessage.LogPage) -> [Question] {
        guard question == asking else { return [] }
        asking = nil
        // An answer about another timeline than the one shown now (opened for someone else since) is not used.
        if isOpen, case .log(let before, _, let tag) = question, tag == person {
            if let before {
                // An older page: it continues the rows only if they still end where it was asked.
                if rows.last?.rev == before {
                    rows += page.entries
                    more = page.more
                }
            } else {
                let newest = page.entries
                let reached = newest.last?.rev ?? 0
                let older = rows.filter { $0.rev < reached }
                // The loaded rows continue this page only if the page reached down to them.
                if page.more, !older.isEmpty, rows.contains(where: { $0.rev >= reached }) {
                    rows = newest + older
                } else {
                    rows = newest
                    more = page.more
                }
                loaded = true
            }
        }
        if stale {
            stale = false
            return isOpen ? refresh() : []
        }
        return []
    }

    /// The hub's answer to `question` (a `blame`).
    public mutating func answered(_ question: Question, with blame: ServerMessage.Blame) -> [Question] {
        guard case .blame(let tag) = question, tag == blaming else { return [] }
        blaming = nil
        if blame.tag == watched { attribution = blame.record }
        return blameAgain(after: tag)
    }

    /// The hub answered `question` with an error (a person removed before the `blame` got there, say).
    public mutating func failed(_ question: Question) -> [Question] {
        switch question {
        case .log where question == asking:
            asking = nil
            if stale {
                stale = false
                return isOpen ? refresh() : []
            }
            return []
        case .blame(let tag) where tag == blaming:
            blaming = nil
            if tag == watched { attribution = nil }
            return blameAgain(after: tag)
        default:
            return []
        }
    }

    /// After a `blame` about `tag`: ask about the watched person if the answer is out of date.
    private mutating func blameAgain(after tag: Tag) -> [Question] {
        guard let watched, blameStale || watched != tag else { return [] }
        blameStale = false
        return askBlame(watched)
    }

    /// A new connection: the questions out were lost with the old one; ask again what is wanted.
    /// `present` says whether the hub has the watched person. `reset`: the hub's room has another
    /// history than the rows loaded (`welcome.reset`), which go.
    public mutating func reconnected(watchedPresent: Bool, reset: Bool = false) -> [Question] {
        asking = nil
        stale = false
        blaming = nil
        blameStale = false
        if reset {
            rows = []
            more = false
            loaded = false
            attribution = nil
        }
        var questions = isOpen ? refresh() : []
        if let watched, watchedPresent { questions += askBlame(watched) }
        return questions
    }
}
