@testable import PeopleCore
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// Runs the shared JSON vectors of `Tests/Vectors/` (the web client's JS tests run the same files).
@Suite("Shared vectors")
struct VectorTests {
    static let directory: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(2)  // …/Tests/PeopleCoreTests/VectorTests.swift → …/Tests
        return parts.joined(separator: "/") + "/Vectors"
    }()

    static func load(_ name: String) -> [JSON] {
        let path = directory + "/" + name
        guard let file = fopen(path, "rb") else { fatalError("cannot open \(path)") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        guard case .array(let cases)? = try? JSON.parse(bytes)["cases"] else { fatalError("\(path) has no cases") }
        return cases
    }

    static let undoCases = load("undo.json")
    static let historyCases = load("history.json")
    static let transformCases = load("transform.json")

    static func name(_ json: JSON) -> String { if case .string(let s)? = json["name"] { s } else { "?" } }

    static func people(_ json: JSON?) throws -> [Person] {
        guard case .array(let list)? = json else { return [] }
        return try list.map { try Person(json: $0) }
    }

    static func diffs(_ json: JSON?) throws -> [Diff] {
        guard case .array(let list)? = json else { return [] }
        return try list.map { try Diff(json: $0) }
    }

    static func reports(_ json: JSON?) throws -> [SkipReport] {
        guard case .array(let list)? = json else { return [] }
        return try list.map { try SkipReport(json: $0) }
    }

    static func int(_ json: JSON?) -> Int? { if case .int(let n)? = json { n } else { nil } }
    static func string(_ json: JSON?) -> String? { if case .string(let s)? = json { s } else { nil } }

    static func policy(_ json: JSON?) -> RoomPolicy {
        var undo = UndoPolicy()
        if string(json?["conflicts"]) == "force" { undo.conflicts = .force }
        if case .bool(let cascade)? = json?["cascade"] { undo.cascade = cascade }
        if let millis = int(json?["coalesceMillis"]) { undo.coalesceMillis = Int64(millis) }
        return RoomPolicy(undo: undo)
    }

    @Test("undo vectors", arguments: undoCases.map { Vector(json: $0) })
    func undoVector(_ vector: Vector) throws {
        try play(vector)
    }

    @Test("history vectors (HISTORY.md: selective undo, restore, log, blame)", arguments: historyCases.map { Vector(json: $0) })
    func historyVector(_ vector: Vector) throws {
        try play(vector)
    }

    /// Plays a vector's steps, each a `submit`, `undo` (maybe with `entry` or `scope`), `redo`,
    /// `restore`, `log` or `blame`, checking each reply and the people after it.
    func play(_ vector: Vector) throws {
        let json = vector.json
        guard case .array(let userList)? = json["users"], case .array(let steps)? = json["steps"] else {
            Issue.record("\(vector): malformed")
            return
        }
        var h = Harness(people: try Self.people(json["start"]), policy: Self.policy(json["policy"]),
                        users: userList.compactMap(Self.string))
        var time: Int64 = 0
        for (index, step) in steps.enumerated() {
            let user = Self.string(step["user"]) ?? "?"
            time = Self.int(step["at"]).map(Int64.init) ?? time + 1000
            let expect = step["expect"]
            let context = "\(vector) step \(index)"
            let seq = h.nextSeq(user)
            let message: ClientMessage
            if step["submit"] != nil {
                message = .submit(.init(seq: seq, base: Self.int(step["base"]) ?? h.revision, ops: try Self.diffs(step["submit"]),
                                        label: Self.string(step["label"]), coalesce: Self.string(step["coalesce"])))
            } else if let undo = step["undo"] {
                message = .undo(.init(seq: seq, scope: Self.int(undo["scope"]), entry: Self.int(undo["entry"])))
            } else if let redo = step["redo"] {
                message = .redo(.init(seq: seq, scope: Self.int(redo["scope"])))
            } else if let restore = step["restore"] {
                message = .restore(.init(seq: seq, rev: Self.int(restore["rev"]) ?? 0, label: Self.string(restore["label"])))
            } else if let log = step["log"] {
                message = .log(.init(seq: seq, before: Self.int(log["before"]), limit: Self.int(log["limit"]) ?? 50,
                                     tag: Self.int(log["tag"])))
            } else if let blame = step["blame"] {
                message = .blame(.init(seq: seq, tag: Self.int(blame["tag"]) ?? 0))
            } else {
                Issue.record("\(context): unknown step")
                continue
            }
            let before = h.revision
            let reply = Self.reply(to: message, from: user, in: &h, at: time)
            Self.check(reply, against: expect, revisionBefore: before, revisionAfter: h.revision, context: context)
            if expect?["people"] != nil { #expect(h.people == (try Self.people(expect?["people"])), "\(context)") }
        }
        #expect(h.people == (try Self.people(json["people"])), "\(vector)")
    }

    /// The reply addressed to the sender: the one with its seq (log and blame echo it too).
    static func reply(to message: ClientMessage, from user: String, in h: inout Harness, at time: Int64) -> ServerMessage? {
        let id = h.sessions[user]!
        h.now = time
        let actions = h.room.receive(message, from: id, now: time)
        h.log += actions
        for case .send(let reply, [id]) in actions {
            switch reply {
            case .ack(let a) where a.seq == message.seq: return reply
            case .undone(let r) where r.seq == message.seq: return reply
            case .redone(let r) where r.seq == message.seq: return reply
            case .restored(let r) where r.seq == message.seq: return reply
            case .error(let e) where e.seq == message.seq: return reply
            case .log(let page) where page.seq == message.seq: return reply
            case .blame(let b) where b.seq == message.seq: return reply
            default: continue
            }
        }
        return nil
    }

    /// Checks a reply against a step's `expect` (only the members it names).
    static func check(_ reply: ServerMessage?, against expect: JSON?, revisionBefore: Int, revisionAfter: Int,
                      context: String) {
        func has(_ key: String) -> Bool { expect?[key] != nil }
        if let code = string(expect?["error"]) {
            guard case .error(let e)? = reply else { Issue.record("\(context): expected error \(code), got \(String(describing: reply))"); return }
            #expect(e.code.rawValue == code && revisionAfter == revisionBefore, "\(context)")
            return
        }
        switch reply {
        case .ack(let a)?:
            if has("rev") { #expect(a.rev == int(expect?["rev"]), "\(context)") }
            if has("noop") { #expect(a.noop == (try? reports(expect?["noop"])), "\(context)") }
        case .undone(let r)?, .redone(let r)?:
            if has("rev") { #expect(r.rev == int(expect?["rev"]), "\(context)") }
            if has("skipped") { #expect(r.skipped == (try? reports(expect?["skipped"])), "\(context)") }
            if has("entry") { #expect(r.entry == int(expect?["entry"]), "\(context)") }
        case .restored(let r)?:
            if has("rev") { #expect(r.rev == int(expect?["rev"]), "\(context)") }
            if has("label") { #expect(r.label == string(expect?["label"]), "\(context)") }
        case .log(let page)?:
            func list(_ key: String) -> [JSON]? { if case .array(let a)? = expect?[key] { a } else { nil } }
            if let revs = list("revs") { #expect(page.entries.map(\.rev) == revs.map { int($0) ?? -1 }, "\(context)") }
            if let entries = list("entries") { #expect(page.entries.map(\.entry) == entries.map { int($0) }, "\(context)") }
            if let authors = list("authors") { #expect(page.entries.map(\.author) == authors.map { string($0) ?? "?" }, "\(context)") }
            if let kinds = list("kinds") { #expect(page.entries.map(\.kind.rawValue) == kinds.map { string($0) ?? "?" }, "\(context)") }
            if case .bool(let more)? = expect?["more"] { #expect(page.more == more, "\(context)") }
        case .blame(let b)?:
            func same(_ writer: Writer?, _ json: JSON?) -> Bool {
                writer?.user == string(json?["user"]) && writer?.rev == int(json?["rev"])
            }
            if has("created") { #expect(same(b.record.created, expect?["created"]), "\(context)") }
            if case .object(let fields)? = expect?["fields"] {
                for member in fields {
                    #expect(same(BlameField(rawValue: member.key).flatMap { b.record.fields[$0] }, member.value), "\(context) \(member.key)")
                }
            }
            if case .object(let styles)? = expect?["facialHair"] {
                for member in styles {
                    #expect(same(FacialHairStyle(rawValue: member.key).flatMap { b.record.facialHair[$0] }, member.value), "\(context) \(member.key)")
                }
            }
        default:
            Issue.record("\(context): no reply to the step (\(String(describing: reply)))")
        }
    }

    @Test("transform vectors", arguments: transformCases.map { Vector(json: $0) })
    func transformVector(_ vector: Vector) throws {
        let json = vector.json
        var h = Harness(people: try Self.people(json["start"]), users: ["X", "Y"])
        h.submit("X", try Self.diffs(json["applied"]), base: 0)
        let ack = h.submit("Y", try Self.diffs(json["incoming"]), base: 0)
        #expect(h.people == (try Self.people(json["people"])), "\(vector)")
        #expect(ack.noop == (try Self.reports(json["noop"])), "\(vector)")
    }

    @Test("the vector files hold the cases the suites expect")
    func inventory() {
        let names = Self.undoCases.map(Self.name)
        for n in 1...12 { #expect(names.contains { $0.hasPrefix("§5.\(n) ") }, "§5.\(n) missing") }
        #expect(Self.transformCases.count >= 60)
        let history = Self.historyCases.map(Self.name)
        for n in 1...8 { #expect(history.contains { $0.contains("H\(n) ") }, "H\(n) missing") }
    }
}

/// One vector case, named for the test report.
struct Vector: CustomTestStringConvertible, Sendable, CustomStringConvertible {
    let json: JSON
    var description: String { VectorTests.name(json) }
    var testDescription: String { description }
}
