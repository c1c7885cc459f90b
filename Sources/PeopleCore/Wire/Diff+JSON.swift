extension Person {
    /// The person's wire form: every field, sets in vocabulary order.
    public var json: JSON {
        .object([
            "tag": .int(tag), "name": .string(name), "hairColor": .string(hairColor.rawValue),
            "hairLength": .string(hairLength.rawValue), "eyeColor": .string(eyeColor.rawValue),
            "glasses": .bool(glasses),
            "facialHair": .array(facialHairInOrder.map { .string($0.rawValue) }),
            "likes": .array(likes.map { .string($0.rawValue) }),
            "dislikes": .array(dislikes.map { .string($0.rawValue) }),
        ])
    }

    /// Reads a person; every field is required, elements listed once, no topic in both sets.
    public init(json: JSON, code: ErrorCode = .invalidOp) throws(ProtocolError) {
        let f = try WireFields(json, context: "person", code: code)
        let tag = try f.int("tag")
        guard tag > 0 else { throw f.fail("tag must be positive") }
        let likes = try f.words("likes", as: Topic.self)
        let dislikes = try f.words("dislikes", as: Topic.self)
        if let both = likes.intersection(dislikes).min() {
            throw f.fail("'\(both.rawValue)' is in both likes and dislikes")
        }
        self.init(tag: tag, name: try f.string("name"), hairColor: try f.word("hairColor", as: HairColor.self),
                  hairLength: try f.word("hairLength", as: HairLength.self),
                  eyeColor: try f.word("eyeColor", as: EyeColor.self), glasses: try f.bool("glasses"),
                  facialHair: try f.words("facialHair", as: FacialHairStyle.self), likes: likes, dislikes: dislikes)
    }
}

extension Diff {
    /// The diff's wire form (PROTOCOL.md "Diffs").
    public var json: JSON {
        switch self {
        case .insert(let person, let at):
            .object(["op": .string("insert"), "at": .int(at), "person": person.json])
        case .remove(let tag):
            .object(["op": .string("remove"), "tag": .int(tag)])
        case .move(let tag, let to):
            .object(["op": .string("move"), "tag": .int(tag), "to": .int(to)])
        case .set(let tag, let value):
            .object(["op": .string("set"), "tag": .int(tag), "field": .string(value.field.rawValue),
                     "value": value.json])
        case .facialHair(let tag, let style, let present):
            .object(["op": .string("facialHair"), "tag": .int(tag), "style": .string(style.rawValue),
                     "present": .bool(present)])
        case .preference(let tag, let topic, let opinion):
            .object(["op": .string("preference"), "tag": .int(tag), "topic": .string(topic.rawValue),
                     "value": .string(opinion.rawValue)])
        case .text(let tag, let operation):
            .object(["op": .string("text"), "tag": .int(tag), "edits": .array(operation.components.map(\.json))])
        }
    }

    /// The ops that name a person by `tag` (all but `insert`).
    static let opsWithATag: Set<String> = ["remove", "move", "set", "facialHair", "preference", "text"]

    /// Reads a diff; anything wrong is `invalid-op` with the reason.
    public init(json: JSON) throws(ProtocolError) {
        let f = try WireFields(json, context: "op", code: .invalidOp)
        let op = try f.string("op")
        if op == "insert" {
            guard let person = f.raw("person") else { throw f.fail("`person` is missing") }
            self = .insert(try Person(json: person), at: try f.int("at"))
            return
        }
        // An op this hub does not know is said so before its fields are read (`{"op":"frob"}` was
        // "`tag` is missing": a backend's pass).
        guard Self.opsWithATag.contains(op) else { throw f.fail("unknown op '\(op)'") }
        let tag = try f.int("tag")
        guard tag > 0 else { throw f.fail("tag must be positive") }
        switch op {
        case "remove":
            self = .remove(tag)
        case "move":
            self = .move(tag, to: try f.int("to"))
        case "set":
            let field = try f.string("field")
            guard let name = Field(rawValue: field) else { throw f.fail("'\(field)' is not a settable field") }
            let value: FieldValue = switch name {
            case .name: .name(try f.string("value"))
            case .hairColor: .hairColor(try f.word("value", as: HairColor.self))
            case .hairLength: .hairLength(try f.word("value", as: HairLength.self))
            case .eyeColor: .eyeColor(try f.word("value", as: EyeColor.self))
            case .glasses: .glasses(try f.bool("value"))
            }
            self = .set(tag, value)
        case "facialHair":
            self = .facialHair(tag, try f.word("style", as: FacialHairStyle.self), present: try f.bool("present"))
        case "preference":
            self = .preference(tag, try f.word("topic", as: Topic.self), try f.word("value", as: Opinion.self))
        case "text":
            var components: [TextOperation.Component] = []
            for edit in try f.array("edits") {
                let e = try WireFields(edit, context: "text edit", code: .invalidOp)
                // Exactly one of the three: {"retain":1,"insert":"x"} has no single meaning.
                guard case .object(let keys) = edit, keys.count == 1 else {
                    throw e.fail("a text edit is one of {retain}, {insert} or {delete}")
                }
                if let n = try e.optionalInt("retain") {
                    components.append(.retain(n))
                } else if let n = try e.optionalInt("delete") {
                    components.append(.delete(n))
                } else if let s = try e.optionalString("insert") {
                    components.append(.insert(s))
                } else {
                    throw e.fail("needs retain, insert or delete")
                }
            }
            switch TextOperation.validated(components) {
            case .success(let operation): self = .text(tag, operation)
            case .failure(let invalid): throw invalid.protocolError
            }
        default:
            throw f.fail("unknown op '\(op)'")
        }
    }
}

extension FieldValue {
    public var json: JSON {
        switch self {
        case .name(let v): .string(v)
        case .hairColor(let v): .string(v.rawValue)
        case .hairLength(let v): .string(v.rawValue)
        case .eyeColor(let v): .string(v.rawValue)
        case .glasses(let v): .bool(v)
        }
    }
}

extension TextOperation.Component {
    public var json: JSON {
        switch self {
        case .retain(let n): .object(["retain": .int(n)])
        case .insert(let s): .object(["insert": .string(s)])
        case .delete(let n): .object(["delete": .int(n)])
        }
    }
}

extension SkipReport {
    public var json: JSON {
        .object([
            "reason": .string(reason.rawValue), "tag": .int(tag), "field": field.map(JSON.string),
            "style": style.map { .string($0.rawValue) }, "topic": topic.map { .string($0.rawValue) },
            "by": by.map(JSON.string),
        ] as KeyValuePairs<String, JSON?>)
    }

    public init(json: JSON) throws(ProtocolError) {
        let f = try WireFields(json, context: "report", code: .badMessage)
        let reason = try f.string("reason")
        guard let r = Reason(rawValue: reason) else { throw f.fail("unknown reason '\(reason)'") }
        let style = try f.optionalString("style").map { (s: String) throws(ProtocolError) in
            try WireFields.word(s, as: FacialHairStyle.self, fail: f.fail)
        }
        let topic = try f.optionalString("topic").map { (s: String) throws(ProtocolError) in
            try WireFields.word(s, as: Topic.self, fail: f.fail)
        }
        self.init(reason: r, tag: try f.int("tag"), field: try f.optionalString("field"), style: style,
                  topic: topic, by: try f.optionalString("by"))
    }
}
