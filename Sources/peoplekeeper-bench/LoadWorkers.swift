import ArgumentParser
import Foundation

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
            try JSONSerialization.data(withJSONObject: summary).write(to: folder.appendingPathComponent("result-\(index).json"),
                                                                       options: .atomic)
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
        // Atomically: the workers read it as soon as it exists (a plain write could be seen half written).
        try JSONEncoder().encode(heads).write(to: folder.appendingPathComponent("heads.json"), options: .atomic)
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
