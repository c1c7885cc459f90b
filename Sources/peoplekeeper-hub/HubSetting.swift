import Configuration

/// One key of the hub's configuration: its name, type, default, allowed values, a one-line doc and the
/// `serve` flag that sets it, if any.
///
/// `HubSetting.all` (HubSetting+Table.swift) is the one table of them. Everything else comes from it:
/// the defaults (the last config provider), reading and checking each value
/// (`read(from:)`: type, range, choices, with the error naming the key), the environment variable
/// names, the refusal of unknown keys in a file, the help of `serve`'s flags and
/// `peoplekeeper-hub config-keys`. Checks that involve several keys (TLS needs both files) stay in
/// `HubSettings.init(reader:)`.
struct HubSetting: Sendable {
    enum ValueType: String, Sendable {
        case string, int, bool
        case stringList = "list of strings"
    }

    /// What the hub accepts beyond the type.
    enum Allowed: Sendable, Hashable {
        case any
        case range(ClosedRange<Int>)
        case oneOf([String])
    }

    let key: String
    let type: ValueType
    let defaultValue: ConfigContent
    let allowed: Allowed
    let doc: String
    /// The `serve` flag (without `--`) that overrides the key, if any.
    let flag: String?

    static func string(_ key: String, _ defaultValue: String, flag: String? = nil, _ doc: String) -> HubSetting {
        HubSetting(key: key, type: .string, defaultValue: .string(defaultValue), allowed: .any, doc: doc, flag: flag)
    }

    static func int(_ key: String, _ defaultValue: Int, _ range: ClosedRange<Int>, flag: String? = nil,
                    _ doc: String) -> HubSetting {
        precondition(range.contains(defaultValue), "\(key): the default is out of its own range")
        return HubSetting(key: key, type: .int, defaultValue: .int(defaultValue), allowed: .range(range), doc: doc, flag: flag)
    }

    static func bool(_ key: String, _ defaultValue: Bool, _ doc: String) -> HubSetting {
        HubSetting(key: key, type: .bool, defaultValue: .bool(defaultValue), allowed: .any, doc: doc, flag: nil)
    }

    static func strings(_ key: String, _ defaultValue: [String], _ doc: String) -> HubSetting {
        HubSetting(key: key, type: .stringList, defaultValue: .stringArray(defaultValue), allowed: .any, doc: doc, flag: nil)
    }

    /// A string that must be one of `T`'s raw values (in `T.allCases` order, as errors list them).
    static func choice<T: RawRepresentable & CaseIterable>(_ key: String, _ defaultValue: T, flag: String? = nil,
                                                           _ doc: String) -> HubSetting where T.RawValue == String {
        HubSetting(key: key, type: .string, defaultValue: .string(defaultValue.rawValue),
                   allowed: .oneOf(T.allCases.map(\.rawValue)), doc: doc, flag: flag)
    }

    /// The key's value from `reader`, checked against the type and the allowed values.
    func read(from reader: ConfigReader) throws(ConfigProblem) -> ConfigContent {
        let configKey = ConfigKey(key)
        switch type {
        case .int:
            let value: Int
            do { value = try reader.requiredInt(forKey: configKey) } catch {
                throw ConfigProblem(key: key, problem: "must be an integer (\(error))")
            }
            if case .range(let range) = allowed, !range.contains(value) {
                let upper = range.upperBound == Int.max ? "" : " and at most \(range.upperBound)"
                throw ConfigProblem(key: key, problem: "\(value) is out of range: must be at least \(range.lowerBound)\(upper)")
            }
            return .int(value)
        case .string:
            let value: String
            do { value = try reader.requiredString(forKey: configKey) } catch {
                throw ConfigProblem(key: key, problem: "must be a string (\(error))")
            }
            if case .oneOf(let choices) = allowed, !choices.contains(value) {
                throw ConfigProblem(key: key, problem: "'\(value)' is not one of \(choices.joined(separator: ", "))")
            }
            return .string(value)
        case .bool:
            do { return .bool(try reader.requiredBool(forKey: configKey)) } catch {
                throw ConfigProblem(key: key, problem: "must be true or false (\(error))")
            }
        case .stringList:
            do { return .stringArray(try reader.requiredStringArray(forKey: configKey)) } catch {
                throw ConfigProblem(key: key, problem: "must be a list of strings (\(error))")
            }
        }
    }

    /// The environment variable for the key: `limits.maxMessageBytes` → `PEOPLEKEEPER_LIMITS_MAX_MESSAGE_BYTES`.
    var environmentName: String {
        var name = "PEOPLEKEEPER"
        for component in key.split(separator: ".") {
            name += "_"
            var previous: Character?
            for character in component {
                if let previous, previous.isLowercase, character.isUppercase { name += "_" }
                name += character.uppercased()
                previous = character
            }
        }
        return name
    }

    /// The key's section (`limits` for `limits.maxRooms`).
    var section: String { String(key.split(separator: ".")[0]) }

    /// The help of `serve --FLAG`: the doc of the key the flag sets, and the key.
    static func help(forFlag flag: String) -> String {
        guard let setting = all.first(where: { $0.flag == flag }) else { preconditionFailure("no setting has the flag --\(flag)") }
        guard case .oneOf(let choices) = setting.allowed else { return "\(setting.doc) (\(setting.key))" }
        return "\(setting.doc) (\(setting.key): \(choices.joined(separator: ", ")))"
    }
}
