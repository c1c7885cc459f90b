import ArgumentParser
import PeopleCore

/// `peoplekeeper-bench history`: the room's history features (issue 18) in the core, where their cost
/// lies. Selective undo of an entry 100 steps deep against a plain undo, in the same run; `log` pages
/// and `blame` in a room of 1,000,000 revisions; restore of a 1,000-person room to revision 0 after
/// 100,000 revisions. The hub adds the socket, the journal write and (below the memory window) the
/// store reads; those are not measured here.
struct HistoryBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Measure selective undo vs plain undo, log and blame in a long history, and restore.",
        discussion: """
        Run it in release mode: swift run -c release peoplekeeper-bench history
        Example: peoplekeeper-bench history --samples 2000 --log-history 1000000 --restore-people 1000
        """
    )

    @Option(help: "Undo samples of each kind.")
    var samples: Int = 2000

    @Option(help: "How deep the selectively undone entry is on the user's stack.")
    var depth: Int = 100

    @Option(help: "Revisions in the room the log and blame samples read.")
    var logHistory: Int = 1_000_000

    @Option(help: "People in the restored room.")
    var restorePeople: Int = 1_000

    @Option(help: "Revisions after which the room is restored to revision 0.")
    var restoreHistory: Int = 100_000

    @Option(help: "Restore samples.")
    var restoreSamples: Int = 5

    func run() throws {
        print("History benchmark (PeopleCore, release build)")
        print("")
        let (plain, selective) = measureUndo()
        print(pad("plain undo (newest entry)", 44) + pad("p50 " + micro(plain.p50), 18) + pad("p99 " + micro(plain.p99), 18))
        print(pad("selective undo (entry \(depth) deep)", 44) + pad("p50 " + micro(selective.p50), 18)
              + pad("p99 " + micro(selective.p99), 18))
        print("selective / plain p99: \(format1(selective.p99 / plain.p99))x (target: at most 3x)")
        print("")
        let (log, blame, build) = measureLogAndBlame()
        print("a room of \(format(Double(logHistory))) revisions (built in \(format1(build)) s):")
        print(pad("log, 50 entries, a random page", 44) + pad("p50 " + micro(log.p50), 18) + pad("p99 " + micro(log.p99), 18))
        print(pad("blame, a random person", 44) + pad("p50 " + micro(blame.p50), 18) + pad("p99 " + micro(blame.p99), 18))
        print("")
        let restore = measureRestore()
        print("restore of a \(restorePeople)-person room to revision 0 after \(format(Double(restoreHistory))) revisions:")
        print(pad("model at revision 0 + batch + apply", 44) + pad("median " + milli(restore.median), 18)
              + pad("worst " + milli(restore.worst), 18))
        print("(target end to end: at most 200 ms; the store read of revisions below the memory window is not included)")
    }

    // MARK: Selective vs plain undo

    func measureUndo() -> (plain: Percentiles, selective: Percentiles) {
        // No cascade: one undo takes one entry, so the stack keeps its depth from sample to sample.
        var room = Room(name: "bench", seed: people(200), policy: RoomPolicy(undo: UndoPolicy(depth: 0, cascade: false)))
        let (me, _) = room.join(session: "me", user: "me", role: .editor)
        let (team, _) = room.join(session: "team", user: "team", role: .editor)
        var rng = BenchRandom(seed: 7)
        var seq = ["me": 0, "team": 0]
        var now: Int64 = 0
        func edit(_ id: SessionID, _ user: String) {
            seq[user]! += 1
            now += 1000
            let tag = rng.int(200) + 1
            let diff: Diff = rng.int(2) == 0 ? .set(tag, .hairColor(HairColor.allCases[rng.int(6)]))
                : .set(tag, .eyeColor(EyeColor.allCases[rng.int(6)]))
            _ = room.receive(.submit(.init(seq: seq[user]!, base: room.revision, ops: [diff])), from: id, now: now)
        }
        for _ in 0..<(depth * 2) {
            edit(me, "me")
            for _ in 0..<3 { edit(team, "team") }
        }
        let clock = ContinuousClock()
        var plain: [Double] = []
        var selective: [Double] = []
        for _ in 0..<samples {
            // A plain undo of the newest entry, then its redo (the stack is as before).
            seq["me"]! += 1
            now += 1000
            var start = clock.now
            _ = room.receive(.undo(.init(seq: seq["me"]!)), from: me, now: now)
            plain.append((clock.now - start).seconds)
            seq["me"]! += 1
            _ = room.receive(.redo(.init(seq: seq["me"]!)), from: me, now: now)
            // A selective undo of the entry `depth` steps down, then a new edit on top (the stack keeps
            // its depth), and the teammates go on.
            while room.stacks(of: "me").undo.count < depth { edit(me, "me") }
            let stack = room.stacks(of: "me").undo
            let id = stack[stack.count - depth].id
            seq["me"]! += 1
            now += 1000
            start = clock.now
            _ = room.receive(.undo(.init(seq: seq["me"]!, entry: id)), from: me, now: now)
            selective.append((clock.now - start).seconds)
            edit(me, "me")
            for _ in 0..<3 { edit(team, "team") }
        }
        return (Percentiles(plain), Percentiles(selective))
    }

    // MARK: Log and blame

    func measureLogAndBlame() -> (log: Percentiles, blame: Percentiles, build: Double) {
        let clock = ContinuousClock()
        let started = clock.now
        var room = Room(name: "bench", seed: people(200), policy: RoomPolicy(keptRevisions: 0))
        let (id, _) = room.join(session: "me", user: "me", role: .editor)
        var rng = BenchRandom(seed: 11)
        for k in 1...logHistory {
            let tag = rng.int(200) + 1
            _ = room.receive(.submit(.init(seq: k, base: room.revision, ops: [.set(tag, .glasses(k % 2 == 0))])),
                             from: id, now: Int64(k))
        }
        let build = (clock.now - started).seconds
        var log: [Double] = []
        var blame: [Double] = []
        for k in 0..<samples {
            let before = rng.int(room.revision) + 1
            var start = clock.now
            _ = room.receive(.log(.init(seq: k, before: before, limit: 50)), from: id, now: 0)
            log.append((clock.now - start).seconds)
            start = clock.now
            _ = room.receive(.blame(.init(seq: k, tag: rng.int(200) + 1)), from: id, now: 0)
            blame.append((clock.now - start).seconds)
        }
        return (Percentiles(log), Percentiles(blame), build)
    }

    // MARK: Restore

    func measureRestore() -> (median: Double, worst: Double) {
        var room = Room(name: "bench", seed: people(restorePeople), policy: RoomPolicy(keptRevisions: 0))
        let (id, _) = room.join(session: "me", user: "me", role: .editor)
        var rng = BenchRandom(seed: 13)
        var seq = 0
        for k in 0..<restoreHistory {
            seq += 1
            let tag = rng.int(restorePeople) + 1
            let diff: Diff
            switch k % 10 {
            case 0 where room.model[tag] != nil: diff = .move(tag, to: rng.int(restorePeople))
            case 1: diff = .text(tag, TextOperation([.insert("x")]))
            default: diff = .set(tag, .hairColor(HairColor.allCases[rng.int(6)]))
            }
            _ = room.receive(.submit(.init(seq: seq, base: room.revision, ops: [diff])), from: id, now: Int64(k))
            // Names grow by typing: keep them short so nothing hits the name limit.
            if k % 10 == 1, (room.model[tag]?.name.count ?? 0) > 20 {
                seq += 1
                _ = room.receive(.submit(.init(seq: seq, base: room.revision, ops: [.set(tag, .name("P\(tag)"))])),
                                 from: id, now: Int64(k))
            }
        }
        let clock = ContinuousClock()
        var times: [Double] = []
        for _ in 0..<restoreSamples {
            let before = room.model
            seq += 1
            let start = clock.now
            _ = room.receive(.restore(.init(seq: seq, rev: 0)), from: id, now: 0)
            times.append((clock.now - start).seconds)
            precondition(room.model == people(restorePeople), "restore to 0 gives the seed")
            // Its undo puts the room back for the next sample.
            seq += 1
            _ = room.receive(.undo(.init(seq: seq)), from: id, now: 0)
            precondition(room.model == before, "the undo of a restore gives the room before it")
        }
        times.sort()
        return (times[times.count / 2], times.last!)
    }

    func people(_ count: Int) -> PeopleModel {
        PeopleModel(people: (1...count).map { Person(tag: $0, name: "P\($0)") })
    }
}

func milli(_ seconds: Double) -> String { format1(seconds * 1e3) + " ms" }
