import Foundation
import Testing

@testable import BuildIdentity

/// The build id read from ELF files made here: notes padded to 4 and to 8, notes before it, a cut
/// file. (The real binaries are compared with `readelf -n` in Tests/python/test_version.py.)
@Suite("Build identity")
struct BuildIdentityTests {
    /// One note: header, name padded, descriptor padded (to `align`), from an aligned start.
    private static func note(type: UInt32, name: [UInt8], desc: [UInt8], align: Int) -> [UInt8] {
        func padded(_ bytes: [UInt8], from start: Int) -> [UInt8] {
            bytes + [UInt8](repeating: 0, count: (align - (start + bytes.count) % align) % align)
        }
        let header = le(UInt32(name.count)) + le(UInt32(desc.count)) + le(type)
        let named = padded(header + name, from: 0)
        return padded(named + desc, from: 0)
    }

    private static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    /// An ELF64 file with one PT_NOTE program header per `(notes, align)`.
    private static func elf(_ segments: [(bytes: [UInt8], align: Int)]) -> [UInt8] {
        let headerSize = 64, entrySize = 56
        var body: [UInt8] = []
        var entries: [UInt8] = []
        var offset = headerSize + entrySize * segments.count
        for segment in segments {
            offset = (offset + 7) & ~7
            body += [UInt8](repeating: 0, count: offset - headerSize - entrySize * segments.count - body.count)
            entries += le(UInt32(4)) + le(UInt32(4)) + le(UInt64(offset)) + le(UInt64(offset)) + le(UInt64(offset))
                + le(UInt64(segment.bytes.count)) + le(UInt64(segment.bytes.count)) + le(UInt64(segment.align))
            body += segment.bytes
            offset += segment.bytes.count
        }
        var header: [UInt8] = [0x7F, 0x45, 0x4C, 0x46, 2, 1, 1] + [UInt8](repeating: 0, count: 9)
        header += le(UInt16(2)) + le(UInt16(62)) + le(UInt32(1)) + le(UInt64(0)) + le(UInt64(UInt64(headerSize)))
        header += le(UInt64(0)) + le(UInt32(0)) + le(UInt16(UInt16(headerSize))) + le(UInt16(UInt16(entrySize)))
        header += le(UInt16(UInt16(segments.count))) + le(UInt16(0)) + le(UInt16(0)) + le(UInt16(0))
        return header + entries + body
    }

    private static func read(_ bytes: [UInt8]) throws -> String? {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pk-elf-\(UUID().uuidString)").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        return BuildIdentity.readBuildID(path: path)
    }

    static let gnu: [UInt8] = Array("GNU".utf8) + [0]
    static let id: [UInt8] = Array(0..<20).map { UInt8($0 * 13 % 256) }
    static let idHex = id.map { String(format: "%02x", $0) }.joined()

    @Test("the build id after a property note padded to 8 and an ABI tag padded to 4")
    func afterOtherNotes() throws {
        let property = Self.note(type: 5, name: Self.gnu, desc: [UInt8](repeating: 1, count: 16), align: 8)
        let abi = Self.note(type: 1, name: Self.gnu, desc: [UInt8](repeating: 2, count: 16), align: 4)
        let build = Self.note(type: 3, name: Self.gnu, desc: Self.id, align: 4)
        #expect(try Self.read(Self.elf([(property, 8), (abi + build, 4)])) == Self.idHex)
        // In one 8-aligned segment, a name of 5 bytes first: the descriptor starts at 24, not 20.
        let odd = Self.note(type: 9, name: Array("ABCD".utf8) + [0], desc: [7, 7, 7], align: 8)
        let build8 = Self.note(type: 3, name: Self.gnu, desc: Self.id, align: 8)
        #expect(try Self.read(Self.elf([(odd + build8, 8)])) == Self.idHex)
    }

    @Test("no build id: none, a cut note, a file that is not ELF")
    func without() throws {
        let abi = Self.note(type: 1, name: Self.gnu, desc: [UInt8](repeating: 2, count: 16), align: 4)
        #expect(try Self.read(Self.elf([(abi, 4)])) == nil)
        let build = Self.note(type: 3, name: Self.gnu, desc: Self.id, align: 4)
        let cut = Self.elf([(build, 4)]).dropLast(6)
        #expect(try Self.read(Array(cut)) == nil)
        #expect(try Self.read(Array("#!/bin/sh\necho hello\n".utf8)) == nil)
        #expect(BuildIdentity.readBuildID(path: "/nonexistent/pk") == nil)
    }
}
