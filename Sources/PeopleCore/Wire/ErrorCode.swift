/// The stable error codes of PROTOCOL.md. Clients switch on these.
public enum ErrorCode: String, CaseIterable, Hashable, Sendable {
    case badJSON = "bad-json"
    case badMessage = "bad-message"
    case unsupportedProtocol = "unsupported-protocol"
    case notHello = "not-hello"
    case unauthorized
    case forbidden
    case invalidOp = "invalid-op"
    case staleBase = "stale-base"
    case tooLarge = "too-large"
    case rateLimited = "rate-limited"
    case roomFull = "room-full"
    case serverError = "server-error"
    /// `undo` with an `entry` that is not on the user's undo stack (HISTORY §2).
    case noEntry = "no-entry"
    /// The HTTP API: the room does not exist (HTTP requests never create rooms, but `PUT`).
    case noRoom = "no-room"

    /// Codes sent with `fatal: true`, after which the hub closes the connection.
    public var isFatal: Bool { self == .unsupportedProtocol || self == .unauthorized }
}

/// A typed protocol error: a code a client can switch on plus a human message.
public struct ProtocolError: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: ErrorCode
    public let message: String

    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

/// A diff or batch that would break the model; nothing of its batch is applied.
public struct InvalidOp: Error, Hashable, Sendable, CustomStringConvertible {
    public let reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { "invalid-op: \(reason)" }
    public var protocolError: ProtocolError { ProtocolError(.invalidOp, reason) }
}
