import Foundation
import PeopleStore

/// One hub per SQLite file: an exclusive `flock` on `PATH.lock` beside the store, holding the pid
/// of the process that has it.
///
/// The kernel drops the lock when the process ends, however it ends (SIGKILL, a crash), so a stale
/// file never keeps a restarted hub out; only a live holder does. A separate file, not the database:
/// SQLite's own locks on the database are POSIX record locks, which on some network file systems
/// are what `flock` is emulated with.
final class StoreClaim: @unchecked Sendable {
    let path: String
    private var descriptor: Int32

    init(store: String) throws(StoreError) {
        // Beside the file itself, whatever name it is reached by: a symbolic link to the store (or to a
        // directory on its path) leads to the same lock. (A hard link, a second name of the file, does not.)
        path = Self.resolved(store) + ".lock"
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw StoreError(.io, "cannot open \(path) to claim the SQLite store: \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno
            let holder = Self.holder(descriptor)
            close(descriptor)
            guard reason == EWOULDBLOCK else {
                throw StoreError(.io, "cannot lock \(path): \(String(cString: strerror(reason)))")
            }
            throw StoreError(.conflict, "the SQLite store at \(store) is in use by another hub (\(holder.map { "pid \($0)" } ?? "pid unknown"), "
                             + "holding \(path)): one hub per file; stop that one, or run several nodes on storage.kind postgres")
        }
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(descriptor, 0) == 0 {
            _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        }
    }

    /// `store` with every symbolic link on its path followed; a file not there yet is named in its
    /// resolved directory.
    static func resolved(_ store: String) -> String {
        if let real = realpath(store, nil) {
            defer { free(real) }
            return String(cString: real)
        }
        let url = URL(fileURLWithPath: store)
        let directory = url.deletingLastPathComponent().path
        guard let real = realpath(directory, nil) else { return store }
        defer { free(real) }
        return String(cString: real) + "/" + url.lastPathComponent
    }

    /// Lets go of the file (also what the process's end does).
    func release() {
        guard descriptor >= 0 else { return }
        _ = ftruncate(descriptor, 0)
        close(descriptor)   // closing the only descriptor of the open file drops the flock
        descriptor = -1
    }

    deinit { release() }

    /// Whether a hub holds `store`'s claim now, and its pid when it wrote one (`.some(nil)`: held, pid
    /// unknown). For a command, which claims nothing: it takes a shared lock for a moment to ask.
    static func heldBy(store: String) -> Int32?? {
        let descriptor = open(resolved(store) + ".lock", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_SH | LOCK_NB) != 0 else {
            _ = flock(descriptor, LOCK_UN)
            return nil
        }
        return errno == EWOULDBLOCK ? .some(holder(descriptor)) : nil
    }

    private static func holder(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
