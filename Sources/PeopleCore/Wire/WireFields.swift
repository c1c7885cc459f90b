/// Typed reading of one JSON object's members; every failure is a `ProtocolError` with `code`.
struct WireFields {
    let members: [JSON.Member]
    let context: String
    let code: ErrorCode

    init(_ json: JSON, context: String, code: ErrorCode) throws(ProtocolError) {
        guard case .object(let members) = json else { throw ProtocolError(code, "\(context) must be an object") }
        self.members = members
        self.context = context
        self.code = code
    }

    /// A failure of this object; a field of the frame itself (context `message`) is named alone.
    func fail(_ message: String) -> ProtocolError {
        ProtocolError(code, context == "message" ? message : "\(context): \(message)")
    }

    func raw(_ key: String) -> JSON? {
        guard let value = members.last(where: { $0.key == key })?.value else { return nil }
        return value == .null ? nil : value
    }

    func int(_ key: String) throws(ProtocolError) -> Int {
        guard let value = try optionalInt(key) else { throw fail("`\(key)` is missing") }
        return value
    }

    func optionalInt(_ key: String) throws(ProtocolError) -> Int? {
        switch raw(key) {
        case nil: return nil
        case .int(let n)?: return n
        case .double(let d)? where d.isFinite && d == d.rounded() && abs(d) < 9.0e15: return Int(d)
        default: throw fail("`\(key)` must be an integer")
        }
    }

    func string(_ key: String) throws(ProtocolError) -> String {
        guard let value = try optionalString(key) else { throw fail("`\(key)` is missing") }
        return value
    }

    /// A string of at most `maxBytes` UTF-8 bytes (a label, a coalesce key, a presence field: kept in
    /// the journal, in memory or sent to everyone, so a client cannot make them a megabyte each).
    func optionalString(_ key: String, maxBytes: Int) throws(ProtocolError) -> String? {
        guard let value = try optionalString(key) else { return nil }
        guard value.utf8.count <= maxBytes else {
            throw fail("`\(key)` must be at most \(maxBytes) bytes of UTF-8 (got \(value.utf8.count))")
        }
        return value
    }

    func optionalString(_ key: String) throws(ProtocolError) -> String? {
        switch raw(key) {
        case nil: return nil
        case .string(let s)?: return s
        case .loneSurrogate?: throw fail("`\(key)` holds a lone surrogate")
        default: throw fail("`\(key)` must be a string")
        }
    }

    func bool(_ key: String) throws(ProtocolError) -> Bool {
        guard case .bool(let b)? = raw(key) else {
            throw fail(raw(key) == nil ? "`\(key)` is missing" : "`\(key)` must be true or false")
        }
        return b
    }

    func optionalBool(_ key: String) throws(ProtocolError) -> Bool? {
        raw(key) == nil ? nil : try bool(key)
    }

    func array(_ key: String) throws(ProtocolError) -> [JSON] {
        guard let value = try optionalArray(key) else { throw fail("`\(key)` is missing") }
        return value
    }

    func optionalArray(_ key: String) throws(ProtocolError) -> [JSON]? {
        switch raw(key) {
        case nil: return nil
        case .array(let a)?: return a
        default: throw fail("`\(key)` must be an array")
        }
    }

    func word<V: Vocabulary>(_ key: String, as type: V.Type) throws(ProtocolError) -> V {
        try Self.word(try string(key), as: type, fail: fail)
    }

    static func word<V: Vocabulary>(
        _ text: String, as type: V.Type, fail: (String) -> ProtocolError
    ) throws(ProtocolError) -> V {
        guard let value = V(rawValue: text) else { throw fail("'\(text)' is not a \(V.vocabularyName)") }
        return value
    }

    /// A set of vocabulary words: strings, no duplicates.
    func words<V: Vocabulary>(_ key: String, as type: V.Type) throws(ProtocolError) -> Set<V> {
        var result = Set<V>()
        for element in try array(key) {
            guard case .string(let text) = element else { throw fail("`\(key)` must hold strings") }
            let value = try Self.word(text, as: type, fail: fail)
            guard result.insert(value).inserted else { throw fail("`\(key)` lists '\(text)' twice") }
        }
        return result
    }
}
