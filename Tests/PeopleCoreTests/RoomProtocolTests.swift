@testable import PeopleCore
import Testing

/// PROTOCOL.md "rules of the exchange", on the room state machine.
@Suite("Room: rules of the exchange")
struct RoomProtocolTests {
    typealias F = Fixtures

    static func sends(_ actions: [RoomAction]) -> [(ServerMessage, [SessionID])] {
        actions.compactMap { if case .send(let m, let to) = $0 { (m, to) } else { nil } }
    }

    @Test("a resent seq gets the same reply and is applied once")
    func resendIsIdempotent() {
        var h = Harness()
        let submit = ClientMessage.submit(.init(seq: 1, base: 0, ops: [.set(1, .hairColor(.red))]))
        let first = h.send(submit, from: "A")
        let revisions = h.revision
        let second = h.send(submit, from: "A")
        #expect(first == second)
        #expect(h.revision == revisions)
        #expect(h.room.stacks(of: "A").undo.count == 1)
    }

    @Test("a replayed reply is sent only to the sender, with no broadcast and no commit")
    func replayHasNoSideEffects() {
        var h = Harness()
        let submit = ClientMessage.submit(.init(seq: 1, base: 0, ops: [.set(1, .hairColor(.red))]))
        _ = h.send(submit, from: "A")
        let actions = h.room.receive(submit, from: h.sessions["A"]!, now: 0)
        #expect(actions.count == 1)
        #expect(Self.sends(actions).first?.1 == [h.sessions["A"]!])
    }

    @Test("a seq not above the last one and never seen is bad-message")
    func seqMustIncrease() {
        var h = Harness()
        _ = h.send(.submit(.init(seq: 5, base: 0, ops: [.set(1, .hairColor(.red))])), from: "A")
        let reply = h.send(.undo(.init(seq: 3)), from: "A")
        guard case .error(let e)? = reply else { Issue.record("expected an error"); return }
        #expect(e.code == .badMessage)
    }

    @Test("a request that cannot be read: a seq answered before is answered again first; a bad op uses up its seq, a bad envelope does not")
    func unreadableRequests() {
        var h = Harness()
        let a = h.sessions["A"]!
        func reply(_ actions: [RoomAction]) -> ServerMessage? { Self.sends(actions).first?.0 }
        let acked = h.send(.submit(.init(seq: 1, base: 0, ops: [.set(1, .hairColor(.red))])), from: "A")
        // The resend of seq 1, whatever it says now (a label that is not a string, say): its reply again.
        #expect(reply(h.room.receiveUnreadable(seq: 1, error: ProtocolError(.badMessage, "`label` must be a string"), from: a)) == acked)
        // A bad op (the envelope well formed) is answered invalid-op and uses up its seq: a resend with
        // a good batch gets that answer again, and nothing is applied.
        let refused = reply(h.room.receiveUnreadable(seq: 2, error: ProtocolError(.invalidOp, "unknown op 'x'"), from: a))
        guard case .error(let error)? = refused else { Issue.record("expected an error"); return }
        #expect(error.code == .invalidOp && error.seq == 2)
        let revision = h.revision
        #expect(h.send(.submit(.init(seq: 2, base: 1, ops: [.set(1, .glasses(true))])), from: "A") == refused)
        #expect(h.revision == revision)
        // A bad envelope uses up nothing: the seq is still free.
        let envelope = reply(h.room.receiveUnreadable(seq: 3, error: ProtocolError(.badMessage, "`base` is missing"), from: a))
        guard case .error(let bad)? = envelope else { Issue.record("expected an error"); return }
        #expect(bad.code == .badMessage && bad.seq == 3)
        guard case .ack? = h.send(.submit(.init(seq: 3, base: 1, ops: [.set(1, .glasses(true))])), from: "A") else {
            Issue.record("seq 3 was still free"); return
        }
        // A seq below the last one, never seen: bad-message, whatever was wrong with the frame.
        guard case .error(let low)? = reply(h.room.receiveUnreadable(seq: 0, error: ProtocolError(.invalidOp, "x"), from: a)) else {
            Issue.record("expected an error"); return
        }
        #expect(low.code == .badMessage && low.message.contains("not above"))
    }

    @Test("undo, redo and submit share one seq counter and their replies are all replayed")
    func undoRepliesReplayed() {
        var h = Harness()
        _ = h.send(.submit(.init(seq: 1, base: 0, ops: [.set(1, .hairColor(.red))])), from: "A")
        let undo = ClientMessage.undo(.init(seq: 2))
        let first = h.send(undo, from: "A")
        let again = h.send(undo, from: "A")
        #expect(first == again)
        #expect(h.person(1)?.hairColor == .brown)
    }

    @Test("a base newer than the hub, or older than the session's last ack, is bad-message")
    func baseRules() {
        var h = Harness()
        #expect(h.reject("A", [.set(1, .glasses(true))], base: 9)?.code == .badMessage)
        h.submit("A", [.set(1, .hairColor(.red))], base: 0)
        h.submit("A", [.set(1, .hairColor(.white))], base: 1)
        #expect(h.reject("A", [.set(2, .glasses(true))], base: 1)?.code == .badMessage)
        // Another session may still send an old base.
        h.submit("B", [.set(2, .glasses(true))], base: 0)
    }

    @Test("a base older than the kept history is stale-base")
    func staleBase() {
        var h = Harness(policy: RoomPolicy(keptRevisions: 2))
        for k in 0..<6 { h.submit("A", [.set(1, .glasses(k % 2 == 0))]) }
        #expect(h.reject("B", [.set(2, .glasses(true))], base: 0)?.code == .staleBase)
    }

    @Test("a viewer's edit, undo and redo are forbidden")
    func viewerForbidden() {
        var h = Harness()
        h.join("V", role: .viewer)
        #expect(h.reject("V", [.set(1, .glasses(true))])?.code == .forbidden)
        guard case .error(let e)? = h.send(.undo(.init(seq: h.nextSeq("V"))), from: "V") else {
            Issue.record("expected an error")
            return
        }
        #expect(e.code == .forbidden)
        #expect(h.revision == 0)
    }

    @Test("invalid batches are invalid-op and change nothing", arguments: [
        [Diff.set(9, .glasses(true))],                                             // tag never present
        [.set(1, .glasses(true)), .text(1, TextOperation([.retain(9), .insert("x")]))],  // span past the end
        [.set(1, .name(String(repeating: "é", count: 101)))],                      // 202 bytes
        [.insert(Fixtures.person(2), at: 0)],                                      // tag in use
        [.insert(Fixtures.person(500), at: 0)],                                    // outside A's block
        [.insert(Fixtures.person(4), at: 0), .insert(Fixtures.person(4), at: 1)],  // tag twice
    ])
    func invalidBatches(ops: [Diff]) {
        var h = Harness()
        let before = h.room.model
        #expect(h.reject("A", ops)?.code == .invalidOp)
        #expect(h.room.model == before)
        #expect(h.revision == 0)
        #expect(h.room.stacks(of: "A").undo.isEmpty)
    }

    @Test("a tag once used is never given to a different person, even after a remove")
    func tagNeverReused() {
        var h = Harness()
        h.submit("A", [.insert(F.person(4), at: 0)])
        h.submit("A", [.remove(4)])
        #expect(h.reject("A", [.insert(F.person(4, "Other"), at: 0)])?.code == .invalidOp)
    }

    @Test("a diff may name a person inserted earlier in the same batch")
    func insertThenEdit() {
        var h = Harness()
        let ack = h.submit("A", [.insert(F.person(4), at: 3), .set(4, .glasses(true)), .move(4, to: 0)])
        #expect(ack.ops.count == 3)
        #expect(h.people.first?.glasses == true)
    }

    @Test("ops go to everyone else in the room, the same user's other tabs included")
    func broadcastRecipients() {
        var h = Harness()
        h.join("A")  // a second tab of A
        let secondTab = h.sessions["A"]!
        let firstTab = "s-A-0"
        let actions = h.room.receive(.submit(.init(seq: 1, base: 0, ops: [.set(1, .hairColor(.red))])),
                                     from: firstTab, now: 0)
        let ops = Self.sends(actions).first { if case .ops = $0.0 { true } else { false } }
        #expect(Set(ops?.1 ?? []) == Set([secondTab, h.sessions["B"]!]))
        guard case .persist(let entry)? = actions.first else { Issue.record("expected the record first"); return }
        #expect(entry.record.revision?.number == 1)
        let history = Self.sends(actions).first { if case .history = $0.0 { true } else { false } }
        #expect(Set(history?.1 ?? []) == Set([firstTab, secondTab]))
    }

    @Test("a batch that changes nothing is acked at the current revision: no commit, no broadcast, no entry")
    func noChangeBatch() {
        var h = Harness()
        let actions = h.room.receive(.submit(.init(seq: 1, base: 0, ops: [.set(1, .hairColor(.brown))])),
                                     from: h.sessions["A"]!, now: 0)
        // The reply is journalled (a resend must replay it) but there is no revision.
        #expect(actions.count == 2)
        guard case .persist(let entry) = actions[0], case .send(.ack(let ack), _) = actions[1] else {
            Issue.record("expected the record, then an ack"); return
        }
        #expect(entry.record.revision == nil)
        #expect(ack.rev == 0 && ack.ops.isEmpty)
    }

    @Test("join with since catches up with the missed revisions in order, own ones marked with seq")
    func catchUp() {
        var h = Harness()
        h.submit("A", [.set(1, .hairColor(.red))])
        h.submit("B", [.set(2, .hairColor(.white))])
        h.submit("A", [.set(3, .glasses(false))])
        let old = h.sessions["A"]!
        _ = h.room.leave(session: old)
        let (id, actions) = h.room.join(session: "new", user: "A", role: .editor, resume: old, since: 1)
        #expect(id == old)
        let messages = Self.sends(actions).map(\.0)
        guard case .welcome(let w) = messages[0] else { Issue.record("expected welcome"); return }
        #expect(w.people == nil && w.rev == 3)
        let catchUp = messages.compactMap { if case .ops(let o) = $0 { o } else { nil } }
        #expect(catchUp.map(\.rev) == [2, 3])
        #expect(catchUp.map(\.seq) == [nil, 2])
    }

    @Test("a since the hub cannot serve gets the full state")
    func sinceTooOld() {
        var h = Harness(policy: RoomPolicy(keptRevisions: 2))
        for k in 0..<6 { h.submit("A", [.set(1, .glasses(k % 2 == 0))]) }
        let (_, actions) = h.room.join(session: "late", user: "C", role: .editor, since: 0)
        guard case .welcome(let w) = Self.sends(actions)[0].0 else { Issue.record("expected welcome"); return }
        #expect(w.people == h.people)
    }

    @Test("a since more than maxCatchUp revisions behind gets the full state; within it, the ops (from memory or the store)")
    func catchUpLimit() {
        var h = Harness(policy: RoomPolicy(keptRevisions: 2, maxCatchUp: 3))
        for k in 0..<6 { h.submit("A", [.set(1, .glasses(k % 2 == 0))]) }
        #expect(h.room.storeReadForJoin(since: 2) == nil)  // 4 behind: no store read, the full state
        let (_, far) = h.room.join(session: "far", user: "C", role: .editor, since: 2)
        let farMessages = Self.sends(far).map(\.0)
        guard case .welcome(let full) = farMessages[0] else { Issue.record("expected welcome"); return }
        #expect(full.people == h.people && full.rev == 6)
        #expect(!farMessages.contains { if case .ops = $0 { true } else { false } })
        #expect(h.room.storeReadForJoin(since: 3)! == (3, 4))  // 3 behind, older than the 2 kept: from the store
        let (_, near) = h.room.join(session: "near", user: "D", role: .editor, since: 4)
        let nearMessages = Self.sends(near).map(\.0)
        guard case .welcome(let partial) = nearMessages[0] else { Issue.record("expected welcome"); return }
        #expect(partial.people == nil)
        #expect(nearMessages.compactMap { if case .ops(let o) = $0 { o.rev } else { nil } } == [5, 6])
    }

    @Test("a since whose revision has another time than the client's names another history: the full state, with reset")
    func sinceOfAnotherHistory() {
        var h = Harness()
        for k in 0..<4 { h.submit("A", [.set(1, .glasses(k % 2 == 0))]) }
        let times = h.room.revisions(after: 0, through: 4).map(\.timestamp)
        func welcome(since: Int, sinceTime: Int64?, earlier: [Revision] = []) -> (ServerMessage.Welcome, [Int])? {
            let (_, actions) = h.room.join(session: "c\(since)-\(sinceTime ?? -1)", user: "C", role: .editor,
                                           since: since, sinceTime: sinceTime, earlier: earlier)
            let messages = Self.sends(actions).map(\.0)
            guard case .welcome(let w) = messages[0] else { return nil }
            return (w, messages.compactMap { if case .ops(let o) = $0 { o.rev } else { nil } })
        }
        // The client's revision 2 is the room's: a catch-up, and the welcome says the head's time.
        let same = welcome(since: 2, sinceTime: times[1])
        #expect(same?.0.people == nil && same?.0.reset == false && same?.1 == [3, 4])
        #expect(same?.0.time == times[3])
        // Another time: another history (a store restored from an older backup, say).
        let other = welcome(since: 2, sinceTime: times[1] + 1)
        #expect(other?.0.people == h.people && other?.0.reset == true && other?.1 == [])
        // Ahead of the head: another history too (it went back); without sinceTime as with it.
        #expect(welcome(since: 9, sinceTime: nil)?.0.reset == true)
        // This room does not know when it was made: a client that says it had a time for revision 0
        // had another room.
        #expect(welcome(since: 0, sinceTime: 5)?.0.reset == true)
        // Without sinceTime (an independent client), a since within the head is caught up as before.
        #expect(welcome(since: 2, sinceTime: nil)?.0.reset == false)
    }

    @Test("revision 0's time is when the room was made: a client at revision 0 of another room gets the full state with reset")
    func sinceZeroOfAnotherRoom() throws {
        // A black-box pass (session 39): a screen at revision 0 of a room a hub without storage made
        // again was caught up with the real room's revisions on top of the other room's people, and
        // never agreed with the hub again: revision 0 had no time to tell the rooms apart by.
        var room = Room(name: "r", seed: PeopleModel(people: Fixtures.start), created: 1_000)
        let (_, first) = room.join(session: "a", user: "A", role: .editor)
        guard case .welcome(let born) = Self.sends(first)[0].0 else { Issue.record("expected welcome"); return }
        #expect(born.rev == 0 && born.time == 1_000, "a welcome at revision 0 says when the room was made")
        let atZero = room.snapshot()
        let ops: [Diff] = [.set(1, .glasses(true))]
        _ = room.receive(.submit(.init(seq: 1, base: 0, ops: ops)), from: "a", now: 2_000)
        func welcome(sinceTime: Int64?) -> (ServerMessage.Welcome, [Int])? {
            let (_, actions) = room.join(session: "c\(sinceTime ?? -1)", user: "C", role: .editor, since: 0, sinceTime: sinceTime)
            let messages = Self.sends(actions).map(\.0)
            guard case .welcome(let w) = messages[0] else { return nil }
            return (w, messages.compactMap { if case .ops(let o) = $0 { o.rev } else { nil } })
        }
        let same = welcome(sinceTime: 1_000)
        #expect(same?.0.reset == false && same?.0.people == nil && same?.1 == [1], "this room's revision 0: caught up")
        let other = welcome(sinceTime: 999)
        #expect(other?.0.reset == true && other?.0.people == room.model.people.elements && other?.1 == [])
        #expect(welcome(sinceTime: nil)?.0.reset == false, "no time (an independent client): caught up as before")
        // Kept across a restart: the snapshot holds it.
        let restored = try Room(restoring: StoredRoom.stored(from: atZero, journal: []), policy: RoomPolicy())
        #expect(restored.created == 1_000 && restored.snapshot().json["created"] == .int(1_000))
    }

    @Test("a sinceTime whose revision memory no longer holds is checked against the store's copy of it")
    func sinceTimeFromTheStore() {
        var h = Harness(policy: RoomPolicy(keptRevisions: 2, maxCatchUp: 3))
        for k in 0..<6 { h.submit("A", [.set(1, .glasses(k % 2 == 0))]) }
        let floor = h.room.oldestKeptBase
        #expect(floor >= 3)
        // Within the catch-up: the read starts at revision `since` itself to compare its time.
        #expect(h.room.storeReadForJoin(since: 3, sinceTime: 42)! == (2, floor))
        // Memory holds revision 5: no read.
        #expect(h.room.storeReadForJoin(since: 5, sinceTime: 42) == nil)
        // Too far behind for a catch-up: only revision `since` is read, for the reset.
        #expect(h.room.storeReadForJoin(since: 1, sinceTime: 42)! == (0, 1))
        #expect(h.room.storeReadForJoin(since: 1) == nil)
        let stored = Revision(number: 1, author: "A", kind: .edit, label: nil, applied: [], timestamp: 7_000)
        let (_, far) = h.room.join(session: "far", user: "C", role: .editor, since: 1, sinceTime: 7_001, earlier: [stored])
        guard case .welcome(let reset) = Self.sends(far)[0].0 else { Issue.record("expected welcome"); return }
        #expect(reset.reset && reset.people == h.people)
        let (_, farSame) = h.room.join(session: "far2", user: "C", role: .editor, since: 1, sinceTime: 7_000, earlier: [stored])
        guard case .welcome(let full) = Self.sends(farSame)[0].0 else { Issue.record("expected welcome"); return }
        #expect(!full.reset && full.people == h.people)
        // The store could not be read: nothing to compare, the full state without reset.
        let (_, unread) = h.room.join(session: "far3", user: "C", role: .editor, since: 1, sinceTime: 7_001)
        guard case .welcome(let plain) = Self.sends(unread)[0].0 else { Issue.record("expected welcome"); return }
        #expect(!plain.reset)
    }

    @Test("each session gets its own tag block; a user's inserts may use any of the user's blocks")
    func tagBlocks() {
        var h = Harness()
        let (_, a2) = h.room.join(session: "a2", user: "A", role: .editor)
        guard case .welcome(let second) = Self.sends(a2)[0].0 else { Issue.record("expected welcome"); return }
        #expect(second.tags.from > 203)
        // From the first session, a tag of the second block (an offline insert from another tab).
        h.submit("A", [.insert(F.person(second.tags.from), at: 0)])
        let actions = h.room.receive(.tags, from: h.sessions["B"]!, now: 0)
        // The new block is journalled before it is sent (it must never be handed out twice).
        guard case .persist(let entry) = actions[0], case .send(.tags(let block), _) = actions[1] else {
            Issue.record("expected the record, then tags"); return
        }
        #expect(entry.record == .tags(session: h.sessions["B"]!, block: block))
        #expect(block.from > second.tags.to)
    }

    @Test("presence has one entry per connection and goes to everyone when it changes")
    func presence() {
        var h = Harness()
        let actions = h.room.receive(.presence(.init(viewing: 2, field: "name")), from: h.sessions["B"]!, now: 0)
        guard case .send(.presence(let users), let to) = actions[0] else { Issue.record("expected presence"); return }
        #expect(users == [PresenceEntry(user: "A"), PresenceEntry(user: "B", viewing: 2, field: "name")])
        #expect(Set(to) == Set(h.sessions.values))
        let left = h.room.leave(session: h.sessions["A"]!)
        guard case .send(.presence(let after), _) = left[0] else { Issue.record("expected presence"); return }
        #expect(after.map(\.user) == ["B"])
    }

    @Test("undo stacks belong to the user: a second session undoes the first session's edit")
    func stacksShared() {
        var h = Harness()
        h.submit("A", [.set(1, .hairColor(.red))])
        h.join("A")
        h.undo("A")
        #expect(h.person(1)?.hairColor == .brown)
    }

    @Test("beyond keptSessions the oldest disconnected session is forgotten (and journalled); it cannot be resumed")
    func forgottenSession() {
        var policy = RoomPolicy()
        policy.keptSessions = 1
        var h = Harness(policy: policy)
        let old = h.sessions["A"]!
        #expect(h.room.connectionCount == 2)
        #expect(!h.room.leave(session: old).contains { if case .persist = $0 { true } else { false } })
        #expect(h.room.connectionCount == 1)
        let actions = h.room.leave(session: h.sessions["B"]!)
        #expect(actions.contains { if case .persist(let e) = $0 { e.record == .forgotten(session: old) } else { false } })
        let (id, _) = h.room.join(session: "fresh", user: "A", role: .editor, resume: old, since: 0)
        #expect(id == "fresh")
        #expect(h.room.oldestKeptBase == 0)
    }

    /// SEMANTICS §4 rule 6 beside the contract's §7 reading 4 (docs/SEMANTICS.md decision 14): each
    /// batch is valid at its base, but together they would take the name over the limit, so the later
    /// one is refused; the same batch on the head of a room where nobody typed is applied.
    @Test("concurrent typing that would push a name over the limit refuses the later batch")
    func concurrentTypingOverTheLimit() {
        let long = Person(tag: 1, name: String(repeating: "x", count: 150))
        let typeA: [Diff] = [.text(1, TextOperation([.insert(String(repeating: "a", count: 40))]))]
        let typeB: [Diff] = [.text(1, TextOperation([.retain(150), .insert(String(repeating: "b", count: 40))]))]
        var h = Harness(people: [long])
        #expect(h.submit("A", typeA, base: 0).rev == 1)
        #expect(h.reject("B", typeB, base: 0)?.code == .invalidOp)
        #expect(h.revision == 1 && h.person(1)?.name.count == 190)

        var alone = Harness(people: [long])
        #expect(alone.submit("B", typeB, base: 0).rev == 1)
    }

    /// SEMANTICS §7 reading 4: the verdict on a batch depends only on its base, checked diff by diff
    /// on the people it names as they were there, however far behind the head the base is.
    @Test("validity is decided at the base, several revisions back")
    func validityAtAnOldBase() {
        var h = Harness()
        h.submit("B", [.text(2, TextOperation([.retain(4), .insert("ne")]))], base: 0)  // Joan → Joanne
        h.submit("B", [.set(2, .hairColor(.gray))], base: 1)
        h.submit("B", [.remove(2)], base: 2)
        // At base 0 Joan has 4 letters: a span of 6 is past the end there, whatever happened since.
        #expect(h.reject("A", [.text(2, TextOperation([.retain(6), .insert("!")]))], base: 0)?.code == .invalidOp)
        // At base 1 it is Joanne: the same span is valid there, and a no-op now (she was removed).
        let ack = h.submit("A", [.text(2, TextOperation([.retain(6), .insert("!")]))], base: 1)
        #expect(ack.rev == 3 && ack.ops.isEmpty)
        #expect(ack.noop == [SkipReport(reason: .targetRemoved, tag: 2, by: "B")])
        // A diff on a person the batch itself removed earlier, on the head.
        #expect(h.reject("A", [.remove(1), .set(1, .glasses(true))])?.code == .invalidOp)
        #expect(h.person(1) != nil && h.revision == 3)
    }
}
