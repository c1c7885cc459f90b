import Configuration
import Foundation
import Logging
import PeopleCore
import SystemPackage
import Yams

extension HubSettings {
    /// Reads the settings: flags over `PEOPLEKEEPER_…` environment variables over the YAML file over the
    /// defaults. Throws a `ConfigProblem` naming the key for a missing or malformed file, an unknown
    /// key, a value of the wrong type, or a value out of range.
    static func load(file: String?, flags: [String: ConfigContent], environment: [String: String]) async throws -> HubSettings {
        func provider(_ name: String, _ values: [String: ConfigContent]) -> InMemoryProvider {
            InMemoryProvider(name: name, values: Dictionary(uniqueKeysWithValues: values.map {
                (AbsoluteConfigKey(ConfigKey($0.key)), ConfigValue($0.value, isSecret: false))
            }))
        }
        var providers: [any ConfigProvider] = [provider("flags", flags)]
        let prefixed = environment.filter { $0.key.hasPrefix("PEOPLEKEEPER_") }
        let knownVariables = Set(HubSetting.all.map(\.environmentName))
        unknownVariables = prefixed.keys.filter { !knownVariables.contains($0) && !ignoredVariables.contains($0) }.sorted()
        providers.append(EnvironmentVariablesProvider(environmentVariables: prefixed).prefixKeys(with: "peoplekeeper"))
        if let file {
            try checkKnownKeys(in: file)
            let (path, temporary) = try withoutWebhooks(file)
            defer { if temporary { try? FileManager.default.removeItem(atPath: path) } }
            do {
                providers.append(try await FileProvider<YAMLSnapshot>(filePath: FilePath(path)))
            } catch {
                throw ConfigProblem(key: file, problem: "cannot read the YAML file: \(error)")
            }
        }
        providers.append(provider("defaults", HubSetting.defaults))
        return try HubSettings(reader: ConfigReader(providers: providers))
    }

    /// The file for the key table's reader: the file itself, or (when it has a `webhooks` list, which
    /// the reader cannot hold: WebhookSettings reads it) a temporary copy without that section.
    static func withoutWebhooks(_ file: String) throws -> (path: String, temporary: Bool) {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8),
              case .mapping(var top)? = try? Yams.compose(yaml: text),
              top.keys.contains(where: { $0.string == "webhooks" }) else { return (file, false) }
        top[Node("webhooks")] = nil
        let path = NSTemporaryDirectory() + "peoplekeeper-config-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max)).yaml"
        do {
            try Yams.serialize(node: .mapping(top)).write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw ConfigProblem(key: file, problem: "cannot read the YAML file: \(error)")
        }
        return (path, true)
    }

    /// `PEOPLEKEEPER_…` variables that name no key (reported as warnings at start: a typo is not silent).
    nonisolated(unsafe) static var unknownVariables: [String] = []

    /// Variables with the prefix that are not settings (the test harness's binary paths and soak knobs).
    /// (`PEOPLEKEEPER_AUTH_SECRET` is read on its own: the token secret, which no file may hold.)
    static let ignoredVariables: Set<String> = ["PEOPLEKEEPER_HUB_BIN", "PEOPLEKEEPER_CLIENT_BIN", "PEOPLEKEEPER_AUTH_SECRET",
                                                "PEOPLEKEEPER_SOAK_SECONDS", "PEOPLEKEEPER_SOAK_SEED"]

    /// Reads every key of `HubSetting.all` in the table's order (the first bad one is reported), then
    /// checks what involves more than one key or the file system.
    init(reader: ConfigReader) throws {
        var values: [String: ConfigContent] = [:]
        for setting in HubSetting.all { values[setting.key] = try setting.read(from: reader) }
        self.init(values: SettingValues(values))
        if tlsCertFile.isEmpty != tlsKeyFile.isEmpty {
            throw ConfigProblem(key: tlsCertFile.isEmpty ? "tls.certFile" : "tls.keyFile",
                                problem: "TLS needs both tls.certFile and tls.keyFile")
        }
        for (key, path) in [("tls.certFile", tlsCertFile), ("tls.keyFile", tlsKeyFile)] where !path.isEmpty {
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw ConfigProblem(key: key, problem: "cannot read \(path)")
            }
        }
        if tls { try Self.checkTLSFiles(cert: tlsCertFile, key: tlsKeyFile) }
        for origin in allowedOrigins where origin != "*" && !Self.isOrigin(origin) {
            throw ConfigProblem(key: "auth.allowedOrigins", problem: "'\(origin)' is not an origin: scheme://host[:port], or *")
        }
        if !advertisedURL.isEmpty, !(advertisedURL.hasPrefix("ws://") || advertisedURL.hasPrefix("wss://")) {
            throw ConfigProblem(key: "cluster.advertisedURL", problem: "must start with ws:// or wss:// (\(advertisedURL))")
        }
    }

    /// Whether `text` is an origin as a browser sends one: `http://` or `https://`, then a host and
    /// perhaps a port, with no path, query, fragment or user (one of those matched no `Origin`).
    static func isOrigin(_ text: String) -> Bool {
        let lowered = text.lowercased()
        guard let scheme = ["http://", "https://"].first(where: { lowered.hasPrefix($0) }) else { return false }
        let rest = lowered.dropFirst(scheme.count)
        return !rest.isEmpty && !rest.contains { "/?#@ \t".contains($0) }
    }

    /// What can be told of the TLS files without OpenSSL: a certificate in the one, an unencrypted
    /// private key in the other. (An HTTPS pass gave the hub a key with a pass phrase: OpenSSL asked
    /// for it on the terminal and the hub waited for ever; other wrong files stopped it saying the
    /// port might be in use.) A key that is not the certificate's is told when the port is opened.
    static func checkTLSFiles(cert: String, key: String) throws {
        let pem = { (path: String) in (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        guard pem(cert).contains("-----BEGIN CERTIFICATE-----") else {
            throw ConfigProblem(key: "tls.certFile", problem: "\(cert) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        let keyText = pem(key)
        if keyText.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || keyText.contains("Proc-Type: 4,ENCRYPTED") {
            throw ConfigProblem(key: "tls.keyFile", problem: "\(key) is encrypted (it has a pass phrase): the hub needs "
                                + "the key unencrypted (openssl pkey -in \(key) -out PLAIN.key, kept readable by the hub's user only)")
        }
        guard keyText.range(of: "-----BEGIN [A-Z ]*PRIVATE KEY-----", options: .regularExpression) != nil else {
            throw ConfigProblem(key: "tls.keyFile", problem: "\(key) holds no PEM private key (-----BEGIN PRIVATE KEY-----)")
        }
    }

    /// Refuses a file that sets a key the hub does not know (a typo would otherwise be silently ignored).
    static func checkKnownKeys(in file: String) throws {
        let text: String
        do { text = try String(contentsOfFile: file, encoding: .utf8) } catch {
            throw ConfigProblem(key: file, problem: "cannot read the config file: \(error.localizedDescription)")
        }
        let node: Node?
        do { node = try Yams.compose(yaml: text) } catch {
            throw ConfigProblem(key: file, problem: "not valid YAML: \(error)")
        }
        guard let node else { return }
        guard case .mapping(let top) = node else {
            throw ConfigProblem(key: file, problem: "the top level must be a mapping of sections (listen:, undo:, …)")
        }
        let known = Set(HubSetting.all.map(\.key))
        let sections = Set(HubSetting.all.map(\.section))
        for (sectionNode, value) in top {
            let section = sectionNode.string ?? "\(sectionNode)"
            if section == "webhooks" { continue }  // a list of endpoints: WebhookSettings reads and checks it
            guard sections.contains(section) else {
                throw ConfigProblem(key: section, problem: "unknown section (known: \((sections.union(["webhooks"])).sorted().joined(separator: ", ")))")
            }
            guard case .mapping(let entries) = value else {
                throw ConfigProblem(key: section, problem: "must be a mapping of keys")
            }
            for (keyNode, valueNode) in entries {
                let key = "\(section).\(keyNode.string ?? "\(keyNode)")"
                guard known.contains(key) else {
                    let siblings = HubSetting.all.filter { $0.section == section }.map { String($0.key.dropFirst(section.count + 1)) }
                    throw ConfigProblem(key: key, problem: "unknown key (known in \(section): \(siblings.joined(separator: ", ")))")
                }
                // The reader spreads a mapping into keys of its own (metrics.tokenFile.path), so the key
                // itself read as unset: `metrics.tokenFile: {path: …}` left /metrics open, and
                // `auth.mode: {a: token}` ran in open mode (found by a tester).
                if case .mapping = valueNode {
                    throw ConfigProblem(key: key, problem: "must be a value, not a mapping of keys")
                }
            }
        }
    }

    /// The core's room policy from these settings.
    var roomPolicy: RoomPolicy {
        RoomPolicy(
            undo: UndoPolicy(depth: undoDepth, conflicts: undoConflicts, cascade: undoCascade,
                             coalesceMillis: Int64(coalesceMillis)),
            tagBlockSize: tagBlockSize, keptRevisions: keptRevisions, repliesKept: repliesKept,
            keysKept: keysKept,
            maxPeople: maxPeoplePerRoom, keptSessions: keptSessions, maxCatchUp: maxCatchUp)
    }

    /// The people new rooms start with: `tutorial`, `empty`, or a JSON file with an array of people.
    /// The seed, checked: a room starts with it, so more people than `limits.maxPeoplePerRoom` would
    /// make every new room full before anyone adds a person (a code review of session 33).
    func loadSeed() throws -> PeopleModel {
        let model = try readSeed()
        if maxPeoplePerRoom > 0, model.count > maxPeoplePerRoom {
            throw ConfigProblem(key: "rooms.seed", problem: "\(seed) holds \(model.count) people, more than limits.maxPeoplePerRoom (\(maxPeoplePerRoom)): every new room would be full")
        }
        return model
    }

    private func readSeed() throws -> PeopleModel {
        switch seed {
        case "tutorial": return .tutorialSeed
        case "empty": return PeopleModel()
        default:
            let bytes: [UInt8]
            do { bytes = Array(try Data(contentsOf: URL(fileURLWithPath: seed))) } catch {
                throw ConfigProblem(key: "rooms.seed", problem: "cannot read \(seed): \(error.localizedDescription)")
            }
            do {
                guard case .array(let items) = try JSON.parse(bytes) else {
                    throw ConfigProblem(key: "rooms.seed", problem: "\(seed) must hold a JSON array of people")
                }
                let people = try items.map { item throws(ProtocolError) in try Person(json: item) }
                var seen = Set<PeopleCore.Tag>()
                for person in people where !seen.insert(person.tag).inserted {
                    throw ConfigProblem(key: "rooms.seed", problem: "\(seed): tag \(person.tag) appears more than once")
                }
                for person in people where Room.tagPlaceholders.contains(person.tag) {
                    throw ConfigProblem(key: "rooms.seed", problem: "\(seed): tag \(person.tag) is too large (tags are below \(Room.tagPlaceholders.lowerBound))")
                }
                let model = PeopleModel(people: people)
                if let violation = model.invariantViolation() {
                    throw ConfigProblem(key: "rooms.seed", problem: "\(seed): \(violation)")
                }
                return model
            } catch let problem as ConfigProblem {
                throw problem
            } catch {
                throw ConfigProblem(key: "rooms.seed", problem: "\(seed): \(error)")
            }
        }
    }
}
