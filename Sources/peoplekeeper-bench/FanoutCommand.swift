import ArgumentParser
import Foundation
import WebSocketTransport

/// `peoplekeeper-bench fanout`: one writer and N−1 receivers in one room, paced; measures server CPU
/// per delivered message and submit-to-delivery latency.
///
/// Against the hub (`--mode hub`) the writer sends `submit` batches (one `set`, waiting for each ack,
/// as the protocol requires) and receivers count `ops` frames; against the bare relay
/// (`--mode relay`) it sends a frame of the same shape and size and receivers count those. Server CPU
/// comes from /proc/PID/stat of `--server-pid` before and after. Every receiver must get every
/// message exactly once and in order, or the run is reported as failed.
struct FanoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fanout",
        abstract: "Fan-out load: server CPU per delivery and latency, against the hub or the bare relay.")

    enum Mode: String, ExpressibleByArgument { case hub, relay }

    @Option(help: "Room URL (ws://HOST:PORT/v1/rooms/ROOM).")
    var url: String

    @Option(help: "hub or relay.")
    var mode: Mode = .hub

    @Option(help: "Clients in the room (one writer, the rest receive).")
    var clients = 100

    @Option(help: "Messages per second the writer offers.")
    var rate = 200

    @Option(help: "Seconds of measured load.")
    var seconds = 10.0

    @Option(help: "PID of the server process, for its CPU time.")
    var serverPid: Int32

    @Option(help: "Write the result as JSON to this file.")
    var json: String?

    @Option(help: "A name for the run in the output.")
    var label: String?

    func run() async throws {
        let client = try WebSocketClient(limits: WebSocketLimits(sendQueueMessages: 1 << 20, sendQueueBytes: 1 << 30))
        let run = FanoutRun(mode: mode, clients: clients)
        for index in 0..<clients {
            try client.connect(url: url, delegate: FanoutPeer(index: index, run: run))
        }
        let setupStart = Date()
        try await run.waitUntil(timeout: 30, "all \(clients) clients joined") { $0.ready == clients }
        let setupSeconds = Date().timeIntervalSince(setupStart)

        let count = Int(Double(rate) * seconds)
        let cpuBefore = try processCPU(serverPid)
        let ownBefore = try processCPU(getpid())
        let start = DispatchTime.now().uptimeNanoseconds
        for i in 0..<count {
            let due = start + UInt64(Double(i) * 1e9 / Double(rate))
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { try await Task.sleep(nanoseconds: due - now) }
            if mode == .hub {
                // One submit in flight: wait for the previous ack.
                try await run.waitUntil(timeout: 10, "ack \(i)") { $0.acked == i }
            }
            client.perform { run.send(number: i + 1) }
        }
        try await run.waitUntil(timeout: 30, "every receiver got \(count) messages") {
            $0.receivedTotal == count * (clients - 1)
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpuAfter = try processCPU(serverPid)
        let ownAfter = try processCPU(getpid())
        let result = await run.result(count: count)
        await client.shutdown()

        let deliveries = count * (clients - 1)
        let serverCPU = cpuAfter - cpuBefore
        let report: [String: Any] = [
            "label": label ?? mode.rawValue, "mode": mode.rawValue, "clients": clients, "rate": rate,
            "messages": count, "deliveries": deliveries, "seconds": elapsed,
            "deliveriesPerSecond": Double(deliveries) / elapsed,
            "serverCPUSeconds": serverCPU, "serverCPUMicrosPerDelivery": serverCPU * 1e6 / Double(deliveries),
            "clientCPUSeconds": ownAfter - ownBefore,
            "latencyMillis": ["p50": result.p50, "p99": result.p99, "max": result.max],
            "setupSeconds": setupSeconds, "outOfOrderOrMissing": result.problems,
        ]
        let line = String(format: "%-12@ clients %4d  rate %5d/s  deliveries %8d  server CPU %6.3f s = %6.2f µs/delivery  latency p50 %6.3f p99 %6.3f max %7.3f ms  problems %d",
                          (label ?? mode.rawValue) as NSString, clients, rate, deliveries, serverCPU,
                          serverCPU * 1e6 / Double(deliveries), result.p50, result.p99, result.max, result.problems)
        print(line)
        if let json {
            let data = try JSONSerialization.data(withJSONObject: report, options: [.prettyPrinted, .sortedKeys])
            try data.write(to: URL(fileURLWithPath: json))
        }
        if result.problems > 0 { throw ExitCode(1) }
    }
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

/// The shared state of one fan-out run (service thread, except where a lock says otherwise).
final class FanoutRun: @unchecked Sendable {
    let mode: FanoutCommand.Mode
    let clients: Int
    private let lock = NSLock()
    private var _ready = 0
    private var _acked = 0
    private var _receivedTotal = 0
    var writer: WebSocketConnection?
    var lastRev = 0
    var sentAt: [Int: UInt64] = [:]           // message number → send time
    var revOfSeq: [Int: Int] = [:]            // hub: seq → rev
    var receipts: [[(Int, UInt64)]]           // per receiver: (rev or number, time)

    init(mode: FanoutCommand.Mode, clients: Int) {
        self.mode = mode
        self.clients = clients
        receipts = Array(repeating: [], count: clients)
    }

    var ready: Int { lock.withLock { _ready } }
    var acked: Int { lock.withLock { _acked } }
    var receivedTotal: Int { lock.withLock { _receivedTotal } }

    func markReady() { lock.withLock { _ready += 1 } }
    func markAcked() { lock.withLock { _acked += 1 } }
    func markReceived() { lock.withLock { _receivedTotal += 1 } }

    func waitUntil(timeout: Double, _ what: String, _ condition: (FanoutRun) -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition(self) {
            if Date() > deadline { throw ValidationError("timed out waiting until \(what)") }
            try await Task.sleep(nanoseconds: 200_000)
        }
    }

    /// Sends message `number` from the writer (service thread).
    func send(number: Int) {
        let color = number % 2 == 0 ? "red" : "black"
        let text: String
        switch mode {
        case .hub:
            text = #"{"type":"submit","seq":\#(number),"base":\#(lastRev),"ops":[{"op":"set","tag":1,"field":"hairColor","value":"\#(color)"}],"label":"Change Hair Color"}"#
        case .relay:
            // The shape and size of the hub's ops frame for the same edit.
            text = #"{"type":"ops","rev":\#(number),"author":"bench-0","kind":"edit","ops":[{"op":"set","tag":1,"field":"hairColor","value":"\#(color)"}],"label":"Change Hair Color"}"#
        }
        sentAt[number] = DispatchTime.now().uptimeNanoseconds
        writer?.send(OutboundMessage(text))
    }

    struct Result { var p50: Double; var p99: Double; var max: Double; var problems: Int }

    /// Latencies and order checks, computed on the service thread after the run.
    func result(count: Int) async -> Result {
        var latencies: [Double] = []
        var problems = 0
        let numberOfRev: [Int: Int] = mode == .hub
            ? Dictionary(uniqueKeysWithValues: revOfSeq.map { ($0.value, $0.key) })
            : Dictionary(uniqueKeysWithValues: (1...max(count, 1)).map { ($0, $0) })
        for (index, list) in receipts.enumerated() where index != 0 {
            let revs = list.map(\.0)
            if revs != revs.sorted() || Set(revs).count != revs.count || revs.count != count { problems += 1 }
            for (rev, time) in list {
                guard let number = numberOfRev[rev], let sent = sentAt[number] else { problems += 1; continue }
                latencies.append(Double(time &- sent) / 1e6)
            }
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        return Result(p50: percentile(0.5), p99: percentile(0.99), max: latencies.last ?? 0, problems: problems)
    }
}

/// One client of the run.
final class FanoutPeer: WebSocketClientDelegate {
    let index: Int
    let run: FanoutRun

    init(index: Int, run: FanoutRun) {
        self.index = index
        self.run = run
    }

    func didConnect(_ connection: WebSocketConnection) {
        if index == 0 { run.writer = connection }
        switch run.mode {
        case .hub:
            connection.send(OutboundMessage(#"{"type":"hello","protocol":1,"user":"bench-\#(index)","client":"bench/1"}"#))
        case .relay:
            run.markReady()
        }
    }

    func didReceive(_ connection: WebSocketConnection, message: [UInt8], binary: Bool) {
        let now = DispatchTime.now().uptimeNanoseconds
        guard let type = Self.stringValue(of: "type", in: message) else { return }
        switch type {
        case "welcome":
            run.markReady()
        case "ack":
            if let seq = Self.intValue(of: "seq", in: message), let rev = Self.intValue(of: "rev", in: message) {
                run.revOfSeq[seq] = rev
                run.lastRev = rev
                run.markAcked()
            }
        case "ops":
            guard index != 0, let rev = Self.intValue(of: "rev", in: message) else { return }
            run.receipts[index].append((rev, now))
            run.markReceived()
        default:
            break
        }
    }

    func didClose(_ connection: WebSocketConnection, error: String?) {}

    /// The integer after `"key":` (a light scan, not a parse: the receivers must not be the bottleneck).
    static func intValue(of key: String, in bytes: [UInt8]) -> Int? {
        guard let start = find(key, in: bytes) else { return nil }
        var value = 0
        var index = start
        var digits = 0
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            value = value * 10 + Int(bytes[index] - 0x30)
            index += 1
            digits += 1
        }
        return digits > 0 ? value : nil
    }

    static func stringValue(of key: String, in bytes: [UInt8]) -> String? {
        guard let start = find(key, in: bytes), start < bytes.count, bytes[start] == 0x22 else { return nil }
        guard let end = bytes[(start + 1)...].firstIndex(of: 0x22) else { return nil }
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
