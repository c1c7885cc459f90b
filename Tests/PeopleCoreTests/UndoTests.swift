@testable import PeopleCore
import Testing

/// Undo and redo beyond the worked cases: scope, coalescing, cascade, depth, expiry, placement.
@Suite("Undo and redo")
struct UndoTests {
    typealias F = Fixtures

    static func typed(_ text: String, at position: Int) -> Diff {
        .text(1, TextOperation([.retain(position), .insert(text)]))
    }

    @Test("regression: redo of two characters typed at one position keeps their order")
    func redoKeepsTypedOrder() {
        // Found by the undoⁿ-redoⁿ property: "Ann" + "a" at 3, then "c" at 3 → "Annca".
        var h = Harness()
        h.submit("A", [Self.typed("a", at: 3)])
        h.submit("A", [Self.typed("c", at: 3)])
        #expect(h.person(1)?.name == "Annca")
        h.undo("A")
        h.undo("A")
        #expect(h.person(1)?.name == "Ann")
        h.redo("A")
        h.redo("A")
        #expect(h.person(1)?.name == "Annca")
    }

    @Test("typing with one coalesce key within the window is one undo step with the first label")
    func coalescedTyping() {
        var h = Harness()
        h.submit("A", [Self.typed("a", at: 3)], label: "Type Name", coalesce: "name-1", at: 1000)
        h.submit("B", [.set(2, .glasses(true))], at: 1100)  // another user's batch does not break the run
        h.submit("A", [Self.typed("b", at: 4)], label: "Type Name", coalesce: "name-1", at: 1300)
        h.submit("A", [Self.typed("c", at: 5)], label: "Other", coalesce: "name-1", at: 1700)
        #expect(h.person(1)?.name == "Annabc")
        #expect(h.room.stacks(of: "A").undo.count == 1)
        let undone = h.undo("A", at: 2000)
        #expect(undone.label == "Type Name")
        #expect(h.person(1)?.name == "Ann")
        #expect(h.person(2)?.glasses == true)
    }

    @Test("a pause longer than the window, another key, or an undo request starts a new entry")
    func coalescingBreaks() {
        var h = Harness()
        h.submit("A", [Self.typed("a", at: 3)], coalesce: "name-1", at: 1000)
        h.submit("A", [Self.typed("b", at: 4)], coalesce: "name-1", at: 1600)  // 600 ms > 500 ms
        h.submit("A", [Self.typed("c", at: 5)], coalesce: "name-2", at: 1700)  // another key
        #expect(h.room.stacks(of: "A").undo.count == 3)
        h.undo("B", at: 1750)  // B's request does not break A's run
        h.submit("A", [Self.typed("d", at: 6)], coalesce: "name-2", at: 1800)
        #expect(h.room.stacks(of: "A").undo.count == 3)
        h.redo("A", at: 1850)  // A's request (finding nothing) does
        h.submit("A", [Self.typed("e", at: 7)], coalesce: "name-2", at: 1900)
        #expect(h.room.stacks(of: "A").undo.count == 4)
    }

    @Test("a batch that changes nothing does not break a run and makes no revision")
    func noChangeKeepsRun() {
        var h = Harness()
        h.submit("A", [Self.typed("a", at: 3)], coalesce: "k", at: 1000)
        let ack = h.submit("A", [.set(2, .glasses(false))], at: 1200)
        #expect(ack.ops.isEmpty)
        #expect(ack.rev == 1)
        h.submit("A", [Self.typed("b", at: 4)], coalesce: "k", at: 1400)
        #expect(h.room.stacks(of: "A").undo.count == 1)
        #expect(h.revision == 2)
    }

    @Test("scoped undo takes the newest entry touching that person")
    func scopedUndo() {
        var h = Harness()
        h.submit("A", [.set(1, .hairColor(.red))])
        h.submit("A", [.set(2, .hairColor(.blonde))])
        h.undo("A", scope: 1)
        #expect(h.person(1)?.hairColor == .brown)
        #expect(h.person(2)?.hairColor == .blonde)
        #expect(h.room.stacks(of: "A").redo.count == 1)
        h.redo("A", scope: 1)
        #expect(h.person(1)?.hairColor == .red)
    }

    @Test("cascade off: an entry that changes nothing is consumed and the undo stops")
    func cascadeOff() {
        var h = Harness(policy: RoomPolicy(undo: UndoPolicy(cascade: false)))
        h.submit("A", [.set(1, .glasses(true))])
        h.submit("A", [.set(3, .hairLength(.long))])
        h.submit("B", [.remove(3)])
        let undone = h.undo("A")
        #expect(undone.rev == nil)
        #expect(undone.skipped == [SkipReport(reason: .targetRemoved, tag: 3, by: "B")])
        #expect(h.person(1)?.glasses == true)
        #expect(h.room.stacks(of: "A").undo.count == 1)
    }

    @Test("my new edit clears my redo stack; a teammate's edit does not")
    func redoClearing() {
        var h = Harness()
        h.submit("A", [.set(1, .hairColor(.red))])
        h.undo("A")
        h.submit("B", [.set(2, .hairColor(.white))])
        #expect(h.room.stacks(of: "A").redo.count == 1)
        h.submit("A", [.set(2, .glasses(true))])
        #expect(h.room.stacks(of: "A").redo.isEmpty)
    }

    @Test("undo and redo on empty stacks answer with no ops, no revision and no error")
    func emptyStacks() {
        var h = Harness()
        let undone = h.undo("A")
        #expect(undone.rev == nil && undone.ops.isEmpty && undone.skipped.isEmpty)
        let redone = h.redo("A")
        #expect(redone.rev == nil && redone.ops.isEmpty)
        #expect(h.revision == 0)
    }

    @Test("the depth bounds each stack, dropping the oldest entries")
    func depthLimit() {
        var h = Harness(policy: RoomPolicy(undo: UndoPolicy(depth: 2)))
        for color in [HairColor.red, .blonde, .white] { h.submit("A", [.set(1, .hairColor(color))]) }
        #expect(h.room.stacks(of: "A").undo.count == 2)
        h.undo("A")
        h.undo("A")
        #expect(h.person(1)?.hairColor == .red)
        #expect(h.undo("A").rev == nil)
    }

    @Test("an entry older than the kept history is expired: one report per tag, nothing applied")
    func expiredEntry() {
        var h = Harness(policy: RoomPolicy(keptRevisions: 2))
        h.submit("A", [.set(1, .hairColor(.red)), .set(2, .glasses(true))])
        for k in 0..<4 { h.submit("B", [.set(3, .glasses(k % 2 == 0 ? false : true))]) }
        let undone = h.undo("A")
        #expect(undone.rev == nil)
        #expect(undone.skipped == [SkipReport(reason: .expired, tag: 1), SkipReport(reason: .expired, tag: 2)])
        #expect(h.person(1)?.hairColor == .red)
    }

    @Test("facial hair and preference registers overwritten by a teammate are reported with style / topic")
    func elementReports() {
        var h = Harness()
        h.submit("A", [.facialHair(1, .beard, present: true), .preference(1, .art, .like)])
        h.submit("B", [.facialHair(1, .beard, present: false), .preference(1, .art, .dislike)])
        let undone = h.undo("A")
        #expect(undone.skipped == [
            SkipReport(reason: .overwritten, tag: 1, field: "preference", topic: .art, by: "B"),
            SkipReport(reason: .overwritten, tag: 1, field: "facialHair", style: .beard, by: "B"),
        ])
    }

    @Test("undo of a move whose old neighbours are both gone falls back to the rebased index")
    func moveFallback() {
        var h = Harness(people: F.start + [F.person(4, "Dee")])
        h.submit("A", [.move(2, to: 3)])          // [1,3,4,2]: 2 was between 1 and 3
        h.submit("B", [.remove(1), .remove(3)])   // [4,2]
        h.undo("A")
        #expect(h.people.map(\.tag) == [2, 4])
    }

    @Test("undo of a remove whose person a teammate brought back is reported, not duplicated")
    func removeAlreadyRestored() {
        var h = Harness()
        h.submit("A", [.remove(2)])
        h.submit("B", [.set(1, .glasses(true))])
        h.undo("A")
        h.redo("A")          // removed again by A's redo
        #expect(h.person(2) == nil)
        h.undo("A")          // back again
        #expect(h.people.map(\.tag) == [1, 2, 3])
    }

    @Test("undo of text over a later whole-name set is reported overwritten (rule 6)")
    func textUnderSet() {
        var h = Harness()
        h.submit("A", [Self.typed("!", at: 3)])
        h.submit("B", [.set(1, .name("Bea"))])
        let undone = h.undo("A")
        #expect(undone.skipped == [SkipReport(reason: .overwritten, tag: 1, field: "name", by: "B")])
        #expect(h.person(1)?.name == "Bea")
    }

    @Test("undo that would push a rebased name over the limit is skipped as invariant")
    func invariantSkip() {
        var h = Harness()
        let long = String(repeating: "x", count: 199)
        h.submit("A", [.text(1, TextOperation([.delete(3)]))])        // "Ann" → ""
        h.submit("B", [.text(1, TextOperation([.insert(long)]))])     // 199 bytes
        let undone = h.undo("A")                                      // "Ann" back would be 202 bytes
        #expect(undone.skipped == [SkipReport(reason: .invariant, tag: 1, field: "name")])
        #expect(h.person(1)?.name == long)
    }
}
