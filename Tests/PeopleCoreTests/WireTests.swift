@testable import PeopleCore
import Testing

/// The codec's parse order and error mapping (PROTOCOL.md "Error codes"): never a crash.
@Suite("Wire codec")
struct WireTests {
    static func code(_ text: String) -> ErrorCode? {
        if case .failure(let e) = ClientMessage.decode(Array(text.utf8)) { e.code } else { nil }
    }

    @Test("frames map to the right error code", arguments: [
        ("{", ErrorCode.badJSON),
        ("[1,2", .badJSON),
        ("{\"type\":\"hello\",\"user\":\"a\"}", .badMessage),
        ("{\"type\":\"hello\",\"protocol\":\"1\",\"user\":\"a\"}", .badMessage),
        ("{\"type\":\"hello\",\"protocol\":2,\"user\":\"a\"}", .unsupportedProtocol),
        ("{\"type\":\"submit\",\"base\":0,\"ops\":[]}", .badMessage),
        ("{\"type\":\"submit\",\"seq\":\"1\",\"base\":0,\"ops\":[]}", .badMessage),
        ("{\"type\":\"submit\",\"seq\":1,\"base\":0,\"ops\":{}}", .badMessage),
        ("{\"type\":\"submit\",\"seq\":1e400,\"base\":0,\"ops\":[]}", .badMessage),
        ("{\"type\":\"submit\",\"seq\":123456789012345678901234567890,\"base\":0,\"ops\":[]}", .badMessage),
        ("{\"type\":\"nope\"}", .badMessage),
        ("[]", .badMessage),
        ("{\"type\":\"submit\",\"seq\":1,\"base\":0,\"ops\":[{\"op\":\"explode\",\"tag\":1}]}", .invalidOp),
        ("{\"type\":\"submit\",\"seq\":1,\"base\":0,\"ops\":[{\"op\":\"set\",\"tag\":1,\"field\":\"hairColor\",\"value\":\"purple\"}]}", .invalidOp),
        ("{\"type\":\"submit\",\"seq\":1,\"base\":0,\"ops\":[{\"op\":\"set\",\"tag\":1,\"field\":\"name\",\"value\":\"\\ud800\"}]}", .invalidOp),
        ("{\"type\":\"submit\",\"seq\":1,\"base\":0,\"ops\":[{\"op\":\"text\",\"tag\":1,\"edits\":[{\"retain\":0}]}]}", .invalidOp),
        ("{\"type\":\"submit\",\"seq\":1,\"base\":0,\"ops\":[{\"op\":\"text\",\"tag\":1,\"edits\":[{\"insert\":\"\"}]}]}", .invalidOp),
        // Two keys in one text edit have no single meaning (found by the hostile-input suite).
        ("{\"type\":\"submit\",\"seq\":1,\"base\":0,\"ops\":[{\"op\":\"text\",\"tag\":1,\"edits\":[{\"retain\":1,\"insert\":\"x\"}]}]}", .invalidOp),
        ("{\"type\":\"hello\",\"protocol\":2.0,\"user\":\"a\"}", .unsupportedProtocol),
        ("{\"type\":\"hello\",\"protocol\":1.5,\"user\":\"a\"}", .badMessage),
        ("{\"type\":\"submit\",\"seq\":1,\"base\":0,\"ops\":[{\"op\":\"remove\"}]}", .invalidOp),
        ("{\"type\":\"submit\",\"seq\":1,\"base\":0,\"ops\":[{\"op\":\"insert\",\"at\":0,\"person\":{\"tag\":9,\"name\":\"K\",\"hairColor\":\"black\",\"hairLength\":\"short\",\"eyeColor\":\"brown\",\"glasses\":false,\"facialHair\":[\"beard\",\"beard\"],\"likes\":[],\"dislikes\":[]}}]}", .invalidOp),
        ("{\"type\":\"submit\",\"seq\":1,\"base\":0,\"ops\":[{\"op\":\"insert\",\"at\":0,\"person\":{\"tag\":9,\"name\":\"K\",\"hairColor\":\"black\",\"hairLength\":\"short\",\"eyeColor\":\"brown\",\"glasses\":false,\"facialHair\":[],\"likes\":[\"art\"],\"dislikes\":[\"art\"]}}]}", .invalidOp),
        ("{\"type\":\"submit\",\"seq\":1,\"base\":0,\"ops\":[{\"op\":\"insert\",\"at\":0,\"person\":{\"tag\":9,\"name\":\"K\"}}]}", .invalidOp),
    ])
    func errorCodes(frame: String, expected: ErrorCode) {
        #expect(Self.code(frame) == expected, "\(frame)")
    }

    @Test("a label, a coalesce key, a presence field and a hello's client take at most 200 bytes; 201 is bad-message naming the field")
    func textLimits() {
        let fits = String(repeating: "é", count: 100)  // 200 bytes
        let over = fits + "x"
        let frames: [(String, String) -> String] = [
            { k, v in "{\"type\":\"submit\",\"seq\":1,\"base\":0,\"ops\":[],\"\(k)\":\"\(v)\"}" },
            { k, v in "{\"type\":\"restore\",\"seq\":1,\"rev\":0,\"\(k)\":\"\(v)\"}" },
            { k, v in "{\"type\":\"presence\",\"viewing\":1,\"\(k)\":\"\(v)\"}" },
            { k, v in "{\"type\":\"hello\",\"protocol\":1,\"user\":\"a\",\"\(k)\":\"\(v)\"}" },
        ]
        for (frame, key) in [(frames[0], "label"), (frames[0], "coalesce"), (frames[1], "label"), (frames[2], "field"),
                             (frames[3], "client")] {
            #expect(Self.code(frame(key, fits)) == nil, "\(key) of 200 bytes")
            guard case .failure(let error) = ClientMessage.decode(Array(frame(key, over).utf8)) else {
                Issue.record("\(key) of 201 bytes was taken"); continue
            }
            #expect(error.code == .badMessage && error.message.contains("`\(key)` must be at most 200 bytes"), "\(error)")
        }
    }

    @Test("an op this hub does not know is said so, with or without a tag (it was \"`tag` is missing\")")
    func unknownOp() {
        for op in [#"{"op":"frob"}"#, #"{"op":"frob","tag":1}"#] {
            let frame = #"{"type":"submit","seq":1,"base":0,"ops":["# + op + "]}"
            guard case .failure(let error) = ClientMessage.decode(Array(frame.utf8)) else {
                Issue.record("\(op) was taken"); continue
            }
            #expect(error.code == .invalidOp && error.message.contains("unknown op 'frob'"), "\(error)")
        }
    }

    @Test("an integer written as 1.0 is read as 1 everywhere, `protocol` included")
    func integralDoubles() throws {
        let hello = try ClientMessage.decode(Array("{\"type\":\"hello\",\"protocol\":1.0,\"user\":\"a\",\"since\":4.0}".utf8)).get()
        guard case .hello(let h) = hello else { Issue.record("not a hello: \(hello)"); return }
        #expect(h.protocolVersion == 1 && h.since == 4)
    }

    @Test("nesting deeper than the limit is bad-json, not a stack overflow")
    func deepNesting() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(Self.code(deep) == .badJSON)
    }

    @Test("invalid UTF-8 is bad-json")
    func invalidUTF8() {
        let bytes: [UInt8] = Array("{\"type\":\"ping\",\"x\":\"".utf8) + [0xC3, 0x28] + Array("\"}".utf8)
        guard case .failure(let e) = ClientMessage.decode(bytes) else { Issue.record("accepted"); return }
        #expect(e.code == .badJSON)
    }

    @Test("escapes, surrogate pairs and unknown fields decode; unknown fields are ignored")
    func escapes() throws {
        let frame = #"{"type":"submit","seq":1,"base":0,"extra":{"a":[1,2]},"ops":[{"op":"set","tag":1,"field":"name","value":"\ud83d\ude00 \"q\" \u00e9\n"}]}"#
        let message = try ClientMessage.decode(Array(frame.utf8)).get()
        guard case .submit(let s) = message, case .set(1, .name(let name)) = s.ops.first else {
            Issue.record("decoded wrong")
            return
        }
        #expect(name == "😀 \"q\" é\n")
        #expect(ClientMessage.decode(message.json.bytes) == .success(message))
    }

    @Test("sets are encoded in vocabulary order")
    func vocabularyOrder() {
        let person = Person(tag: 1, name: "A", facialHair: [.stubble, .mustache, .beard], likes: [.technology, .sports])
        let text = person.json.text
        #expect(text.contains(#""facialHair":["mustache","beard","stubble"]"#))
        #expect(text.contains(#""likes":["sports","technology"]"#))
    }

    @Test("an error frame carries its code, its message and, for a fatal code, fatal: true")
    func fatalErrorFrame() throws {
        let message = ServerMessage.error(.init(seq: 3, code: .unauthorized, message: "no"))
        #expect(message.json.text == #"{"type":"error","seq":3,"code":"unauthorized","message":"no","fatal":true}"#)
    }

    @Test("names are measured on their NFC form", arguments: [
        (String(repeating: "é", count: 100), true),                 // 200 bytes
        (String(repeating: "e\u{301}", count: 100), true),          // composes to 200 bytes
        (String(repeating: "\u{958}", count: 34), false),           // 3 bytes each, 6 in NFC: 204
        (String(repeating: "x", count: 201), false),
    ])
    func nfcLimit(name: String, allowed: Bool) {
        #expect(NameLimit.allows(name) == allowed)
    }
}
