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

    @Test("a person keeps the last name the rows gave them: an insert's, then names set and typed after it")
    func lastNames() {
        // Newest first, as a timeline holds them.
        let rows = [
            row(6, [.remove(104), .remove(4)]),
            row(5, [.text(4, TextOperation([.retain(2), .insert("d")]))]),
            row(4, [.set(4, .name("Ze"))]),
            row(3, [.text(104, TextOperation([.delete(10), .insert("Kim")]))]),
            row(2, [.insert(Person(tag: 104, name: "New person"), at: 0), .insert(Person(tag: 4, name: "New person"), at: 1)]),
            row(1, [.text(2, TextOperation([.retain(4), .insert("na")]))]),
        ]
        // Tag 2's name was typed into without any row giving it: unknown.
        #expect(rows.lastNames == [104: "Kim", 4: "Zed"])
        // Only the newer rows loaded: the set is there, the insert and the first typing are not.
        #expect(Array(rows.prefix(3)).lastNames == [4: "Zed"])
        let gone = rows[0]
        let known = rows.lastNames
        #expect(gone.peopleWords(now: PeopleModel(people: []), known: known) == "Kim (gone), Zed (gone)")
    }

    @Test("a typing that does not fit the name the rows gave makes it unknown, not wrong")
    func typingPastTheEnd() {
        let rows = [
            row(2, [.text(7, TextOperation([.retain(40), .insert("x")]))]),
            row(1, [.insert(Person(tag: 7, name: "Bo"), at: 0)]),
        ]
        #expect(rows.lastNames.isEmpty)
    }

    @Test("a name the rows gave after the person was last seen wins; one they gave before does not")
    func newerNameWins() {
        var known = KnownNames()
        // ann saw tag 104 as "New person" at rev 3 (and tag 5 as "Bo" at rev 3).
        known.saw(PeopleModel(people: [Person(tag: 104, name: "New person"), Person(tag: 5, name: "Bo")]), at: 3)
        // Then one revision renamed and removed 104 (an HTTP agent), and rows read long ago say 5 was
        // "Bob" at rev 1, before she saw "Bo".
        let rows = [
            row(4, [.set(104, .name("Kim")), .remove(104)]),
            row(1, [.set(5, .name("Bob"))]),
        ]
        known.read(rows, present: PeopleModel(people: []))
        #expect(known[104] == "Kim")
        #expect(known[5] == "Bo")
        // Someone still in the room keeps the name shown, whatever rows say.
        var shown = KnownNames()
        shown.saw(PeopleModel(people: [Person(tag: 104, name: "Kimberly")]), at: 2)
        shown.read(rows, present: PeopleModel(people: [Person(tag: 104, name: "Kimberly")]))
        #expect(shown[104] == "Kimberly")
        #expect(rows.lastNamings[104]?.rev == 4)
    }

    @Test("an undo of a deletion whose person a teammate had put back says who did")
    func alreadyBack() {
        let people = PeopleModel(people: [Person(tag: 2, name: "Joan")])
        let report = SkipReport(reason: .overwritten, target: .person(2), by: "dave")
        #expect(report.sentence(people: people, me: "ann") == "Joan was already back (dave put them back)")
        #expect(report.sentence(people: people, me: "dave") == "Joan was already back (you put them back)")
    }
}
