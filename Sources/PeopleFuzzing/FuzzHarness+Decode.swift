import PeopleCore

extension FuzzHarness {
    /// The room the decode target drives: small windows, so a few frames reach trimming, reply
    /// eviction, forgotten sessions, stale bases and expired undo entries.
    static let decodePolicy = RoomPolicy(
        undo: UndoPolicy(depth: 4), tagBlockSize: 8, keptRevisions: 4, repliesKept: 4, maxPeople: 6,
        keptSessions: 2, maxCatchUp: 3)

    /// Reads `bytes` as hub frames, one per line (at most 16), the way the hub reads a connection.
    ///
    /// For each frame, the codec: a frame that is not JSON is `bad-json` to both decoders; JSON written
    /// back parses to the same value (a lone surrogate and a non-finite number are written as null),
    /// and writing is stable; `ClientMessage.decode` is `init(json:)` of the parse; a refused frame is
    /// `bad-message`, `unsupported-protocol` or `invalid-op`; a decoded `ClientMessage`,
    /// `ServerMessage`, `RoomRecord` or `Revision` comes back equal from its own encoding.
    ///
    /// Then the room (`RoomProbe`'s checks after every frame): it starts with the tutorial seed and
    /// user ann connected; a `hello` is a new connection (the previous one leaves) joining as its user
    /// (a viewer when it carries a token, so the viewer rules run too); any other frame comes from the
    /// current connection. At the end, the room rebuilt from its journal equals the room that ran.
    public static func decode(_ bytes: [UInt8]) throws(FuzzViolation) {
        var probe = RoomProbe(seed: .tutorialSeed, policy: decodePolicy)
        var session = try probe.join(session: "s0", user: "ann").session
        var connections = 1
        for frame in bytes.split(separator: 0x0A, maxSplits: 15) {
            guard let json = try checkJSON(frame) else { continue }
            try checkServerDecoding(json)
            try checkStoredDecoding(json)
            guard let message = try checkClientDecoding(frame, json) else { continue }
            if case .hello(let hello) = message {
                // The hub refuses malformed user names before the room sees them.
                guard (try? UserName(hello.user)) != nil else { continue }
                try probe.leave(session)
                session = try probe.join(
                    session: "s\(connections)", user: hello.user, role: hello.token == nil ? .editor : .viewer,
                    client: hello.client, resume: hello.resume, since: hello.since).session
                connections += 1
            } else {
                try probe.receive(message, from: session)
            }
        }
        try probe.checkRestore()
    }

    /// The JSON parse of `frame`, checked; nil when it is not JSON (then both decoders say `bad-json`).
    static func checkJSON(_ frame: ArraySlice<UInt8>) throws(FuzzViolation) -> JSON? {
        let json: JSON
        do { json = try JSON.parse(frame) } catch {
            for result in [ClientMessage.decode(frame).map { _ in () }, ServerMessage.decode(frame).map { _ in () }] {
                guard case .failure(let refusal) = result, refusal.code == .badJSON else {
                    throw FuzzViolation("not JSON is bad-json", "\(error) but \(result)")
                }
            }
            return nil
        }
        let written = json.bytes
        let reread: JSON
        do { reread = try JSON.parse(written) } catch {
            throw FuzzViolation("JSON output parses", "\(String(decoding: written, as: UTF8.self)): \(error)")
        }
        try require(reread == json.asWritten, "JSON round trip", "\(json) → \(reread)")
        try require(reread.bytes == written, "JSON writing is stable", String(decoding: written, as: UTF8.self))
        return json
    }

    /// The client decoding of a JSON frame, checked; nil when it is refused.
    static func checkClientDecoding(_ frame: ArraySlice<UInt8>, _ json: JSON) throws(FuzzViolation) -> ClientMessage? {
        let decoded = ClientMessage.decode(frame)
        let direct: Result<ClientMessage, ProtocolError>
        do { direct = .success(try ClientMessage(json: json)) } catch { direct = .failure(error) }
        try require(decoded == direct, "decode(bytes) is init(json: parse(bytes))", "\(decoded) vs \(direct)")
        switch decoded {
        case .failure(let refusal):
            try require([.badMessage, .unsupportedProtocol, .invalidOp].contains(refusal.code),
                        "a JSON frame is refused as bad-message, unsupported-protocol or invalid-op", "\(refusal)")
            return nil
        case .success(let message):
            let bytes = message.json.bytes
            let again = ClientMessage.decode(bytes)
            try require(again == .success(message), "client message round trip",
                        "\(message) → \(String(decoding: bytes, as: UTF8.self)) → \(again)")
            return message
        }
    }

    /// The client side's reading of the same JSON as a hub frame.
    static func checkServerDecoding(_ json: JSON) throws(FuzzViolation) {
        let message: ServerMessage
        do { message = try ServerMessage(json: json) } catch { return }
        try requireRoundTrip(message)
    }

    /// The store's reading of the same JSON as a journal record or a revision.
    static func checkStoredDecoding(_ json: JSON) throws(FuzzViolation) {
        if let record = try? RoomRecord(json: json) {
            let again = try? RoomRecord(json: JSON.parse(record.json.bytes))
            try require(again == record, "journal record round trip",
                        "\(record) → \(String(describing: again))")
        }
        if let revision = try? Revision(json: json) {
            let again = try? Revision(json: JSON.parse(revision.json.bytes))
            try require(again == revision, "revision round trip",
                        "\(revision) → \(String(describing: again))")
        }
    }
}

extension JSON {
    /// The value as its encoding says it: what has no JSON text (a lone surrogate, NaN) is written as
    /// null; an infinity (a number too big for a double) as one that reads back as the same infinity.
    var asWritten: JSON {
        switch self {
        case .loneSurrogate: .null
        case .double(let d) where d.isNaN: .null
        case .array(let elements): .array(elements.map(\.asWritten))
        case .object(let members): .object(members.map { Member($0.key, $0.value.asWritten) })
        default: self
        }
    }
}
