import ArgumentParser
import Foundation

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
