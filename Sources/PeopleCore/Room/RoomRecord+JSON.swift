extension Revision {
    /// The stored form of a revision: who, how, when, and every diff as applied with its inverse.
    public var json: JSON {
        var members: [JSON.Member] = [
            .init("rev", .int(number)), .init("author", .string(author)), .init("kind", .string(kind.rawValue)),
        ]
        if let label { members.append(.init("label", .string(label))) }
        members.append(.init("ts", .int(Int(timestamp))))
        if let session { members.append(.init("session", .string(session))) }
        if let seq { members.append(.init("seq", .int(seq))) }
        members.append(.init("applied", .array(applied.map(\.json))))
        if inverts.contains(where: { $0 != nil }) {
            members.append(.init("inverts", .array(inverts.map { ref in
                ref.map { .array([.int($0.revision), .int($0.index)]) } ?? .null
            })))
        }
        if let importedAt { members.append(.init("imported", .int(Int(importedAt)))) }
        return .object(members)
    }

    public init(json: JSON) throws(ProtocolError) {
        let f = try WireFields(json, context: "revision", code: .serverError)
        let kindText = try f.string("kind")
        guard let kind = RevisionKind(rawValue: kindText) else { throw f.fail("unknown kind \(kindText)") }
        let applied = try AppliedDiff.list(f.array("applied"))
        var inverts: [DiffRef?]?
        if let list = try f.optionalArray("inverts") {
            guard list.count == applied.count else { throw f.fail("inverts and applied differ in length") }
            inverts = try list.map { (item: JSON) throws(ProtocolError) -> DiffRef? in
                switch item {
                case .null: return nil
                case .array(let pair) where pair.count == 2:
                    guard case .int(let revision) = pair[0], case .int(let index) = pair[1] else { fallthrough }
                    return DiffRef(revision: revision, index: index)
                default: throw f.fail("an inverts entry must be null or [revision, index]")
                }
            }
        }
        self.init(number: try f.int("rev"), author: try f.string("author"), kind: kind, label: try f.optionalString("label"),
                  applied: applied, timestamp: Int64(try f.int("ts")), session: try f.optionalString("session"),
                  seq: try f.optionalInt("seq"), inverts: inverts, importedAt: try f.optionalInt("imported").map(Int64.init))
    }
}

extension RoomRecord {
    /// The record's stored form. A reply that repeats its revision's diffs leaves them out (they are put
    /// back on decoding), so a revision's diffs are stored once.
    public var json: JSON {
        switch self {
        case .opened(let session, let user, let role, let client, let tags):
            return .object(["t": .string("opened"), "session": .string(session), "user": .string(user),
                            "role": .string(role.rawValue), "client": client.map(JSON.string), "tags": tags.json])
        case .tags(let session, let block):
            return .object(["t": .string("tags"), "session": .string(session), "tags": block.json])
        case .forgotten(let session):
            return .object(["t": .string("forgotten"), "session": .string(session)])
        case .imported(let revision):
            return .object(["t": .string("imported"), "revision": revision.json])
        case .answered(let a):
            var reply = a.reply.json
            if let revision = a.revision, a.reply.ops == revision.diffs, case .object(let members) = reply {
                reply = .object(members.filter { $0.key != "ops" })
            }
            let effect: JSON
            switch a.effect {
            case .none: effect = .null
            case .edit(let key): effect = .object(["edit": .bool(true), "coalesce": key.map(JSON.string)])
            case .revert(let redo, let consumed):
                effect = .object(["revert": .string(redo ? "redo" : "undo"), "consumed": .array(consumed.map(JSON.int))])
            }
            return .object(["t": .string("answered"), "session": .string(a.session), "seq": .int(a.seq),
                            "reply": reply, "revision": a.revision?.json, "effect": effect,
                            "key": a.key.map(JSON.string), "keyTime": a.keyTime.map { .int(Int($0)) }])
        }
    }

    public init(json: JSON) throws(ProtocolError) {
        let f = try WireFields(json, context: "record", code: .serverError)
        let type = try f.string("t")
        switch type {
        case "opened":
            let roleText = try f.string("role")
            guard let role = Role(rawValue: roleText) else { throw f.fail("unknown role \(roleText)") }
            self = .opened(session: try f.string("session"), user: try f.string("user"), role: role,
                           client: try f.optionalString("client"), tags: try Room.block(f.raw("tags") ?? .null))
        case "tags":
            self = .tags(session: try f.string("session"), block: try Room.block(f.raw("tags") ?? .null))
        case "forgotten":
            self = .forgotten(session: try f.string("session"))
        case "answered":
            let revision = try f.raw("revision").map { (json: JSON) throws(ProtocolError) in try Revision(json: json) }
            guard var reply = f.raw("reply") else { throw f.fail("`reply` is missing") }
            if let revision, case .object(var members) = reply, !members.contains(where: { $0.key == "ops" }) {
                members.append(.init("ops", .array(revision.diffs.map(\.json))))
                reply = .object(members)
            }
            var effect = StackEffect.none
            if let e = f.raw("effect") {
                let g = try WireFields(e, context: "effect", code: .serverError)
                if let stack = try g.optionalString("revert") {
                    var consumed: [Int] = []
                    for index in try g.array("consumed") {
                        guard case .int(let n) = index else { throw g.fail("consumed must hold integers") }
                        consumed.append(n)
                    }
                    effect = .revert(redo: stack == "redo", consumed: consumed)
                } else {
                    effect = .edit(coalesce: try g.optionalString("coalesce"))
                }
            }
            var answer = Answer(session: try f.string("session"), seq: try f.int("seq"),
                                reply: try ServerMessage(json: reply), revision: revision, effect: effect)
            answer.key = try f.optionalString("key")
            answer.keyTime = try f.optionalInt("keyTime").map(Int64.init)
            self = .answered(answer)
        case "imported":
            self = .imported(try Revision(json: f.raw("revision") ?? .null))
        default:
            throw f.fail("unknown record type \(type)")
        }
    }
}

extension ServerMessage {
    /// The diffs an `ack`, `undone` or `redone` carries.
    var ops: [Diff]? {
        switch self {
        case .ack(let a): a.ops
        case .undone(let r), .redone(let r): r.ops
        default: nil
        }
    }
}
