import PeopleClient
import PeopleCore
import Testing

/// Which rows of a timeline are one run, one row of the history view (a name typed a letter a
/// revision was a row a letter; a black-box pass of session 40).
@Suite("Timeline: runs of one action")
struct TimelineRunsTests {
    /// The cases of `Tests/Vectors/runs.json`, which the web page's tests run too.
    static let cases = TimelineNamesTests.vectorCases("runs.json")

    @Test("shared vectors (Tests/Vectors/runs.json): the rows that are one run", arguments: cases)
    func vector(_ json: JSON) throws {
        let name = if case .string(let name)? = json["name"] { name } else { "?" }
        let rows = try TimelineNamesTests.entries(json["entries"])
        guard case .array(let runs)? = json["expect"] else { throw ProtocolError(.badMessage, "no expect") }
        let expected: [[Int]] = runs.map { run in
            guard case .array(let revs) = run else { return [] }
            return revs.compactMap { if case .int(let rev) = $0 { rev } else { nil } }
        }
        #expect(rows.count == expected.joined().count, "\(name): every entry read")
        #expect(rows.runs.map { $0.map(\.rev) } == expected, "\(name)")
    }
}
