import ArgumentParser
import Foundation
import PeopleClient
import PeopleCore

/// Columns padded to their widest cell, two spaces apart (no trailing spaces). Widths are the
/// terminal's columns (a CJK name takes two per character), and each cell is written with its control
/// characters escaped (`TerminalText`): a line break or an escape sequence in a name stays in its cell.
func table(_ rows: [[String]]) -> String {
    let rows = rows.map { $0.map(TerminalText.escaped) }
    guard let columns = rows.map(\.count).max() else { return "" }
    let widths = (0..<columns).map { c in rows.map { c < $0.count ? TerminalText.columns($0[c]) : 0 }.max() ?? 0 }
    return rows.map { row in
        let line = row.enumerated().map { c, cell in
            c == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[c] - TerminalText.columns(cell))
        }.joined(separator: "  ")
        return String(line.reversed().drop { $0 == " " }.reversed())
    }.joined(separator: "\n")
}

/// Prints one line of text made from the room's (names, user names, labels) with its control
/// characters escaped, so that nothing in it is obeyed by the terminal.
func say(_ line: String) {
    output(TerminalText.escaped(line))
}

extension Person {
    var row: [String] {
        [String(tag), name, hairColor.rawValue, hairLength.rawValue, eyeColor.rawValue, onOff(glasses),
         FacialHairStyle.allCases.filter(facialHair.contains).map(\.rawValue).joined(separator: ", "),
         likes.map(\.rawValue).joined(separator: ", "), dislikes.map(\.rawValue).joined(separator: ", ")]
    }

    static let header = ["TAG", "NAME", "HAIR", "LENGTH", "EYES", "GLASSES", "FACIAL HAIR", "LIKES", "DISLIKES"]
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the people in the room, in order.",
        discussion: "Examples:\n  peoplekeeper list --room team-a\n  peoplekeeper list --room team-a --json")
    @OptionGroup var options: CommonOptions

    func run() async throws {
        let run = Run(options: options)
        try await run { session in
            if options.json {
                output(JSON.object([
                    "room": .string(session.room), "rev": .int(session.revision),
                    "people": .array(session.people.people.map(\.json)),
                ]).text)
            } else {
                output(table([Person.header] + session.people.people.map(\.row)))
            }
        }
    }
}

struct Show: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show one person, every field.",
        discussion: "Example:\n  peoplekeeper show 1 --room team-a")
    @OptionGroup var options: CommonOptions
    @Argument(help: "The person's tag.") var tag: Int

    func run() async throws {
        let run = Run(options: options)
        try await run { session in
            let person = try run.person(tag, in: session)
            if options.json { return output(person.json.text) }
            let row = person.row
            output(table([
                ["tag:", row[0]], ["position:", String(session.people.index(of: tag) ?? 0)], ["name:", row[1]],
                ["hairColor:", row[2]], ["hairLength:", row[3]], ["eyeColor:", row[4]], ["glasses:", row[5]],
                ["facialHair:", row[6]], ["likes:", row[7]], ["dislikes:", row[8]],
            ]))
        }
    }
}

/// `undo` and `redo`; `undo --entry ID` takes back one older entry of yours (selective undo).
protocol StackCommand: AsyncParsableCommand {
    static var verb: String { get }
    var options: CommonOptions { get }
    var scope: Int? { get }
    /// The entry a selective undo takes back (undo only).
    var entry: Int? { get }
}

extension StackCommand {
    var entry: Int? { nil }

    static func help(_ verb: String) -> CommandConfiguration {
        let selective = verb == "undo" ? """


            --entry ID takes back one older change of yours (its id is in the ENTRY column of \
            peoplekeeper log), wherever it is on your undo stack, and nothing that came after it, by \
            anyone: a part written since (by a teammate or by you) is skipped. An id that is not on \
            your undo stack is refused (no-entry, exit 65).
            """ : ""
        let example = verb == "undo" ? "\n  peoplekeeper undo --entry 12 --room team-a --user ann     # your change at rev 12" : ""
        return CommandConfiguration(
            abstract: "\(verb.prefix(1).uppercased() + verb.dropFirst()) your newest change (never a teammate's).",
            discussion: """
                A part a teammate has changed since is skipped and reported. Exit 1 when nothing was \
                \(verb == "undo" ? "undone" : "redone").\(selective)

                Examples:
                  peoplekeeper \(verb) --room team-a --user ann
                  peoplekeeper \(verb) --scope 2 --room team-a --user ann     # your newest change to tag 2\(example)
                """)
    }

    func run() async throws {
        let run = Run(options: options)
        try await run { session in
            let before = session.people
            let reply = try await session.request(timeout: options.timeout) { seq in
                Self.verb == "undo" ? .undo(.init(seq: seq, scope: scope, entry: entry)) : .redo(.init(seq: seq, scope: scope))
            }
            try await session.settle(timeout: options.timeout)  // the history frame that follows
            switch reply {
            case .undone(let result) where Self.verb == "undo", .redone(let result) where Self.verb == "redo":
                try report(result, before: before, known: try await names(of: result.skipped, absentFrom: before, session: session),
                           session: session)
            default:
                throw Failure.badReply(reply)
            }
        }
    }

    /// The names of the people the skip reports are about who were no longer in the room, from the
    /// inserts of their latest revisions (one `log` question each), so a line says `Zed was removed by
    /// bob`, not `tag 2204 …`. Plain output only; a question that fails names nobody.
    private func names(of reports: [SkipReport], absentFrom people: PeopleModel, session: RoomSession) async throws -> [Tag: String] {
        guard !options.json else { return [:] }
        var known: [Tag: String] = [:]
        for tag in Set(reports.map(\.tag)) where people[tag] == nil {
            let reply = try? await session.request(timeout: options.timeout) { seq in
                .log(.init(seq: seq, before: nil, limit: ClientMessage.LogRequest.limits.upperBound, tag: tag))
            }
            if case .log(let page)? = reply, let name = page.entries.lastNames[tag] { known[tag] = name }
        }
        return known
    }

    private func report(_ result: ServerMessage.UndoResult, before: PeopleModel, known: [Tag: String],
                        session: RoomSession) throws {
        let past = Self.verb == "undo" ? "undid" : "redid"
        if options.json {
            var members: [JSON.Member] = [
                .init("rev", result.rev.map(JSON.int) ?? .null), .init("label", result.label.map(JSON.string) ?? .null),
                .init("ops", .array(result.ops.map(\.json))), .init("skipped", .array(result.skipped.map(\.json))),
                .init("history", historyJSON(session.history)),
            ]
            if let entry = result.entry { members.insert(.init("entry", .int(entry)), at: 2) }
            output(JSON.object(members).text)
        } else {
            let which = result.entry.map { " (entry \($0))" } ?? ""
            if let rev = result.rev {
                say("\(past) \(result.label ?? "a change")\(which) at rev \(rev)")
            } else if let entry = result.entry, result.skipped.isEmpty {
                say("nothing undone: entry \(entry) (\(result.label ?? "a change")) changes nothing now; it has left your undo stack")
            } else if result.skipped.isEmpty, let tag = scope {
                // A mistyped tag reads as "nothing to undo" too: say whose changes were looked for.
                say(before[tag].map { "nothing of yours to \(Self.verb) on \($0.name) (tag \(tag))" }
                    ?? "nothing of yours to \(Self.verb) on tag \(tag): nobody in room \(session.room) has that tag now")
            } else if result.skipped.isEmpty {
                say("nothing to \(Self.verb)")
            } else {
                say("nothing \(past == "undid" ? "undone" : "redone")\(which): every part was skipped")
            }
            for report in result.skipped { say("skipped: \(report.sentence(people: before, known: known, redo: Self.verb == "redo"))") }
        }
        if result.rev == nil { throw ExitCode(1) }
    }
}

func historyJSON(_ h: HistorySummary) -> JSON {
    .object([
        "canUndo": .bool(h.canUndo), "canRedo": .bool(h.canRedo),
        "undoLabel": h.undoLabel.map(JSON.string), "redoLabel": h.redoLabel.map(JSON.string),
    ])
}

struct Undo: StackCommand {
    static let configuration = help("undo")
    static let verb = "undo"
    @OptionGroup var options: CommonOptions
    @Option(help: "Only your changes to this person (tag).") var scope: Int?
    @Option(help: ArgumentHelp("Take back this entry of yours (an id from peoplekeeper log), wherever it is on your undo stack.",
                               valueName: "id"))
    var entry: Int?

    func validate() throws {
        if entry != nil && scope != nil { throw ValidationError("--entry names one change already: leave out --scope") }
        if let entry, entry < 1 { throw ValidationError("--entry is an entry id from peoplekeeper log (1 or more)") }
    }
}

struct Redo: StackCommand {
    static let configuration = help("redo")
    static let verb = "redo"
    @OptionGroup var options: CommonOptions
    @Option(help: "Only your changes to this person (tag).") var scope: Int?
}

/// One line about a revision, naming people as `before` has them, in the words `set` prints:
/// `rev 16 by bob (edit, Toggle Glasses): Joan's glasses on`.
func describe(_ o: ServerMessage.Ops, before: PeopleModel) -> String {
    let label = o.label.map { ", \($0)" } ?? ""
    let what = o.ops.map { $0.phrase(people: before) }.joined(separator: "; ")
    return "rev \(o.rev) by \(o.author) (\(o.kind.rawValue)\(label)): \(what.isEmpty ? "no change" : what)"
}

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Your undo / redo state and the room's latest revisions.",
        discussion: "Examples:\n  peoplekeeper history --room team-a --user ann\n  peoplekeeper history --last 5 --room team-a --json")
    @OptionGroup var options: CommonOptions
    @Option(help: "How many of the latest revisions.") var last = 20

    func validate() throws {
        guard (1...1000).contains(last) else { throw ValidationError("--last is 1 to 1000") }
    }

    func run() async throws {
        // The head first, then a catch-up from `last` revisions before it.
        var head = 0
        try await Run(options: options)() { session in head = session.revision }
        try await Run(options: options)(since: max(0, head - last)) { session in
            let revisions = session.revisions.filter { $0.rev > head - last && $0.rev <= max(head, session.welcome.rev) }
            if options.json {
                output(JSON.object([
                    "rev": .int(session.welcome.rev), "history": historyJSON(session.history),
                    "revisions": .array(revisions.map { o in
                        JSON.object(["rev": .int(o.rev), "author": .string(o.author), "kind": .string(o.kind.rawValue),
                                     "label": o.label.map(JSON.string), "ops": .array(o.ops.map(\.json))])
                    }),
                ]).text)
            } else {
                let h = session.history
                say("undo: \(h.undoLabel ?? "(nothing)")    redo: \(h.redoLabel ?? "(nothing)")")
                output(table([["REV", "AUTHOR", "KIND", "LABEL"]]
                            // Unlabelled (a script's batch): what it did, as `log` names it.
                            + revisions.map { [String($0.rev), $0.author, $0.kind.rawValue, $0.actionLabel] }))
            }
        }
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print every revision of the room as it happens.",
        discussion: """
            Runs until Ctrl-C (exit 0) or until the connection is lost (exit 69); --count N exits after N.

            Examples:
              peoplekeeper watch --room team-a
              peoplekeeper watch --room team-a --json --count 10
            """)
    @OptionGroup var options: CommonOptions
    @Option(help: "Exit 0 after this many revisions.") var count: Int?

    func run() async throws {
        signal(SIGINT) { _ in _exit(0) }
        let run = Run(options: options)
        try await run { session in
            // On stderr: stdout has one line a revision (`watch --count 3 | wc -l` is 3).
            if !options.json { complain("watching room \(TerminalText.escaped(session.room)) at rev \(session.revision)") }
            var seen = 0
            while count.map({ seen < $0 }) ?? true {
                let before = session.people
                guard let o = await session.nextRevision() else {
                    // The hub ends a session whose token expired with an error first: 77, not 69 (a
                    // supervisor that reconnects on 69 would loop with a dead token).
                    if let ended = session.ended { throw Failure(.refused(ended)) }
                    // An admin deleted the room: 66, not 69 (reconnecting would make the room again).
                    if session.deleted { throw Failure(.roomDeleted(session.room)) }
                    throw Failure(status: 69, code: "closed", message: session.lost ?? "the hub closed the connection")
                }
                seen += 1
                if options.json { output(ServerMessage.ops(o).json.text) } else { say(describe(o, before: before)) }
            }
        }
    }
}

/// Writes `text` and a line break to stdout at once, unbuffered (`watch` output goes to pipes as it
/// happens), nothing escaped (`say` escapes). A reader that went away (`| head -1`) ends the command
/// quietly, exit 0; a write that fails otherwise (a full disk) is exit 74 (`outputFailed`): the first
/// crashed `watch`, the second was a silent success of `list --json > /dev/full`.
func output(_ text: String) {
    if let error = writeAll(Array((text + "\n").utf8), to: STDOUT_FILENO) { outputFailed(error) }
}
