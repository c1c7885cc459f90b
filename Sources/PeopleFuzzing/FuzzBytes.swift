/// The fuzzer's bytes read as a stream of small decisions.
///
/// Past the end every read is zero, so every input (the empty one included) is a whole program and
/// a mutation that shortens an input only changes its tail. Reads are modular: a byte picks among
/// `n` choices by `byte % n`, which keeps the mapping simple for libFuzzer's comparisons.
struct FuzzBytes {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    /// A value in `range`; the range must be small (at most 256 values are reachable).
    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(byte()) % range.count
    }

    mutating func bool() -> Bool { byte() & 1 == 1 }

    mutating func pick<T>(_ items: [T]) -> T { items[Int(byte()) % items.count] }

    /// A position for an insert or move: mostly within (or just outside) `0…count`, sometimes an edge
    /// of `Int`, which the core must clamp.
    mutating func position(count: Int) -> Int {
        let b = byte()
        switch b {
        case 250: return Int.min
        case 251: return Int.max
        case 252: return -1
        case 253: return count + 1
        case 254: return Int.max - 1
        case 255: return Int.min + 1
        default: return Int(b) % (count + 1)
        }
    }
}
