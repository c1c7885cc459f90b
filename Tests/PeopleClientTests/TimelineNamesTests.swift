import Foundation
import PeopleClient
import PeopleCore
import Testing

/// How a timeline names people who are gone since (a history pass found people added as "New person"
/// and renamed by typing shown as "New person (gone)").
@Suite("Timeline: names of people gone")
struct TimelineNamesTests {
    func row(_ rev: Int, _ ops: [Diff]) -> ServerMessage.LogEntry {
        ServerMessage.LogEntry(rev: rev, time: nil, author: "ann", kind: .edit, label: nil, ops: ops, entry: nil)
    }

    /// The cases of `Tests/Vectors/names.json`, which the web page's tests run too.
    static let cases = vectorCases("names.json")

    /// The `cases` of a file of `Tests/Vectors`, shared with the web page's tests.
    static func vectorCases(_ file: String) -> [JSON] {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(2)  // …/Tests/PeopleClientTests/TimelineNamesTests.swift → …/Tests
        let path = parts.joined(separator: "/") + "/Vectors/" + file
        guard let data = FileManager.default.contents(atPath: path),
              case .array(let cases)? = try? JSON.parse(Array(data))["cases"] else { fatalError("cannot read \(path)") }
        return cases
    }

    /// A vector's `entries` (wire log entries, newest first), read as a client reads a `log` answer.
    static func entries(_ json: JSON?) throws -> [ServerMessage.LogEntry] {
        let page = JSON.object(["type": .string("log"), "entries": json ?? .array([]), "more": .bool(false)])
        guard case .success(.log(let log)) = ServerMessage.decode(Array(page.text.utf8)) else {
            throw ProtocolError(.badMessage, "a vector's entries are not a log page")
        }
        return log.entries
    }

    static func people(_ json: JSON?) throws -> PeopleModel {
        guard case .array(let list)? = json else { return PeopleModel(people: []) }
        return PeopleModel(people: try list.map { try Person(json: $0) })
    }

    static func expected(_ json: JSON?) -> [PeopleCore.Tag: String] {
        guard case .object(let members)? = json else { return [:] }
        var names: [PeopleCore.Tag: String] = [:]
        for member in members { if let tag = Int(member.key), case .string(let name) = member.value { names[tag] = name } }
        return names
    }

    @Test("shared vectors (Tests/Vectors/names.json): the names the rows and the screen give people gone since",
          arguments: cases)
    func vector(_ json: JSON) throws {
        let name = if case .string(let name)? = json["name"] { name } else { "?" }
        let rows = try Self.entries(json["entries"])
        switch json["kind"] {
        case .string("lastNames")?:
            #expect(rows.lastNames == Self.expected(json["expect"]), "\(name)")
        case .string("knownNames")?:
            var known = KnownNames()
            if case .array(let seen)? = json["saw"] {
                for sight in seen {
                    guard case .int(let rev)? = sight["rev"] else { continue }
                    known.saw(try Self.people(sight["people"]), at: rev)
                }
            }
            known.read(rows, present: try Self.people(json["present"]))
            #expect(known.byTag == Self.expected(json["expect"]), "\(name)")
        default:
            Issue.record("\(name): unknown kind")
        }
    }

    @Test("a person removed since is named as the rows last named them, marked gone")
    func goneWords() {
        let rows = [
            row(6, [.remove(104), .remove(4)]),
            row(4, [.set(4, .name("Zed"))]),
            row(2, [.insert(Person(tag: 104, name: "Kim"), at: 0), .insert(Person(tag: 4, name: "New person"), at: 1)]),
        ]
        #expect(rows[0].peopleWords(now: PeopleModel(people: []), known: rows.lastNames) == "Kim (gone), Zed (gone)")
        #expect(rows.lastNamings[4]?.rev == 4)
    }

    @Test("an undo of a deletion whose person a teammate had put back says who did")
    func alreadyBack() {
        let people = PeopleModel(people: [Person(tag: 2, name: "Joan")])
        let report = SkipReport(reason: .overwritten, target: .person(2), by: "dave")
        #expect(report.sentence(people: people, me: "ann") == "Joan was already back (dave put them back)")
        #expect(report.sentence(people: people, me: "dave") == "Joan was already back (you put them back)")
    }
}
