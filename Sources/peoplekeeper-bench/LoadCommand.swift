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
}
