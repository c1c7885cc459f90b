import Foundation

/// Writes `bytes` to stderr whole, and goes on if it cannot (closed, a full disk, a log reader that
/// went away: EPIPE, as SIGPIPE is ignored). Foundation's `FileHandle.write` traps there, which took
/// the hub down with its first JSON log line when stderr was a full disk (exit 132).
func writeStandardError(_ bytes: some Collection<UInt8>) {
    let bytes = Array(bytes)
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress! + offset, $0.count - offset) }
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return }
        offset += written
    }
}

/// `writeStandardError` of a line of text (a line break is added).
func writeStandardError(line text: String) {
    writeStandardError(Array((text + "\n").utf8))
}
