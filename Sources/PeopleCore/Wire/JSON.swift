/// A JSON value, as the wire codec reads and writes it.
///
/// The parser is strict and bounded: UTF-8 is validated, nesting is limited, integers that fit an
/// `Int` stay exact, and a string holding a lone surrogate escape is kept as `.loneSurrogate` so the
/// message decoder can report it where it occurs (inside `ops` that is `invalid-op`).
public enum JSON: Hashable, Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([Member])
    /// A string with an unpaired UTF-16 surrogate escape (`"\ud800"`): not representable as text.
    case loneSurrogate

    public struct Member: Hashable, Sendable {
        public var key: String
        public var value: JSON

        public init(_ key: String, _ value: JSON) {
            self.key = key
            self.value = value
        }
    }

    /// The member named `key` of an object (the last one if repeated).
    public subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.key == key }?.value
    }

    /// An object from key-value pairs, leaving out nil values.
    public static func object(_ pairs: KeyValuePairs<String, JSON?>) -> JSON {
        .object(pairs.compactMap { pair in pair.value.map { Member(pair.key, $0) } })
    }
}

/// Why bytes are not a JSON value.
public struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    public let offset: Int
    public let reason: String
    public var description: String { "\(reason) at byte \(offset)" }
}

extension JSON {
    /// Deepest nesting accepted: deeper input is rejected, never recursed into.
    public static let maxDepth = 64

    /// Parses one JSON value that fills `bytes` (whitespace around it allowed).
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSON {
        var parser = Parser(bytes: Array(bytes))
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.atEnd else { throw parser.error("trailing characters") }
        return value
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSON { try parse(Array(text.utf8)) }

    private struct Parser {
        let bytes: [UInt8]
        var i = 0

        var atEnd: Bool { i >= bytes.count }

        func error(_ reason: String) -> JSONParseError { JSONParseError(offset: i, reason: reason) }

        mutating func skipWhitespace() {
            while i < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[i]) { i += 1 }
        }

        mutating func value(depth: Int) throws(JSONParseError) -> JSON {
            guard depth < JSON.maxDepth else { throw error("nesting deeper than \(JSON.maxDepth)") }
            guard i < bytes.count else { throw error("unexpected end") }
            switch bytes[i] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return try string()
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw error("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws(JSONParseError) {
            let count = word.utf8CodeUnitCount
            guard i + count <= bytes.count else { throw error("unexpected end") }
            for k in 0..<count where bytes[i + k] != word.utf8Start[k] { throw error("invalid literal") }
            i += count
        }

        mutating func object(depth: Int) throws(JSONParseError) -> JSON {
            i += 1
            var members: [Member] = []
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("expected a key") }
                guard case .string(let key) = try string() else { throw error("key with a lone surrogate") }
                skipWhitespace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw error("expected ':'") }
                i += 1
                skipWhitespace()
                members.append(Member(key, try value(depth: depth + 1)))
                skipWhitespace()
                guard i < bytes.count else { throw error("unexpected end") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                throw error("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws(JSONParseError) -> JSON {
            i += 1
            var elements: [JSON] = []
            skipWhitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return .array(elements) }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth + 1))
                skipWhitespace()
                guard i < bytes.count else { throw error("unexpected end") }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "]") { i += 1; return .array(elements) }
                throw error("expected ',' or ']'")
            }
        }

        mutating func hex4() throws(JSONParseError) -> UInt32 {
            guard i + 4 <= bytes.count else { throw error("short \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[i]
                let d: UInt32
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
                default: throw error("bad \\u escape")
                }
                v = v * 16 + d
                i += 1
            }
            return v
        }

        mutating func string() throws(JSONParseError) -> JSON {
            i += 1
            var out: [UInt8] = []
            var lone = false
            while true {
                guard i < bytes.count else { throw error("unterminated string") }
                let c = bytes[i]
                if c == UInt8(ascii: "\"") { i += 1; break }
                if c < 0x20 { throw error("control character in string") }
                if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
                i += 1
                guard i < bytes.count else { throw error("unterminated escape") }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        if i + 6 <= bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") {
                            let save = i
                            i += 2
                            let low = try hex4()
                            if (0xDC00...0xDFFF).contains(low) {
                                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                            } else {
                                i = save
                                lone = true
                                continue
                            }
                        } else {
                            lone = true
                            continue
                        }
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        lone = true
                        continue
                    }
                    out.append(contentsOf: Array(String(Unicode.Scalar(scalar)!).utf8))
                default:
                    throw error("bad escape")
                }
            }
            guard let text = String(validating: out, as: UTF8.self) else { throw error("invalid UTF-8") }
            return lone ? .loneSurrogate : .string(text)
        }

        mutating func number() throws(JSONParseError) -> JSON {
            let start = i
            var integral = true
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, isDigit(bytes[i]) else { throw error("bad number") }
            if bytes[i] == UInt8(ascii: "0") { i += 1 } else { while i < bytes.count, isDigit(bytes[i]) { i += 1 } }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                integral = false
                i += 1
                guard i < bytes.count, isDigit(bytes[i]) else { throw error("bad number") }
                while i < bytes.count, isDigit(bytes[i]) { i += 1 }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                integral = false
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard i < bytes.count, isDigit(bytes[i]) else { throw error("bad number") }
                while i < bytes.count, isDigit(bytes[i]) { i += 1 }
            }
            let text = String(decoding: bytes[start..<i], as: UTF8.self)
            if integral, let value = Int(text) { return .int(value) }
            // Valid JSON beyond Double's range reads as ±infinity, which no field accepts (bad-message).
            guard let value = Double(text) else { throw error("bad number") }
            return .double(value)
        }

        func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
    }
}

extension JSON {
    /// The compact UTF-8 encoding; object members in their stored order, so output is deterministic.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(to: &out)
        return out
    }

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public func write(to out: inout [UInt8]) {
        switch self {
        case .null, .loneSurrogate: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let n): out.append(contentsOf: String(n).utf8)
        // A number too big for a double was read as an infinity: written back as one that still is,
        // so a value passed on (the HTTP API's bodies through the WebSocket decoder) is refused where
        // it would be, not read as an absent field.
        case .double(let d): out.append(contentsOf: (d.isFinite ? String(d) : d.isNaN ? "null" : d < 0 ? "-1e999" : "1e999").utf8)
        case .string(let s): Self.writeString(s, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (k, e) in elements.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                e.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (k, m) in members.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(m.key, to: &out)
                out.append(UInt8(ascii: ":"))
                m.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static let hexDigits = Array("0123456789abcdef".utf8)

    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for c in s.utf8 {
            switch c {
            case 0x22: out.append(contentsOf: [0x5C, 0x22])
            case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hexDigits[Int(c >> 4)], hexDigits[Int(c & 15)]])
            default: out.append(c)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
