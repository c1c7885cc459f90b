import Foundation
import PeopleTestSupport
import Testing

/// A real `peoplekeeper-hub` process on port 0 with a temporary config, for integration tests.
///
/// Starts the binary built by `swift build` (or the one in `PEOPLEKEEPER_HUB_BIN`), reads the port from
/// its first stdout line, and stops it with SIGTERM (`stop()` returns the exit status). Starting and
/// stopping wait for the process, so they are async and wait off the cooperative pool (`blocking`).
final class HubProcess: @unchecked Sendable {
    let process = Process()
    private(set) var port = 0
    let directory: URL
    private let keepsDirectory: Bool
    private var config = ""
    private var seed: String?
    private var storage = ""
    private let stderrPipe = Pipe()
    private var sink = StderrSink()

    static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }  // Tests/PeopleHubTests/HubProcess.swift → root
        return url
    }()

    static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["PEOPLEKEEPER_HUB_BIN"] { return URL(fileURLWithPath: path) }
        return packageRoot.appendingPathComponent(".build/debug/peoplekeeper-hub")
    }

    /// Starts a hub and waits until it listens. `config` is YAML appended after `listen`/`storage`/`logging` defaults for tests;
    /// `storage` is the body of the `storage` section. A hub given the `directory` of an earlier one
    /// (`restarted()`) keeps its files (the SQLite store) and leaves them for the caller.
    static func start(config: String = "", seed: String? = nil, storage: String = "kind: memory",
                      directory: URL? = nil) async throws -> HubProcess {
        try await blocking { try HubProcess(config: config, seed: seed, storage: storage, directory: directory) }
    }

    private init(config: String, seed: String?, storage: String, directory: URL?) throws {
        self.keepsDirectory = directory != nil
        self.directory = directory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("pk-hub-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        // `$DIR` in the storage section is the hub's directory (a SQLite file there goes away with it).
        let storageLines = storage.replacingOccurrences(of: "$DIR", with: self.directory.path)
            .split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
        var yaml = """
            listen:
              host: 127.0.0.1
              port: 0
            logging:
              level: warning
            storage:
            \(storageLines)

            """
        if let seed {
            let seedFile = self.directory.appendingPathComponent("seed.json")
            try seed.write(to: seedFile, atomically: true, encoding: .utf8)
            yaml += "rooms:\n  seed: \(seedFile.path)\n"
        }
        yaml += config
        let configFile = self.directory.appendingPathComponent("hub.yaml")
        try yaml.write(to: configFile, atomically: true, encoding: .utf8)

        process.executableURL = Self.binary
        process.arguments = ["--config", configFile.path, "--web-root", self.directory.path]
        process.currentDirectoryURL = Self.packageRoot
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = stderrPipe
        let sink = StderrSink()
        self.sink = sink
        stderrPipe.fileHandleForReading.readabilityHandler = { handle in sink.append(handle.availableData) }
        (self.config, self.seed, self.storage) = (config, seed, storage)
        try process.run()
        // The first stdout line names the port.
        var line = Data()
        let handle = stdout.fileHandleForReading
        while !line.contains(0x0A) {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression),
              let port = Int(text[range].split(separator: ":").last!) else {
            process.terminate()
            process.waitUntilExit()
            Thread.sleep(forTimeInterval: 0.1)
            // A hub that never started leaves nothing behind (a test may expect this failure).
            if !keepsDirectory { try? FileManager.default.removeItem(at: self.directory) }
            throw HubTestError("the hub did not print its port; stdout: \(text); stderr: \(stderrText())")
        }
        self.port = port
    }

    func url(room: String) -> String { "ws://127.0.0.1:\(port)/v1/rooms/\(room)" }

    /// SIGTERM, then waits; returns the exit status.
    @discardableResult
    func stop() async -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        await waitForExit()
        if !keepsDirectory { try? FileManager.default.removeItem(at: directory) }
        return process.terminationStatus
    }

    /// SIGKILL (a crash: no drain, nothing flushed but what was committed), then waits.
    func crash() async {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        await waitForExit()
    }

    /// SIGKILL without waiting (for `defer`).
    func killNow() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    private func waitForExit() async {
        let process = Unchecked(process)
        _ = try? await blocking { process.value.waitUntilExit() }
    }

    /// A new hub process with the same config on the same directory (and so the same SQLite file).
    func restarted() async throws -> HubProcess {
        try await Self.start(config: config, seed: seed, storage: storage, directory: directory)
    }

    /// What the hub wrote to stderr so far.
    func stderrText() -> String { sink.text }

    /// Whether the hub writes `text` to stderr within `timeout` seconds: its lines reach this process
    /// through a pipe, maybe after a client has seen what followed them (a close, say).
    func stderrWillContain(_ text: String, timeout: Double = 10) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !sink.text.contains(text) {
            guard Date() < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

struct HubTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Collects a child's stderr as it arrives (so its pipe never fills).
final class StderrSink: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    func append(_ chunk: Data) {
        lock.lock()
        data.append(chunk)
        lock.unlock()
    }

    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: data, as: UTF8.self)
    }
}
