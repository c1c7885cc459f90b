import ArgumentParser
import Configuration
import Foundation

/// `peoplekeeper-hub config-keys`: prints the table of settings (`HubSetting.all`): each key's type,
/// default, allowed values, environment variable, flag and doc, as text or as JSON (which
/// Tests/python/test_docs_drift.py reads to check the docs and the example config against the code).
struct ConfigKeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config-keys",
        abstract: "Print every config key: type, default, allowed values, environment variable, flag and doc.",
        discussion: """
            The same table the hub reads its settings by (defaults, range checks, unknown keys, the \
            flags' help). docs/CONFIG.md explains each key at length.

            Examples:
              peoplekeeper-hub config-keys
              peoplekeeper-hub config-keys --json
            """)

    @Flag(help: "One JSON array of objects: key, type, default, allowed ({min, max}, a list of choices, or null), environment, flag (or null), doc.")
    var json = false

    func run() throws {
        if json {
            let rows = HubSetting.all.map { setting -> [String: Any] in
                [
                    "key": setting.key, "type": setting.type.rawValue, "default": Self.jsonValue(setting.defaultValue),
                    "allowed": Self.jsonAllowed(setting.allowed), "environment": setting.environmentName,
                    "flag": setting.flag.map { "--\($0)" } ?? NSNull(), "doc": setting.doc,
                ]
            }
            let data = try JSONSerialization.data(withJSONObject: rows, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            try output(String(decoding: data, as: UTF8.self))
            return
        }
        var lines: [String] = []
        for setting in HubSetting.all {
            var facts = "\(setting.type.rawValue), default \(Self.text(setting.defaultValue))"
            switch setting.allowed {
            case .any: break
            case .range(let range):
                facts += range.upperBound == Int.max ? ", at least \(range.lowerBound)" : ", \(range.lowerBound) to \(range.upperBound)"
            case .oneOf(let choices): facts += ", one of \(choices.joined(separator: " / "))"
            }
            facts += "; \(setting.environmentName)"
            if let flag = setting.flag { facts += ", --\(flag)" }
            lines.append("\(setting.key): \(facts)\n    \(setting.doc)")
        }
        try output(lines.joined(separator: "\n"))  // one write
    }

    private static func text(_ value: ConfigContent) -> String {
        switch value {
        case .string(let string): string.isEmpty ? "\"\"" : string
        case .stringArray(let list): "[\(list.joined(separator: ", "))]"
        default: "\(jsonValue(value))"
        }
    }

    private static func jsonValue(_ value: ConfigContent) -> Any {
        switch value {
        case .string(let string): string
        case .int(let int): int
        case .bool(let bool): bool
        case .stringArray(let list): list
        default: preconditionFailure("the table holds no \(value)")
        }
    }

    private static func jsonAllowed(_ allowed: HubSetting.Allowed) -> Any {
        switch allowed {
        case .any: NSNull()
        case .range(let range):
            ["min": range.lowerBound, "max": range.upperBound == Int.max ? NSNull() : range.upperBound] as [String: Any]
        case .oneOf(let choices): choices
        }
    }
}
