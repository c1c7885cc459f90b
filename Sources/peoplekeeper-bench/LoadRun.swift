import ArgumentParser
import Foundation

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
