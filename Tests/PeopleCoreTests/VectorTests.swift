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
            if step["submit"] != nil, let code = Self.string(expect?["error"]) {
                // A refused batch: the error names the step's seq, and nothing is applied.
                let ops = try Self.diffs(step["submit"])
                let before = h.revision
                let message = ClientMessage.submit(.init(seq: h.nextSeq(user), base: Self.int(step["base"]) ?? h.revision,
                                                         ops: ops, label: Self.string(step["label"])))
                guard case .error(let error)? = h.send(message, from: user, at: time) else {
                    Issue.record("\(context): expected error \(code)")
                    continue
                }
                #expect(error.code.rawValue == code, "\(context)")
                #expect(h.revision == before, "\(context)")
            } else if step["submit"] != nil {
                let ops = try Self.diffs(step["submit"])
                let ack = h.submit(user, ops, base: Self.int(step["base"]), label: Self.string(step["label"]),
                                   coalesce: Self.string(step["coalesce"]), at: time)
                if let rev = expect?["rev"] { #expect(ack.rev == Self.int(rev), "\(context)") }
                if expect?["noop"] != nil { #expect(ack.noop == (try Self.reports(expect?["noop"])), "\(context)") }
            } else {
                let redo = step["redo"] != nil
                let scope = Self.int((step["undo"] ?? step["redo"])?["scope"])
                let result = redo ? h.redo(user, scope: scope, at: time) : h.undo(user, scope: scope, at: time)
                if let rev = expect?["rev"] { #expect(result.rev == Self.int(rev), "\(context)") }
                if expect?["skipped"] != nil {
                    #expect(result.skipped == (try Self.reports(expect?["skipped"])), "\(context)")
                }
            }
            if expect?["people"] != nil { #expect(h.people == (try Self.people(expect?["people"])), "\(context)") }
        }
        #expect(h.people == (try Self.people(json["people"])), "\(vector)")
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
    }
}

/// One vector case, named for the test report.
struct Vector: CustomTestStringConvertible, Sendable, CustomStringConvertible {
    let json: JSON
    var description: String { VectorTests.name(json) }
    var testDescription: String { description }
}
