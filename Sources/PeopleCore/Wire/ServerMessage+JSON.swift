extension HistorySummary {
    var members: [JSON.Member] {
        var m = [JSON.Member("canUndo", .bool(canUndo)), JSON.Member("canRedo", .bool(canRedo))]
        if let undoLabel { m.append(.init("undoLabel", .string(undoLabel))) }
        if let redoLabel { m.append(.init("redoLabel", .string(redoLabel))) }
        return m
    }

    init(fields f: WireFields) throws(ProtocolError) {
        self.init(canUndo: try f.bool("canUndo"), canRedo: try f.bool("canRedo"),
                  undoLabel: try f.optionalString("undoLabel"), redoLabel: try f.optionalString("redoLabel"))
    }
}

extension PresenceEntry {
    var json: JSON {
        .object(["user": .string(user), "viewing": viewing.map(JSON.int), "field": field.map(JSON.string)])
    }

    init(json: JSON) throws(ProtocolError) {
        let f = try WireFields(json, context: "presence entry", code: .badMessage)
        self.init(user: try f.string("user"), viewing: try f.optionalInt("viewing"), field: try f.optionalString("field"))
    }
}

extension ServerMessage {
    /// The message's wire form; encode once and share the bytes among receivers.
    public var json: JSON {
        switch self {
        case .welcome(let w):
            var m: [JSON.Member] = [
                .init("type", .string("welcome")), .init("session", .string(w.session)), .init("user", .string(w.user)),
                .init("role", .string(w.role.rawValue)), .init("rev", .int(w.rev)),
            ]
            if let time = w.time { m.append(.init("time", .int(Int(time)))) }
            if w.reset { m.append(.init("reset", .bool(true))) }
            if let people = w.people { m.append(.init("people", .array(people.map(\.json)))) }
            m.append(.init("tags", .object(["from": .int(w.tags.from), "to": .int(w.tags.to)])))
            m.append(.init("history", .object(w.history.members)))
            m.append(.init("presence", .array(w.presence.map(\.json))))
            return .object(m)
        case .ack(let a):
            var m: [JSON.Member] = [.init("type", .string("ack")), .init("seq", .int(a.seq)), .init("rev", .int(a.rev))]
            if let time = a.time { m.append(.init("time", .int(Int(time)))) }
            m.append(.init("ops", .array(a.ops.map(\.json))))
            if !a.noop.isEmpty { m.append(.init("noop", .array(a.noop.map(\.json)))) }
            return .object(m)
        case .ops(let o):
            return .object(["type": .string("ops"), "rev": .int(o.rev), "time": o.time.map { .int(Int($0)) },
                            "author": .string(o.author),
                            "kind": .string(o.kind.rawValue), "ops": .array(o.ops.map(\.json)),
                            "label": o.label.map(JSON.string), "seq": o.seq.map(JSON.int)])
        case .undone(let r): return Self.undoJSON("undone", r)
        case .redone(let r): return Self.undoJSON("redone", r)
        case .history(let h): return .object([.init("type", .string("history"))] + h.members)
        case .presence(let users): return .object(["type": .string("presence"), "users": .array(users.map(\.json))])
        case .error(let e):
            return .object(["type": .string("error"), "seq": e.seq.map(JSON.int), "code": .string(e.code.rawValue),
                            "message": .string(e.message), "fatal": e.fatal ? .bool(true) : nil])
        case .redirect(let url): return .object(["type": .string("redirect"), "url": .string(url)])
        case .pong(let seq, let time):
            return .object(["type": .string("pong"), "seq": seq.map(JSON.int), "time": time.map { .int(Int($0)) }])
        case .tags(let block):
            return .object(["type": .string("tags"), "from": .int(block.from), "to": .int(block.to)])
        case .restored(let r):
            return .object(["type": .string("restored"), "seq": .int(r.seq), "rev": r.rev.map(JSON.int),
                            "time": r.time.map { .int(Int($0)) }, "ops": .array(r.ops.map(\.json)),
                            "label": .string(r.label)])
        case .log(let page):
            return .object(["type": .string("log"), "seq": page.seq.map(JSON.int),
                            "entries": .array(page.entries.map(\.json)), "more": .bool(page.more)])
        case .blame(let b):
            return .object([.init("type", .string("blame"))] + (b.seq.map { [JSON.Member("seq", .int($0))] } ?? [])
                           + [.init("tag", .int(b.tag))] + b.record.members)
        }
    }

    private static func undoJSON(_ type: String, _ r: UndoResult) -> JSON {
        .object(["type": .string(type), "seq": .int(r.seq), "rev": r.rev.map(JSON.int),
                 "time": r.time.map { .int(Int($0)) }, "ops": .array(r.ops.map(\.json)),
                 "label": r.label.map(JSON.string), "skipped": .array(r.skipped.map(\.json)),
                 "entry": r.entry.map(JSON.int)])
    }

    /// Decodes a hub frame (the client side). Errors are `bad-json` / `bad-message`.
    public static func decode(_ frame: some Collection<UInt8>) -> Result<ServerMessage, ProtocolError> {
        let json: JSON
        do { json = try JSON.parse(frame) } catch { return .failure(ProtocolError(.badJSON, error.description)) }
        do { return .success(try ServerMessage(json: json)) } catch { return .failure(error) }
    }

    public init(json: JSON) throws(ProtocolError) {
        let f = try WireFields(json, context: "message", code: .badMessage)
        func diffs(_ key: String) throws(ProtocolError) -> [Diff] {
            var out: [Diff] = []
            for op in try f.array(key) { out.append(try Diff(json: op)) }
            return out
        }
        func reports(_ key: String) throws(ProtocolError) -> [SkipReport] {
            var out: [SkipReport] = []
            for r in try f.optionalArray(key) ?? [] { out.append(try SkipReport(json: r)) }
            return out
        }
        func block(_ g: WireFields) throws(ProtocolError) -> TagBlock { TagBlock(from: try g.int("from"), to: try g.int("to")) }
        let type = try f.string("type")
        switch type {
        case "welcome":
            let roleText = try f.string("role")
            guard let role = Role(rawValue: roleText) else { throw f.fail("unknown role '\(roleText)'") }
            var people: [Person]?
            if let list = try f.optionalArray("people") {
                var out: [Person] = []
                for p in list { out.append(try Person(json: p, code: .badMessage)) }
                people = out
            }
            guard let tags = f.raw("tags"), let history = f.raw("history") else { throw f.fail("welcome is incomplete") }
            var presence: [PresenceEntry] = []
            for p in try f.optionalArray("presence") ?? [] { presence.append(try PresenceEntry(json: p)) }
            self = .welcome(Welcome(
                session: try f.string("session"), user: try f.string("user"), role: role, rev: try f.int("rev"),
                time: try f.optionalTime("time"), reset: try f.optionalBool("reset") ?? false, people: people, tags: try block(WireFields(tags, context: "tags", code: .badMessage)),
                history: try HistorySummary(fields: WireFields(history, context: "history", code: .badMessage)),
                presence: presence))
        case "ack":
            self = .ack(Ack(seq: try f.int("seq"), rev: try f.int("rev"), time: try f.optionalTime("time"),
                            ops: try diffs("ops"), noop: try reports("noop")))
        case "ops":
            self = .ops(Ops(rev: try f.int("rev"), time: try f.optionalTime("time"), author: try f.string("author"),
                            kind: try f.revisionKind("kind"), ops: try diffs("ops"),
                            label: try f.optionalString("label"), seq: try f.optionalInt("seq")))
        case "undone", "redone":
            let result = UndoResult(seq: try f.int("seq"), rev: try f.optionalInt("rev"), time: try f.optionalTime("time"),
                                    ops: try diffs("ops"), label: try f.optionalString("label"),
                                    skipped: try reports("skipped"), entry: try f.optionalInt("entry"))
            self = type == "undone" ? .undone(result) : .redone(result)
        case "restored":
            self = .restored(Restored(seq: try f.int("seq"), rev: try f.optionalInt("rev"), time: try f.optionalTime("time"),
                                      ops: try diffs("ops"), label: try f.string("label")))
        case "log":
            var entries: [LogEntry] = []
            for e in try f.array("entries") { entries.append(try LogEntry(json: e)) }
            self = .log(LogPage(seq: try f.optionalInt("seq"), entries: entries, more: try f.bool("more")))
        case "blame":
            self = .blame(Blame(seq: try f.optionalInt("seq"), tag: try f.int("tag"), record: try PersonBlame(fields: f)))
        case "history":
            self = .history(try HistorySummary(fields: f))
        case "presence":
            var users: [PresenceEntry] = []
            for p in try f.array("users") { users.append(try PresenceEntry(json: p)) }
            self = .presence(users)
        case "error":
            let codeText = try f.string("code")
            guard let code = ErrorCode(rawValue: codeText) else { throw f.fail("unknown code '\(codeText)'") }
            self = .error(ErrorMessage(seq: try f.optionalInt("seq"), code: code, message: try f.string("message")))
        case "redirect":
            self = .redirect(url: try f.string("url"))
        case "pong":
            self = .pong(seq: try f.optionalInt("seq"), time: try f.optionalTime("time"))
        case "tags":
            self = .tags(try block(f))
        default:
            throw f.fail("unknown type '\(type)'")
        }
    }
}

extension WireFields {
    /// An optional time (milliseconds since the epoch).
    func optionalTime(_ key: String) throws(ProtocolError) -> Int64? {
        try optionalInt(key).map(Int64.init)
    }

    func revisionKind(_ key: String) throws(ProtocolError) -> RevisionKind {
        let text = try string(key)
        guard let kind = RevisionKind(rawValue: text) else { throw fail("unknown kind '\(text)'") }
        return kind
    }
}

extension ServerMessage.LogEntry {
    public var json: JSON {
        .object(["rev": .int(rev), "time": time.map { .int(Int($0)) }, "author": .string(author),
                 "kind": .string(kind.rawValue), "label": label.map(JSON.string), "ops": .array(ops.map(\.json)),
                 "entry": entry.map(JSON.int),
                 "removed": removed.isEmpty ? nil
                    : .object(removed.sorted { $0.key < $1.key }.map { .init(String($0.key), .string($0.value)) })])
    }

    init(json: JSON) throws(ProtocolError) {
        let f = try WireFields(json, context: "log entry", code: .badMessage)
        var ops: [Diff] = []
        for op in try f.array("ops") { ops.append(try Diff(json: op)) }
        // `removed` is this hub's addition: read when it is there and well formed, else left out.
        var removed: [Tag: String] = [:]
        if case .object(let members)? = json["removed"] {
            for member in members {
                if let tag = Tag(member.key), case .string(let name) = member.value { removed[tag] = name }
            }
        }
        self.init(rev: try f.int("rev"), time: try f.optionalTime("time"), author: try f.string("author"),
                  kind: try f.revisionKind("kind"), label: try f.optionalString("label"), ops: ops,
                  entry: try f.optionalInt("entry"), removed: removed)
    }
}

extension Writer {
    /// `{"user", "rev", "time"?}`; the seed's writer has `"user": null`.
    public var json: JSON {
        .object([.init("user", user.map(JSON.string) ?? .null), .init("rev", .int(rev))]
                + (time.map { [JSON.Member("time", .int(Int($0)))] } ?? []))
    }

    init(json: JSON) throws(ProtocolError) {
        let f = try WireFields(json, context: "writer", code: .badMessage)
        self.init(user: try f.optionalString("user"), rev: try f.int("rev"), time: try f.optionalTime("time"))
    }
}

extension PersonBlame {
    /// `"created"` and `"fields"` (scalars and `position`, then the `facialHair` and `preference` objects).
    public var members: [JSON.Member] {
        var fields: [JSON.Member] = BlameField.allCases.compactMap { field in
            self.fields[field].map { JSON.Member(field.rawValue, $0.json) }
        }
        fields.append(.init("facialHair", .object(FacialHairStyle.allCases.compactMap { style in
            facialHair[style].map { JSON.Member(style.rawValue, $0.json) }
        })))
        fields.append(.init("preference", .object(Topic.allCases.compactMap { topic in
            preference[topic].map { JSON.Member(topic.rawValue, $0.json) }
        })))
        return [.init("created", created.json), .init("fields", .object(fields))]
    }

    init(fields f: WireFields) throws(ProtocolError) {
        let created = try Writer(json: f.raw("created") ?? .null)
        let g = try WireFields(f.raw("fields") ?? .null, context: "fields", code: .badMessage)
        var fields: [BlameField: Writer] = [:]
        for field in BlameField.allCases {
            if let w = g.raw(field.rawValue) { fields[field] = try Writer(json: w) }
        }
        var facialHair: [FacialHairStyle: Writer] = [:]
        if case .object(let members)? = g.raw("facialHair") {
            for member in members {
                guard let style = FacialHairStyle(rawValue: member.key) else { throw g.fail("unknown style \(member.key)") }
                facialHair[style] = try Writer(json: member.value)
            }
        }
        var preference: [Topic: Writer] = [:]
        if case .object(let members)? = g.raw("preference") {
            for member in members {
                guard let topic = Topic(rawValue: member.key) else { throw g.fail("unknown topic \(member.key)") }
                preference[topic] = try Writer(json: member.value)
            }
        }
        self.init(created: created, fields: fields, facialHair: facialHair, preference: preference)
    }
}
