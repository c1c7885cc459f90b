import ArgumentParser
import Foundation

// stdout and stderr, written with write(2). Foundation's `FileHandle.write` traps on a failed write
// (a full disk, a closed stream, a reader gone: EPIPE, SIGPIPE being ignored: `keepStandardStreamsOpen`
// and lws both do), and `print` loses the
// failure in stdio's buffer: the hub died at its first JSON log line with stderr on a full disk, and
// `export > /dev/full` exited 0 with nothing written (a backup script took it for a backup).

/// Writes all of `bytes` to `descriptor`; the errno of a write that failed, else nil.
private func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Int32? {
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return written < 0 ? errno : EIO }
        offset += written
    }
    return nil
}

/// Writes `bytes` to stderr, and goes on if it cannot: a log line lost is better than a hub down.
func writeStandardError(_ bytes: some Collection<UInt8>) {
    _ = writeAll(Array(bytes), to: STDERR_FILENO)
}

/// `writeStandardError` of a line of text (a line break is added).
func writeStandardError(line text: String) {
    writeStandardError(Array((text + "\n").utf8))
}

/// A command's output on stdout (`newline`: one is added). A reader that went away (`| head`) ends the
/// command quietly with 0, as any Unix tool; any other failure (a full disk) says so on stderr and ends
/// it with 74 (EX_IOERR): the output is not whole. Thrown (`ExitCode`), so that the command's own
/// clean-up runs (an import's store is closed, and its snapshot written, before the exit).
func output(_ text: String, newline: Bool = true) throws {
    guard let error = writeAll(Array((newline ? text + "\n" : text).utf8), to: STDOUT_FILENO) else { return }
    if error == EPIPE { throw ExitCode(0) }
    writeStandardError(line: "peoplekeeper-hub: cannot write the output: " + String(cString: strerror(error)))
    throw ExitCode(74)
}

/// The `listening` line of `serve`: written if it can be; a hub whose stdout is gone serves all the same.
func writeBanner(_ text: String) {
    _ = writeAll(Array(text.utf8), to: STDOUT_FILENO)
}

/// Opens /dev/null on any of stdin, stdout and stderr the hub was started without (`>&-`): otherwise the
/// next file or socket opened takes that number, and the `listening` line or a log line would be
/// written into it (a store's file, a client's connection). And ignores SIGPIPE, so that a reader that
/// went away is a failed write (EPIPE) a command can answer, not a death by signal (141: only `serve`,
/// whose lws context ignores it, escaped that).
func keepStandardStreamsOpen() {
    signal(SIGPIPE, SIG_IGN)
    for descriptor: Int32 in 0...2 where fcntl(descriptor, F_GETFD) == -1 {
        _ = open("/dev/null", O_RDWR)
    }
}
