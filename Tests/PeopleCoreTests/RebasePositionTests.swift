import Testing
import PeopleTestSupport
@testable import PeopleCore

/// The rule of `Transform.rebasePosition` written out on the lists (the implementation before it became
/// arithmetic on positions; `Transform.ListChange` is shared): the property below checks the two agree.
enum ReferenceRebase {
    /// Rebases the gap of an insert or move over a positional applied diff.
    ///
    /// The incoming gap is kept after the same people it had on its left; the applied diff's entering
    /// person is left of it when it lands left of that gap, or at the same gap and was ordered first.
    static func rebasePosition(_ incoming: Diff, over applied: Diff, order: [PeopleCore.Tag], incomingFirst: Bool) -> Diff {
        let mine = Transform.ListChange(incoming, order: order)
        guard let entering = mine.entering else { return incoming } // moves an absent tag: unchanged
        let theirs = Transform.ListChange(applied, order: order)
        let before = order.filter { $0 != mine.leaving }
        let leftOfGap = Set(before.prefix(entering.gap))
        let after = Transform.applyOrder(applied, to: order).filter { $0 != mine.leaving }
        var arrival = theirs.entering?.tag
        if arrival == mine.leaving || arrival == entering.tag { arrival = nil }
        // `after` without the arrival keeps the old relative order, so the people left of the gap are
        // a prefix of it: the rebased gap is their count (plus one if the arrival lands left of it).
        var gap = 0
        var seen = 0
        var arrivalGap: Int?
        for tag in after {
            if tag == arrival {
                arrivalGap = seen
                continue
            }
            seen += 1
            if leftOfGap.contains(tag) { gap += 1 }
        }
        if let arrivalGap, arrivalGap < gap || (arrivalGap == gap && !incomingFirst) {
            gap += 1
        }
        switch incoming {
        case .insert(let person, _): return .insert(person, at: gap)
        case .move(let tag, _): return .move(tag, to: gap)
        default: return incoming
        }
    }
}

@Suite("Transform: rebasing a gap")
struct RebasePositionTests {
    @Test("the arithmetic rebase of a gap equals the rule written out on the lists, over 200,000 random cases", .cpuBound)
    func arithmeticEqualsReference() {
        var rng = SeededRandom(seed: 20261128)
        func diff(_ kinds: [Int]) -> Diff {
            let tag = Int(rng.next() % 14) + 1
            let at = Int(rng.next() % 16) - 2
            switch kinds[Int(rng.next() % UInt64(kinds.count))] {
            case 0: return .insert(Fixtures.person(tag), at: at)
            case 1: return .move(tag, to: at)
            default: return .remove(tag)
            }
        }
        var checked = 0
        for _ in 0..<200_000 {
            var order = Array(1...12).filter { _ in rng.next() % 3 != 0 }
            for i in order.indices.reversed() { order.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
            let incoming = diff([0, 1])
            let applied = diff([0, 1, 2])
            let first = rng.next() % 2 == 0
            let want = ReferenceRebase.rebasePosition(incoming, over: applied, order: order, incomingFirst: first)
            let got = Transform.rebasePosition(incoming, over: applied, order: order, incomingFirst: first)
            #expect(got == want, "\(incoming) over \(applied) on \(order), incomingFirst \(first)")
            if got != want { return }
            checked += 1
        }
        #expect(checked == 200_000)
    }

    @Test("a batch of moves whose rebase would cost more than maxListWork is stale-base at once; on the head it applies")
    func listWorkOfASubmit() {
        let n = 40
        let people = (1...n).map { Fixtures.person($0, "P\($0)") }
        // 40 moves over 40 since, 41 people: 65,600 units.
        var h = Harness(people: people, policy: RoomPolicy(maxListWork: 60_000), users: ["A", "B"])
        h.submit("A", (1...n).reversed().map { .move($0, to: n - 1) })
        let toFront: [Diff] = (1...n).map { .move($0, to: 0) }
        let refused = h.send(.submit(.init(seq: h.nextSeq("B"), base: 0, ops: toFront)), from: "B")
        guard case .error(let error)? = refused else { Issue.record("expected stale-base, got \(String(describing: refused))"); return }
        #expect(error.code == .staleBase && error.message.contains("current revision"))
        #expect(h.revision == 1)
        // Sent again on the head, it costs nothing to rebase and applies.
        _ = h.submit("B", toFront)
        #expect(h.revision == 2 && h.people.map(\.tag) == Array((1...n).reversed()))
        // Within the budget the same rebase is done, as before.
        var roomy = Harness(people: people, policy: RoomPolicy(maxListWork: 70_000), users: ["A", "B"])
        roomy.submit("A", (1...n).reversed().map { .move($0, to: n - 1) })
        guard case .ack? = roomy.send(.submit(.init(seq: roomy.nextSeq("B"), base: 0, ops: toFront)), from: "B") else {
            Issue.record("expected an ack within the budget"); return
        }
    }

    @Test("an undo whose placements would cost more than maxListWork places people at their old gap, unrebased")
    func listWorkOfAnUndo() {
        // A removes 2 (between 1 and 3); B removes 1 and 3 and adds two people at the front. Undone, 2's
        // old neighbours are gone: its gap is rebased over B's changes (after both newcomers), unless
        // the budget says no (then it goes back to its old index, 1).
        func run(_ work: Double) -> [PeopleCore.Tag] {
            var h = Harness(people: (1...4).map { Fixtures.person($0) }, policy: RoomPolicy(maxListWork: work), users: ["A", "B"])
            h.submit("A", [.remove(2)])
            let from = h.room.sessions[h.sessions["B"]!]!.tags.from
            h.submit("B", [.remove(1), .remove(3), .insert(Fixtures.person(from), at: 0), .insert(Fixtures.person(from + 1), at: 0)])
            _ = h.send(.undo(.init(seq: h.nextSeq("A"))), from: "A")
            return h.people.map { $0.tag >= from ? $0.tag - from + 100 : $0.tag }
        }
        #expect(run(RoomPolicy.defaultListWork) == [101, 100, 2, 4])
        #expect(run(1) == [101, 2, 100, 4])
    }
}
