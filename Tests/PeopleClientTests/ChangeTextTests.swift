import PeopleClient
import PeopleCore
import Testing

/// How the terminal client says a teammate's revision (`Revision.Summary.sentence`).
@Suite("A teammate's change in words")
struct ChangeTextTests {
    static let before = PeopleModel.tutorialSeed  // Ann (1), Joan (2), Sam (3)

    func summary(_ diffs: [Diff], kind: RevisionKind = .edit) -> Revision.Summary {
        Revision.Summary(rev: 5, author: "bob", kind: kind, label: nil, diffs: diffs)
    }

    func renamed(_ tag: PeopleCore.Tag, to name: String) -> PeopleModel {
        var after = Self.before
        after.people[id: tag]?.name = name
        return after
    }

    @Test("a rename says the new name: typed, or set whole; the run's first name when the screen gives it")
    func renames() {
        let after = renamed(3, to: "Samuel")
        let typed = summary([.text(3, TextOperation([.retain(3), .insert("uel")]))])
        #expect(typed.renamed == 3)
        #expect(typed.sentence(people: Self.before, after: after) == "bob renamed Sam to Samuel")
        #expect(summary([.set(3, .name("Samuel"))]).sentence(people: Self.before, after: after) == "bob renamed Sam to Samuel")
        // The last letter of a name typed a letter at a time: the people before it had "Samue".
        let letter = summary([.text(3, TextOperation([.retain(5), .insert("l")]))])
        #expect(letter.sentence(people: renamed(3, to: "Samue"), after: after, renamedFrom: "Sam") == "bob renamed Sam to Samuel")
        #expect(letter.sentence(people: renamed(3, to: "Samue"), me: "bob", after: after, renamedFrom: "Sam")
                == "you (elsewhere) renamed Sam to Samuel")
        // Typed back to what it was: no "renamed Sam to Sam".
        #expect(typed.sentence(people: Self.before, after: Self.before) == "bob changed Sam's name")
    }

    @Test("anything more than one person's name, or without the people after, is said as before")
    func notRenames() {
        let after = renamed(3, to: "Samuel")
        let two = summary([.text(3, TextOperation([.retain(3), .insert("uel")])), .set(3, .glasses(true))])
        #expect(two.renamed == nil)
        #expect(two.sentence(people: Self.before, after: after) == "bob changed Sam's name and changed Sam's glasses")
        #expect(summary([.text(3, TextOperation([.insert("x")])), .text(2, TextOperation([.insert("y")]))]).renamed == nil)
        #expect(summary([.text(3, TextOperation([.retain(3), .insert("uel")]))], kind: .undo).renamed == nil)
        #expect(summary([.text(3, TextOperation([.retain(3), .insert("uel")]))]).sentence(people: Self.before) == "bob changed Sam's name")
        // Removed by a later revision of the same frame: no name after, the old sentence.
        var gone = Self.before
        gone.people.remove(id: 3)
        #expect(summary([.set(3, .name("Samuel"))]).sentence(people: Self.before, after: gone) == "bob changed Sam's name")
    }
}

/// How the terminal client says a skipped part of the user's own request (`SkipReport.sentence`).
@Suite("A skipped part in words")
struct SkipTextTests {
    @Test("a person edited by a teammate since: added by the user (an undo), or brought back by their undo (a redo of a delete)")
    func editedSince() {
        // A black-box pass (session 43): a skipped redo of a delete said "since you added them" of a
        // person the user never added, only brought back with undo.
        let report = SkipReport(reason: .editedByOthers, tag: 2, by: "bob")
        let people = PeopleModel.tutorialSeed
        #expect(report.sentence(people: people) == "Joan was edited by bob since you added them")
        #expect(report.sentence(people: people, redo: true) == "Joan was edited by bob since your undo brought them back")
        #expect(report.sentence(people: people, me: "bob", redo: true) == "you edited Joan since bringing them back")
        #expect([report].sentences(people: people, redo: true) == ["Joan was edited by bob since your undo brought them back"])
    }
}
