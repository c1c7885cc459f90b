#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Fuzz inputs on disk, for the replayer and the corpus tests (libc only: the harness stays free of
/// Foundation, like the core).
public enum FuzzInputs {
    /// `path` itself if it is a file, else the regular files directly in it, sorted (hidden names
    /// left out); none when nothing is there.
    public static func files(at path: String) -> [String] {
        guard let directory = opendir(path) else { return access(path, F_OK) == 0 ? [path] : [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if !name.hasPrefix(".") { names.append(path + "/" + name) }
        }
        return names.sorted()
    }

    /// The bytes of the file at `path`, or nil when it cannot be opened.
    public static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return bytes
    }
}
