import Foundation
import PeopleStore

/// The store's files as they were opened: the database, its write-ahead log and the claim's lock
/// file, each by device and inode.
///
/// A file deleted or replaced under a running hub (an operator's `rm`, a clean-up script) took every
/// commit after it with it: SQLite went on writing into a file no name reached, the hub acknowledged
/// the edits, `/healthz` said ok, and a crash or a restart lost them (with the lock file gone, a second
/// hub could even claim the store). An SRE's pass found it. Every commit, and every store check,
/// looks first: a file that is not the one opened fails it, so nothing more is acknowledged and
/// `/healthz` says why.
final class StoreFiles: @unchecked Sendable {
    struct Identity: Equatable {
        var device: UInt64
        var inode: UInt64
    }

    private let lock = NSLock()
    /// By path; the write-ahead log is known from its first commit on (SQLite makes it then).
    private var known: [String: Identity] = [:]
    private let paths: [String]

    init(paths: [String]) {
        self.paths = paths
        for path in paths { known[path] = Self.identity(path) }
    }

    /// Throws `unavailable` when a file known is gone or another file has its name.
    func check() throws(StoreError) {
        let problem: String? = lock.withLock {
            for path in paths {
                let now = Self.identity(path)
                guard let was = known[path] else {
                    known[path] = now
                    continue
                }
                if now == nil { return "\(path) was deleted" }
                if now != was { return "\(path) was replaced by another file" }
            }
            return nil
        }
        if let problem {
            throw StoreError(.unavailable, "the SQLite store's files changed under the hub: \(problem) while it ran, so "
                             + "nothing more is acknowledged (what it held is still readable by this process: export "
                             + "the rooms, GET /v1/rooms/ROOM/export, before stopping it)")
        }
    }

    static func identity(_ path: String) -> Identity? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return Identity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }
}
