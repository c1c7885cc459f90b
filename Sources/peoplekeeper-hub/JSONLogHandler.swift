import Foundation
import Logging
import PeopleCore

/// Writes one JSON object per log record to stderr: `ts`, `level`, `label`, `msg`, then the metadata.
/// For log collectors; `logging.format: text` is `TextLogHandler` (swift-log's stream handler, escaped).
struct JSONLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level
    let label: String

    init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var members: [JSON.Member] = [
            .init("ts", .string(Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))),
            .init("level", .string(event.level.rawValue)),
            .init("label", .string(label)),
            .init("msg", .string("\(event.message)")),
        ]
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            members.append(.init(key, .string("\(value)")))
        }
        var line = JSON.object(members).bytes
        line.append(0x0A)
        writeStandardError(line)
    }
}
