extension ClientMessage {
    /// Decodes one text frame, following PROTOCOL.md's parse order: not JSON → `bad-json`; wrong
    /// envelope → `bad-message`; `hello` with another protocol integer → `unsupported-protocol`;
    /// anything wrong inside `ops` → `invalid-op`. Whether a frame before `hello` is `not-hello` is the
    /// connection's call (see `messageType(of:)`).
    public static func decode(_ frame: some Collection<UInt8>) -> Result<ClientMessage, ProtocolError> {
        let json: JSON
        do { json = try JSON.parse(frame) } catch { return .failure(ProtocolError(.badJSON, error.description)) }
        do { return .success(try ClientMessage(json: json)) } catch { return .failure(error) }
    }

    /// The `type` of a parsed frame, if it has one.
    public static func messageType(of json: JSON) -> String? {
        if case .string(let type)? = json["type"] { type } else { nil }
    }

    public init(json: JSON) throws(ProtocolError) {
        let f = try WireFields(json, context: "message", code: .badMessage)
        let type = try f.string("type")
        switch type {
        case "hello":
            // Read like every other integer (1.0 is 1): JSON does not tell the two apart.
            guard let version = try f.optionalInt("protocol") else { throw f.fail("hello needs `protocol`") }
            guard version == 1 else {
                throw ProtocolError(.unsupportedProtocol, "protocol \(version) is not supported; this hub speaks 1")
            }
            self = .hello(Hello(protocolVersion: version, user: try f.string("user"),
                                token: try f.optionalString("token"),
                                client: try f.optionalString("client", maxBytes: ClientMessage.maxTextBytes),
                                resume: try f.optionalString("resume"), since: try f.optionalInt("since"),
                                sinceTime: try f.optionalTime("sinceTime")))
        case "submit":
            let seq = try f.int("seq")
            let base = try f.int("base")
            let ops = try f.array("ops")
            let label = try f.optionalString("label", maxBytes: ClientMessage.maxTextBytes)
            let coalesce = try f.optionalString("coalesce", maxBytes: ClientMessage.maxTextBytes)
            var diffs: [Diff] = []
            diffs.reserveCapacity(ops.count)
            for (index, op) in ops.enumerated() {
                do { diffs.append(try Diff(json: op)) } catch {
                    throw ProtocolError(.invalidOp, "ops[\(index)]: \(error.message)")
                }
            }
            self = .submit(Submit(seq: seq, base: base, ops: diffs, label: label, coalesce: coalesce))
        case "undo", "redo":
            let request = UndoRequest(seq: try f.int("seq"), scope: try f.optionalInt("scope"),
                                      entry: try f.optionalInt("entry"))
            if request.entry != nil, type == "redo" { throw f.fail("redo takes no `entry`") }
            if request.entry != nil, request.scope != nil { throw f.fail("undo takes `entry` or `scope`, not both") }
            self = type == "undo" ? .undo(request) : .redo(request)
        case "restore":
            self = .restore(RestoreRequest(seq: try f.int("seq"), rev: try f.int("rev"), label: try f.optionalString("label", maxBytes: ClientMessage.maxTextBytes)))
        case "log":
            self = .log(LogRequest(seq: try f.optionalInt("seq"), before: try f.optionalInt("before"),
                                   limit: try f.optionalInt("limit") ?? LogRequest.defaultLimit, tag: try f.optionalInt("tag")))
        case "blame":
            self = .blame(BlameRequest(seq: try f.optionalInt("seq"), tag: try f.int("tag")))
        case "presence":
            self = .presence(PresenceUpdate(viewing: try f.optionalInt("viewing"), field: try f.optionalString("field", maxBytes: ClientMessage.maxTextBytes)))
        case "ping":
            self = .ping(seq: try f.optionalInt("seq"))
        case "tags":
            self = .tags
        default:
            throw f.fail("unknown type '\(type)'")
        }
    }

    public var json: JSON {
        switch self {
        case .hello(let h):
            .object(["type": .string("hello"), "protocol": .int(h.protocolVersion), "user": .string(h.user),
                     "token": h.token.map(JSON.string), "client": h.client.map(JSON.string),
                     "resume": h.resume.map(JSON.string), "since": h.since.map(JSON.int),
                     "sinceTime": h.sinceTime.map { .int(Int($0)) }])
        case .submit(let s):
            .object(["type": .string("submit"), "seq": .int(s.seq), "base": .int(s.base),
                     "ops": .array(s.ops.map(\.json)), "label": s.label.map(JSON.string),
                     "coalesce": s.coalesce.map(JSON.string)])
        case .undo(let u):
            .object(["type": .string("undo"), "seq": .int(u.seq), "scope": u.scope.map(JSON.int),
                     "entry": u.entry.map(JSON.int)])
        case .redo(let u):
            .object(["type": .string("redo"), "seq": .int(u.seq), "scope": u.scope.map(JSON.int)])
        case .presence(let p):
            .object(["type": .string("presence"), "viewing": p.viewing.map(JSON.int), "field": p.field.map(JSON.string)])
        case .ping(let seq):
            .object(["type": .string("ping"), "seq": seq.map(JSON.int)])
        case .tags:
            .object(["type": .string("tags")])
        case .restore(let r):
            .object(["type": .string("restore"), "seq": .int(r.seq), "rev": .int(r.rev), "label": r.label.map(JSON.string)])
        case .log(let l):
            .object(["type": .string("log"), "seq": l.seq.map(JSON.int), "before": l.before.map(JSON.int),
                     "limit": .int(l.limit), "tag": l.tag.map(JSON.int)])
        case .blame(let b):
            .object(["type": .string("blame"), "seq": b.seq.map(JSON.int), "tag": .int(b.tag)])
        }
    }
}
