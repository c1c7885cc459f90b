#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Which PeopleKeeper a running binary is: its release and the linker's build id.
///
/// The release names what the binary claims to be; two builds of one release (a debug and a release
/// build, or builds of two commits between releases) share it. The build id is what the linker wrote
/// into the executable (`.note.gnu.build-id`, a hash of its contents), so it names exactly one binary:
/// the one `readelf -n` or `file` shows for the file on disk. It is read from `/proc/self/exe`, the
/// file this process runs even if the path now names another one (a binary replaced under a running
/// hub still reports its own).
///
/// `peoplekeeper-hub --version`, the hub's `starting` log line, its `peoplekeeper_build_info` metric,
/// its webhooks' `User-Agent` and `peoplekeeper --version` all say this.
public enum BuildIdentity {
    /// The release: raised when one is made (the minor number is the last product issue landed).
    public static let release = "0.21.0"

    /// The executable's GNU build id in lower-case hex, or nil when it has none or cannot be read.
    public static let buildID: String? = readBuildID(path: "/proc/self/exe")

    /// `0.21.0 (build 549061fb…)`: what `--version` prints after the program's name.
    public static var versionLine: String {
        "\(release) (build \(buildID ?? "unknown"))"
    }

    /// The build id in the ELF file at `path`, from its `PT_NOTE` segments (ELF64, little-endian).
    static func readBuildID(path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        func bytes(_ count: Int, at offset: Int) -> [UInt8]? {
            guard count > 0, count <= 1 << 20, offset >= 0 else { return nil }
            var buffer = [UInt8](repeating: 0, count: count)
            let read = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
            return read == count ? buffer : nil
        }
        guard let header = bytes(64, at: 0), header[0..<4] == [0x7F, 0x45, 0x4C, 0x46],  // \x7FELF
              header[4] == 2, header[5] == 1  // 64-bit, little-endian
        else { return nil }
        let programHeaders = header.int(at: 32, size: 8), entrySize = header.int(at: 54, size: 2)
        let entries = header.int(at: 56, size: 2)
        guard entrySize >= 56, let table = bytes(entrySize * entries, at: programHeaders) else { return nil }
        for index in 0..<entries {
            let entry = index * entrySize
            guard table.int(at: entry, size: 4) == 4,  // PT_NOTE
                  let notes = bytes(table.int(at: entry + 32, size: 8), at: table.int(at: entry + 8, size: 8))
            else { continue }
            // The descriptor and the next note start at the segment's alignment from its start: 4, or 8
            // for some (`.note.gnu.property`, whose 12-byte header and 4-byte name end at 16).
            let pad = table.int(at: entry + 48, size: 8) == 8 ? 7 : 3
            var note = 0
            while note + 12 <= notes.count {
                let nameSize = notes.int(at: note, size: 4), descSize = notes.int(at: note + 4, size: 4)
                let type = notes.int(at: note + 8, size: 4)
                let desc = (note + 12 + nameSize + pad) & ~pad
                guard desc + descSize <= notes.count else { break }
                if type == 3, nameSize == 4, notes[(note + 12)..<(note + 16)] == [0x47, 0x4E, 0x55, 0] {  // NT_GNU_BUILD_ID, "GNU"
                    let digits = Array("0123456789abcdef")
                    return String(notes[desc..<(desc + descSize)].flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
                }
                note = (desc + descSize + pad) & ~pad
            }
        }
        return nil
    }
}

extension [UInt8] {
    /// The little-endian unsigned integer of `size` bytes at `offset`.
    fileprivate func int(at offset: Int, size: Int) -> Int {
        (0..<size).reduce(0) { value, byte in value | Int(self[offset + byte]) << (8 * byte) }
    }
}
