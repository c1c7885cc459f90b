import PeopleCore

/// Runs: revisions that are one action to the people who made them, shown as one row of the history
/// view. A name is typed a letter a revision and a person moved a place a revision (a coalesced run is
/// one undo entry), so a typed "Kimberly" was eight rows.
///
/// Rows next to each other in the list (newest first) are one run when both are edits by the same
/// author with the same label, every diff of each a `text` diff of one and the same person's name, or
/// every diff a `move` of one and the same person; and when either is on this user's undo stack (it
/// carries `entry`), both carry the same entry (one undo step: Enter undoes the whole row), else they
/// are revisions one after the other, with times at most `runGapMillis` apart (a teammate's typing; or
/// the user's own, off their stack).
/// The web page's `history-runs.js` does the same; `Tests/Vectors/runs.json` pins it for both.
extension ServerMessage.LogEntry {
    /// The longest pause between two revisions of a run that no undo entry ties together (as the
    /// rename notices' run, `ChangeText`).
    public static let runGapMillis: Int64 = 5_000

    /// What the revision does to one person, if it is one kind of change to one person.
    private var runShape: RunShape? {
        guard kind == .edit, let first = ops.first else { return nil }
        let shape: RunShape
        switch first {
        case .text(let tag, _): shape = .text(tag)
        case .move(let tag, _): shape = .move(tag)
        default: return nil
        }
        return ops.allSatisfy { diff in
            switch (diff, shape) {
            case (.text(let tag, _), .text(let want)), (.move(let tag, _), .move(let want)): tag == want
            default: false
            }
        } ? shape : nil
    }

    private enum RunShape: Equatable {
        case text(Tag)
        case move(Tag)
    }

    /// Whether `older`, the row right below this one in the list, belongs to the same run.
    public func sameRun(as older: ServerMessage.LogEntry) -> Bool {
        guard author == older.author, label == older.label, let shape = runShape, shape == older.runShape else { return false }
        if entry != nil || older.entry != nil { return entry == older.entry }
        // Without an undo step to tie them, only revisions one after the other (a person's history
        // skips the revisions of others: typing in Joan, then in Sam, then in Joan again is three
        // rows of the room, so it is two of Joan's; a black-box pass).
        guard let time, let olderTime = older.time, older.rev == rev - 1 else { return false }
        return abs(time - olderTime) <= Self.runGapMillis
    }
}

extension Sequence<ServerMessage.LogEntry> {
    /// These rows (newest first) cut into runs, each newest first.
    public var runs: [[ServerMessage.LogEntry]] {
        var runs: [[ServerMessage.LogEntry]] = []
        for entry in self {
            if let last = runs.last?.last, last.sameRun(as: entry) {
                runs[runs.count - 1].append(entry)
            } else {
                runs.append([entry])
            }
        }
        return runs
    }
}
