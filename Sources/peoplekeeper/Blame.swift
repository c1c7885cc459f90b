import ArgumentParser
import Foundation
import PeopleClient
import PeopleCore

/// `blame TAG`: who last changed each part of a person, and when (HISTORY §5).
struct Blame: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Who last changed each field of a person, and when.",
        discussion: """
            One row a field, the place in the list, each facial hair style and each topic: its value, \
            who last changed it, at which revision, how long ago and the local time. Undo, redo and \
            restore count as changes by whoever made them; the room's first people were written by \
            nobody: (seed), at rev 0. The first line says who added the person. Exit 65 if there is no \
            person with that tag.

            Examples:
              peoplekeeper blame 1 --room team-a
              peoplekeeper blame 1 --room team-a --json
            """)
    @OptionGroup var options: CommonOptions
    @Argument(help: "The person's tag.") var tag: Int

    func run() async throws {
        let run = Run(options: options)
        try await run { session in
            let person = try run.person(tag, in: session)
            let reply = try await session.request(timeout: options.timeout) { seq in .blame(.init(seq: seq, tag: tag)) }
            guard case .blame(let blame) = reply else { throw Failure.badReply(reply) }
            let record = blame.record
            if options.json {
                return output(JSON.object([.init("tag", .int(tag)), .init("person", person.json)] + record.members).text)
            }
            try await session.settle(timeout: options.timeout)  // its pong tells the hub's clock
            let now = session.hubNow
            func cells(_ writer: Writer) -> [String] {
                [writer.who, String(writer.rev), writer.time.map { TimeWords.ago($0, now: now) } ?? "-",
                 writer.time.map { TimeWords.exact($0) } ?? "-"]
            }
            let position = session.people.index(of: tag).map(String.init) ?? "?"
            var rows: [[String]] = [["FIELD", "VALUE", "BY", "REV", "WHEN", "AT"]]
            for field in Field.allCases {
                rows.append([field.label, person.value(of: field).words] + cells(record.writer(of: field)))
            }
            rows.append(["Position", position] + cells(record.positionWriter))
            for style in FacialHairStyle.allCases {
                rows.append([style.label, onOff(person.facialHair.contains(style))] + cells(record.writer(of: style)))
            }
            for topic in Topic.allCases {
                rows.append([topic.label, person.opinion(on: topic).words] + cells(record.writer(of: topic)))
            }
            let created = record.created
            say(created.user == nil ? "\(person.name) (tag \(tag)): in the room from the start (seed, rev 0)"
                  : "\(person.name) (tag \(tag)): added by \(created.who) at rev \(created.rev)\(created.time.map { ", " + TimeWords.ago($0, now: now) } ?? "")")
            output(table(rows))
        }
    }
}
