@testable import PeopleCore
import Testing

/// SEMANTICS §5, one test per worked case. Start: [P1, P2, P3], A and B at the same revision,
/// policy `skip`, cascade on (and `force` where the case says the result differs).
@Suite("SEMANTICS §5 worked cases")
struct WorkedCaseTests {
    typealias F = Fixtures

    @Test("§5.1 undo restores my field and keeps a teammate's other field; redo brings mine back")
    func case1() {
        var h = Harness()
        h.submit("A", [.set(1, .hairColor(.red))])
        h.submit("B", [.set(2, .glasses(true))])
        let undone = h.undo("A")
        #expect(undone.skipped.isEmpty)
        #expect(h.person(1)?.hairColor == .brown)
        #expect(h.person(2)?.glasses == true)
        h.redo("A")
        #expect(h.person(1)?.hairColor == .red)
        #expect(h.person(2)?.glasses == true)
    }

    @Test("§5.2 skip: undo over a teammate's overwrite is skipped and reported")
    func case2Skip() {
        var h = Harness()
        h.submit("A", [.set(1, .hairColor(.red))])
        h.submit("B", [.set(1, .hairColor(.blonde))])
        let undone = h.undo("A")
        #expect(h.person(1)?.hairColor == .blonde)
        #expect(undone.rev == nil)
        #expect(undone.skipped == [SkipReport(reason: .overwritten, tag: 1, field: "hairColor", by: "B")])
    }

    @Test("§5.2 force: undo restores the old colour over a teammate's overwrite")
    func case2Force() {
        var h = Harness(policy: F.force())
        h.submit("A", [.set(1, .hairColor(.red))])
        h.submit("B", [.set(1, .hairColor(.blonde))])
        let undone = h.undo("A")
        #expect(h.person(1)?.hairColor == .brown)
        #expect(undone.skipped.isEmpty)
    }

    @Test("§5.3 concurrent sets: B's undo restores A's red, then A's undo restores the original")
    func case3() {
        var h = Harness()
        h.submit("A", [.set(1, .hairColor(.red))], base: 0)
        h.submit("B", [.set(1, .hairColor(.blonde))], base: 0)
        #expect(h.person(1)?.hairColor == .blonde)
        h.undo("B")
        #expect(h.person(1)?.hairColor == .red)
        let undone = h.undo("A")
        #expect(undone.skipped.isEmpty)
        #expect(h.person(1)?.hairColor == .brown)
    }

    @Test("§5.4 an edit of a concurrently removed person is a reported no-op; undo of the remove puts it back")
    func case4() {
        var h = Harness()
        h.submit("A", [.remove(2)], base: 0)
        let ack = h.submit("B", [.set(2, .hairColor(.blonde))], base: 0)
        #expect(ack.ops.isEmpty)
        #expect(ack.rev == 1)
        #expect(ack.noop == [SkipReport(reason: .targetRemoved, tag: 2, by: "A")])
        #expect(h.people.map(\.tag) == [1, 3])
        h.undo("A")
        #expect(h.people == F.start)
    }

    @Test("§5.5 skip: undo of an insert a teammate edited keeps the person, reports editedByOthers")
    func case5Skip() {
        var h = Harness()
        h.submit("A", [.insert(F.person(4), at: 0)])
        h.submit("B", [.set(4, .glasses(true))])
        let undone = h.undo("A")
        #expect(h.person(4)?.glasses == true)
        #expect(undone.skipped == [SkipReport(reason: .editedByOthers, tag: 4, by: "B")])
    }

    @Test("§5.5 force: undo removes the inserted person; redo brings it back with the teammate's edit")
    func case5Force() {
        var h = Harness(policy: F.force())
        h.submit("A", [.insert(F.person(4), at: 0)])
        h.submit("B", [.set(4, .glasses(true))])
        h.undo("A")
        #expect(h.person(4) == nil)
        h.redo("A")
        #expect(h.person(4)?.glasses == true)
        #expect(h.people.first?.tag == 4)
    }

    @Test("§5.6 undo of a move puts the person back after its old previous neighbour")
    func case6() {
        var h = Harness()
        h.submit("A", [.move(3, to: 0)])
        #expect(h.people.map(\.tag) == [3, 1, 2])
        h.submit("B", [.insert(F.person(104), at: 3)])
        h.undo("A")
        #expect(h.people.map(\.tag) == [1, 2, 3, 104])
    }

    @Test("§5.7 a topic register: like replaces dislike, and undo restores the dislike")
    func case7() {
        var h = Harness()
        h.submit("A", [.preference(1, .weather, .like)])
        #expect(h.person(1)?.likes.contains(Topic.weather) == true)
        #expect(h.person(1)?.dislikes.contains(Topic.weather) == false)
        h.undo("A")
        #expect(h.person(1)?.dislikes.contains(Topic.weather) == true)
        #expect(h.person(1)?.likes.contains(Topic.weather) == false)
    }

    @Test("§5.8 character-wise undo removes only my typed character")
    func case8() {
        var h = Harness()
        h.submit("A", [.text(1, TextOperation([.retain(3), .insert("e")]))], base: 0)
        h.submit("B", [.text(1, TextOperation([.insert("a")]))], base: 0)
        #expect(h.person(1)?.name == "aAnne")
        h.undo("A")
        #expect(h.person(1)?.name == "aAnn")
    }

    @Test("§5.9 three undos then three redos leave the model as before the undos")
    func case9() {
        var h = Harness()
        h.submit("A", [.set(1, .hairColor(.red))])
        h.submit("A", [.move(3, to: 0)])
        h.submit("A", [.text(2, TextOperation([.retain(2), .delete(2)]))])
        let before = h.room.model
        for _ in 0..<3 { h.undo("A") }
        #expect(h.people == F.start)
        for _ in 0..<3 { h.redo("A") }
        #expect(h.room.model == before)
    }

    @Test("§5.10 an entry whose person was removed is consumed and reported; cascade undoes the next")
    func case10() {
        var h = Harness()
        h.submit("A", [.set(1, .glasses(true))])
        h.submit("A", [.set(3, .hairLength(.long))])
        h.submit("B", [.remove(3)])
        let undone = h.undo("A")
        #expect(undone.skipped == [SkipReport(reason: .targetRemoved, tag: 3, by: "B")])
        #expect(h.person(1)?.glasses == false)
        #expect(undone.rev != nil)
        #expect(h.room.stacks(of: "A").undo.isEmpty)
    }

    @Test("§5.11 after a teammate removes and restores a person, my undo applies to it")
    func case11() {
        var h = Harness()
        h.submit("A", [.set(1, .hairColor(.red))])
        h.submit("B", [.remove(1)])
        h.undo("B")
        #expect(h.person(1)?.hairColor == .red)
        let undone = h.undo("A")
        #expect(undone.skipped.isEmpty)
        #expect(h.person(1)?.hairColor == .brown)
    }

    @Test("§5.12 typing into a name a teammate replaced as a whole is a reported no-op")
    func case12() {
        var h = Harness()
        h.submit("A", [.set(2, .name("Jo"))], base: 0)
        let ack = h.submit("B", [.text(2, TextOperation([.retain(4), .insert("!")]))], base: 0)
        #expect(ack.ops.isEmpty)
        #expect(ack.noop == [SkipReport(reason: .overwritten, tag: 2, field: "name", by: "A")])
        #expect(h.person(2)?.name == "Jo")
    }
}
