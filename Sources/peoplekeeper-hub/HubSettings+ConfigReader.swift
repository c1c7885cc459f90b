import Configuration
import Foundation
import Logging
import PeopleCore
import SystemPackage
import Yams

extension HubSettings {
    /// Every key the hub reads, with its type; a file that sets any other key is refused.
    static let keys: [(key: String, type: ConfigType)] = [
        ("listen.host", .string), ("listen.port", .int), ("web.root", .string),
        ("rooms.seed", .string), ("rooms.tagBlockSize", .int), ("rooms.keptRevisions", .int), ("rooms.maxCatchUp", .int),
        ("rooms.repliesKept", .int), ("rooms.keptSessions", .int), ("rooms.unloadAfterSeconds", .int),
        ("undo.depth", .int), ("undo.conflicts", .string), ("undo.cascade", .bool), ("undo.coalesceMillis", .int),
        ("limits.maxMessageBytes", .int), ("limits.maxConnections", .int), ("limits.maxConnectionsPerIP", .int), ("limits.maxRooms", .int),
        ("limits.maxPeoplePerRoom", .int), ("limits.opsPerSecond", .int), ("limits.helloTimeoutSeconds", .int),
        ("limits.sendQueueMessages", .int), ("limits.sendQueueBytes", .int),
        ("transport.permessageDeflate", .bool), ("transport.pingIntervalSeconds", .int),
        ("logging.level", .string), ("logging.format", .string), ("metrics.enabled", .bool),
        ("storage.kind", .string), ("storage.path", .string), ("storage.snapshotEvery", .int),
        ("storage.postgresURL", .string), ("storage.postgresPasswordFile", .string),
        ("cluster.nodeId", .string), ("cluster.advertisedURL", .string),
        ("auth.mode", .string), ("auth.secretFile", .string), ("auth.allowedOrigins", .stringArray),
        ("tls.certFile", .string), ("tls.keyFile", .string),
    ]

    /// Reads the settings: flags over `PEOPLEKEEPER_…` environment variables over the YAML file over the
    /// defaults. Throws a `ConfigProblem` naming the key for a missing or malformed file, an unknown
    /// key, a value of the wrong type, or a value out of range.
    static func load(file: String?, flags: [String: ConfigContent], environment: [String: String]) async throws -> HubSettings {
        var providers: [any ConfigProvider] = []
        let flagValues = Dictionary(uniqueKeysWithValues: flags.map {
            (AbsoluteConfigKey(ConfigKey($0.key)), ConfigValue($0.value, isSecret: false))
        })
        providers.append(InMemoryProvider(name: "flags", values: flagValues))
        let prefixed = environment.filter { $0.key.hasPrefix("PEOPLEKEEPER_") }
        let knownVariables = Set(keys.map { environmentName(of: $0.key) })
        unknownVariables = prefixed.keys.filter { !knownVariables.contains($0) && !ignoredVariables.contains($0) }.sorted()
        providers.append(EnvironmentVariablesProvider(environmentVariables: prefixed).prefixKeys(with: "peoplekeeper"))
        if let file {
            try checkKnownKeys(in: file)
            do {
                providers.append(try await FileProvider<YAMLSnapshot>(filePath: FilePath(file)))
            } catch {
                throw ConfigProblem(key: file, problem: "cannot read the YAML file: \(error)")
            }
        }
        providers.append(InMemoryProvider(name: "defaults", values: HubSettings().defaultValues))
        return try HubSettings(reader: ConfigReader(providers: providers))
    }

    /// `PEOPLEKEEPER_…` variables that name no key (reported as warnings at start: a typo is not silent).
    nonisolated(unsafe) static var unknownVariables: [String] = []

    /// Variables with the prefix that are not settings (the test harness's binary paths and soak knobs).
    /// (`PEOPLEKEEPER_AUTH_SECRET` is read on its own: the token secret, which no file may hold.)
    static let ignoredVariables: Set<String> = ["PEOPLEKEEPER_HUB_BIN", "PEOPLEKEEPER_CLIENT_BIN", "PEOPLEKEEPER_AUTH_SECRET",
                                                "PEOPLEKEEPER_SOAK_SECONDS", "PEOPLEKEEPER_SOAK_SEED"]

    /// The environment variable for a key: `limits.maxMessageBytes` → `PEOPLEKEEPER_LIMITS_MAX_MESSAGE_BYTES`.
    static func environmentName(of key: String) -> String {
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

    /// The defaults as config values (the last provider, so every key has a value).
    var defaultValues: [AbsoluteConfigKey: ConfigValue] {
        let contents: [String: ConfigContent] = [
            "listen.host": .string(host), "listen.port": .int(port), "web.root": .string(webRoot),
            "rooms.seed": .string(seed), "rooms.tagBlockSize": .int(tagBlockSize),
            "rooms.keptRevisions": .int(keptRevisions), "rooms.repliesKept": .int(repliesKept),
            "rooms.keptSessions": .int(keptSessions), "rooms.unloadAfterSeconds": .int(unloadAfterSeconds),
            "rooms.maxCatchUp": .int(maxCatchUp),
            "undo.depth": .int(undoDepth), "undo.conflicts": .string(undoConflicts.rawValue),
            "undo.cascade": .bool(undoCascade), "undo.coalesceMillis": .int(coalesceMillis),
            "limits.maxMessageBytes": .int(maxMessageBytes), "limits.maxConnections": .int(maxConnections),
            "limits.maxConnectionsPerIP": .int(maxConnectionsPerIP),
            "limits.maxRooms": .int(maxRooms), "limits.maxPeoplePerRoom": .int(maxPeoplePerRoom),
            "limits.opsPerSecond": .int(opsPerSecond), "limits.helloTimeoutSeconds": .int(helloTimeoutSeconds),
            "limits.sendQueueMessages": .int(sendQueueMessages), "limits.sendQueueBytes": .int(sendQueueBytes),
            "transport.permessageDeflate": .bool(permessageDeflate),
            "transport.pingIntervalSeconds": .int(pingIntervalSeconds),
            "logging.level": .string(logLevel.rawValue), "logging.format": .string(logFormat.rawValue),
            "metrics.enabled": .bool(metricsEnabled),
            "storage.kind": .string(storageKind.rawValue), "storage.path": .string(storagePath),
            "storage.snapshotEvery": .int(snapshotEvery), "storage.postgresURL": .string(postgresURL),
            "storage.postgresPasswordFile": .string(postgresPasswordFile),
            "cluster.nodeId": .string(nodeID), "cluster.advertisedURL": .string(advertisedURL),
            "auth.mode": .string(authMode.rawValue), "auth.secretFile": .string(authSecretFile),
            "auth.allowedOrigins": .stringArray(allowedOrigins),
            "tls.certFile": .string(tlsCertFile), "tls.keyFile": .string(tlsKeyFile),
        ]
        return Dictionary(uniqueKeysWithValues: contents.map {
            (AbsoluteConfigKey(ConfigKey($0.key)), ConfigValue($0.value, isSecret: false))
        })
    }

    init(reader: ConfigReader) throws {
        func int(_ key: String, _ range: ClosedRange<Int>) throws -> Int {
            let value: Int
            do { value = try reader.requiredInt(forKey: ConfigKey(key)) } catch {
                throw ConfigProblem(key: key, problem: "must be an integer (\(error))")
            }
            guard range.contains(value) else {
                let upper = range.upperBound == Int.max ? "" : " and at most \(range.upperBound)"
                throw ConfigProblem(key: key, problem: "\(value) is out of range: must be at least \(range.lowerBound)\(upper)")
            }
            return value
        }
        func string(_ key: String) throws -> String {
            do { return try reader.requiredString(forKey: ConfigKey(key)) } catch {
                throw ConfigProblem(key: key, problem: "must be a string (\(error))")
            }
        }
        func strings(_ key: String) throws -> [String] {
            do { return try reader.requiredStringArray(forKey: ConfigKey(key)) } catch {
                throw ConfigProblem(key: key, problem: "must be a list of strings (\(error))")
            }
        }
        func bool(_ key: String) throws -> Bool {
            do { return try reader.requiredBool(forKey: ConfigKey(key)) } catch {
                throw ConfigProblem(key: key, problem: "must be true or false (\(error))")
            }
        }
        func choice<T: RawRepresentable & CaseIterable>(_ key: String, _: T.Type) throws -> T where T.RawValue == String {
            let raw = try string(key)
            guard let value = T(rawValue: raw) else {
                throw ConfigProblem(key: key, problem: "'\(raw)' is not one of \(T.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return value
        }
        self.init()
        host = try string("listen.host")
        port = try int("listen.port", 0...65535)
        webRoot = try string("web.root")
        seed = try string("rooms.seed")
        tagBlockSize = try int("rooms.tagBlockSize", 1...1_000_000)
        keptRevisions = try int("rooms.keptRevisions", 0...Int.max)
        repliesKept = try int("rooms.repliesKept", 1...100_000)
        keptSessions = try int("rooms.keptSessions", 0...1_000_000)
        unloadAfterSeconds = try int("rooms.unloadAfterSeconds", 1...604_800)
        undoDepth = try int("undo.depth", 0...100_000)
        undoConflicts = try choice("undo.conflicts", UndoPolicy.Conflicts.self)
        undoCascade = try bool("undo.cascade")
        coalesceMillis = try int("undo.coalesceMillis", 0...3_600_000)
        maxMessageBytes = try int("limits.maxMessageBytes", 1024...(64 << 20))
        maxConnections = try int("limits.maxConnections", 1...1_000_000)
        maxConnectionsPerIP = try int("limits.maxConnectionsPerIP", 0...1_000_000)
        maxRooms = try int("limits.maxRooms", 1...1_000_000)
        maxPeoplePerRoom = try int("limits.maxPeoplePerRoom", 0...1_000_000)
        opsPerSecond = try int("limits.opsPerSecond", 1...1_000_000)
        helloTimeoutSeconds = try int("limits.helloTimeoutSeconds", 1...3600)
        sendQueueMessages = try int("limits.sendQueueMessages", 1...1_000_000)
        sendQueueBytes = try int("limits.sendQueueBytes", 1024...(1 << 30))
        // A catch-up is queued at once behind the welcome: it must leave room in the send queue.
        maxCatchUp = min(try int("rooms.maxCatchUp", 0...1_000_000), max(0, sendQueueMessages - 64))
        permessageDeflate = try bool("transport.permessageDeflate")
        pingIntervalSeconds = try int("transport.pingIntervalSeconds", 0...3600)
        logLevel = try choice("logging.level", Logger.Level.self)
        logFormat = try choice("logging.format", LogFormat.self)
        metricsEnabled = try bool("metrics.enabled")
        storageKind = try choice("storage.kind", StorageKind.self)
        storagePath = try string("storage.path")
        snapshotEvery = try int("storage.snapshotEvery", 1...100_000_000)
        postgresURL = try string("storage.postgresURL")
        postgresPasswordFile = try string("storage.postgresPasswordFile")
        authMode = try choice("auth.mode", AuthMode.self)
        authSecretFile = try string("auth.secretFile")
        allowedOrigins = try strings("auth.allowedOrigins")
        tlsCertFile = try string("tls.certFile")
        tlsKeyFile = try string("tls.keyFile")
        if tlsCertFile.isEmpty != tlsKeyFile.isEmpty {
            throw ConfigProblem(key: tlsCertFile.isEmpty ? "tls.certFile" : "tls.keyFile",
                                problem: "TLS needs both tls.certFile and tls.keyFile")
        }
        for (key, path) in [("tls.certFile", tlsCertFile), ("tls.keyFile", tlsKeyFile)] where !path.isEmpty {
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw ConfigProblem(key: key, problem: "cannot read \(path)")
            }
        }
        for origin in allowedOrigins where origin != "*" && !(origin.hasPrefix("http://") || origin.hasPrefix("https://")) {
            throw ConfigProblem(key: "auth.allowedOrigins", problem: "'\(origin)' is not an origin: scheme://host[:port], or *")
        }
        nodeID = try string("cluster.nodeId")
        advertisedURL = try string("cluster.advertisedURL")
        if !advertisedURL.isEmpty, !(advertisedURL.hasPrefix("ws://") || advertisedURL.hasPrefix("wss://")) {
            throw ConfigProblem(key: "cluster.advertisedURL", problem: "must start with ws:// or wss:// (\(advertisedURL))")
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
        let known = Set(keys.map(\.key))
        let sections = Set(keys.map { String($0.key.split(separator: ".")[0]) })
        for (sectionNode, value) in top {
            let section = sectionNode.string ?? "\(sectionNode)"
            guard sections.contains(section) else {
                throw ConfigProblem(key: section, problem: "unknown section (known: \(sections.sorted().joined(separator: ", ")))")
            }
            guard case .mapping(let entries) = value else {
                throw ConfigProblem(key: section, problem: "must be a mapping of keys")
            }
            for (keyNode, _) in entries {
                let key = "\(section).\(keyNode.string ?? "\(keyNode)")"
                guard known.contains(key) else {
                    let siblings = keys.map(\.key).filter { $0.hasPrefix(section + ".") }
                        .map { String($0.dropFirst(section.count + 1)) }
                    throw ConfigProblem(key: key, problem: "unknown key (known in \(section): \(siblings.joined(separator: ", ")))")
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
            maxPeople: maxPeoplePerRoom, keptSessions: keptSessions, maxCatchUp: maxCatchUp)
    }

    /// The people new rooms start with: `tutorial`, `empty`, or a JSON file with an array of people.
    func loadSeed() throws -> PeopleModel {
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
