@testable import PeopleCore
import PropertyBased
import Testing
import PeopleTestSupport

/// Properties over random models and batches; each input is a seed for `SeededRandom`.
@Suite("Properties", .cpuBound)
struct PropertyTests {
    @Test("TP1: both orders of two concurrent batches converge")
    func tp1() async {
        await propertyCheck(count: 2000, input: Gen.uint64()) { seed in
            var rng = SeededRandom(seed: seed)
            let start = RandomEdits.model(&rng)
            var tagsX = 100, tagsY = 200
            let a = RandomEdits.batch(on: start, nextTag: &tagsX, &rng)
            let b = RandomEdits.batch(on: start, nextTag: &tagsY, &rng)
            let order = start.tags
            // The hub applied a first: b is rebased over a. The other side rebases a over b, a first.
            var left = start
            _ = try? left.apply(batch: a, absentTags: .skip)
            _ = try? left.apply(batch: Transform.transform(b, over: a, order: order).diffs, absentTags: .skip)
            var right = start
            _ = try? right.apply(batch: b, absentTags: .skip)
            _ = try? right.apply(batch: Transform.transform(a, over: b, order: order, incomingFirst: true).diffs,
                                 absentTags: .skip)
            #expect(left == right, "seed \(seed): a=\(a) b=\(b)")
            left.checkInvariants()
        }
    }

    @Test("apply then the exact inverses gives the model back")
    func applyThenInverse() async {
        await propertyCheck(count: 1000, input: Gen.uint64()) { seed in
            var rng = SeededRandom(seed: seed)
            let start = RandomEdits.model(&rng)
            var next = 100
            let batch = RandomEdits.batch(on: start, nextTag: &next, size: 1...6, &rng)
            var model = start
            let result = try model.apply(batch: batch)
            model.checkInvariants()
            model.rollBack(result.applied)
            #expect(model == start, "seed \(seed)")
        }
    }

    @Test("undo n times then redo n times with nothing between gives the same model")
    func undoRedoIdentity() async {
        await propertyCheck(count: 300, input: Gen.uint64()) { seed in
            var rng = SeededRandom(seed: seed)
            var h = Harness(people: RandomEdits.model(&rng).people.elements, users: ["A", "B"])
            var nextA = 4, nextB = 104
            for _ in 0..<rng.int(1...8) {
                let user = rng.chance(0.6) ? "A" : "B"
                var next = user == "A" ? nextA : nextB
                let batch = RandomEdits.batch(on: h.room.model, nextTag: &next, &rng)
                if user == "A" { nextA = next } else { nextB = next }
                _ = h.send(.submit(.init(seq: h.nextSeq(user), base: h.revision, ops: batch)), from: user)
            }
            let n = h.room.stacks(of: "A").undo.count
            let before = h.room.model
            for _ in 0..<n { h.undo("A") }
            #expect(h.room.stacks(of: "A").undo.isEmpty)
            let redos = h.room.stacks(of: "A").redo.count
            for _ in 0..<redos { h.redo("A") }
            #expect(h.room.model == before, "seed \(seed)")
        }
    }

    @Test("random garbage batches are typed errors and leave the model untouched")
    func garbageBatches() async {
        await propertyCheck(count: 2000, input: Gen.uint64()) { seed in
            var rng = SeededRandom(seed: seed)
            var h = Harness()
            let before = h.room.model
            let ops = JSON.array((0..<rng.int(1...4)).map { _ in RandomEdits.garbage(&rng) })
            let frame = JSON.object(["type": .string("submit"), "seq": .int(1), "base": .int(0), "ops": ops])
            switch ClientMessage.decode(frame.bytes) {
            case .failure(let error):
                #expect(error.code == .invalidOp || error.code == .badMessage, "seed \(seed): \(error)")
                #expect(h.room.model == before)
            case .success(let message):
                let reply = h.send(message, from: "A")
                switch reply {
                case .ack?, .error?: break
                default: Issue.record("seed \(seed): no reply")
                }
                if case .error? = reply { #expect(h.room.model == before) }
            }
        }
    }

    @Test("every message survives encode then decode")
    func messageRoundTrip() async {
        await propertyCheck(count: 500, input: Gen.uint64()) { seed in
            var rng = SeededRandom(seed: seed)
            let model = RandomEdits.model(&rng)
            var next = 100
            let ops = RandomEdits.batch(on: model, nextTag: &next, size: 1...5, &rng)
            let report = SkipReport(reason: rng.pick(SkipReport.Reason.allCases), target: rng.pick([
                DiffTarget.position(3), .field(2, .name), .facialHair(1, .beard), .preference(4, .art), .person(5),
            ]), by: rng.chance(0.5) ? "bob" : nil)
            let history = HistorySummary(canUndo: true, canRedo: rng.chance(0.5), undoLabel: "Change Hair Color")
            let clientMessages: [ClientMessage] = [
                .hello(.init(user: RandomEdits.name(&rng), token: "t", client: "tui/0.1", resume: "s1", since: rng.int(0...9))),
                .submit(.init(seq: rng.int(1...99), base: rng.int(0...99), ops: ops, label: "Edit", coalesce: "name-1")),
                .undo(.init(seq: 3, scope: rng.chance(0.5) ? 2 : nil)), .redo(.init(seq: 4)),
                .presence(.init(viewing: 2, field: "name")), .ping(seq: 7), .ping(seq: nil), .tags,
            ]
            for message in clientMessages {
                #expect(ClientMessage.decode(message.json.bytes) == .success(message), "seed \(seed)")
            }
            let serverMessages: [ServerMessage] = [
                .welcome(.init(session: "s1", user: "ann", role: .editor, rev: 5, people: model.people.elements,
                               tags: TagBlock(from: 4, to: 103), history: history,
                               presence: [PresenceEntry(user: "ann", viewing: 1, field: "name")])),
                .welcome(.init(session: "s1", user: "ann", role: .viewer, rev: 5, people: nil,
                               tags: TagBlock(from: 4, to: 103), history: HistorySummary(), presence: [])),
                .ack(.init(seq: 1, rev: 6, ops: ops, noop: [report])),
                .ops(.init(rev: 6, author: "bob", kind: rng.pick(RevisionKind.allCases), ops: ops, label: "L", seq: 2)),
                .undone(.init(seq: 2, rev: 7, ops: ops, label: "L", skipped: [report])), .redone(.init(seq: 3)),
                .history(history), .presence([PresenceEntry(user: "bob")]),
                .error(.init(seq: 1, code: rng.pick(ErrorCode.allCases), message: "m")),
                .redirect(url: "ws://b:8080/v1/rooms/x"), .pong(seq: 1), .pong(seq: nil, time: 1_796_000_000_123), .tags(TagBlock(from: 200, to: 299)),
            ]
            for message in serverMessages {
                #expect(ServerMessage.decode(message.json.bytes) == .success(message), "seed \(seed)")
            }
        }
    }
}
