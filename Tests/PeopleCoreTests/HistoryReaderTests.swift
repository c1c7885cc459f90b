@testable import PeopleCore
import Testing

/// The screen's history reader on its own: the timeline's pages and refreshes, and the watched
/// person's writers, with no socket (the driver's part is to send the questions and hand back answers).
@Suite("History reader")
struct HistoryReaderTests {
    /// Timeline rows for revisions `revs` (newest first), by ann, each an edit of tag 1.
    static func rows(_ revs: some Sequence<Int>, entry: Bool = false) -> [ServerMessage.LogEntry] {
        revs.map { .init(rev: $0, time: Int64($0) * 1000, author: "ann", kind: .edit, label: "Toggle Glasses",
                         ops: [.set(1, .glasses($0 % 2 == 0))], entry: entry ? $0 : nil) }
    }

    static func page(_ revs: some Sequence<Int>, more: Bool, entry: Bool = false) -> ServerMessage.LogPage {
        .init(seq: nil, entries: rows(revs, entry: entry), more: more)
    }

    static func blame(_ tag: PeopleCore.Tag, by user: String, rev: Int) -> ServerMessage.Blame {
        .init(seq: nil, tag: tag, record: PersonBlame(inserted: Fixtures.person(tag), by: Writer(user: user, rev: rev, time: 5)))
    }

    @Test("opening asks for the newest page; scrolling asks for the one below the oldest row, once")
    func pagesNewestFirst() {
        var reader = HistoryReader()
        #expect(reader.open() == [.log(before: nil, limit: 50)])
        #expect(reader.wantOlder().isEmpty, "nothing to page from before the first page")
        _ = reader.answered(.log(before: nil, limit: 50), with: Self.page(stride(from: 120, to: 70, by: -1), more: true))
        #expect(reader.loaded && reader.more && reader.rows.map(\.rev).first == 120 && reader.rows.count == 50)
        #expect(reader.wantOlder() == [.log(before: 71, limit: 50)])
        #expect(reader.wantOlder().isEmpty, "one question out at a time")
        _ = reader.answered(.log(before: 71, limit: 50), with: Self.page(stride(from: 70, to: 20, by: -1), more: true))
        #expect(reader.rows.count == 100 && reader.rows.last?.rev == 21)
        _ = reader.wantOlder()
        _ = reader.answered(.log(before: 21, limit: 50), with: Self.page(stride(from: 20, to: 0, by: -1), more: false))
        #expect(reader.rows.count == 120 && !reader.more && reader.wantOlder().isEmpty)
    }

    @Test("one person's timeline asks with their tag, and only a revision naming them refreshes it")
    func onePersonsTimeline() {
        var reader = HistoryReader()
        #expect(reader.open(person: 1) == [.log(before: nil, limit: 50, tag: 1)])
        _ = reader.answered(.log(before: nil, limit: 50, tag: 1), with: Self.page(stride(from: 90, to: 40, by: -1), more: true))
        #expect(reader.loaded && reader.person == 1 && reader.rows.count == 50)
        #expect(reader.wantOlder() == [.log(before: 41, limit: 50, tag: 1)])
        _ = reader.answered(.log(before: 41, limit: 50, tag: 1), with: Self.page(stride(from: 40, to: 0, by: -1), more: false))
        #expect(reader.revised([.set(2, .glasses(true))]).isEmpty, "a revision about someone else")
        #expect(reader.revised([.set(2, .glasses(false)), .set(1, .glasses(true))]) == [.log(before: nil, limit: 90, tag: 1)])
    }

    @Test("opened for another person (or the room), the rows go and a late answer about the one before is not used")
    func switchingWhoseTimeline() {
        var reader = HistoryReader()
        _ = reader.open(person: 1)
        _ = reader.answered(.log(before: nil, limit: 50, tag: 1), with: Self.page([5, 3], more: false))
        #expect(reader.rows.count == 2)
        reader.close()
        #expect(reader.open(person: 1) == [.log(before: nil, limit: 50, tag: 1)])
        #expect(reader.rows.count == 2, "the same person's rows stay while they are read again")
        // Someone else's while that question is out: their rows are asked for once it is answered.
        #expect(reader.open(person: 2).isEmpty, "one question out at a time")
        #expect(reader.rows.isEmpty && !reader.loaded)
        let next = reader.answered(.log(before: nil, limit: 50, tag: 1), with: Self.page([5, 3], more: false))
        #expect(reader.rows.isEmpty, "the answer about person 1 is not person 2's timeline")
        #expect(next == [.log(before: nil, limit: 50, tag: 2)])
        _ = reader.answered(.log(before: nil, limit: 50, tag: 2), with: Self.page([4], more: false))
        #expect(reader.rows.map(\.rev) == [4] && reader.loaded)
        #expect(reader.open() == [.log(before: nil, limit: 50)])
        #expect(reader.person == nil && reader.rows.isEmpty)
    }

    @Test("a revision refreshes the loaded rows in place, keeping the older ones when the page reaches them")
    func revisionRefreshesInPlace() {
        var reader = HistoryReader()
        _ = reader.open()
        _ = reader.answered(.log(before: nil, limit: 50), with: Self.page(stride(from: 120, to: 70, by: -1), more: true))
        _ = reader.wantOlder()
        _ = reader.answered(.log(before: 71, limit: 50), with: Self.page(stride(from: 70, to: 20, by: -1), more: true))
        let asked = reader.revised([.set(1, .glasses(true))])
        #expect(asked == [.log(before: nil, limit: 100)], "as many rows as are loaded")
        _ = reader.answered(.log(before: nil, limit: 100), with: Self.page(stride(from: 121, to: 21, by: -1), more: true, entry: true))
        #expect(reader.rows.map(\.rev) == Array(stride(from: 121, to: 20, by: -1)))
        #expect(reader.rows.first?.entry == 121 && reader.more)
    }

    @Test("a refresh that does not reach the loaded rows replaces them, and scrolling loads again")
    func refreshWithAGapStartsOver() {
        var reader = HistoryReader()
        _ = reader.open()
        _ = reader.answered(.log(before: nil, limit: 50), with: Self.page(stride(from: 100, to: 50, by: -1), more: true))
        _ = reader.revised([])
        _ = reader.answered(.log(before: nil, limit: 50), with: Self.page(stride(from: 200, to: 150, by: -1), more: true))
        #expect(reader.rows.map(\.rev) == Array(stride(from: 200, to: 150, by: -1)) && reader.more)
        #expect(reader.wantOlder() == [.log(before: 151, limit: 50)])
    }

    @Test("revisions while a page is out make one refresh after it; a late older page after a refresh is dropped")
    func refreshesCoalesce() {
        var reader = HistoryReader()
        _ = reader.open()
        #expect(reader.revised([]).isEmpty && reader.stacksChanged().isEmpty)
        let again = reader.answered(.log(before: nil, limit: 50), with: Self.page([3, 2, 1], more: false))
        #expect(again == [.log(before: nil, limit: 50)])
        #expect(reader.answered(.log(before: nil, limit: 50), with: Self.page([5, 4, 3, 2, 1], more: false)).isEmpty)
        #expect(reader.rows.map(\.rev) == [5, 4, 3, 2, 1])
        #expect(reader.answered(.log(before: 9, limit: 50), with: Self.page([8], more: false)).isEmpty)
        #expect(reader.rows.map(\.rev) == [5, 4, 3, 2, 1])
    }

    @Test("a closed timeline asks nothing and ignores a late page")
    func closedIgnores() {
        var reader = HistoryReader()
        _ = reader.open()
        reader.close()
        #expect(reader.revised([.set(1, .glasses(true))]).isEmpty)
        _ = reader.answered(.log(before: nil, limit: 50), with: Self.page([1], more: false))
        #expect(reader.rows.isEmpty && !reader.loaded)
    }

    @Test("a timeline closed and opened again keeps the rows it read (shown while the hub is away) and reads them again")
    func reopenKeepsRows() {
        var reader = HistoryReader()
        _ = reader.open()
        _ = reader.answered(.log(before: nil, limit: 50), with: Self.page([3, 2, 1], more: false))
        reader.close()
        #expect(reader.revised([.set(1, .glasses(true))]).isEmpty)
        #expect(reader.open() == [.log(before: nil, limit: 50)])
        #expect(reader.rows.map(\.rev) == [3, 2, 1] && reader.loaded)
        _ = reader.answered(.log(before: nil, limit: 50), with: Self.page([4, 3, 2, 1], more: false))
        #expect(reader.rows.map(\.rev) == [4, 3, 2, 1])
        // A new connection to a hub that may have gone back: nothing read before is kept.
        reader.close()
        _ = reader.reconnected(watchedPresent: false, reset: true)
        #expect(reader.rows.isEmpty && !reader.loaded)
    }

    @Test("the watched person is asked about once, again after a revision touching them, not after others")
    func watchAsksAndRefreshes() {
        var reader = HistoryReader()
        #expect(reader.watch(1, present: true) == [.blame(1)])
        #expect(reader.watch(1, present: true).isEmpty)
        _ = reader.answered(.blame(1), with: Self.blame(1, by: "bob", rev: 4))
        #expect(reader.attribution?.fields[.hairColor]?.user == "bob")
        #expect(reader.revised([.set(2, .glasses(true))]).isEmpty)
        #expect(reader.revised([.set(1, .glasses(true))]) == [.blame(1)])
    }

    @Test("a selection that moves while a blame is out asks about the new one after the answer")
    func watchMovesWhileAsking() {
        var reader = HistoryReader()
        _ = reader.watch(1, present: true)
        #expect(reader.watch(2, present: true).isEmpty)
        #expect(reader.attribution == nil)
        #expect(reader.answered(.blame(1), with: Self.blame(1, by: "bob", rev: 4)) == [.blame(2)])
        #expect(reader.attribution == nil, "the answer about 1 is not shown for 2")
        _ = reader.answered(.blame(2), with: Self.blame(2, by: "carl", rev: 5))
        #expect(reader.attribution?.created.user == "carl")
    }

    @Test("a person the hub does not have yet is asked about when the revision inserting them arrives")
    func watchWaitsForTheInsert() {
        var reader = HistoryReader()
        #expect(reader.watch(104, present: false).isEmpty)
        #expect(reader.revised([.insert(Fixtures.person(104), at: 0)]) == [.blame(104)])
    }

    @Test("a refused blame clears the writers; a new connection asks again what is wanted")
    func failureAndReconnect() {
        var reader = HistoryReader()
        _ = reader.open()
        _ = reader.watch(1, present: true)
        #expect(reader.failed(.blame(1)).isEmpty && reader.attribution == nil)
        #expect(reader.reconnected(watchedPresent: true) == [.log(before: nil, limit: 50), .blame(1)])
        #expect(reader.reconnected(watchedPresent: false) == [.log(before: nil, limit: 50)])
    }
}
