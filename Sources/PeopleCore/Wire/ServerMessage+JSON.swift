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
            if let people = w.people { m.append(.init("people", .array(people.map(\.json)))) }
            m.append(.init("tags", .object(["from": .int(w.tags.from), "to": .int(w.tags.to)])))
            m.append(.init("history", .object(w.history.members)))
            m.append(.init("presence", .array(w.presence.map(\.json))))
            return .object(m)
        case .ack(let a):
            var m: [JSON.Member] = [.init("type", .string("ack")), .init("seq", .int(a.seq)), .init("rev", .int(a.rev)),
                                    .init("ops", .array(a.ops.map(\.json)))]
            if !a.noop.isEmpty { m.append(.init("noop", .array(a.noop.map(\.json)))) }
            return .object(m)
        case .ops(let o):
            return .object(["type": .string("ops"), "rev": .int(o.rev), "author": .string(o.author),
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
        case .pong(let seq): return .object(["type": .string("pong"), "seq": seq.map(JSON.int)])
        case .tags(let block):
            return .object(["type": .string("tags"), "from": .int(block.from), "to": .int(block.to)])
        }
    }

    private static func undoJSON(_ type: String, _ r: UndoResult) -> JSON {
        .object(["type": .string(type), "seq": .int(r.seq), "rev": r.rev.map(JSON.int),
                 "ops": .array(r.ops.map(\.json)), "label": r.label.map(JSON.string),
                 "skipped": .array(r.skipped.map(\.json))])
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
                people: people, tags: try block(WireFields(tags, context: "tags", code: .badMessage)),
                history: try HistorySummary(fields: WireFields(history, context: "history", code: .badMessage)),
                presence: presence))
        case "ack":
            self = .ack(Ack(seq: try f.int("seq"), rev: try f.int("rev"), ops: try diffs("ops"), noop: try reports("noop")))
        case "ops":
            let kindText = try f.string("kind")
            guard let kind = RevisionKind(rawValue: kindText) else { throw f.fail("unknown kind '\(kindText)'") }
            self = .ops(Ops(rev: try f.int("rev"), author: try f.string("author"), kind: kind, ops: try diffs("ops"),
                            label: try f.optionalString("label"), seq: try f.optionalInt("seq")))
        case "undone", "redone":
            let result = UndoResult(seq: try f.int("seq"), rev: try f.optionalInt("rev"), ops: try diffs("ops"),
                                    label: try f.optionalString("label"), skipped: try reports("skipped"))
            self = type == "undone" ? .undone(result) : .redone(result)
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
            self = .pong(seq: try f.optionalInt("seq"))
        case "tags":
            self = .tags(try block(f))
        default:
            throw f.fail("unknown type '\(type)'")
        }
    }
}
