import ArgumentParser
import Foundation
import Logging
import PeopleCore
import PeopleStore
import PeopleStorePostgres
import PeopleStoreSQLite
import Synchronization

/// `peoplekeeper-bench store`: durable revisions per second through a store's group commit, and the
/// time to load a room with a long history.
///
/// Throughput: `--writers` clients, each waiting for its ack, append one revision at a time to one of
/// `--rooms` rooms and append the next once it is durable; what arrives while a commit runs goes into
/// the next one. The revisions are real ones (a room's journal records, made by the core, before the
/// run). With `--writers 1` nothing can be grouped: one commit (and one sync) per revision.
/// Restart: a room of `--history` revisions (snapshots, and so checkpoints, every `--snapshot-every`)
/// is written, then loaded and rebuilt as a restarted hub does, timed. With `--people N` that room
/// starts with N people and its edits are spread over them (for restore and `?at=` through a hub on the
/// same file: scripts/bench-history.sh).
struct StoreBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Durable revisions per second (group commit) and restart time of a long room.",
        discussion: """
            Examples:
              peoplekeeper-bench store --kind sqlite --path /tmp/bench.sqlite
              peoplekeeper-bench store --kind postgres --url postgres://peoplekeeper@127.0.0.1:5432/peoplekeeper
              peoplekeeper-bench store --kind sqlite --path /tmp/long.sqlite --history 1000000 --seconds 0
              peoplekeeper-bench store --kind sqlite --path /tmp/big.sqlite --history 100000 --people 1000 --seconds 0
            """)

    @Option(help: "sqlite, postgres or memory.") var kind = "sqlite"
    @Option(help: "SQLite file (removed first).") var path = "/tmp/peoplekeeper-bench.sqlite"
    @Option(help: "PostgreSQL URL.") var url = "postgres://peoplekeeper@127.0.0.1:5432/peoplekeeper"
    @Option(help: "Clients appending, each waiting for its ack (appends in flight).") var writers = 64
    @Option(help: "Rooms the writers spread over.") var rooms = 16
    @Option(help: "Seconds of appending (0: skip the throughput run).") var seconds = 5.0
    @Option(help: "Revisions of the room whose restart is timed (0: skip).") var history = 0
    @Option(help: "The name of that room (a hub started on the same file serves it).") var historyRoom = "long-room"
    @Option(name: .customLong("snapshot-every"), help: "Snapshot interval while writing the long room.") var snapshotEvery = 1000
    @Option(help: "People in the long room (0: the tutorial's 3, one person's glasses toggled); with N, every revision renames one of them, in turn, and every third also changes their hair colour.")
    var people = 0
    @Option(help: "Write a JSON summary here.") var json: String?

    func openStore() throws -> any PeopleStore {
        let logger = Logger(label: "peoplekeeper.bench")
        switch kind {
        case "memory": return InMemoryStore()
        case "sqlite":
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            return try SQLiteStore(path: path, logger: logger)
        case "postgres":
            return try PostgresStore(url: url, node: "bench", advertisedURL: "ws://127.0.0.1:1", logger: logger)
        default: throw ValidationError("--kind must be sqlite, postgres or memory")
        }
    }

    func run() throws {
        let store = try openStore()
        defer { store.close() }
        var summary: [String: Any] = ["kind": kind]
        if seconds > 0 { summary.merge(try throughput(store), uniquingKeysWith: { $1 }) }
        if history > 0 { summary.merge(try restart(store), uniquingKeysWith: { $1 }) }
        if let json {
            let data = try JSONSerialization.data(withJSONObject: summary, options: [.prettyPrinted, .sortedKeys])
            try data.write(to: URL(fileURLWithPath: json))
        }
    }

    /// A room's journal, made by the core, `count` revisions by one user: with `people` 0 the
    /// tutorial's room, Joan's glasses toggled; else a room of that many people ("P1", "P2", …), each
    /// revision renaming the next of them in turn (tag 37·seq mod N + 1, every person once per N
    /// revisions), every third also setting their hair colour.
    static func journal(room name: String, revisions count: Int, people: Int = 0,
                        policy: RoomPolicy = RoomPolicy(keptRevisions: 10_000),
                        each: (Room, [JournalEntry]) throws -> Void) rethrows {
        var room = people > 0
            ? Room(name: name, seed: PeopleModel(people: (1...people).map { Person(tag: $0, name: "P\($0)") }), policy: policy)
            : Room(name: name, policy: policy)
        let (session, joined) = room.join(session: "bench-\(name)", user: "bench", role: .editor)
        try each(room, joined.compactMap { if case .persist(let e) = $0 { e } else { nil } })
        for seq in 1...max(count, 1) {
            var ops: [Diff] = [.set(2, .glasses(seq % 2 == 1))]
            if people > 0 {
                let tag = (seq * 37) % people + 1
                ops = [.set(tag, .name("P\(tag) r\(seq)"))]
                if seq % 3 == 0 { ops.append(.set(tag, .hairColor(HairColor.allCases[seq % HairColor.allCases.count]))) }
            }
            let actions = room.receive(.submit(.init(seq: seq, base: room.revision, ops: ops,
                                                 label: people > 0 ? "Edit" : "Toggle Glasses")), from: session, now: Int64(seq))
            try each(room, actions.compactMap { if case .persist(let e) = $0 { e } else { nil } })
        }
    }

    func throughput(_ store: any PeopleStore) throws -> [String: Any] {
        // Records prepared up front, so the run measures the store, not the core.
        // Enough for 150,000 appends a second; room names new to the store (a PostgreSQL database
        // outlives a run).
        let perRoom = min(500_000, Int(seconds * 150_000) / rooms + 1000)
        let tagOfRun = UInt32.random(in: 0...UInt32.max)
        let names = (0..<rooms).map { "bench-\(tagOfRun)-\($0)" }
        var journals: [[JournalEntry]] = []
        for name in names {
            var entries: [JournalEntry] = []
            var first = true
            Self.journal(room: name, revisions: perRoom) { room, new in
                if first { store.save(room.snapshot(), room: name); first = false }
                entries += new
            }
            journals.append(entries)
        }
        let cursors = journals.map { _ in Cursor() }
        let prepared = journals
        let latencies = Mutex<[Double]>([])
        let failure = Mutex<StoreError?>(nil)
        let stop = Atomic<Bool>(false)
        let rooms = rooms
        // A client appends one record and, once the store says it is durable, its next one, so
        // `writers` clients keep that many appends in flight, as a hub's clients waiting for their acks
        // do. The next append is handed over by the thread that heard the completion (the store's
        // writer thread), with no thread per client: what the run measures is the store.
        @Sendable func run(_ client: Int) {
            let room = client % rooms
            while !stop.load(ordering: .relaxed) {
                let t0 = DispatchTime.now().uptimeNanoseconds
                var outcome: AppendOutcome?
                cursors[room].lock.withLock {
                    let cursor = cursors[room]
                    guard cursor.next < prepared[room].count else { return }
                    let entry = prepared[room][cursor.next]
                    cursor.next += 1
                    outcome = store.append([entry], room: names[room]) { error in
                        if let error {
                            failure.withLock { $0 = $0 ?? error }
                            stop.store(true, ordering: .relaxed)
                            return
                        }
                        latencies.withLock { $0.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6) }
                        run(client)
                    }
                }
                guard let outcome else { return }  // this room's prepared records are used up
                if outcome == .pending { return }  // goes on in the completion
                latencies.withLock { $0.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6) }
            }
        }
        let started = Date()
        for client in 0..<writers { DispatchQueue.global().async { run(client) } }
        Thread.sleep(forTimeInterval: seconds)
        stop.store(true, ordering: .relaxed)
        let elapsed = Date().timeIntervalSince(started)
        Thread.sleep(forTimeInterval: 0.5)
        if let error = failure.withLock({ $0 }) { throw error }
        let all = latencies.withLock { $0 }.sorted()
        let rate = Double(all.count) / elapsed
        // A room whose prepared records ran out stopped its clients early: the rate is then a floor.
        let exhausted = zip(cursors, prepared).contains { cursor, entries in cursor.lock.withLock { cursor.next } >= entries.count }
        func pct(_ p: Double) -> Double { all.isEmpty ? 0 : all[min(all.count - 1, Int(Double(all.count) * p))] }
        print(String(format: "%@: %d clients over %d rooms: %@%.0f durable appends/s; latency p50 %.3f ms, p99 %.3f ms, max %.2f ms",
                     kind, writers, rooms, exhausted ? "at least " : "", rate, pct(0.5), pct(0.99), all.last ?? 0))
        return ["writers": writers, "rooms": rooms, "appendsPerSecond": rate, "p50ms": pct(0.5), "p99ms": pct(0.99),
                "maxms": all.last ?? 0, "ranOutOfRecords": exhausted]
    }

    func restart(_ store: any PeopleStore) throws -> [String: Any] {
        let name = historyRoom
        var batch: [JournalEntry] = []
        var written = 0
        let writeStart = Date()
        func flush() throws {
            guard !batch.isEmpty else { return }
            let sem = DispatchSemaphore(value: 0)
            let failure = Mutex<StoreError?>(nil)
            if store.append(batch, room: name, whenDurable: { e in failure.withLock { $0 = e }; sem.signal() }) == .pending { sem.wait() }
            if let error = failure.withLock({ $0 }) { throw error }
            batch = []
        }
        var expected = PeopleModel()
        try Self.journal(room: name, revisions: history, people: people) { room, entries in
            if room.journalPosition <= 1 { store.save(room.snapshot(), room: name) }
            batch += entries
            if batch.count >= 5_000 { try flush() }
            if room.revision > 0 && room.revision % snapshotEvery == 0 && !entries.isEmpty {
                try flush()
                store.save(room.snapshot(), room: name)
            }
            written = room.revision
            expected = room.model
        }
        try flush()
        print(String(format: "wrote a room of %d people and %d revisions in %.1f s", expected.count, written,
                     Date().timeIntervalSince(writeStart)))
        var times: [Double] = []
        for _ in 0..<3 {
            let t0 = Date()
            guard let stored = try store.load(room: name) else { throw StoreError(.corrupt, "the room is missing") }
            let room = try Room(restoring: stored, policy: RoomPolicy(keptRevisions: 10_000))
            times.append(Date().timeIntervalSince(t0))
            guard room.revision == written, room.model == expected else { throw StoreError(.corrupt, "the restored room differs") }
        }
        let best = times.min() ?? 0
        print(String(format: "restart of a room with %d revisions (snapshot every %d, memory window 10000): %.3f s (best of 3; %@)",
                     written, snapshotEvery, best, times.map { String(format: "%.3f", $0) }.joined(separator: ", ")))
        return ["historyRevisions": written, "restartSeconds": best]
    }
}

/// A room's next entry to append.
private final class Cursor: @unchecked Sendable {
    let lock = NSLock()
    var next = 0
}
