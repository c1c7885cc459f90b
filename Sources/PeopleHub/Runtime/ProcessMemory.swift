import CMallocInfo
import Foundation

/// The process's memory as Linux and the C library tell it: what it holds now (resident pages, and the
/// heap in use), the most its container lets it hold (the cgroup's limit), and a way to hand freed
/// memory back.
public enum ProcessMemory {
    /// Resident bytes (`/proc/self/statm`'s second field, in pages), or nil if it cannot be read.
    public static func residentBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * pageSize
    }

    /// The memory limit of the cgroup this process runs in, or of one above it (the smallest), in
    /// bytes; nil when there is none (or it reads as unlimited). cgroup v2 (`memory.max`) and v1
    /// (`memory.limit_in_bytes`). Inside a container the cgroup's path may name the host's hierarchy,
    /// which is not mounted there: the mount's root then stands for it.
    public static func containerLimitBytes(cgroupFile: String = "/proc/self/cgroup", root: String = "/sys/fs/cgroup") -> Int? {
        guard let lines = try? String(contentsOfFile: cgroupFile, encoding: .utf8) else { return nil }
        var limits: [Int] = []
        for line in lines.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            let (directory, file): (String, String)
            if parts[0] == "0", parts[1].isEmpty {
                (directory, file) = (root, "memory.max")
            } else if parts[1].split(separator: ",").contains("memory") {
                (directory, file) = (root + "/memory", "memory.limit_in_bytes")
            } else {
                continue
            }
            var path = String(parts[2])
            while true {
                if let limit = limit(at: directory + (path == "/" ? "" : path) + "/" + file) { limits.append(limit) }
                if path == "/" || path.isEmpty { break }
                path = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
                if path.isEmpty { path = "/" }
            }
        }
        return limits.min()
    }

    /// A limit file's value; nil for `max`, a v1 "unlimited" (a page-rounded 2^63), or no file.
    private static func limit(at path: String) -> Int? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), value > 0, value < 1 << 60
        else { return nil }
        return value
    }

    /// Bytes malloc has handed out and not had back (every arena; glibc's `mallinfo2`), or nil where
    /// the C library cannot say. What the hub holds: rooms, sessions, queues, SQLite's cache. Unlike
    /// the resident size it falls as soon as an unloaded room is freed (glibc keeps freed pages for
    /// reuse, so the resident size of a hub that unloaded rooms stays near its peak, though opening
    /// rooms again reuses them). Walks malloc's free lists, under each arena's lock: off the service
    /// thread, once a second at most.
    public static func heapInUse() -> Int? {
        let bytes = pk_heap_in_use()
        return bytes > 0 ? Int(bytes) : nil
    }

    /// Hands the free pages malloc keeps back to the kernel (`malloc_trim(0)`), so the resident size
    /// falls too once rooms are unloaded.
    public static func releaseFree() {
        pk_release_free_heap()
    }

    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
}
