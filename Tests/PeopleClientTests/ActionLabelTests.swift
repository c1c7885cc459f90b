import PeopleClient
import PeopleCore
import Testing

/// The action names the terminal client gives its own batches (what Undo and the timeline show), from
/// the diffs alone: the same words as the web page's `opsLabel` (Tests/js/page-history.test.mjs).
@Suite("Action labels")
struct ActionLabelTests {
    @Test("each kind of edit has its name, as the web page names it")
    func eachKind() {
        let cases: [(Diff, String)] = [
            (.set(1, .name("Bo")), "Change Name"),
            (.text(1, TextOperation([.insert("x")])), "Change Name"),
            (.set(1, .hairColor(.red)), "Change Hair Color"),
            (.set(1, .hairLength(.bald)), "Change Hair Length"),
            (.set(1, .eyeColor(.green)), "Change Eye Color"),
            (.set(1, .glasses(true)), "Toggle Glasses"),
            (.facialHair(1, .beard, present: true), "Change Facial Hair"),
            (.preference(1, .art, .like), "Change Likes"),
            (.insert(Person(tag: 9, name: "Kim"), at: 0), "Add Person"),
            (.remove(1), "Delete Person"),
            (.move(1, to: 2), "Move Person"),
        ]
        for (diff, label) in cases {
            #expect(diff.actionLabel == label)
            #expect([diff].actionLabel == label)
        }
    }

    @Test("a batch of one kind takes its name; mixed kinds are Several Changes; none is No Change")
    func batches() {
        #expect([Diff.set(1, .eyeColor(.green)), .set(2, .eyeColor(.blue))].actionLabel == "Change Eye Color")
        #expect([Diff.set(1, .glasses(true)), .remove(2)].actionLabel == "Several Changes")
        #expect([Diff.set(1, .name("Bo")), .text(1, TextOperation([.insert("x")]))].actionLabel == "Change Name")
        #expect([Diff]().actionLabel == "No Change")
    }
}
