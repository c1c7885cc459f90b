import ArgumentParser
import PeopleCore

/// `peoplekeeper-bench core`: throughput of apply and transform, and undo latency against the length
/// of the room's history (it must stay flat: an undo looks only at the edits of the people it touches).
struct CoreBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "core",
        abstract: "Measure PeopleCore: diffs applied/s, transforms/s, undo latency vs history length.",
        discussion: """
        Run it in release mode: swift run -c release peoplekeeper-bench core
        Example: peoplekeeper-bench core --histories 100,100000,1000000 --samples 2000
        """
    )

    @Option(help: "Earlier revisions in the room before undo latency is measured (comma-separated).")
    var histories: String = "100,100000,1000000"

    @Option(help: "Undo samples per history length.")
    var samples: Int = 2000

    @Option(help: "People in the benchmark room.")
    var people: Int = 200

    @Option(help: "Seconds each throughput measurement runs.")
    var seconds: Double = 1.0

    @Option(help: ArgumentHelp(
        "Megabytes of unrelated live heap kept during the undo samples (a control: separates the effect of a large heap from the effect of a long history).",
        valueName: "mb"))
    var ballastMb: Int = 0

    func run() throws {
        print("PeopleCore micro-benchmark (\(people) people per room\(ballastMb > 0 ? ", \(ballastMb) MB ballast" : ""))")
        print("")
        print(pad("measurement", 44) + pad("result", 24))
        print(String(repeating: "-", count: 68))
        let applied = measureApply()
        print(pad("diffs applied per second (set, mixed)", 44) + pad(format(applied) + " /s", 24))
        for (name, rate) in measureTransforms() {
            print(pad("transforms per second (\(name))", 44) + pad(format(rate) + " /s", 24))
        }
        let submits = measureSubmits()
        print(pad("submits per second through Room.receive", 44) + pad(format(submits) + " /s", 24))
        print("")
        print(pad("earlier revisions", 20) + pad("undo p50", 14) + pad("undo p99", 14) + pad("undos applied", 16)
              + pad("build time", 14))
        print(String(repeating: "-", count: 78))
        var medians: [Double] = []
        for history in histories.split(separator: ",").compactMap({ Int($0) }) {
            let result = measureUndo(history: history)
            medians.append(result.p50)
            print(pad(format(Double(history)), 20) + pad(micro(result.p50), 14) + pad(micro(result.p99), 14)
                  + pad("\(result.applied) / \(samples)", 16) + pad(String(format1(result.build)) + " s", 14))
        }
        if let first = medians.first, let last = medians.last, first > 0 {
            print("")
            print("undo p50 ratio, longest history / shortest: \(format1(last / first))x (target: within 2x)")
        }
        print("")
        measureListWork()
    }

    @Option(help: "List sizes (people, and moves per batch) for the list-work-per-request figures (comma-separated).")
    var listWork: String = "100,300,1000"

    /// The costliest requests on positions, in a room of n people (SECURITY.md "One caller, every room"):
    /// a batch of n moves sent on an old base over another user's n moves and their undo (the list work
    /// of the rebase grows as moves × moves since × people, up to `RoomPolicy.maxListWork`, beyond which
    /// it is `stale-base` at once); the undo of an n-move batch; and the undo of a batch that removed
    /// every other person after a teammate removed the rest (no old neighbour left for anyone).
    func measureListWork() {
        print(pad("list work per request (n people, n moves)", 44) + pad("time", 14) + pad("units", 16) + pad("ns / unit", 12) + "answer")
        print(String(repeating: "-", count: 96))
        let clock = ContinuousClock()
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        for n in listWork.split(separator: ",").compactMap({ Int($0) }) {
            let people = (1...n).map { Person(tag: $0, name: "P\($0)") }
            var room = Room(name: "bench", seed: PeopleModel(people: people))
            let (a, _) = room.join(session: "a", user: "a", role: .editor)
            let (b, _) = room.join(session: "b", user: "b", role: .editor)
            let toEnd: [Diff] = (1...n).reversed().map { .move($0, to: n - 1) }
            _ = room.receive(.submit(.init(seq: 1, base: 0, ops: toEnd)), from: a, now: 1)
            var start = clock.now
            _ = room.receive(.undo(.init(seq: 2)), from: a, now: 2)
            let undo = seconds(clock.now - start)
            print(pad("undo of \(n) moves", 44) + pad(micro(undo), 14) + pad("", 16) + pad("", 12) + "undone")
            let toFront: [Diff] = (1...n).map { .move($0, to: 0) }
            let units = Double(n) * Double(2 * n) * Double(n + 1)
            start = clock.now
            let actions = room.receive(.submit(.init(seq: 1, base: 0, ops: toFront)), from: b, now: 3)
            let rebase = seconds(clock.now - start)
            let refused = actions.contains { if case .send(.error, _) = $0 { true } else { false } }
            print(pad("\(n) moves on base 0 over \(2 * n) since", 44) + pad(micro(rebase), 14) + pad(format(units), 16)
                  + pad(refused ? "" : format1(rebase * 1e9 / units), 12) + (refused ? "stale-base" : "applied"))

            var gone = Room(name: "bench", seed: PeopleModel(people: people))
            let (c, _) = gone.join(session: "c", user: "c", role: .editor)
            let (d, _) = gone.join(session: "d", user: "d", role: .editor)
            let odd: [Diff] = stride(from: 1, through: n, by: 2).map { .remove($0) }
            let even: [Diff] = stride(from: 2, through: n, by: 2).map { .remove($0) }
            _ = gone.receive(.submit(.init(seq: 1, base: 0, ops: odd)), from: c, now: 1)
            _ = gone.receive(.submit(.init(seq: 1, base: 1, ops: even)), from: d, now: 2)
            start = clock.now
            _ = gone.receive(.undo(.init(seq: 2)), from: c, now: 3)
            let lonely = seconds(clock.now - start)
            print(pad("undo of \(odd.count) removes, neighbours gone", 44) + pad(micro(lonely), 14) + pad("", 16) + pad("", 12)
                  + "undone (\(gone.model.count) people)")
        }
    }

    // MARK: Measurements

    func seedModel() -> PeopleModel {
        let colors = HairColor.allCases
        return PeopleModel(people: (1...people).map {
            Person(tag: $0, name: "Person \($0)", hairColor: colors[$0 % colors.count])
        })
    }

    /// Runs `step` in rounds of `round` calls for `duration` seconds; returns calls per second.
    func rate(for duration: Double, round: Int = 500, _ step: () -> Void) -> Double {
        var count = 0
        let clock = ContinuousClock()
        let start = clock.now
        while (clock.now - start).seconds < duration {
            for _ in 0..<round { step() }
            count += round
        }
        return Double(count) / (clock.now - start).seconds
    }

    func measureApply() -> Double {
        var model = seedModel()
        var rng = BenchRandom(seed: 1)
        return rate(for: seconds) {
            let tag = rng.int(people) + 1
            let diff: Diff = switch rng.int(4) {
            case 0: .set(tag, .hairColor(HairColor.allCases[rng.int(6)]))
            case 1: .set(tag, .glasses(rng.int(2) == 0))
            case 2: .facialHair(tag, FacialHairStyle.allCases[rng.int(5)], present: rng.int(2) == 0)
            default: .preference(tag, Topic.allCases[rng.int(10)], Opinion.allCases[rng.int(3)])
            }
            _ = try? model.apply(diff)
        }
    }

    func measureTransforms() -> [(String, Double)] {
        let order = seedModel().tags
        let text = TextOperation([.retain(3), .insert("ab"), .delete(1)])
        let theirs = TextOperation([.retain(1), .delete(2), .insert("xyz")])
        let cases: [(String, Diff, Diff)] = [
            ("set vs set", .set(5, .hairColor(.red)), .set(5, .hairColor(.blonde))),
            ("text vs text", .text(5, text), .text(5, theirs)),
            ("move vs insert, \(people) people", .move(7, to: 40), .insert(Person(tag: 9999, name: "N"), at: 20)),
        ]
        return cases.map { name, incoming, applied in
            var kept = 0
            let perSecond = rate(for: seconds / 3) {
                if case .diff = Transform.transform(incoming, over: applied, order: order) { kept += 1 }
            }
            return (name, perSecond)
        }
    }

    func measureSubmits() -> Double {
        var room = Room(name: "bench", seed: seedModel())
        let (id, _) = room.join(session: "s", user: "u", role: .editor)
        var rng = BenchRandom(seed: 2)
        var seq = 0
        return rate(for: seconds) {
            seq += 1
            let diff = Diff.set(rng.int(people) + 1, .hairColor(HairColor.allCases[rng.int(6)]))
            _ = room.receive(.submit(.init(seq: seq, base: room.revision, ops: [diff])), from: id, now: Int64(seq))
        }
    }

    /// Fills a room with `history` revisions by background users, then times `samples` undos by one
    /// user, each of an edit followed by a fixed number of teammates' edits (some on the same person).
    func measureUndo(history: Int) -> (p50: Double, p99: Double, build: Double, applied: Int) {
        let clock = ContinuousClock()
        let buildStart = clock.now
        var room = Room(name: "bench", seed: seedModel(), policy: RoomPolicy(undo: UndoPolicy(depth: 100)))
        let (background, _) = room.join(session: "bg", user: "team", role: .editor)
        let (mine, _) = room.join(session: "me", user: "me", role: .editor)
        var rng = BenchRandom(seed: UInt64(history))
        var bgSeq = 0
        var mySeq = 0
        var now: Int64 = 0
        func backgroundEdit() {
            bgSeq += 1
            now += 1
            let tag = rng.int(people) + 1
            // Typing that keeps names short (insert, or delete once long), so no edit hits the limit.
            let long = (room.model[tag]?.name.unicodeScalars.count ?? 0) > 24
            let diff: Diff = rng.int(3) == 0
                ? .text(tag, TextOperation([long ? .delete(1) : .insert("x")]))
                : .set(tag, .hairColor(HairColor.allCases[rng.int(6)]))
            _ = room.receive(.submit(.init(seq: bgSeq, base: room.revision, ops: [diff])), from: background, now: now)
        }
        for _ in 0..<history { backgroundEdit() }
        // 1 MiB = 1,024 arrays of 128 Ints (1 KiB each), allocated one by one like a history would be.
        let ballast = (0..<(ballastMb * 1024)).map { k in [Int](repeating: k, count: 128) }
        let build = (clock.now - buildStart).seconds

        var timings: [Double] = []
        var applied = 0
        timings.reserveCapacity(samples)
        for k in 0..<samples {
            let tag = rng.int(people) + 1
            mySeq += 1
            now += 1000
            let edit: Diff = k % 2 == 0
                ? .text(tag, TextOperation([.retain(2), .insert("me")]))
                : .set(tag, .eyeColor(EyeColor.allCases[rng.int(6)]))
            _ = room.receive(.submit(.init(seq: mySeq, base: room.revision, ops: [edit])), from: mine, now: now)
            for _ in 0..<10 { backgroundEdit() }
            mySeq += 1
            now += 1000
            let start = clock.now
            let actions = room.receive(.undo(.init(seq: mySeq)), from: mine, now: now)
            timings.append((clock.now - start).seconds)
            for case .send(.undone(let result), _) in actions where result.rev != nil { applied += 1 }
        }
        withExtendedLifetime(ballast) {}
        timings.sort()
        return (timings[timings.count / 2], timings[min(timings.count - 1, timings.count * 99 / 100)], build, applied)
    }
}

/// SplitMix64: the benchmark's workload is the same on every run.
struct BenchRandom {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

extension Duration {
    var seconds: Double {
        let (s, attoseconds) = components
        return Double(s) + Double(attoseconds) / 1e18
    }
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
}

func format(_ value: Double) -> String {
    let n = Int(value.rounded())
    var digits = Array(String(n))
    var out: [Character] = []
    while digits.count > 3 {
        out = [","] + digits.suffix(3) + out
        digits.removeLast(3)
    }
    return String(digits + out)
}

func format1(_ value: Double) -> String {
    let tenths = Int((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10)"
}

func micro(_ seconds: Double) -> String { format1(seconds * 1e6) + " µs" }
