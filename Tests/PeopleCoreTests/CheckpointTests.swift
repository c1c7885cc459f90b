@testable import PeopleCore
import Testing
import PeopleTestSupport

/// The model at a revision from a checkpoint (a store's copy of the people at a snapshot's revision)
/// replayed forward, against the model taken back from the head through exact inverses.
@Suite("Room: the model at a revision from a checkpoint")
struct CheckpointTests {
    /// A random history by two users (edits, undos, redos) in a room that keeps only `kept` revisions
    /// in memory: the room, the model after every revision, and every revision (index = number - 1).
    static func history(seed: UInt64, steps: Int = 40, kept: Int = 6) -> (Harness, [PeopleModel], [Revision]) {
        var rng = SeededRandom(seed: seed)
        var h = Harness(people: HistoryTests.seed, policy: RoomPolicy(keptRevisions: kept), users: ["A", "B"])
        var nextTag = ["A": h.room.users["A"]!.tagBlocks[0].from, "B": h.room.users["B"]!.tagBlocks[0].from]
        var models = [h.room.model]
        var revisions: [Revision] = []
        for _ in 0..<steps {
            let user = rng.chance(0.5) ? "A" : "B"
            let before = h.revision
            switch rng.int(0...9) {
            case 0: h.undo(user)
            case 1: h.redo(user)
            default:
                let ops = RandomEdits.batch(on: h.room.model, nextTag: &nextTag[user]!, &rng)
                if !ops.isEmpty { h.submit(user, ops) }
            }
            if h.revision == before + 1 {
                models.append(h.room.model)
                revisions.append(h.room.revision(h.revision)!)
            }
        }
        return (h, models, revisions)
    }

    @Test("a walk back from the head, or from any revision's people, gives the people at every revision below; it refuses a revision out of turn",
          arguments: 0..<20)
    func walkBack(seed: UInt64) {
        let (h, models, revisions) = Self.history(seed: seed)
        for start in [h.room.revision, h.room.revision / 2] {
            var walk = CheckpointWalk(from: Checkpoint(revision: start, people: models[start]))
            #expect(walk.checkpoint.people == models[start])
            if start >= 2 {
                let outOfTurn = walk.takeBack(revisions[start - 2])
                #expect(!outOfTurn, "seed \(seed): revision \(start - 1) out of turn")
            }
            for revision in revisions.prefix(start).reversed() {
                let taken = walk.takeBack(revision)
                #expect(taken)
                #expect(walk.checkpoint == Checkpoint(revision: revision.number - 1, people: models[revision.number - 1]),
                        "seed \(seed): from \(start) back to \(revision.number - 1)")
            }
            let pastZero = walk.takeBack(revisions[0])
            #expect(walk.revision == 0 && !pastZero)
        }
    }

    @Test("the model at every revision r from a checkpoint at any c ≤ r plus revisions c+1…r equals the one rewound from the head",
          .cpuBound, arguments: 0..<30)
    func forwardEqualsRewind(seed: UInt64) throws {
        let (h, models, revisions) = Self.history(seed: seed)
        let room = h.room
        #expect(room.oldestKeptBase > 0, "seed \(seed): the history reaches below memory")
        for r in 0...room.revision {
            // The rewind path: memory, then every revision after r up to memory.
            let below = revisions.filter { $0.number > r && $0.number <= room.oldestKeptBase }
            let rewound = try #require(room.people(at: r, older: below), "seed \(seed): rewind to \(r)")
            #expect(rewound == models[r], "seed \(seed): rewind to \(r)")
            for c in 0...r {
                // Only what the checkpoint needs: revisions c+1 … r (those above memory come from it).
                let after = revisions.filter { $0.number > c && $0.number <= r }
                let checkpoint = Checkpoint(revision: c, people: models[c])
                if r < room.oldestKeptBase, c < r {
                    #expect(room.people(at: r, older: after) == nil, "seed \(seed): \(r) needs the checkpoint")
                }
                guard case .forward? = room.modelSource(at: r, older: after, checkpoint: checkpoint) else {
                    Issue.record("seed \(seed): \(r) from \(c) is not replayed forward")
                    continue
                }
                #expect(room.people(at: r, older: after, checkpoint: checkpoint) == rewound, "seed \(seed): \(r) from \(c)")
            }
        }
    }

    @Test("a restore far below memory from a checkpoint equals the one from every revision up to memory, reply and room",
          arguments: 0..<20)
    func restoreFromCheckpoint(seed: UInt64) {
        let (h, models, revisions) = Self.history(seed: seed, steps: 50)
        var rng = SeededRandom(seed: seed &+ 1000)
        let floor = h.room.oldestKeptBase
        guard floor > 0 else { Issue.record("seed \(seed): nothing below memory"); return }
        let target = rng.int(0...(floor - 1))
        let c = rng.int(0...target)
        var asker = h
        let id = h.sessions["A"]!
        let restore = ClientMessage.restore(.init(seq: asker.nextSeq("A"), rev: target))

        // Both rooms first ask for the model at the target.
        var fallback = h.room, viaCheckpoint = h.room
        let asked = fallback.receive(restore, from: id, now: 5)
        guard case .readHistory(let read)? = asked.first else { Issue.record("seed \(seed): \(asked)"); return }
        #expect(read.modelAt == target && read.after == target && read.through == floor)

        let all = revisions.filter { $0.number > read.after && $0.number <= read.through }
        let one = fallback.receive(restore, from: id, now: 6, older: all, log: nil)
        let few = revisions.filter { $0.number > c && $0.number <= target }
        let other = viaCheckpoint.receive(restore, from: id, now: 6, older: few, log: nil,
                                          checkpoint: Checkpoint(revision: c, people: models[c]))
        #expect(!other.contains { if case .readHistory = $0 { true } else { false } }, "seed \(seed): the checkpoint was enough")
        #expect(one == other, "seed \(seed): restore to \(target) from \(c)")
        #expect(viaCheckpoint.model == models[target] && fallback.model == models[target])
        #expect(viaCheckpoint.snapshot().json == fallback.snapshot().json)
    }

    @Test("a checkpoint that does not reach the target (a revision missing) falls back to rewinding, else asks again")
    func incompleteCheckpoint() {
        let (h, models, revisions) = Self.history(seed: 7, steps: 50)
        let room = h.room
        let floor = room.oldestKeptBase
        let target = floor - 1
        let gap = revisions.filter { $0.number > 0 && $0.number <= target && $0.number != 1 }
        #expect(room.people(at: target, older: gap, checkpoint: Checkpoint(revision: 0, people: models[0])) == nil)
        let up = revisions.filter { $0.number > target && $0.number <= floor }
        #expect(room.people(at: target, older: up, checkpoint: Checkpoint(revision: 0, people: models[0])) == models[target])
    }

    @Test("a checkpoint's people round-trip through their JSON; a snapshot's checkpoint is the room's people at its revision")
    func json() throws {
        let (h, _, _) = Self.history(seed: 3)
        let snapshot = h.room.snapshot()
        #expect(snapshot.checkpoint == Checkpoint(revision: h.revision, people: h.room.model))
        let text = snapshot.checkpoint.peopleJSON.bytes
        #expect(try Checkpoint(revision: h.revision, peopleJSON: JSON.parse(text)) == snapshot.checkpoint)
        #expect(snapshot.json["people"] == snapshot.checkpoint.peopleJSON)
        #expect(throws: ProtocolError.self) { try Checkpoint(revision: 1, peopleJSON: .object([])) }
        let twice = JSON.array([Person(tag: 1, name: "A").json, Person(tag: 1, name: "B").json])
        #expect(throws: ProtocolError.self) { try Checkpoint(revision: 1, peopleJSON: twice) }
    }
}
