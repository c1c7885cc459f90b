import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a `PostgresServer` could not be started or restarted; the message carries the tool output or the
/// tail of the server log.
public struct PostgresServerError: Error, CustomStringConvertible, LocalizedError {
    public let message: String
    public var description: String { message }
    public var errorDescription: String? { message }
    init(_ message: String) { self.message = message }
}

/// A real, throwaway PostgreSQL server for tests, on a free port of 127.0.0.1 with trust authentication.
///
/// `start()` runs `initdb` into a fresh temporary directory (`pk-pg-XXXXXX`, which also holds the Unix
/// socket and `server.log`), launches `postgres` as a child process, waits until it accepts connections
/// and creates the database, owned by the `peoplekeeper` role. PostgreSQL refuses to run as root, so when
/// the tests do, initdb and the server run as the `postgres` OS user (via `runuser`, else `su`).
/// `stop()` (also called from `deinit`) shuts it down and deletes the directory. Calls are serialized.
public final class PostgresServer: @unchecked Sendable {
    public let host = "127.0.0.1"
    public let port: Int
    public let user = "peoplekeeper"
    public let database: String
    /// The data directory, deleted by `stop()`.
    public let dataDirectory: String
    public var url: String { "postgres://\(user)@\(host):\(port)/\(database)" }

    private let binDirectory: String
    private let lock = NSLock()
    private var process: Process?  // The postmaster, or the runuser/su wrapping it.
    private var stopped = false

    private init(binDirectory: String, dataDirectory: String, port: Int, database: String) {
        (self.binDirectory, self.dataDirectory, self.port, self.database) = (binDirectory, dataDirectory, port, database)
    }

    deinit { stop() }

    /// Creates, starts and waits for a new server (1–2 s, mostly initdb); throws if PostgreSQL is missing.
    public static func start(database: String = "peoplekeeper") throws -> PostgresServer {
        let binDirectory = try findBinDirectory()
        var template = Array((NSTemporaryDirectory() as NSString).appendingPathComponent("pk-pg-XXXXXX").utf8CString)
        guard let created = mkdtemp(&template) else { throw PostgresServerError("mkdtemp failed: errno \(errno)") }
        let server = PostgresServer(binDirectory: binDirectory, dataDirectory: String(cString: created),
                                    port: try freePort(), database: database)
        do {
            if getuid() == 0 {
                guard let pw = getpwnam("postgres") else {
                    throw PostgresServerError("running as root, but there is no `postgres` OS user to run the server")
                }
                guard chown(server.dataDirectory, pw.pointee.pw_uid, pw.pointee.pw_gid) == 0 else {
                    throw PostgresServerError("chown \(server.dataDirectory) failed: errno \(errno)")
                }
            }
            try server.tool("initdb", ["-D", server.dataDirectory, "-U", server.user, "--auth=trust", "-E", "UTF8",
                                       "--no-locale", "--no-sync"], asServerUser: true)
            try server.lock.withLock { try server.launch() }
            if database != "postgres" {
                try server.tool("createdb", ["-h", server.host, "-p", "\(server.port)", "-U", server.user, database])
            }
            return server
        } catch {
            server.stop()
            throw error
        }
    }

    /// Fast shutdown (SIGINT, SIGKILL after 10 s), then deletes the data directory. Idempotent.
    public func stop() {
        lock.withLock {
            guard !stopped else { return }
            stopped = true
            shutDown()
            try? FileManager.default.removeItem(atPath: dataDirectory)
        }
    }

    /// SIGKILLs the postmaster and all its children at once, like a machine crash; the data directory stays
    /// for `restart()`.
    public func kill() {
        lock.withLock {
            guard let process, process.isRunning else { return }
            let postmaster = postmasterPID(process)
            let children = childPIDs(of: postmaster)
            for pid in [postmaster] + children { sendSignal(pid, SIGKILL) }
            waitForExit(process, seconds: 10)
            let deadline = Date() + 10
            while children.contains(where: isAlive), Date() < deadline { usleep(20_000) }
            self.process = nil
        }
    }

    /// Starts the server again on the same port and data directory (after a fast shutdown if it is running)
    /// and waits until it accepts connections; after a `kill()` this runs crash recovery.
    public func restart() throws {
        try lock.withLock {
            guard !stopped else { throw PostgresServerError("restart() after stop()") }
            shutDown()
            try launch()
        }
    }

    // MARK: - Under the lock

    private func launch() throws {
        let logPath = dataDirectory + "/server.log"
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        guard let log = FileHandle(forWritingAtPath: logPath) else { throw PostgresServerError("cannot open \(logPath)") }
        defer { try? log.close() }
        log.seekToEndOfFile()
        let process = Self.makeProcess(binDirectory + "/postgres", [
            "-D", dataDirectory, "-p", "\(port)", "-k", dataDirectory, "-c", "listen_addresses=\(host)",
            "-c", "fsync=on", "-c", "max_connections=100",
        ], asServerUser: true)
        (process.standardInput, process.standardOutput, process.standardError) = (FileHandle.nullDevice, log, log)
        try process.run()
        self.process = process
        let deadline = Date() + 30
        while (try? Self.run(binDirectory + "/pg_isready", ["-q", "-h", host, "-p", "\(port)", "-U", user, "-d", "postgres"]))?.status != 0 {
            guard process.isRunning, Date() < deadline else {
                let why = process.isRunning ? "did not accept connections within 30 s" : "exited while starting"
                shutDown()
                throw PostgresServerError("postgres \(why).\n--- server.log (tail) ---\n\(logTail())")
            }
            usleep(100_000)
        }
    }

    private func shutDown() {
        guard let process else { return }
        self.process = nil
        guard process.isRunning else { return }
        let postmaster = postmasterPID(process)
        sendSignal(postmaster, SIGINT)
        if !waitForExit(process, seconds: 10) {
            for pid in [postmaster] + childPIDs(of: postmaster) { sendSignal(pid, SIGKILL) }
            sendSignal(process.processIdentifier, SIGKILL)
            waitForExit(process, seconds: 5)
        }
    }

    /// The postmaster's PID from `postmaster.pid` (under runuser/su the child process is only its parent).
    private func postmasterPID(_ process: Process) -> pid_t {
        let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8)
        return text?.split(separator: "\n").first.flatMap { pid_t($0) } ?? process.processIdentifier
    }

    private func logTail() -> String {
        guard let data = FileManager.default.contents(atPath: dataDirectory + "/server.log") else { return "(no log)" }
        return String(decoding: data.suffix(4000), as: UTF8.self)
    }

    /// Runs `sql` in the database with `psql` (as the role the stores use); returns its unaligned,
    /// tuples-only output.
    @discardableResult
    public func psql(_ sql: String) throws -> String {
        let result = try Self.run(binDirectory + "/psql", psqlArguments + ["-c", sql])
        guard result.status == 0 else { throw PostgresServerError("psql failed (exit \(result.status)):\n\(result.output)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A `psql` session that stays open between statements (a transaction a test holds open while a
    /// store works beside it). Close it with `close()`.
    public func session() throws -> PsqlSession {
        try PsqlSession(path: binDirectory + "/psql", arguments: psqlArguments)
    }

    /// psql in the database as the stores' role: no startup file, quiet, unaligned, tuples only, and
    /// stopped at the first error.
    private var psqlArguments: [String] {
        ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", host, "-p", String(port), "-U", user, "-d", database]
    }

    // MARK: - Processes

    private func tool(_ name: String, _ arguments: [String], asServerUser: Bool = false) throws {
        let result = try Self.run(binDirectory + "/" + name, arguments, asServerUser: asServerUser)
        guard result.status == 0 else { throw PostgresServerError("\(name) failed (exit \(result.status)):\n\(result.output)") }
    }

    /// Runs a program to completion, with stdout and stderr captured together.
    private static func run(_ path: String, _ arguments: [String], asServerUser: Bool = false) throws -> (status: Int32, output: String) {
        let process = makeProcess(path, arguments, asServerUser: asServerUser)
        let pipe = Pipe()
        (process.standardInput, process.standardOutput, process.standardError) = (FileHandle.nullDevice, pipe, pipe)
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// A process for `path`, run as the `postgres` OS user if asked to and we are root.
    private static func makeProcess(_ path: String, _ arguments: [String], asServerUser: Bool) -> Process {
        var (path, arguments) = (path, arguments)
        if asServerUser && getuid() == 0 {
            if let runuser = ["/usr/sbin/runuser", "/sbin/runuser"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
                (path, arguments) = (runuser, ["-u", "postgres", "--", path] + arguments)
            } else {
                let quoted = ([path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
                (path, arguments) = ("/bin/su", ["postgres", "-s", "/bin/sh", "-c", "exec " + quoted.joined(separator: " ")])
            }
        }
        let process = Process()
        (process.executableURL, process.arguments) = (URL(fileURLWithPath: path), arguments)
        return process
    }

    private static func findBinDirectory() throws -> String {
        var candidates = ["/usr/lib/postgresql/15/bin"]
        if let result = try? run("/usr/bin/env", ["pg_config", "--bindir"]), result.status == 0 {
            candidates.append(result.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        candidates += versions.sorted { $0.compare($1, options: .numeric) == .orderedDescending }
            .map { "/usr/lib/postgresql/\($0)/bin" }
        if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }) { return found }
        throw PostgresServerError("PostgreSQL 15 is missing (no initdb in /usr/lib/postgresql/15/bin, `pg_config --bindir` "
            + "or /usr/lib/postgresql/*/bin). Install it with `apt-get install postgresql-15`.")
    }

    /// A port that was free a moment ago: bind 127.0.0.1:0, read the port the kernel chose, close.
    private static func freePort() throws -> Int {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw PostgresServerError("socket() failed: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard ok else { throw PostgresServerError("bind/getsockname failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

private func sendSignal(_ pid: pid_t, _ signal: Int32) { _ = kill(pid, signal) }

@discardableResult
private func waitForExit(_ process: Process, seconds: Double) -> Bool {
    let deadline = Date() + seconds
    while process.isRunning, Date() < deadline { usleep(20_000) }
    return !process.isRunning
}

/// Direct children of `pid`, from /proc (empty where there is none).
private func childPIDs(of pid: pid_t) -> [pid_t] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    return entries.compactMap { pid_t($0) }.filter { procStat($0)?.parent == pid }
}

/// Whether `pid` exists and is not a zombie.
private func isAlive(_ pid: pid_t) -> Bool { procStat(pid).map { $0.state != "Z" && $0.state != "X" } ?? false }

private func procStat(_ pid: pid_t) -> (state: Substring, parent: pid_t)? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let end = text.lastIndex(of: ")") else { return nil }
    let fields = text[text.index(after: end)...].split(separator: " ")
    guard fields.count > 1, let parent = pid_t(fields[1]) else { return nil }
    return (fields[0], parent)
}

/// An interactive `psql` (`PostgresServer.session()`): statements go in on its standard input, one
/// call at a time, and each call waits until psql has run them.
public final class PsqlSession: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe(), output = Pipe()
    private var buffered = ""
    private var calls = 0
    /// The session's backend process id (`pg_blocking_pids` names it when a store waits on it).
    public private(set) var pid = 0

    init(path: String, arguments: [String]) throws {
        (process.executableURL, process.arguments) = (URL(fileURLWithPath: path), arguments)
        (process.standardInput, process.standardOutput, process.standardError) = (input, output, output)
        try process.run()
        guard let pid = Int(try run("SELECT pg_backend_pid()").last ?? "") else {
            close()
            throw PostgresServerError("psql did not say its backend pid")
        }
        self.pid = pid
    }

    deinit { close() }

    /// Runs `sql` (one or more statements) and returns the lines they printed; throws with psql's
    /// output if psql ended (a failed statement ends it: `ON_ERROR_STOP`).
    @discardableResult
    public func run(_ sql: String) throws -> [String] {
        calls += 1
        let marker = "psql-session-done-\(calls)"
        input.fileHandleForWriting.write(Data((sql + ";\nSELECT '\(marker)';\n").utf8))
        var lines: [String] = []
        while true {
            while let newline = buffered.firstIndex(of: "\n") {
                let line = String(buffered[..<newline])
                buffered.removeSubrange(...newline)
                if line == marker { return lines }
                lines.append(line)
            }
            let data = output.fileHandleForReading.availableData
            guard !data.isEmpty else {
                throw PostgresServerError("psql ended:\n" + (lines + [buffered]).joined(separator: "\n"))
            }
            buffered += String(decoding: data, as: UTF8.self)
        }
    }

    /// Ends psql (and with it the session, rolling back an open transaction).
    public func close() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
