import ArgumentParser
import Foundation
import PeopleClient
import PeopleCore

/// `restore REV`: the room made what it was right after a revision, as one revision (HISTORY §3).
struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make the room what it was right after a revision (0: as it began), as one change.",
        discussion: """
            Asks nothing: it prints what it did, one line a change. The restore is one revision and one \
            undo step of yours (peoplekeeper undo takes it back, and keeps what a teammate changed since). \
            Exit 1 when the room already was as it was then; 77 for a viewer; 65 for a revision the room \
            has not reached.

            Examples:
              peoplekeeper log --room team-a                # find the revision
              peoplekeeper restore 12 --room team-a --user ann
              peoplekeeper restore 0 --label "Start over" --room team-a --json
            """)
    @OptionGroup var options: CommonOptions
    @Argument(help: "The revision (0 is the room as it began).") var rev: Int
    @Option(parsing: .unconditional, help: ArgumentHelp("The action's label (default: Restore to revision REV).", valueName: "text"))
    var label: String?

    func validate() throws {
        guard rev >= 0 else { throw ValidationError("REV is a revision number, 0 or more") }
        if let label {
            // Said here in the option's words (the hub's refusal named the wire's field).
            guard !label.isEmpty else { throw ValidationError("--label cannot be empty (leave it out for the default)") }
            guard label.utf8.count <= ClientMessage.maxTextBytes else {
                throw ValidationError("--label is at most \(ClientMessage.maxTextBytes) bytes of UTF-8 (got \(label.utf8.count))")
            }
        }
    }

    func run() async throws {
        let run = Run(options: options)
        try await run { session in
            let before = session.people
            let reply = try await session.request(timeout: options.timeout) { seq in
                .restore(.init(seq: seq, rev: rev, label: label))
            }
            guard case .restored(let result) = reply else { throw Failure.badReply(reply) }
            try await session.settle(timeout: options.timeout)  // the history frame that follows
            if options.json {
                output(JSON.object([
                    "rev": result.rev.map(JSON.int) ?? .null, "to": .int(rev), "label": .string(result.label),
                    "ops": .array(result.ops.map(\.json)), "history": historyJSON(session.history),
                ]).text)
            } else if let done = result.rev {
                // Two counts, named apart (a history pass found "8 changes" here meaning edits, beside
                // the screens' "takes back the 42 changes since", which counts revisions): the changes
                // (revisions) taken back, as the screens say it, and the edits that did it, one line
                // each below.
                func counted(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
                let since = done - 1 - rev
                say("restored the room to rev \(rev) at rev \(done) (\(result.label)), taking back "
                    + (since == 1 ? "the change since" : "the \(counted(since, "change")) since")
                    + " in \(counted(result.ops.count, "edit"))")
                for diff in result.ops { say("  " + diff.phrase(people: before)) }
            } else {
                say("nothing to restore: the room is as it was at rev \(rev)")
            }
            if result.rev == nil { throw ExitCode(1) }
        }
    }
}
