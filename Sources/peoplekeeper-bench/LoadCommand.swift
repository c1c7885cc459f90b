import ArgumentParser
import Foundation
import PeopleCore
import WebSocketTransport

/// `peoplekeeper-bench load`: N clients in R rooms of a running hub, W of them editing, the rest
/// receiving; measures deliveries per second, submit-to-delivery latency, connection set-up time and
/// the hub's CPU and memory, and checks that every client got every revision once, in order, and
/// ended with the room's state.
///
/// Clients are assigned to rooms round-robin: client `i` is in room `i % R`; the first W clients are
/// the writers, the next `verifiers × R` keep the whole model. Writers are real clients
/// (`ClientSync`: optimistic edits, one request in flight, rebasing), making a seeded mix of edits
/// (sets of every field, facial hair, preferences, moves), undos and redos, at `--rate` requests a
/// second each (paced; a request that cannot go yet waits in the client's outbox) or, with rate 0, each
/// as soon as the previous one is answered. Verifiers apply every revision with the core; the other
/// receivers only check revision numbers (a light scan), so a thousand of them fit in one process.
///
/// Latency runs from when a request was due (paced: its slot in the schedule, so a hub that falls
/// behind is charged for the wait; rate 0: when it was sent) to when each other client in the room
/// received the revision. Server CPU is user + system time of `--server-pid` (/proc) over the measured
/// part, from the first request to the last delivery; RSS is read before connecting, after everyone
/// joined, and at the end.
struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Load a running hub: N clients in R rooms, W writing; latency, throughput, CPU, memory, exactly-once.",
        discussion: """
            Examples:
              peoplekeeper-bench load --url ws://127.0.0.1:8080 --clients 100 --writers 1 --rate 200 --seconds 10 --server-pid PID
              peoplekeeper-bench load --clients 1000 --rooms 1 --writers 10 --rate 0 --seconds 10
              peoplekeeper-bench load --clients 10000 --rooms 100 --writers 0 --seconds 5   # idle connections
            """)

    enum Target: String, ExpressibleByArgument { case hub, relay }

    @Option(help: "The hub, ws://HOST:PORT (rooms are /v1/rooms/PREFIX-N).")
    var url = "ws://127.0.0.1:8080"

    @Option(help: "hub, or relay: `peoplekeeper-bench relay`, the bare transport (writers send frames of the shape and size of the hub's ops frames; one writer per room; no state to compare).")
    var target: Target = .hub

    @Option(help: "Clients in all.")
    var clients = 100

    @Option(help: "Rooms; client i joins room i % rooms.")
    var rooms = 1

    @Option(help: "Clients that edit (the first ones, spread over the rooms).")
    var writers = 1

    @Option(help: "Requests per second per writer; 0 for as fast as answers come.")
    var rate = 10.0

    @Option(help: "Seconds of load.")
    var seconds = 10.0

    @Option(help: "Percent of requests that are edits, undos and redos (EDIT,UNDO,REDO).")
    var mix = "80,10,10"

    @Option(help: "Receivers per room that apply every revision and are compared with the room at the end.")
    var verifiers = 2

    @Option(help: "New connections per second while joining (0: all at once).")
    var connectRate = 2000.0

    @Option(help: "PID of the hub, for its CPU time and memory (/proc).")
    var serverPid: Int32?

    @Option(help: "Room name prefix (use a fresh one per run against a hub that keeps rooms).")
    var roomPrefix = "load"

    @Option(help: "Processes to spread the receivers over (this one keeps the writers and verifiers and reports).")
    var processes = 1

    @Option(help: .hidden) var workerDirectory: String?
    @Option(help: .hidden) var workerIndex = 0

    @Option(help: "Seed of the writers' choices.")
    var seed: UInt64 = 1

    @Option(help: "Write the result as JSON to this file.")
    var json: String?

    @Option(help: "A name for the run in the output.")
    var label: String?

    func validate() throws {
        guard clients >= 1, rooms >= 1, rooms <= clients else { throw ValidationError("need 1 ≤ rooms ≤ clients") }
        guard (0...clients).contains(writers) else { throw ValidationError("--writers must be 0…clients") }
        guard rate >= 0, seconds > 0 else { throw ValidationError("--rate ≥ 0 and --seconds > 0") }
        guard parsedMix != nil else { throw ValidationError("--mix is EDIT,UNDO,REDO percentages adding up to 100") }
        guard url.hasPrefix("ws://") || url.hasPrefix("wss://") else { throw ValidationError("--url is ws://HOST:PORT") }
        guard (1...64).contains(processes) else { throw ValidationError("--processes is 1…64") }
        if target == .relay {
            guard writers <= rooms else { throw ValidationError("a relay orders nothing: at most one writer per room") }
            guard rate > 0, mix == "100,0,0" else { throw ValidationError("against the relay: --mix 100,0,0 and a --rate") }
        }
    }

    var parsedMix: (edit: Int, undo: Int, redo: Int)? {
        let parts = mix.split(separator: ",").compactMap { Int($0) }
        guard parts.count == 3, parts.allSatisfy({ $0 >= 0 }), parts.reduce(0, +) == 100 else { return nil }
        return (parts[0], parts[1], parts[2])
    }

    func run() async throws {
        let base = url.hasSuffix("/") ? String(url.dropLast()) : url
        let plan = LoadPlan(target: target, clients: clients, rooms: rooms, writers: writers,
                            verifiers: target == .hub ? verifiers : 0, mix: parsedMix!, seed: seed)
        let run = LoadRun(plan: plan, roomURLs: (0..<rooms).map { "\(base)/v1/rooms/\(roomPrefix)-\($0)" },
                          shard: workerDirectory == nil ? 0 : workerIndex, shards: processes)
        let client = try WebSocketClient(limits: WebSocketLimits(sendQueueMessages: 1 << 20, sendQueueBytes: 1 << 30))
        let server = workerDirectory == nil ? serverPid.map(ProcessSample.init(pid:)) : nil
        let rssBefore = server?.rssKiB()
        let workers = workerDirectory == nil && processes > 1 ? try LoadWorkers(count: processes - 1) : nil

        // Join, paced so the listen backlog is not overrun (each process takes its share of the rate).
        let joinStart = DispatchTime.now().uptimeNanoseconds
        let pace = connectRate / Double(processes)
        for (position, peer) in run.owned.enumerated() {
            if pace > 0 {
                let due = joinStart + UInt64(Double(position) * 1e9 / pace)
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { try await Task.sleep(nanoseconds: due - now) }
            }
            peer.connectStart = DispatchTime.now().uptimeNanoseconds
            try client.connect(url: run.roomURLs[peer.room], delegate: peer)
        }
        let owned = run.owned.count
        try await run.wait(timeout: 60 + Double(clients) / 200, "all \(owned) clients joined") { $0.joined == owned }
        if run.failures > 0 { throw ValidationError("\(run.failures) connections failed while joining") }
        if let workerDirectory {
            return try await runWorker(run, client: client, directory: workerDirectory)
        }
        try await workers?.waitUntilReady()
        let joinSeconds = Double(DispatchTime.now().uptimeNanoseconds - joinStart) / 1e9
        let rssJoined = server?.rssKiB()

        // Load.
        let cpuBefore = try server?.cpuSeconds()
        let start = DispatchTime.now().uptimeNanoseconds
        let end = start + UInt64(seconds * 1e9)
        let writerCount = run.writers.count
        if writerCount > 0 {
            if rate == 0 {
                client.perform { for writer in run.writers { writer.goFlatOut(until: end) } }
                try await Task.sleep(nanoseconds: end - min(end, DispatchTime.now().uptimeNanoseconds))
            } else {
                // Writer w's request k is due at start + (k + w / W) / rate: the writers take turns evenly.
                let interval = 1e9 / (rate * Double(writerCount))
                var event = 0
                while true {
                    let due = start + UInt64(Double(event) * interval)
                    if due >= end { break }
                    let now = DispatchTime.now().uptimeNanoseconds
                    if due > now { try await Task.sleep(nanoseconds: due - now) }
                    let writer = event % writerCount
                    client.perform { run.writers[writer].act(due: due) }
                    event += 1
                }
            }
        } else {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
        }
        client.perform { for writer in run.writers { writer.stopActing() } }

        // Drain: every request answered, then every client at its room's head.
        do {
            try await run.wait(timeout: 60, "every writer's requests answered") { run in
                client.perform { run.checkAnswered() }
                return run.allAnswered
            }
        } catch {
            let state = await withCheckedContinuation { (done: CheckedContinuation<String, Never>) in
                client.perform { done.resume(returning: run.writers.map(\.waiting).filter { !$0.isEmpty }.joined(separator: "\n")) }
            }
            FileHandle.standardError.write(Data("unanswered requests:\n\(state)\n".utf8))
            throw error
        }
        try await run.wait(timeout: 60, "every client has every revision") { run in
            client.perform { run.checkHeads() }
            return run.allAtHead
        }
        let heads = await withCheckedContinuation { (done: CheckedContinuation<[Int], Never>) in
            client.perform { done.resume(returning: run.head) }
        }
        let workerResults = try await workers?.finish(heads: heads) ?? []
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpuAfter = try server?.cpuSeconds()
        let rssEnd = server?.rssKiB()

        // Convergence: a fresh client per room against every client that keeps the model.
        let truth = RoomCheck(count: rooms)
        if target == .hub {
            for room in 0..<rooms {
                try client.connect(url: run.roomURLs[room], delegate: CheckPeer(room: room, check: truth))
            }
            try await run.wait(timeout: 30, "the check clients joined") { _ in truth.done == rooms }
        }
        let report = await withCheckedContinuation { (done: CheckedContinuation<LoadReport, Never>) in
            client.perform { done.resume(returning: run.report(truth: truth, workers: workerResults)) }
        }
        await client.shutdown()

        let deliveries = report.deliveries
        let cpu: Double? = if let cpuBefore, let cpuAfter { cpuAfter - cpuBefore } else { nil }
        var out: [String: Any] = [
            "label": label ?? target.rawValue, "target": target.rawValue, "clients": clients, "rooms": rooms, "writers": writers, "rate": rate,
            "seconds": seconds, "mix": mix, "processes": processes, "elapsedSeconds": elapsed,
            "requests": report.requests, "droppedByClient": report.dropped, "revisions": report.revisions, "deliveries": deliveries,
            "deliveriesPerSecond": Double(deliveries) / elapsed,
            "latencyMillis": ["p50": report.latency.p50, "p99": report.latency.p99, "max": report.latency.max,
                              "samples": report.latency.count],
            "joinSeconds": joinSeconds,
            "connectMillis": ["p50": report.connect.p50, "p99": report.connect.p99, "max": report.connect.max],
            "problems": report.problems, "converged": report.converged, "comparedClients": report.compared,
            "answerMillis": Dictionary(uniqueKeysWithValues: zip(["edit", "undo", "redo"], report.answers.map {
                ["p50": $0.p50, "p99": $0.p99, "max": $0.max, "count": $0.count] as [String: Any]
            })),
        ]
        if let cpu {
            out["serverCPUSeconds"] = cpu
            out["serverCPUMicrosPerDelivery"] = deliveries > 0 ? cpu * 1e6 / Double(deliveries) : Double(0)
            out["deliveriesPerServerCPUSecond"] = cpu > 0 ? Double(deliveries) / cpu : Double(0)
        }
        if let rssBefore, let rssJoined, let rssEnd {
            out["serverRSSKiB"] = ["before": rssBefore, "joined": rssJoined, "end": rssEnd]
            out["serverRSSKiBPerConnection"] = Double(rssJoined - rssBefore) / Double(clients)
        }
        print(Self.table(out))
        if let json {
            let data = try JSONSerialization.data(withJSONObject: out, options: [.prettyPrinted, .sortedKeys])
            try data.write(to: URL(fileURLWithPath: json))
        }
        if !report.problems.isEmpty || !report.converged { throw ExitCode(1) }
    }

    /// A worker process: its receivers joined; tell the reporting process, wait for the rooms' heads,
    /// wait until every receiver has them, and leave what they saw for it.
    private func runWorker(_ run: LoadRun, client: WebSocketClient, directory: String) async throws {
        let folder = URL(fileURLWithPath: directory)
        try Data().write(to: folder.appendingPathComponent("ready-\(workerIndex)"))
        let headsFile = folder.appendingPathComponent("heads.json")
        while !FileManager.default.fileExists(atPath: headsFile.path) {
            try await Task.sleep(nanoseconds: 2_000_000)
        }
        let heads = try JSONDecoder().decode([Int].self, from: Data(contentsOf: headsFile))
        client.perform { for (room, head) in heads.enumerated() { run.saw(room: room, rev: head) } }
        try await run.wait(timeout: 60, "every client has every revision") { run in
            client.perform { run.checkHeads() }
            return run.allAtHead
        }
        let result = await withCheckedContinuation { (done: CheckedContinuation<LoadWorkers.Result, Never>) in
            client.perform { done.resume(returning: run.workerResult()) }
        }
        await client.shutdown()
        try result.write(to: folder, index: workerIndex)
    }

    static func table(_ r: [String: Any]) -> String {
        func number(_ value: Any?) -> Double { (value as? Double) ?? Double(value as? Int ?? 0) }
        func ms(_ key: String) -> String {
            guard let d = r[key] as? [String: Any] else { return "-" }
            return String(format: "%.2f / %.2f / %.2f ms", number(d["p50"]), number(d["p99"]), number(d["max"]))
        }
        var rows: [(String, String)] = [
            ("run", "\(r["label"]!): \(r["clients"]!) clients, \(r["rooms"]!) rooms, \(r["writers"]!) writers at \(r["rate"]!)/s each, \(r["seconds"]!) s, mix \(r["mix"]!)"),
            ("requests / revisions", "\(r["requests"]!) / \(r["revisions"]!)"
                + ((r["droppedByClient"] as? Int ?? 0) > 0 ? " (\(r["droppedByClient"]!) dropped unsent by the client: left empty by rebasing)" : "")),
            ("deliveries", String(format: "%d (%.0f /s)", r["deliveries"] as! Int, number(r["deliveriesPerSecond"]))),
            ("latency p50 / p99 / max", ms("latencyMillis")),
            ("join", String(format: "%.2f s for all; each ", number(r["joinSeconds"])) + ms("connectMillis")),
        ]
        if let answers = r["answerMillis"] as? [String: [String: Any]] {
            for kind in ["edit", "undo", "redo"] where (answers[kind]?["count"] as? Int ?? 0) > 0 {
                let a = answers[kind]!
                rows.append(("\(kind) answered p50 / p99", String(format: "%.2f / %.2f ms (%d)", number(a["p50"]),
                                                                   number(a["p99"]), a["count"] as? Int ?? 0)))
            }
        }
        if r["serverCPUSeconds"] != nil {
            let cpu = number(r["serverCPUSeconds"])
            rows.append(("server CPU", String(format: "%.3f s = %.2f µs / delivery (%.0f deliveries per CPU-second)",
                                                 cpu, number(r["serverCPUMicrosPerDelivery"]),
                                                 number(r["deliveriesPerServerCPUSecond"]))))
        }
        if let rss = r["serverRSSKiB"] as? [String: Int] {
            rows.append(("server RSS", String(format: "%d KiB before, %d joined, %d end; %.1f KiB per connection",
                                                 rss["before"]!, rss["joined"]!, rss["end"]!,
                                                 number(r["serverRSSKiBPerConnection"]))))
        }
        let problems = r["problems"] as! [String]
        rows.append(("checks", problems.isEmpty && r["converged"] as! Bool
                     ? "every client got every revision once, in order; \(r["comparedClients"]!) models equal the room's"
                     : "FAILED: \(problems.prefix(5).joined(separator: "; "))\(r["converged"] as! Bool ? "" : "; models differ")"))
        return rows.map { pad($0.0, 26) + $0.1 }.joined(separator: "\n")
    }
}

/// Who does what in a run.
struct LoadPlan {
    var target: LoadCommand.Target
    var clients: Int
    var rooms: Int
    var writers: Int
    var verifiers: Int
    var mix: (edit: Int, undo: Int, redo: Int)
    var seed: UInt64
}

/// CPU seconds (user + system) a process has used, from /proc/PID/stat.
func processCPU(_ pid: Int32) throws -> Double {
    let text = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    // Fields after the command name (which is in parentheses and may hold spaces).
    guard let close = text.lastIndex(of: ")") else { throw ValidationError("unreadable /proc/\(pid)/stat") }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // utime and stime are fields 14 and 15 of stat; after the name they are at 11 and 12 (0-based).
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
        throw ValidationError("unreadable /proc/\(pid)/stat")
    }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// The hub process, read from /proc.
struct ProcessSample {
    let pid: Int32
    func cpuSeconds() throws -> Double { try processCPU(pid) }
    func rssKiB() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    }
}

/// Percentiles of a list of milliseconds.
struct Percentiles {
    var p50 = 0.0, p99 = 0.0, max = 0.0, count = 0

    init(_ values: [Double]) {
        guard !values.isEmpty else { return }
        let sorted = values.sorted()
        func at(_ q: Double) -> Double { sorted[Swift.min(sorted.count - 1, Int(Double(sorted.count) * q))] }
        p50 = at(0.5)
        p99 = at(0.99)
        max = sorted.last!
        count = sorted.count
    }
}

struct LoadReport {
    var requests = 0
    var dropped = 0
    var revisions = 0
    var deliveries = 0
    var latency = Percentiles([])
    var connect = Percentiles([])
    /// Request to its answer at the writer (edit, undo, redo): what the hub's work adds shows here.
    var answers = [Percentiles([]), Percentiles([]), Percentiles([])]
    var problems: [String] = []
    var converged = true
    var compared = 0
}

/// The worker processes of a run spread over several (`--processes`): the same command with
/// `--worker-directory` and `--worker-index`, talking through files in a temporary directory.
final class LoadWorkers: @unchecked Sendable {
    /// What a worker's receivers saw.
    struct Result {
        var receipts: [(room: UInt32, rev: UInt32, at: UInt64)] = []
        var connectMillis: [Double] = []
        var problems: [String] = []

        func write(to folder: URL, index: Int) throws {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(receipts.count * 16)
            for receipt in receipts {
                withUnsafeBytes(of: receipt.room.littleEndian) { bytes += $0 }
                withUnsafeBytes(of: receipt.rev.littleEndian) { bytes += $0 }
                withUnsafeBytes(of: receipt.at.littleEndian) { bytes += $0 }
            }
            try Data(bytes).write(to: folder.appendingPathComponent("receipts-\(index)"))
            let summary: [String: Any] = ["connectMillis": connectMillis, "problems": problems]
            try JSONSerialization.data(withJSONObject: summary).write(to: folder.appendingPathComponent("result-\(index).json"))
        }

        static func read(from folder: URL, index: Int) throws -> Result {
            var result = Result()
            let data = try Data(contentsOf: folder.appendingPathComponent("receipts-\(index)"))
            data.withUnsafeBytes { raw in
                for offset in stride(from: 0, to: raw.count - 15, by: 16) {
                    result.receipts.append((UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self)),
                                            UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)),
                                            UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))))
                }
            }
            let summary = try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("result-\(index).json"))) as? [String: Any]
            result.connectMillis = summary?["connectMillis"] as? [Double] ?? []
            result.problems = (summary?["problems"] as? [String] ?? []).map { "worker \(index): \($0)" }
            return result
        }
    }

    let folder: URL
    let processes: [Process]

    /// Starts `count` workers: this command again, with the worker options added.
    init(count: Int) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("pk-load-\(getpid())")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var started: [Process] = []
        for index in 1...count {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            process.arguments = Array(CommandLine.arguments.dropFirst()) + [
                "--worker-directory", folder.path, "--worker-index", "\(index)"]
            try process.run()
            started.append(process)
        }
        processes = started
    }

    deinit {
        for process in processes where process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: folder)
    }

    func waitUntilReady() async throws {
        try await waitForFiles("ready", what: "the worker processes' clients joined")
    }

    /// Hands the rooms' heads to the workers and collects what their receivers saw.
    func finish(heads: [Int]) async throws -> [Result] {
        try JSONEncoder().encode(heads).write(to: folder.appendingPathComponent("heads.json"))
        try await waitForFiles("result", suffix: ".json", what: "the worker processes' results")
        return try processes.indices.map { try Result.read(from: folder, index: $0 + 1) }
    }

    private func waitForFiles(_ prefix: String, suffix: String = "", what: String) async throws {
        let deadline = Date().addingTimeInterval(120)
        while !(1...processes.count).allSatisfy({
            FileManager.default.fileExists(atPath: folder.appendingPathComponent("\(prefix)-\($0)\(suffix)").path)
        }) {
            if let failed = processes.first(where: { !$0.isRunning && $0.terminationStatus != 0 }) {
                throw ValidationError("a worker process failed (exit \(failed.terminationStatus)) before \(what)")
            }
            if Date() > deadline { throw ValidationError("timed out waiting until \(what)") }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
    }
}

/// The state of one run. Peers live on the client's service thread; the counters the driver polls
/// are behind a lock.
final class LoadRun: @unchecked Sendable {
    let plan: LoadPlan
    let roomURLs: [String]
    var peers: [LoadPeer] = []
    /// The writers (read from other threads only to hand them to the service thread).
    nonisolated(unsafe) var writers: [LoadPeer] = []
    /// Per room: when each revision's request was due (ns), by revision number; and the head.
    var dueOfRevision: [[Int: UInt64]]
    var head: [Int]
    /// Per room: the revision it was at when the first client joined (rooms may have a history).
    var startRevision: [Int?]
    private let lock = NSLock()
    private var _joined = 0
    private var _failures = 0
    private var _answered = false
    private var _atHead = false

    /// The peers this process connects: everyone with one process; else this shard's receivers, and
    /// for shard 0 (the reporting process) also every writer and verifier.
    var owned: [LoadPeer] = []

    init(plan: LoadPlan, roomURLs: [String], shard: Int, shards: Int) {
        self.plan = plan
        self.roomURLs = roomURLs
        dueOfRevision = Array(repeating: [:], count: plan.rooms)
        head = Array(repeating: 0, count: plan.rooms)
        startRevision = Array(repeating: nil, count: plan.rooms)
        var perRoom = Array(repeating: 0, count: plan.rooms)
        for index in 0..<plan.clients {
            let room = index % plan.rooms
            let role: LoadPeer.Role
            if index < plan.writers {
                role = .writer
            } else if perRoom[room] < plan.verifiers {
                role = .verifier
                perRoom[room] += 1
            } else {
                role = .receiver
            }
            peers.append(LoadPeer(index: index, room: room, role: role, run: self,
                                  seed: plan.seed &+ UInt64(index) &* 0x9E37_79B9))
            if role == .writer { writers.append(peers[index]) }
            if role == .receiver ? index % shards == shard : shard == 0 { owned.append(peers[index]) }
        }
    }

    var joined: Int { lock.withLock { _joined } }
    var failures: Int { lock.withLock { _failures } }
    var allAnswered: Bool { lock.withLock { _answered } }
    var allAtHead: Bool { lock.withLock { _atHead } }

    func markJoined() { lock.withLock { _joined += 1 } }
    func markFailed() { lock.withLock { _failures += 1 } }

    /// Service thread: a revision is known (from its author's answer or anyone's receipt).
    func saw(room: Int, rev: Int) {
        if rev > head[room] { head[room] = rev }
    }

    /// Service thread: re-checks whether every writer's requests are answered (or dropped by its
    /// client as left empty), after the writers stop.
    func checkAnswered() {
        let done = writers.allSatisfy { ($0.sync?.pendingCount ?? 0) == 0 }
        lock.withLock { _answered = done }
    }

    /// Service thread: re-checks whether every client is at its room's head (after the writers stop).
    func checkHeads() {
        let done = owned.allSatisfy { $0.lastRev == head[$0.room] }
        lock.withLock { _atHead = done }
    }

    func wait(timeout: Double, _ what: String, _ condition: (LoadRun) -> Bool) async throws {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
        var polls = 0
        while !condition(self) {
            if DispatchTime.now().uptimeNanoseconds > deadline { throw ValidationError("timed out waiting until \(what)") }
            try await Task.sleep(nanoseconds: 1_000_000)
            polls += 1
        }
    }

    /// Service thread, in a worker after the run.
    func workerResult() -> LoadWorkers.Result {
        var result = LoadWorkers.Result()
        for peer in owned {
            result.receipts += peer.receipts.map { (UInt32(peer.room), $0.rev, $0.at) }
            if let joined = peer.joinedAt { result.connectMillis.append(Double(joined - peer.connectStart) / 1e6) }
            result.problems += peer.problems.prefix(3).map { "client \(peer.index): \($0)" }
        }
        return result
    }

    /// Service thread, after the run.
    func report(truth: RoomCheck, workers: [LoadWorkers.Result]) -> LoadReport {
        var report = LoadReport()
        var latencies: [Double] = []
        var connects: [Double] = []
        for worker in workers {
            report.deliveries += worker.receipts.count
            connects += worker.connectMillis
            report.problems += worker.problems
            for receipt in worker.receipts {
                guard let sent = dueOfRevision[Int(receipt.room)][Int(receipt.rev)] else { continue }
                latencies.append(Double(Int64(bitPattern: receipt.at &- sent)) / 1e6)
            }
        }
        for peer in owned {
            report.requests += peer.requests
            report.dropped += peer.dropped
            report.deliveries += peer.receipts.count
            if let joined = peer.joinedAt { connects.append(Double(joined - peer.connectStart) / 1e6) }
            report.problems += peer.problems.prefix(3).map { "client \(peer.index): \($0)" }
            let due = dueOfRevision[peer.room]
            for receipt in peer.receipts {
                guard let sent = due[Int(receipt.rev)] else { continue }
                latencies.append(Double(Int64(bitPattern: receipt.at &- sent)) / 1e6)
            }
            if let sync = peer.sync {
                report.compared += 1
                if sync.confirmed != truth.models[peer.room] || sync.revision != truth.revisions[peer.room] {
                    report.converged = false
                    report.problems.append("client \(peer.index) (room \(peer.room)) ended at rev \(sync.revision) with a model that differs from the room's at rev \(truth.revisions[peer.room])")
                }
            }
        }
        for room in 0..<plan.rooms where plan.target == .hub && truth.revisions[room] < 0 {
            report.converged = false
            report.problems.append("room \(room): the check client could not join (limits.maxConnections?)")
        }
        for room in 0..<plan.rooms where truth.revisions[room] >= 0 && truth.revisions[room] != head[room] {
            report.problems.append("room \(room): the hub is at rev \(truth.revisions[room]) but clients saw \(head[room])")
        }
        report.revisions = zip(head, startRevision).reduce(0) { $0 + $1.0 - ($1.1 ?? $1.0) }
        report.answers = (0..<3).map { kind in Percentiles(owned.flatMap { $0.answerMillis[kind] }) }
        report.latency = Percentiles(latencies)
        report.connect = Percentiles(connects)
        return report
    }
}

/// One client of the run (service thread only).
final class LoadPeer: WebSocketClientDelegate {
    enum Role { case writer, verifier, receiver }

    let index: Int
    let room: Int
    let role: Role
    unowned let run: LoadRun
    /// Writers and verifiers keep the room with the core; receivers only check revision numbers.
    var sync: ClientSync?
    var connection: WebSocketConnection?
    /// Set just before connecting (the connect hands over to the service thread after it).
    nonisolated(unsafe) var connectStart: UInt64 = 0
    var joinedAt: UInt64?
    var lastRev = 0
    var receipts: [(rev: UInt32, at: UInt64)] = []
    var problems: [String] = []
    var requests = 0
    /// Requests the client dropped unsent (left empty by rebasing over others' revisions).
    var dropped = 0
    private var rng: BenchRandom
    private var flatOutUntil: UInt64?
    /// When each queued request was due, oldest first; a request takes one when it is first sent.
    private var dueTimes: [UInt64] = []
    private var dueOfSeq: [Int: UInt64] = [:]
    /// Per request in flight: its kind and when it left; and the answer times per kind (ms).
    private var sentOfSeq: [Int: (kind: Int, at: UInt64)] = [:]
    var answerMillis: [[Double]] = [[], [], []]
    private var lastSentSeq = 0

    init(index: Int, room: Int, role: Role, run: LoadRun, seed: UInt64) {
        self.index = index
        self.room = room
        self.role = role
        self.run = run
        self.rng = BenchRandom(seed: seed)
        if role != .receiver && run.plan.target == .hub { sync = ClientSync(user: "load-\(index)") }
    }

    func didConnect(_ connection: WebSocketConnection) {
        self.connection = connection
        if run.plan.target == .relay { return joined(rev: 0, at: DispatchTime.now().uptimeNanoseconds) }
        let hello: ClientMessage = sync?.connect(client: "peoplekeeper-bench/load")
            ?? .hello(.init(user: "load-\(index)", client: "peoplekeeper-bench/load"))
        connection.send(OutboundMessage(text: hello.json.bytes))
    }

    func didClose(_ connection: WebSocketConnection, error: String?) {
        if joinedAt == nil { run.markFailed() } else { problems.append("closed: \(error ?? "by the hub")") }
        self.connection = nil
    }

    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        let now = DispatchTime.now().uptimeNanoseconds
        if sync == nil { return receiveLight(message, at: now) }
        switch ServerMessage.decode(message) {
        case .failure(let error):
            problems.append("undecodable frame: \(error)")
        case .success(let decoded):
            let (send, _) = sync!.receive(decoded)
            self.send(send)
            track(decoded, at: now)
            reconcileDropped()
        }
    }

    /// Receivers: the type and revision by a scan (no parse), so a thousand fit in one process.
    private func receiveLight(_ message: [UInt8], at now: UInt64) {
        guard let type = Scan.string(of: "type", in: message) else { return }
        switch type {
        case "welcome":
            joined(rev: Scan.int(of: "rev", in: message) ?? 0, at: now)
        case "ops":
            guard let rev = Scan.int(of: "rev", in: message) else { return problems.append("ops without rev") }
            received(rev: rev, at: now, delivery: true)
        case "error":
            problems.append("error frame: \(String(decoding: message.prefix(200), as: UTF8.self))")
        default:
            break
        }
    }

    /// Writers and verifiers: order checks, and the due times of our own revisions.
    private func track(_ message: ServerMessage, at now: UInt64) {
        switch message {
        case .welcome(let w):
            joined(rev: w.rev, at: now)
        case .ops(let o):
            received(rev: o.rev, at: now, delivery: true)
        case .ack(let a):
            // A batch that changed nothing is acked at the current revision: no new revision.
            answered(seq: a.seq, rev: a.ops.isEmpty ? nil : a.rev, at: now)
            if a.ops.isEmpty, a.rev > lastRev { problems.append("a no-op ack at rev \(a.rev) ahead of \(lastRev)") }
        case .undone(let u), .redone(let u):
            answered(seq: u.seq, rev: u.ops.isEmpty ? nil : u.rev, at: now)
        case .error(let e):
            if let seq = e.seq { answered(seq: seq, rev: nil, at: now) }
            problems.append("error \(e.code.rawValue): \(e.message)")
        default:
            break
        }
    }

    private func joined(rev: Int, at now: UInt64) {
        guard joinedAt == nil else { return }
        joinedAt = now
        lastRev = rev
        run.startRevision[room] = min(run.startRevision[room] ?? rev, rev)
        run.saw(room: room, rev: rev)
        run.markJoined()
    }

    private func received(rev: Int, at now: UInt64, delivery: Bool) {
        if rev != lastRev + 1 { problems.append("got rev \(rev) after \(lastRev)") }
        lastRev = max(lastRev, rev)
        run.saw(room: room, rev: rev)
        if delivery { receipts.append((UInt32(truncatingIfNeeded: rev), now)) }
    }

    private func answered(seq: Int, rev: Int?, at now: UInt64) {
        if let sent = sentOfSeq.removeValue(forKey: seq) {
            answerMillis[sent.kind].append(Double(now - sent.at) / 1e6)
        }
        if let due = dueOfSeq.removeValue(forKey: seq), let rev { run.dueOfRevision[room][rev] = due }
        if let rev { received(rev: rev, at: now, delivery: false) }
        if let until = flatOutUntil {
            if now < until { actFlatOut(now) } else { stopActing() }
        }
    }

    /// What this writer still waits for (for the report of a run that timed out).
    var waiting: String {
        guard !dueOfSeq.isEmpty || (sync?.pendingCount ?? 0) > 0 else { return "" }
        return "client \(index) (room \(room)): seqs \(dueOfSeq.keys.sorted()) unanswered, \(sync?.pendingCount ?? 0) pending, "
            + "last sent seq \(lastSentSeq), at rev \(lastRev), connection \(connection == nil ? "closed" : "open"), "
            + "problems \(problems.prefix(3))"
    }

    // MARK: Writing

    func goFlatOut(until end: UInt64) {
        flatOutUntil = end
        actFlatOut(DispatchTime.now().uptimeNanoseconds)
    }

    func stopActing() {
        flatOutUntil = nil
    }

    /// The next request as soon as the last is answered (a draw that changes nothing is drawn again).
    private func actFlatOut(_ now: UInt64) {
        for _ in 0..<8 where sync?.pendingCount == 0 { act(due: now) }
    }

    /// Makes the next request of the mix (paced: `due` is its slot in the schedule).
    func act(due: UInt64) {
        if run.plan.target == .relay { return relay(due: due) }
        guard sync != nil, connection != nil else { return }
        let before = sync!.pendingCount
        let messages: [ClientMessage]
        let roll = rng.int(100)
        if roll < run.plan.mix.edit {
            // An edit that would change nothing (the value is already there) is drawn again.
            var made: [ClientMessage] = []
            for _ in 0..<8 where sync!.pendingCount == before {
                guard let edit = makeEdit(on: sync!.view) else { return }
                made = (try? sync!.edit([edit.diff], label: edit.label)) ?? []
            }
            messages = made
        } else if roll < run.plan.mix.edit + run.plan.mix.undo {
            messages = sync!.undo()
        } else {
            messages = sync!.redo()
        }
        if sync!.pendingCount > before {
            dueTimes.append(due)
            requests += 1
        }
        send(messages)
    }

    /// Against the relay: the next revision number of the room, in a frame of the shape and size of
    /// the hub's `ops` frame for a hair colour `set`.
    private func relay(due: UInt64) {
        guard let connection else { return }
        let rev = lastRev + 1
        let color = HairColor.allCases[rng.int(HairColor.allCases.count)].rawValue
        let frame = #"{"type":"ops","rev":\#(rev),"author":"load-\#(index)","kind":"edit","ops":[{"op":"set","tag":1,"field":"hairColor","value":"\#(color)"}],"label":"Change Hair Color"}"#
        lastRev = rev
        requests += 1
        run.saw(room: room, rev: rev)
        run.dueOfRevision[room][rev] = due
        connection.send(OutboundMessage(frame))
    }

    private func send(_ messages: [ClientMessage]) {
        let now = DispatchTime.now().uptimeNanoseconds
        for message in messages {
            switch message {
            case .submit(let s): firstSend(seq: s.seq); sentOfSeq[s.seq] = (0, now)
            case .undo(let u): firstSend(seq: u.seq); sentOfSeq[u.seq] = (1, now)
            case .redo(let u): firstSend(seq: u.seq); sentOfSeq[u.seq] = (2, now)
            default: break
            }
            connection?.send(OutboundMessage(text: message.json.bytes))
        }
    }

    /// ClientSync drops a queued batch that rebasing left empty (it could change nothing): forget its
    /// due time. Which one went is not known; the newest are forgotten, so the rest keep their own or
    /// an earlier due time (latency is over-, never under-stated).
    private func reconcileDropped() {
        guard let pending = sync?.pendingCount else { return }
        let unsent = pending - dueOfSeq.count
        if unsent < dueTimes.count {
            dropped += dueTimes.count - max(unsent, 0)
            dueTimes.removeLast(dueTimes.count - max(unsent, 0))
        }
    }

    private func firstSend(seq: Int) {
        guard seq > lastSentSeq else { return }
        lastSentSeq = seq
        let due = dueTimes.isEmpty ? DispatchTime.now().uptimeNanoseconds : dueTimes.removeFirst()
        // Flat out there is no schedule: the clock starts when the request leaves.
        dueOfSeq[seq] = flatOutUntil == nil ? due : DispatchTime.now().uptimeNanoseconds
    }

    private func makeEdit(on view: PeopleModel) -> (diff: Diff, label: String)? {
        let tags = view.tags
        guard !tags.isEmpty else { return nil }
        let tag = tags[rng.int(tags.count)]
        switch rng.int(8) {
        case 0: return (.set(tag, .hairColor(HairColor.allCases[rng.int(HairColor.allCases.count)])), "Change Hair Color")
        case 1: return (.set(tag, .eyeColor(EyeColor.allCases[rng.int(EyeColor.allCases.count)])), "Change Eye Color")
        case 2: return (.set(tag, .hairLength(HairLength.allCases[rng.int(HairLength.allCases.count)])), "Change Hair Length")
        case 3: return (.set(tag, .glasses(rng.int(2) == 0)), "Change Glasses")
        case 4: return (.facialHair(tag, FacialHairStyle.allCases[rng.int(FacialHairStyle.allCases.count)], present: rng.int(2) == 0),
                        "Change Facial Hair")
        case 5: return (.preference(tag, Topic.allCases[rng.int(Topic.allCases.count)], Opinion.allCases[rng.int(Opinion.allCases.count)]),
                        "Change Preference")
        case 6: return (.set(tag, .name("Person \(rng.int(1000))")), "Rename")
        default: return (.move(tag, to: rng.int(tags.count + 1)), "Move")
        }
    }
}

/// The room as a fresh client sees it after the run.
final class RoomCheck: @unchecked Sendable {
    var models: [PeopleModel]
    var revisions: [Int]
    private let lock = NSLock()
    private var _done = 0

    init(count: Int) {
        models = Array(repeating: PeopleModel(), count: count)
        revisions = Array(repeating: -1, count: count)
    }

    var done: Int { lock.withLock { _done } }
    func finish() { lock.withLock { _done += 1 } }
}

final class CheckPeer: WebSocketClientDelegate {
    let room: Int
    let check: RoomCheck

    init(room: Int, check: RoomCheck) {
        self.room = room
        self.check = check
    }

    func didConnect(_ connection: WebSocketConnection) {
        let hello = ClientMessage.hello(.init(user: "load-check", client: "peoplekeeper-bench/load"))
        connection.send(OutboundMessage(text: hello.json.bytes))
    }

    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        guard case .success(.welcome(let w)) = ServerMessage.decode(message) else { return }
        check.models[room] = PeopleModel(people: w.people ?? [])
        check.revisions[room] = w.rev
        check.finish()
        connection.close()
    }

    func didClose(_ connection: WebSocketConnection, error: String?) {
        // Closed before its welcome (refused, or the hub is full): the room's state is unknown.
        if check.revisions[room] == -1 {
            check.revisions[room] = -2
            check.finish()
        }
    }
}

/// Values read from a frame without parsing it (receivers must not be the bottleneck): the value after
/// the first `"key":`. A key inside a string cannot match, since its quotes would be escaped.
enum Scan {
    static func int(of key: String, in bytes: [UInt8]) -> Int? {
        guard let start = find(key, in: bytes) else { return nil }
        var value = 0
        var index = start
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            value = value * 10 + Int(bytes[index] - 0x30)
            index += 1
        }
        return index > start ? value : nil
    }

    static func string(of key: String, in bytes: [UInt8]) -> String? {
        guard let start = find(key, in: bytes), start < bytes.count, bytes[start] == 0x22,
              let end = bytes[(start + 1)...].firstIndex(of: 0x22) else { return nil }
        return String(decoding: bytes[(start + 1)..<end], as: UTF8.self)
    }

    private static func find(_ key: String, in bytes: [UInt8]) -> Int? {
        let pattern = Array("\"\(key)\":".utf8)
        guard bytes.count >= pattern.count else { return nil }
        outer: for start in 0...(bytes.count - pattern.count) {
            for offset in 0..<pattern.count where bytes[start + offset] != pattern[offset] { continue outer }
            return start + pattern.count
        }
        return nil
    }
}
