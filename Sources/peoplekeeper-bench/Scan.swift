
/// Values read from a frame without parsing it (receivers must not be the bottleneck): the value after
/// the first `"key":`. A key inside a string cannot match, since its quotes would be escaped.
enum Scan {
    static func int(of key: String, in bytes: [UInt8]) -> Int? {
        guard let start = find(key, in: bytes) else { return nil }
        var value = 0
        var index = start
        while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            value = value * 10 + Int(bytes[index] - 0x30)
            index += 1
        }
        return index > start ? value : nil
    }

    static func string(of key: String, in bytes: [UInt8]) -> String? {
        guard let start = find(key, in: bytes), start < bytes.count, bytes[start] == 0x22,
              let end = bytes[(start + 1)...].firstIndex(of: 0x22) else { return nil }
        return String(decoding: bytes[(start + 1)..<end], as: UTF8.self)
    }

    private static func find(_ key: String, in bytes: [UInt8]) -> Int? {
        let pattern = Array("\"\(key)\":".utf8)
        guard bytes.count >= pattern.count else { return nil }
        outer: for start in 0...(bytes.count - pattern.count) {
            for offset in 0..<pattern.count where bytes[start + offset] != pattern[offset] { continue outer }
            return start + pattern.count
        }
        return nil
    }
}
