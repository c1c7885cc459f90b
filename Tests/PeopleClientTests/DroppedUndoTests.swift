@testable import PeopleClient
import PeopleCore
import Testing

/// What the terminal says when an undo pressed for a queued edit goes with that edit (LiveRoom.folding).
@Suite("LiveRoom: an undo that went with its edit")
struct DroppedUndoTests {
    let people = PeopleModel(people: [Person(tag: 1, name: "Ann"), Person(tag: 2, name: "Joan")])
    let dropped: [(label: String?, ops: [Diff])] = [("Toggle Glasses", [.set(1, .glasses(true))])]

    func why(_ notices: [LiveRoom.Notice]) -> [String] {
        notices.flatMap { notice -> [String] in if case .undoDropped(_, let why) = notice { why } else { [] } }
    }

    @Test("an edit the room already had: it says so; one whose person is gone: it names the person")
    func unchanged() {
        #expect(why(LiveRoom.folding(dropped, into: [], before: people, now: people)) == ["the room already had that change"])
        let without = PeopleModel(people: [Person(tag: 2, name: "Joan")])
        #expect(why(LiveRoom.folding(dropped, into: [], before: people, now: without)) == ["Ann was removed"])
    }

    @Test("an edit the hub refused: it says the hub refused it, not that the room had it")
    func refused() {
        let notices = LiveRoom.folding(dropped, into: [.error(ProtocolError(.invalidOp, "span past the end"))],
                                       before: people, now: people, refused: true)
        #expect(why(notices) == ["the hub refused that change"])
        #expect(notices.contains { if case .error = $0 { true } else { false } })
    }
}
