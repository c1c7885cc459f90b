import ArgumentParser
import Foundation
import PeopleClient
import PeopleCore

/// `log`: the room's timeline (HISTORY §4), a page at a time, newest first.
struct Log: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The room's timeline, newest first: who changed what, and when.",
        discussion: """
            One row a revision: the revision, when (how long ago, and the local time), who, the kind, the \
            action's label, the people it touched (by their names now; someone no longer in the room is \
            marked (gone)), and for your own changes still on your undo stack their entry id (peoplekeeper \
            undo --entry ID takes one back). Every revision since the room began can be read: --before \
            pages back, and the last line says how when there are older ones.

            Examples:
              peoplekeeper log --room team-a --user ann
              peoplekeeper log --room team-a --before 51 --limit 20
              peoplekeeper log --room team-a --tag 2 --json
            """)
    @OptionGroup var options: CommonOptions
    @Option(help: ArgumentHelp("Only revisions below this one (to page back).", valueName: "rev")) var before: Int?
    @Option(help: "At most this many rows (1 to 200).") var limit = ClientMessage.LogRequest.defaultLimit
    @Option(help: ArgumentHelp("Only the revisions that touched this person.", valueName: "tag")) var tag: Int?

    func validate() throws {
        let limits = ClientMessage.LogRequest.limits
        guard limits.contains(limit) else { throw ValidationError("--limit is \(limits.lowerBound) to \(limits.upperBound)") }
        if let before, before < 1 { throw ValidationError("--before is a revision number, 1 or more") }
    }

    func run() async throws {
        let run = Run(options: options)
        try await run { session in
            let reply = try await session.request(timeout: options.timeout) { seq in
                .log(.init(seq: seq, before: before, limit: limit, tag: tag))
            }
            guard case .log(let page) = reply else { throw Failure.badReply(reply) }
            let people = session.people
            if options.json { return output(json(page, people: people, session: session).text) }
            guard !page.entries.isEmpty else {
                let scope = tag.map { " touched tag \($0)" } ?? ""
                return say("no revisions\(scope)\(before.map { " below rev \($0)" } ?? "") in room \(session.room)")
            }
            try await session.settle(timeout: options.timeout)  // its pong tells the hub's clock
            let now = session.hubNow
            let known = page.entries.lastNames
            output(table([["REV", "WHEN", "AT", "WHO", "KIND", "LABEL", "PEOPLE", "ENTRY"]] + page.entries.map { e in
                [String(e.rev), e.time.map { TimeWords.ago($0, now: now) } ?? "-", e.time.map { TimeWords.exact($0) } ?? "-",
                 e.author, e.kind.rawValue, e.actionLabel, e.peopleWords(now: people, known: known), e.entry.map(String.init) ?? ""]
            }))
            if page.more, let oldest = page.entries.last {
                // The way on keeps the filter and the page size.
                let size = limit == ClientMessage.LogRequest.defaultLimit ? "" : " --limit \(limit)"
                say("older revisions: peoplekeeper log --before \(oldest.rev)\(tag.map { " --tag \($0)" } ?? "")\(size)")
            }
        }
    }

    /// `{"room", "rev", "entries": [wire entry + "at" + "people"], "more"}`.
    private func json(_ page: ServerMessage.LogPage, people: PeopleModel, session: RoomSession) -> JSON {
        let entries: [JSON] = page.entries.map { e in
            guard case .object(var members) = e.json else { return e.json }
            if let time = e.time, let i = members.firstIndex(where: { $0.key == "time" }) {
                members.insert(.init("at", .string(TimeWords.iso(time))), at: i + 1)
            }
            members.append(.init("people", .array(e.tags.map { tag in
                .object(["tag": .int(tag), "name": people[tag].map { .string($0.name) } ?? .null])
            })))
            return .object(members)
        }
        return .object(["room": .string(session.room), "rev": .int(session.revision),
                        "entries": .array(entries), "more": .bool(page.more)])
    }
}
