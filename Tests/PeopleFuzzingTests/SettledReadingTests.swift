import PeopleCore
import Testing

/// The two questions the fuzzer raised (Tests/Fuzz/regressions/README.md), as the product contract
/// settled them (SEMANTICS §7 readings 6 and 7). They were pinned as known issues until then; the
/// harness's allowances for them are gone, so the corpus replay checks both on every input too.
@Suite("What the fuzzer found, settled")
struct SettledReadingTests {
    /// decode 1. A text edit that only retains is valid and changes nothing; its canonical form is the
    /// empty operation, `"edits": []`, which decodes back (reading 6).
    @Test("a text edit that only retains comes back from its own encoding")
    func retainOnlyTextEdit() throws {
        let frame = #"{"type":"submit","seq":1,"base":0,"ops":[{"op":"text","tag":1,"edits":[{"retain":3}]}]}"#
        let message = try ClientMessage.decode(Array(frame.utf8)).get()
        #expect(message.json.text.contains(#""edits":[]"#))
        #expect(ClientMessage.decode(message.json.bytes) == .success(message))
        var model = PeopleModel(people: [Person(tag: 1, name: "Ann")])
        #expect(try model.apply(.text(1, TextOperation([]))) == nil, "changes nothing")
        #expect(try model.apply(.text(1, TextOperation([.retain(3)]))) == nil, "changes nothing")
    }

    /// apply 1. A text edit that only changes a name's normalization (e + U+0301 into é) is a change:
    /// names compare by scalars (reading 7), so it applies with an inverse, and TP1 holds against a
    /// concurrent edit of the same name.
    @Test("a normalization-only text edit is a change, and TP1 holds for it")
    func normalizationOnlyTextEdit() throws {
        let start = PeopleModel(people: [Person(tag: 1, name: "e\u{301}")])
        let a: [Diff] = [.text(1, TextOperation([.delete(2), .insert("é")]))]  // same name, other scalars
        let b: [Diff] = [.text(1, TextOperation([.retain(2), .insert("a")]))]  // typed at the end
        var left = start
        let applied = try left.apply(batch: a)
        #expect(applied.applied.count == 1, "a is a change")
        #expect(left != start, "the models differ by scalars")
        #expect(Array(left.people[0].name.unicodeScalars) == ["\u{E9}"])
        try left.apply(batch: Transform.transform(b, over: a, order: start.tags).diffs, absentTags: .skip)
        var right = start
        try right.apply(batch: b)
        try right.apply(batch: Transform.transform(a, over: b, order: start.tags, incomingFirst: true).diffs,
                        absentTags: .skip)
        #expect(left == right)
        #expect(Array(left.people[0].name.unicodeScalars) == ["\u{E9}", "a"])
        // The inverse restores the exact scalars.
        var back = start
        let done = try #require(try back.apply(a[0]))
        try back.apply(done.inverse)
        #expect(Array(back.people[0].name.unicodeScalars) == ["e", "\u{301}"])
    }

    @Test("names and values compare by scalars, not by canonical equivalence")
    func scalarEquality() {
        let composed = Person(tag: 1, name: "\u{E9}")
        let decomposed = Person(tag: 1, name: "e\u{301}")
        #expect(composed != decomposed)
        #expect(FieldValue.name("\u{E9}") != FieldValue.name("e\u{301}"))
        #expect(TextOperation([.insert("\u{E9}")]) != TextOperation([.insert("e\u{301}")]))
        #expect(Set([composed, decomposed]).count == 2)
        #expect(composed == Person(tag: 1, name: "\u{E9}"))
    }
}
