/// `JSON` is Codable, so the wire messages can also travel through any Codable coder (Foundation's
/// `JSONEncoder`, GRDB records, …). The hub's hot path uses `JSON.parse` / `JSON.bytes` directly.
extension JSON: Codable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        if let keyed = try? decoder.container(keyedBy: Key.self) {
            self = .object(try keyed.allKeys.sorted { $0.stringValue < $1.stringValue }.map {
                Member($0.stringValue, try keyed.decode(JSON.self, forKey: $0))
            })
        } else if var list = try? decoder.unkeyedContainer() {
            var elements: [JSON] = []
            while !list.isAtEnd { elements.append(try list.decode(JSON.self)) }
            self = .array(elements)
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() { self = .null }
            else if let b = try? single.decode(Bool.self) { self = .bool(b) }
            else if let n = try? single.decode(Int.self) { self = .int(n) }
            else if let d = try? single.decode(Double.self) { self = .double(d) }
            else { self = .string(try single.decode(String.self)) }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let members):
            var keyed = encoder.container(keyedBy: Key.self)
            for m in members { try keyed.encode(m.value, forKey: Key(stringValue: m.key)) }
        case .array(let elements):
            var list = encoder.unkeyedContainer()
            for e in elements { try list.encode(e) }
        case .null, .loneSurrogate:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let b):
            var single = encoder.singleValueContainer()
            try single.encode(b)
        case .int(let n):
            var single = encoder.singleValueContainer()
            try single.encode(n)
        case .double(let d):
            var single = encoder.singleValueContainer()
            try single.encode(d)
        case .string(let s):
            var single = encoder.singleValueContainer()
            try single.encode(s)
        }
    }
}

extension ClientMessage: Codable {
    public init(from decoder: any Decoder) throws { try self.init(json: JSON(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

extension ServerMessage: Codable {
    public init(from decoder: any Decoder) throws { try self.init(json: JSON(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

extension Diff: Codable {
    public init(from decoder: any Decoder) throws { try self.init(json: JSON(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}

extension Person: Codable {
    public init(from decoder: any Decoder) throws { try self.init(json: JSON(from: decoder)) }
    public func encode(to encoder: any Encoder) throws { try json.encode(to: encoder) }
}
