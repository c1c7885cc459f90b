import ArgumentParser
import Foundation
import PeopleClient
import PeopleCore

/// Sends one batch, labelled with its action name (`actionLabel`), and prints what the hub made of it:
/// `done` (what was changed) at the revision, or `no change`, and a line per part the hub turned into a no-op.
func submit(_ diffs: [Diff], in session: RoomSession, options: CommonOptions,
            done: String, extra: [(String, JSON)] = []) async throws {
    let base = session.revision
    let before = session.people
    let reply: ServerMessage
    do {
        reply = try await session.request(timeout: options.timeout) { seq in
            .submit(.init(seq: seq, base: base, ops: diffs, label: diffs.actionLabel))
        }
    } catch {
        // An edit refused `room-full` is the room's people limit (`limits.maxPeoplePerRoom`): asking
        // again cannot help, so not 75 ("try again later"), which a hello refused at the hub's room
        // limit still is (a script author's pass found the two alike).
        guard case .refused(let refusal) = error, refusal.code == .roomFull else { throw error }
        throw Failure(status: 65, code: refusal.code.rawValue, message: refusal.terminalWords)
    }
    guard case .ack(let ack) = reply else { throw Failure.badReply(reply) }
    if options.json {
        var members: [JSON.Member] = [.init("rev", .int(ack.rev))]
        members += extra.map { JSON.Member($0.0, $0.1) }
        members += [.init("ops", .array(ack.ops.map(\.json))), .init("noop", .array(ack.noop.map(\.json)))]
        output(JSON.object(members).text)
    } else {
        say(ack.ops.isEmpty ? "no change (\(done) changes nothing at rev \(ack.rev))" : "\(done) at rev \(ack.rev)")
        for report in ack.noop { say("skipped: \(report.sentence(people: before))") }
    }
}

struct Add: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add a person (prints the new tag).",
        discussion: """
            Fields left out: brown hair, short, brown eyes, no glasses. The default place is the end.

            Examples:
              peoplekeeper add --name Kim --room team-a
              peoplekeeper add --name Kim --hair-color red --glasses --at 0 --room team-a --json
            """)
    @OptionGroup var options: CommonOptions
    // Taken whatever it starts with: `--name -John` (it was read as options).
    @Option(parsing: .unconditional, help: "The name.") var name: String
    @Option(name: .customLong("hair-color"), help: "black, brown, blonde, red, gray or white.") var hairColor = "brown"
    @Option(name: .customLong("hair-length"), help: "bald, short, medium or long.") var hairLength = "short"
    @Option(name: .customLong("eye-color"), help: "black, brown, blue, green, gray or hazel.") var eyeColor = "brown"
    @Flag(help: "Wears glasses.") var glasses = false
    @Option(parsing: .unconditional, help: "Where in the list (0 is first; past the end is the end; default: the end).") var at: Int?

    func validate() throws {
        // A negative place was taken as 0, the top: the opposite of what -1 means in many tools.
        if let at, at < 0 { throw ValidationError("--at is a place in the list, 0 or more (0 is first; leave it out for the end)") }
    }

    func run() async throws {
        let run = Run(options: options)
        do {
            guard !name.isEmpty else { throw Failure.usage("a name cannot be empty") }
            let hair = try Words.value(hairColor, HairColor.self, what: "hair color")
            let length = try Words.value(hairLength, HairLength.self, what: "hair length")
            let eyes = try Words.value(eyeColor, EyeColor.self, what: "eye color")
            try await run { session in
                let tag = session.welcome.tags.from
                let person = Person(tag: tag, name: name, hairColor: hair, hairLength: length, eyeColor: eyes, glasses: glasses)
                let index = min(at ?? session.people.count, session.people.count)
                try await submit([.insert(person, at: index)], in: session, options: options,
                                 done: "added \(name) as tag \(tag)",
                                 extra: [("tag", .int(tag)), ("person", person.json)])
            }
        } catch let failure as Failure { try run.fail(failure) }
    }
}

struct SetField: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set one field of a person.",
        discussion: """
            FIELD: name, hairColor, hairLength, eyeColor or glasses (kebab case works too: hair-color).

            Examples:
              peoplekeeper set 1 hairColor red --room team-a
              peoplekeeper set 2 name "Joan Miró" --room team-a
              peoplekeeper set 3 glasses on --room team-a --json
            """)
    @OptionGroup var options: CommonOptions
    @Argument(help: "The person's tag.") var tag: Int
    @Argument(help: "The field.") var field: String
    @Argument(help: "The value.") var value: String

    func run() async throws {
        let run = Run(options: options)
        do {
            let field = try Words.field(self.field)
            let value = try Words.fieldValue(field, self.value)
            try await run { session in
                let person = try run.person(tag, in: session)
                try await submit([.set(tag, value)], in: session, options: options,
                                 done: "set " + Diff.set(person.tag, value).phrase(people: session.people))
            }
        } catch let failure as Failure { try run.fail(failure) }
    }
}

/// `like`, `dislike` and `neutral`: one topic's register.
protocol OpinionCommand: AsyncParsableCommand {
    static var opinion: Opinion { get }
    var options: CommonOptions { get }
    var tag: Int { get }
    var topic: String { get }
}

extension OpinionCommand {
    static func help(_ verb: String, _ what: String) -> CommandConfiguration {
        CommandConfiguration(
            abstract: what,
            discussion: """
                TOPIC: \(Topic.allCases.map(\.rawValue).joined(separator: ", ")).

                Example:
                  peoplekeeper \(verb) 1 music --room team-a
                """)
    }

    func run() async throws {
        let run = Run(options: options)
        do {
            let topic = try Words.value(self.topic, Topic.self, what: "topic")
            try await run { session in
                let person = try run.person(tag, in: session)
                let done = switch Self.opinion {
                case .like: "\(person.name) likes \(topic.rawValue)"
                case .dislike: "\(person.name) dislikes \(topic.rawValue)"
                case .none: "\(person.name) is neutral on \(topic.rawValue)"
                }
                try await submit([.preference(tag, topic, Self.opinion)], in: session,
                                 options: options, done: done)
            }
        } catch let failure as Failure { try run.fail(failure) }
    }
}

struct Like: OpinionCommand {
    static let configuration = help("like", "Put a topic in a person's likes (out of their dislikes).")
    static let opinion = Opinion.like
    @OptionGroup var options: CommonOptions
    @Argument(help: "The person's tag.") var tag: Int
    @Argument(help: "The topic.") var topic: String
}

struct Dislike: OpinionCommand {
    static let configuration = help("dislike", "Put a topic in a person's dislikes (out of their likes).")
    static let opinion = Opinion.dislike
    @OptionGroup var options: CommonOptions
    @Argument(help: "The person's tag.") var tag: Int
    @Argument(help: "The topic.") var topic: String
}

struct Neutral: OpinionCommand {
    static let configuration = help("neutral", "Take a topic out of a person's likes and dislikes.")
    static let opinion = Opinion.none
    @OptionGroup var options: CommonOptions
    @Argument(help: "The person's tag.") var tag: Int
    @Argument(help: "The topic.") var topic: String
}

struct FacialHair: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "facial-hair",
        abstract: "Add or remove one facial hair style.",
        discussion: """
            STYLE: \(FacialHairStyle.allCases.map(\.rawValue).joined(separator: ", ")).

            Example:
              peoplekeeper facial-hair 1 beard off --room team-a
            """)
    @OptionGroup var options: CommonOptions
    @Argument(help: "The person's tag.") var tag: Int
    @Argument(help: "The style.") var style: String
    @Argument(help: "on or off.") var state: String

    func run() async throws {
        let run = Run(options: options)
        do {
            let style = try Words.value(self.style, FacialHairStyle.self, what: "facial hair style")
            let present = try Words.bool(state, what: "the state")
            try await run { session in
                let person = try run.person(tag, in: session)
                // The words `watch` prints for the same change (it said "took Joan their goatee off").
                let diff = Diff.facialHair(person.tag, style, present: present)
                try await submit([diff], in: session, options: options, done: "set " + diff.phrase(people: session.people))
            }
        } catch let failure as Failure { try run.fail(failure) }
    }
}

struct Move: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move a person so that it ends at INDEX (0 is first).",
        discussion: "Example:\n  peoplekeeper move 3 0 --room team-a")
    @OptionGroup var options: CommonOptions
    @Argument(help: "The person's tag.") var tag: Int
    @Argument(help: "Where it ends up: 0 is first; past the end is the end.") var index: Int

    func validate() throws {
        guard index >= 0 else { throw ValidationError("INDEX is a place in the list, 0 or more (0 is first)") }
    }

    func run() async throws {
        let run = Run(options: options)
        try await run { session in
            let person = try run.person(tag, in: session)
            let to = min(index, session.people.count - 1)
            try await submit([.move(tag, to: to)], in: session, options: options,
                             done: "moved \(person.name) to position \(to)")
        }
    }
}

struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove a person.",
        discussion: "Example:\n  peoplekeeper remove 2 --room team-a")
    @OptionGroup var options: CommonOptions
    @Argument(help: "The person's tag.") var tag: Int

    func run() async throws {
        let run = Run(options: options)
        try await run { session in
            let person = try run.person(tag, in: session)
            try await submit([.remove(tag)], in: session, options: options,
                             done: "removed \(person.name) (tag \(tag))")
        }
    }
}
