@testable import PeopleCore
import PeopleTestSupport
import Testing

/// HISTORY.md on the room state machine: selective undo, restore, the timeline and attribution, with
/// the worked cases H1–H8 by name.
@Suite("Room: history people can see and act on")
struct HistoryTests {
    static let seed = PeopleModel.tutorialSeed.people.elements  // Bob 1, Joan 2, Sam 3
    static let users = ["ann", "bob", "carl", "dana"]

    static func harness(_ policy: RoomPolicy = RoomPolicy()) -> Harness {
        Harness(people: seed, policy: policy, users: users)
    }

    static func hair(_ color: HairColor) -> Diff { .set(1, .hairColor(color)) }

    /// Sends a message and returns the reply to it (the one with its seq, or any error).
    static func ask(_ h: inout Harness, _ user: String, _ message: ClientMessage) -> ServerMessage? {
        h.send(message, from: user)
    }

    static func undo(_ h: inout Harness, _ user: String, entry: Int) -> ServerMessage? {
        h.send(.undo(.init(seq: h.nextSeq(user), entry: entry)), from: user)
    }

    static func restore(_ h: inout Harness, _ user: String, to rev: Int) -> ServerMessage.Restored? {
        guard case .restored(let r)? = h.send(.restore(.init(seq: h.nextSeq(user), rev: rev)), from: user) else {
            return nil
        }
        return r
    }

    static func log(_ h: Harness, _ user: String, before: Int? = nil, limit: Int = 50, tag: PeopleCore.Tag? = nil) -> ServerMessage.LogPage? {
        var room = h.room
        let id = h.sessions[user]!
        for case .send(.log(let page), [id]) in room.receive(.log(.init(seq: 7, before: before, limit: limit, tag: tag)),
                                                             from: id, now: 0) {
            return page
        }
        return nil
    }

    static func blame(_ h: Harness, _ user: String, tag: PeopleCore.Tag) -> ServerMessage? {
        var room = h.room
        let id = h.sessions[user]!
        return room.receive(.blame(.init(seq: 3, tag: tag)), from: id, now: 0).compactMap {
            if case .send(let m, [id]) = $0 { m } else { nil }
        }.first
    }

    // MARK: H1–H4: selective undo

    @Test("H1 selective undo: the older step is taken back, the newer one stays")
    func h1() throws {
        var h = Self.harness()
        h.submit("ann", [Self.hair(.red)])
        h.submit("ann", [.set(1, .eyeColor(.green))])
        guard case .undone(let r)? = Self.undo(&h, "ann", entry: 1) else { Issue.record("no undone"); return }
        #expect(r.entry == 1 && r.rev == 3 && r.skipped.isEmpty)
        #expect(h.person(1)?.hairColor == .brown && h.person(1)?.eyeColor == .green)
        #expect(h.room.stacks(of: "ann").undo.map(\.id) == [2])
        #expect(h.redo("ann").ops == [Self.hair(.red)], "the top of the redo stack redoes the hair change")
    }

    @Test("H2 a teammate came after: skipped overwritten by bob, the entry is gone")
    func h2() {
        var h = Self.harness()
        h.submit("ann", [Self.hair(.red)])
        h.submit("bob", [Self.hair(.blonde)])
        guard case .undone(let r)? = Self.undo(&h, "ann", entry: 1) else { Issue.record("no undone"); return }
        #expect(r.rev == nil && r.ops.isEmpty && r.entry == 1)
        #expect(r.skipped == [SkipReport(reason: .overwritten, tag: 1, field: "hairColor", by: "bob")])
        #expect(h.room.stacks(of: "ann").undo.isEmpty)
    }

    @Test("H3 so did I: my own later write guards too, by ann")
    func h3() {
        var h = Self.harness()
        h.submit("ann", [Self.hair(.red)])
        h.submit("ann", [Self.hair(.blonde)])
        guard case .undone(let r)? = Self.undo(&h, "ann", entry: 1) else { Issue.record("no undone"); return }
        #expect(r.ops.isEmpty && r.skipped == [SkipReport(reason: .overwritten, tag: 1, field: "hairColor", by: "ann")])
        #expect(h.person(1)?.hairColor == .blonde)
        #expect(h.room.stacks(of: "ann").undo.map(\.id) == [2])
    }

    @Test("H4 no-entry: someone else's entry, an unknown id; the seq is used and the reply cached")
    func h4() {
        var h = Self.harness()
        h.submit("ann", [Self.hair(.red)])
        h.submit("ann", [.set(1, .eyeColor(.green))])
        let seq = h.nextSeq("bob")
        guard case .error(let e)? = h.send(.undo(.init(seq: seq, entry: 1)), from: "bob") else { Issue.record("no error"); return }
        #expect(e.code == .noEntry && e.seq == seq)
        #expect(h.send(.undo(.init(seq: seq, entry: 1)), from: "bob") == .error(e), "replayed")
        #expect(h.revision == 2 && h.room.stacks(of: "ann").undo.count == 2)
    }

    @Test("entry with scope, and redo with entry, are bad-message")
    func badEntryRequests() {
        let both = ClientMessage.decode(Array(#"{"type":"undo","seq":1,"entry":1,"scope":2}"#.utf8))
        let redo = ClientMessage.decode(Array(#"{"type":"redo","seq":1,"entry":1}"#.utf8))
        #expect((try? both.get()) == nil && (try? redo.get()) == nil)
        if case .failure(let e) = both { #expect(e.code == .badMessage) }
        if case .failure(let e) = redo { #expect(e.code == .badMessage) }
    }

    @Test("a no-entry error leaves the coalescing run as it was")
    func noEntryKeepsTheRun() {
        var h = Self.harness()
        h.submit("ann", [.text(1, TextOperation([.retain(3), .insert("b")]))], coalesce: "name", at: 1000)
        _ = h.send(.undo(.init(seq: h.nextSeq("ann"), entry: 99)), from: "ann", at: 1100)
        h.submit("ann", [.text(1, TextOperation([.retain(4), .insert("y")]))], coalesce: "name", at: 1200)
        #expect(h.room.stacks(of: "ann").undo.count == 1, "still one typing step")
    }

    // MARK: H5, H6: restore

    /// H5's history: ann removes Joan (r1), bob renames Sam (r2), carl inserts Kim (r3).
    static func h5History() -> (Harness, Person) {
        var h = Self.harness()
        h.submit("ann", [.remove(2)])
        h.submit("bob", [.set(3, .name("Samuel"))])
        let kim = Person(tag: h.room.users["carl"]!.tagBlocks[0].from, name: "Kim")
        h.submit("carl", [.insert(kim, at: 2)])
        return (h, kim)
    }

    @Test("H5 restore and its undo: the seed again, then the room as after r3")
    func h5() {
        var (h, _) = Self.h5History()
        let afterR3 = h.people
        guard let r = Self.restore(&h, "dana", to: 0) else { Issue.record("no restored"); return }
        #expect(r.rev == 4 && r.label == "Restore to revision 0")
        #expect(h.people == Self.seed)
        #expect(h.room.revision(4)?.kind == .restore && h.room.revision(4)?.author == "dana")
        #expect(h.undo("dana").rev == 5)
        #expect(h.people == afterR3)
    }

    @Test("H6 an edit racing a restore: reported targetRemoved by the restorer")
    func h6() {
        var (h, kim) = Self.h5History()
        _ = Self.restore(&h, "dana", to: 0)
        let ack = h.submit("carl", [.set(kim.tag, .glasses(true))], base: 3)
        #expect(ack.rev == 4 && ack.ops.isEmpty)
        #expect(ack.noop == [SkipReport(reason: .targetRemoved, tag: kim.tag, by: "dana")])
    }

    @Test("a restore to what the room already is changes nothing; a viewer is forbidden; a bad rev is bad-message")
    func restoreEdges() {
        var h = Self.harness()
        guard let r = Self.restore(&h, "ann", to: 0) else { Issue.record("no restored"); return }
        #expect(r.rev == nil && r.ops.isEmpty && h.room.stacks(of: "ann").undo.isEmpty)
        guard case .error(let e)? = h.send(.restore(.init(seq: h.nextSeq("ann"), rev: 9)), from: "ann") else {
            Issue.record("no error")
            return
        }
        #expect(e.code == .badMessage)
        h.join("vic", role: .viewer)
        guard case .error(let f)? = h.send(.restore(.init(seq: h.nextSeq("vic"), rev: 0)), from: "vic") else {
            Issue.record("no error")
            return
        }
        #expect(f.code == .forbidden)
    }

    @Test("restore to any revision of a random history yields exactly the model at that revision, and its undo the model before",
          arguments: 0..<40)
    func restoreProperty(seed: UInt64) {
        var rng = SeededRandom(seed: seed)
        var h = Harness(people: Self.seed, users: ["A", "B"])
        var nextTag = ["A": h.room.users["A"]!.tagBlocks[0].from, "B": h.room.users["B"]!.tagBlocks[0].from]
        var models = [h.room.model]
        for _ in 0..<30 {
            let user = rng.chance(0.5) ? "A" : "B"
            let ops = RandomEdits.batch(on: h.room.model, nextTag: &nextTag[user]!, &rng)
            guard !ops.isEmpty else { continue }
            if h.submit(user, ops).rev == models.count { models.append(h.room.model) }
        }
        let target = rng.int(0...(models.count - 1))
        let before = h.room.model
        _ = Self.restore(&h, "A", to: target)
        #expect(h.room.model == models[target], "seed \(seed): restore to \(target)")
        if before != models[target] {
            h.undo("A")
            #expect(h.room.model == before, "seed \(seed): undo of the restore")
        }
    }

    @Test("restore's moves: the longest run already in order stays, ties keep earlier people")
    func fewestMoves() throws {
        #expect(Room.longestIncreasingRun([1, 3, 0, 2]) == [0, 1])
        #expect(Room.longestIncreasingRun([2, 0, 1]) == [1, 2])
        #expect(Room.longestIncreasingRun([]) == [])
        let people = (1...4).map { Person(tag: $0, name: "P\($0)") }
        let current = PeopleModel(people: [people[1], people[3], people[0], people[2]])  // 2 4 1 3
        let target = PeopleModel(people: people)
        let batch = Room.restoreBatch(from: current, to: target)
        #expect(batch.count == 2, "\(batch)")
        var model = current
        _ = try model.apply(batch: batch)
        #expect(model == target)
        // Equally long runs: the one with the people earliest in the room now stays (SEMANTICS.md
        // decision 18): [2, 1, 3] to [1, 2, 3] keeps 2 and 3 and moves 1 to the front.
        let tie = Room.restoreBatch(from: PeopleModel(people: [people[1], people[0], people[2]]),
                                    to: PeopleModel(people: Array(people[0...2])))
        #expect(tie == [.move(1, to: 0)], "\(tie)")
    }

    // MARK: H7, H8: timeline and attribution

    @Test("H7 timeline: newest first, entry ids for the asker only; by tag")
    func h7() {
        var h = Self.harness()
        h.submit("ann", [Self.hair(.red)])
        h.submit("ann", [.set(1, .eyeColor(.green))])
        let page = Self.log(h, "ann")
        #expect(page?.entries.map(\.rev) == [2, 1] && page?.entries.map(\.entry) == [2, 1])
        #expect(page?.entries.allSatisfy { $0.author == "ann" && $0.time != nil } == true)
        #expect(page?.more == false && page?.seq == 7)
        #expect(Self.log(h, "bob")?.entries.map(\.entry) == [nil, nil])
        #expect(Self.log(h, "ann", limit: 1)?.more == true)
        #expect(Self.log(h, "ann", before: 2)?.entries.map(\.rev) == [1])

        var (h5, _) = Self.h5History()
        _ = Self.restore(&h5, "dana", to: 0)
        h5.undo("dana")
        #expect(Self.log(h5, "ann", tag: 2)?.entries.map(\.rev) == [5, 4, 1])
    }

    @Test("H8 attribution: bob wrote the hair at rev 2; the seed wrote the rest at rev 0")
    func h8() {
        var h = Self.harness()
        h.submit("ann", [Self.hair(.red)])
        h.submit("bob", [Self.hair(.blonde)])
        guard case .blame(let b)? = Self.blame(h, "ann", tag: 1) else { Issue.record("no blame"); return }
        #expect(b.record.fields[.hairColor]?.user == "bob" && b.record.fields[.hairColor]?.rev == 2)
        #expect(b.record.fields[.eyeColor] == .seed && b.record.created == .seed)
        #expect(b.record.facialHair[.beard] == .seed, "a listed element of the seed")
        guard case .error(let e)? = Self.blame(h, "ann", tag: 99) else { Issue.record("no error"); return }
        #expect(e.code == .badMessage)
    }

    @Test("times: every revision has one, never earlier than the one before; acks, ops and undone carry it")
    func times() {
        var h = Self.harness()
        let first = h.submit("ann", [Self.hair(.red)], at: 5000)
        let second = h.submit("bob", [.set(2, .glasses(true))], at: 4000)  // the clock went back
        #expect(first.time == 5000 && second.time == 5000)
        let undone = h.undo("ann", at: 7000)
        #expect(undone.time == 7000)
        let nothing = h.submit("ann", [.set(2, .glasses(true))], at: 9000)
        #expect(nothing.rev == 3 && nothing.time == 7000, "a no-op ack carries the head's time")
        #expect(h.room.revision(2)?.opsMessage() == .ops(.init(rev: 2, time: 5000, author: "bob", kind: .edit,
                                                               ops: [.set(2, .glasses(true))])))
    }

    @Test("a revision's time is never before the room was made (a clock behind the one that made it)")
    func timesAfterCreation() {
        var h = Self.harness()
        h.room.created = 6000
        let first = h.submit("ann", [Self.hair(.red)], at: 5000)
        #expect(first.time == 6000, "not before revision 0's time")
        #expect(h.submit("bob", [.set(2, .glasses(true))], at: 8000).time == 8000)
    }

    @Test("blame and times survive a restart: snapshot plus journal rebuild them")
    func durable() throws {
        var h = Self.harness()
        let initial = h.room.snapshot().json
        let position = h.room.journalPosition
        h.submit("ann", [Self.hair(.red)])
        _ = Self.restore(&h, "bob", to: 0)
        var journal: [JournalEntry] = []
        for case .persist(let entry) in h.log where entry.position > position { journal.append(entry) }
        let restored = try Room(restoring: StoredRoom(snapshot: initial, window: [], tail: journal), policy: h.room.policy)
        #expect(restored.blame == h.room.blame)
        let window = (1...h.revision).compactMap { h.room.revision($0) }
        let again = try Room(restoring: StoredRoom(snapshot: h.room.snapshot().json, window: window, tail: []),
                             policy: RoomPolicy(keptRevisions: 0))
        #expect(again.blame == h.room.blame)
    }

    @Test("blame keeps the records of the last 1,000 people removed, through a snapshot; someone removed before them is blamed, once put back, as a new insert")
    func departedBounded() throws {
        var h = Self.harness()
        h.submit("ann", [.facialHair(3, .beard, present: true)])
        h.submit("ann", [.facialHair(3, .beard, present: false)])  // Sam's beard: written by ann, not worn
        h.submit("bob", [.facialHair(2, .beard, present: true)])
        h.submit("bob", [.facialHair(2, .beard, present: false)])  // Joan's too, by bob
        h.submit("ann", [.remove(3)])
        h.submit("bob", [.remove(2)])
        for _ in 0..<10 { _ = h.send(.tags, from: "carl") }
        let tags = h.room.users["carl"]!.tagBlocks.flatMap { Array($0.from...$0.to) }
        for tag in tags.prefix(BlameIndex.departedKept - 1) {
            h.submit("carl", [.insert(Person(tag: tag, name: "P\(tag)"), at: 0)])
            h.submit("carl", [.remove(tag)])
        }
        #expect(h.room.blame.departed.count == BlameIndex.departedKept)
        #expect(h.room.blame.departed[3] == nil, "Sam, removed first, is forgotten")
        #expect(h.room.blame.departed[2]?.facialHair[.beard]?.user == "bob", "Joan, removed 1,000th last, is kept")
        // Through a snapshot: the same records in the same order, so the same one goes next.
        let window = (1...h.revision).compactMap { h.room.revision($0) }
        let restored = try Room(restoring: StoredRoom(snapshot: h.room.snapshot().json, window: window, tail: []),
                                policy: h.room.policy)
        #expect(restored.blame == h.room.blame)
        #expect(restored.blame.removals == h.room.blame.removals)

        // Put back by their remover's undo (neither wears a beard: the re-insert does not list it).
        #expect(h.undo("ann").rev != nil && h.undo("bob").rev != nil)
        #expect(h.room.blame[2]?.facialHair[.beard] == Writer(user: "bob", rev: 4, time: 4000), "Joan's beard: bob's, ever written")
        #expect(h.room.blame[3]?.facialHair[.beard] == nil, "Sam's beard: forgotten with his record")
        #expect(h.room.blame[3]?.facialHair.values.allSatisfy { $0.user == "ann" } == true, "what he wears: the undo's")
        #expect(h.room.blame[3]?.created.user == "ann" && h.room.blame[2]?.created.user == "bob")
        #expect(h.room.blame.departed.count == BlameIndex.departedKept - 1, "Joan's record left the departed")
    }

    // MARK: Beyond the memory window

    @Test("restore and log below the memory window ask for the store's revisions, and then answer exactly")
    func beyondMemory() {
        var h = Harness(people: Self.seed, policy: RoomPolicy(keptRevisions: 4), users: ["A", "B"])
        var models = [h.room.model]
        var revisions: [Revision] = []
        for k in 0..<20 {
            h.submit(k % 2 == 0 ? "A" : "B", [.set(1 + k % 3, .name("n\(k)"))])
            models.append(h.room.model)
            revisions.append(h.room.revision(h.revision)!)
        }
        #expect(h.room.oldestKeptBase > 2)
        let id = h.sessions["A"]!
        let restore = ClientMessage.restore(.init(seq: h.nextSeq("A"), rev: 2))
        let asked = h.room.receive(restore, from: id, now: 1)
        guard case .readHistory(let read)? = asked.first else { Issue.record("\(asked)"); return }
        #expect(read.after == 2 && read.through == h.room.oldestKeptBase)
        let older = revisions.filter { $0.number > read.after && $0.number <= read.through }
        let answered = h.room.receive(restore, from: id, now: 2, older: older, log: nil)
        #expect(answered.contains { if case .send(.restored(let r), _) = $0 { r.rev == 21 } else { false } })
        #expect(h.room.model == models[2])

        // The timeline, 5 at a time, down to revision 1 through chunks read from the store.
        let all = revisions + [h.room.revision(21)!]
        var actions = h.room.receive(.log(.init(seq: 1, before: 10, limit: 5)), from: id, now: 3)
        var rounds = 0
        while case .readHistory(let read)? = actions.first, rounds < 10 {
            rounds += 1
            let chunk = all.filter { $0.number > read.after && $0.number <= read.through }
            actions = h.room.receive(read.message, from: id, now: 3, older: chunk, log: read.log)
        }
        guard case .send(.log(let page), _)? = actions.first else { Issue.record("\(actions)"); return }
        #expect(page.entries.map(\.rev) == [9, 8, 7, 6, 5] && page.more)
    }

    @Test("undo^n then redo^n is still the identity with selective undos of older entries mixed in", arguments: 0..<30)
    func selectiveUndoRedo(seed: UInt64) {
        var rng = SeededRandom(seed: seed)
        var h = Harness(people: Self.seed, users: ["A", "B"])
        var nextTag = h.room.users["A"]!.tagBlocks[0].from
        for _ in 0..<8 {
            let ops = RandomEdits.batch(on: h.room.model, nextTag: &nextTag, &rng)
            if !ops.isEmpty { h.submit("A", ops) }
        }
        // Take back one older entry selectively, then plain undo / redo over the rest.
        let ids = h.room.stacks(of: "A").undo.map(\.id)
        if ids.count > 1 {
            _ = h.send(.undo(.init(seq: h.nextSeq("A"), entry: ids[rng.int(0...(ids.count - 2))])), from: "A")
        }
        // The selective undo's own redo entry stays under the ones the undos push: redo exactly those.
        let before = h.room.model
        let kept = h.room.stacks(of: "A").redo.count
        for _ in 0..<h.room.stacks(of: "A").undo.count { h.undo("A") }
        for _ in 0..<(h.room.stacks(of: "A").redo.count - kept) { h.redo("A") }
        #expect(h.room.model == before, "seed \(seed)")
    }
}
