import Logging
import PeopleCore

/// `logging.format: text`: swift-log's stream handler, one record per line, with every control
/// character of the message and the metadata written escaped (`\n`, `\r`, `\t`, `\u{1B}`, ...).
/// Both carry other people's text — a hello's `user`, a token's `sub`, a room from a path — and a
/// newline in one let anyone write a line of their own into the log that looked like the hub's.
/// (`logging.format: json` escapes them as JSON does.)
struct TextLogHandler: LogHandler {
    private var inner: StreamLogHandler

    init(label: String, level: Logger.Level) {
        inner = StreamLogHandler.standardError(label: label)
        inner.logLevel = level
    }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: Self.escaped("\(event.message)"))
        event.metadata = event.metadata?.mapValues(Self.escaped)
        inner.log(event: event)
    }

    static func escaped(_ value: Logger.MetadataValue) -> Logger.MetadataValue {
        switch value {
        case .string(let text): .string(escaped(text))
        case .stringConvertible(let item): .string(escaped(item.description))
        case .dictionary(let members): .dictionary(members.mapValues(escaped))
        case .array(let items): .array(items.map(escaped))
        }
    }

    /// `text` with each control character (Unicode's Cc, and the line and paragraph separators) as
    /// an escape (`controlsEscaped`).
    static func escaped(_ text: String) -> String {
        text.controlsEscaped
    }
}
