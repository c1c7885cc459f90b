/// A user's name as a room knows it: 1 to 64 bytes of UTF-8, otherwise anything (PROTOCOL.md `hello`).
///
/// Validated once where a name enters (a `hello`, a token being minted, the terminal client's
/// `--user`), so every later holder knows it is well formed.
public struct UserName: Hashable, Sendable, CustomStringConvertible {
    public static let maxUTF8Bytes = 64

    public let rawValue: String

    /// The name, or `InvalidName` saying what is wrong with it.
    public init(_ value: String) throws(InvalidName) {
        guard (1...Self.maxUTF8Bytes).contains(value.utf8.count) else {
            throw InvalidName("user must be 1 to \(Self.maxUTF8Bytes) bytes of UTF-8")
        }
        rawValue = value
    }

    public var description: String { rawValue }
}

/// A room's name: 1 to 64 characters of `A-Z a-z 0-9 _ . -`, not `.` or `..`, the last part of
/// `/v1/rooms/ROOM`.
public struct RoomName: Hashable, Sendable, CustomStringConvertible {
    public static let maxLength = 64
    /// The path every room's WebSocket lives under.
    public static let pathPrefix = "/v1/rooms/"

    public let rawValue: String

    /// The name, or `InvalidName` saying what is wrong with it.
    public init(_ value: String) throws(InvalidName) {
        guard (1...Self.maxLength).contains(value.utf8.count), value.utf8.allSatisfy(Self.allows) else {
            throw InvalidName("a room name is 1 to \(Self.maxLength) characters of A-Z a-z 0-9 _ . - (got \(Self.shown(value)))")
        }
        // A URL's path loses these segments (`/v1/rooms/..` is `/v1/`): no client could reach such a room.
        guard value != ".", value != ".." else {
            throw InvalidName("a room name cannot be . or .. (a URL's path drops them)")
        }
        rawValue = value
    }

    /// The room of a WebSocket path `/v1/rooms/ROOM`, or nil for any other path.
    public init?(path: String) {
        guard path.hasPrefix(Self.pathPrefix), let name = try? RoomName(String(path.dropFirst(Self.pathPrefix.count)))
        else { return nil }
        self = name
    }

    /// A refused name as an error shows it: quoted, control characters escaped, and past 80 characters
    /// cut with its length said (an HTTP 400 echoed a path of any length back whole: an SRE's pass).
    static func shown(_ value: String) -> String {
        let limit = 80
        let head = value.count > limit ? String(value.prefix(limit)) : value
        let escaped = head.unicodeScalars.map { scalar -> String in
            switch scalar {
            case "\"": return "\\\""
            case "\\": return "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || (0x80..<0xA0).contains(scalar.value):
                return "\\u{\(String(scalar.value, radix: 16))}"
            default: return String(scalar)
            }
        }.joined()
        return value.count > limit ? "\"\(escaped)…\" (\(value.utf8.count) bytes)" : "\"\(escaped)\""
    }

    /// The WebSocket path of this room.
    public var path: String { Self.pathPrefix + rawValue }

    public var description: String { rawValue }

    private static func allows(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || byte == 0x5F || byte == 0x2E || byte == 0x2D
    }
}

/// Why a user or room name is refused; the description is the sentence to show.
public struct InvalidName: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
