import Configuration

/// The value of every key of `HubSetting.all`, each already checked by `HubSetting.read(from:)` (or a
/// table default), read by type. Asking for a key the table lacks, or as another type, is a programming
/// error: it stops the process at start, so any test that starts the hub finds it.
struct SettingValues: Sendable {
    private let contents: [String: ConfigContent]

    init(_ contents: [String: ConfigContent]) { self.contents = contents }

    func string(_ key: String) -> String {
        guard case .string(let value) = contents[key] else { preconditionFailure("\(key) is not a string setting") }
        return value
    }

    func int(_ key: String) -> Int {
        guard case .int(let value) = contents[key] else { preconditionFailure("\(key) is not an integer setting") }
        return value
    }

    func bool(_ key: String) -> Bool {
        guard case .bool(let value) = contents[key] else { preconditionFailure("\(key) is not a boolean setting") }
        return value
    }

    func strings(_ key: String) -> [String] {
        guard case .stringArray(let value) = contents[key] else { preconditionFailure("\(key) is not a list setting") }
        return value
    }

    /// A `.choice` key's value as its type (the table has checked it is one of the type's raw values).
    func choice<T: RawRepresentable>(_ key: String) -> T where T.RawValue == String {
        guard let value = T(rawValue: string(key)) else { preconditionFailure("\(key) holds no \(T.self)") }
        return value
    }
}
