@testable import PeopleCore
import Testing
import PeopleTestSupport

/// The client state machine on its own: optimistic view, one request in flight, rebasing, resend.
@Suite("Client sync")
struct ClientSyncTests {
    static func welcomed(_ user: String = "ann", rev: Int = 0) -> ClientSync {
        var client = ClientSync(user: user)
        _ = client.connect()
        _ = client.receive(.welcome(.init(session: "s1", user: user, role: .editor, rev: rev,
                                          people: Fixtures.start, tags: TagBlock(from: 4, to: 103),
                                          history: HistorySummary(), presence: [])))
        return client
    }

    @Test("an edit shows at once; a second waits until the first is acked")
    func oneInFlight() throws {
        var client = Self.welcomed()
        let first = try client.edit([.set(1, .hairColor(.red))])
        #expect(client.view[1]?.hairColor == .red)
        #expect(first == [.submit(.init(seq: 1, base: 0, ops: [.set(1, .hairColor(.red))]))])
        let second = try client.edit([.set(2, .glasses(true))])
        #expect(second.isEmpty)
        #expect(client.view[2]?.glasses == true)
        let (send, _) = client.receive(.ack(.init(seq: 1, rev: 1, ops: [.set(1, .hairColor(.red))])))
        #expect(send == [.submit(.init(seq: 2, base: 1, ops: [.set(2, .glasses(true))]))])
        #expect(client.confirmed[1]?.hairColor == .red)
    }

    @Test("a teammate's revision is applied under my pending typing, which is rebased")
    func rebasesPendingText() throws {
        var client = Self.welcomed()
        _ = try client.edit([.text(1, TextOperation([.retain(3), .insert("e")]))])  // in flight
        _ = try client.edit([.text(1, TextOperation([.retain(4), .insert("!")]))])  // queued
        _ = client.receive(.ops(.init(rev: 1, author: "bob", kind: .edit, ops: [.text(1, TextOperation([.insert("a")]))])))
        #expect(client.confirmed[1]?.name == "aAnn")
        #expect(client.view[1]?.name == "aAnne!")
        let (send, _) = client.receive(.ack(.init(seq: 1, rev: 2, ops: [.text(1, TextOperation([.retain(4), .insert("e")]))])))
        // The queued batch now goes on revision 2, rebased past bob's "a".
        #expect(send == [.submit(.init(seq: 2, base: 2, ops: [.text(1, TextOperation([.retain(5), .insert("!")]))]))])
    }

    @Test("queued diffs on a person a teammate removed are dropped, not sent")
    func prunesRemovedTarget() throws {
        var client = Self.welcomed()
        _ = try client.edit([.set(1, .glasses(true))])                          // in flight
        _ = try client.edit([.set(2, .hairColor(.white)), .set(3, .glasses(false))])  // queued
        _ = client.receive(.ops(.init(rev: 1, author: "bob", kind: .edit, ops: [.remove(2)])))
        let (send, _) = client.receive(.ack(.init(seq: 1, rev: 2, ops: [.set(1, .glasses(true))])))
        #expect(send == [.submit(.init(seq: 2, base: 2, ops: [.set(3, .glasses(false))]))])
    }

    @Test("after a reconnect the request in flight is resent identically, and its catch-up frame answers it")
    func resendAfterReconnect() throws {
        var client = Self.welcomed()
        let sent = try client.edit([.set(1, .hairColor(.red))])
        client.disconnected()
        guard case .hello(let hello) = client.connect() else { Issue.record("expected hello"); return }
        #expect(hello.resume == "s1" && hello.since == 0)
        let (resend, _) = client.receive(.welcome(.init(session: "s1", user: "ann", role: .editor, rev: 1, people: nil,
                                                        tags: TagBlock(from: 4, to: 103), history: HistorySummary(),
                                                        presence: [])))
        #expect(resend == sent)
        // The hub had applied it before the drop: its catch-up frame carries our seq.
        _ = client.receive(.ops(.init(rev: 1, author: "ann", kind: .edit, ops: [.set(1, .hairColor(.red))], seq: 1)))
        #expect(client.pendingCount == 0 && client.revision == 1)
        _ = client.receive(.ack(.init(seq: 1, rev: 1, ops: [.set(1, .hairColor(.red))])))  // the replayed reply
        #expect(client.revision == 1 && client.confirmed[1]?.hairColor == .red)
    }

    @Test("an undo waits behind a queued edit, so it undoes that edit")
    func undoQueuesBehindEdits() throws {
        var client = Self.welcomed()
        _ = try client.edit([.set(1, .hairColor(.red))])
        #expect(client.undo().isEmpty)
        let (send, _) = client.receive(.ack(.init(seq: 1, rev: 1, ops: [.set(1, .hairColor(.red))])))
        #expect(send == [.undo(.init(seq: 2))])
    }

    @Test("an undo pressed for a queued edit that then changes nothing is not sent (it would take back an older change)")
    func undoOfANoOpEditIsDropped() throws {
        var client = Self.welcomed()
        _ = try client.edit([.set(1, .eyeColor(.hazel))])
        _ = client.receive(.ack(.init(seq: 1, rev: 1, ops: [.set(1, .eyeColor(.hazel))])))  // an undo entry
        _ = try client.edit([.set(1, .glasses(true))])   // in flight (seq 2)
        _ = client.undo()                               // pressed for the glasses: queued behind them
        // bob made the same change first: the hub acks seq 2 changing nothing (no revision, no entry).
        _ = client.receive(.ops(.init(rev: 2, author: "bob", kind: .edit, ops: [.set(1, .glasses(true))])))
        let (send, _) = client.receive(.ack(.init(seq: 2, rev: 2, ops: [])))
        #expect(send.isEmpty, "sent, the undo would take back the eye color")
        #expect(client.pendingCount == 0)
    }

    @Test("an undo pressed for a queued edit that is dropped (its person removed meanwhile) goes with it; a later undo stays")
    func undoOfADroppedEditGoesWithIt() throws {
        var client = Self.welcomed()
        _ = try client.edit([.set(1, .eyeColor(.hazel))])
        _ = client.receive(.ack(.init(seq: 1, rev: 1, ops: [.set(1, .eyeColor(.hazel))])))
        _ = try client.edit([.set(2, .glasses(true))])   // in flight (seq 2)
        _ = try client.edit([.set(3, .hairColor(.white))])  // queued
        _ = client.undo()                               // for the hair color
        _ = client.undo()                               // then for the glasses
        _ = client.receive(.ops(.init(rev: 2, author: "bob", kind: .edit, ops: [.remove(3)])))
        var (send, _) = client.receive(.ack(.init(seq: 2, rev: 3, ops: [.set(2, .glasses(true))])))
        #expect(send == [.undo(.init(seq: 3))])
        // That one undo takes back the glasses; nothing more goes out (a second would undo the eye color).
        (send, _) = client.receive(.undone(.init(seq: 3, rev: 4, ops: [.set(2, .glasses(false))], entry: 2)))
        #expect(send.isEmpty)
        #expect(client.pendingCount == 0)
    }

    @Test("while an edit is queued, undo offers that edit and redo is off; then the hub's history again")
    func undoOfferNamesTheQueuedEdit() throws {
        var client = Self.welcomed()
        _ = client.receive(.history(HistorySummary(canUndo: true, canRedo: true, undoLabel: "Change Name", redoLabel: "Move Person")))
        #expect(client.undoOffer == .init(canUndo: true, undoLabel: "Change Name", canRedo: true, redoLabel: "Move Person", queued: false))
        client.disconnected()
        _ = try client.edit([.set(1, .glasses(true))], label: "Toggle Glasses")
        #expect(client.undoOffer == .init(canUndo: true, undoLabel: "Toggle Glasses", canRedo: false, redoLabel: nil, queued: true))
        _ = client.undo()
        #expect(client.undoOffer.queued == false, "the newest request is an undo: the hub decides what it takes back")
    }

    @Test("with several edits queued, each press's offer names the step the next press takes back, never an older acked one")
    func undoOfferWalksTheQueue() throws {
        var client = Self.welcomed()
        _ = client.receive(.history(HistorySummary(canUndo: true, canRedo: false, undoLabel: "Change Name", redoLabel: nil)))
        client.disconnected()
        _ = try client.edit([.set(1, .glasses(true))], label: "Toggle Glasses")
        _ = try client.edit([.set(2, .hairColor(.white))], label: "Change Hair Color")
        _ = client.undo()
        #expect(client.undoOffer == .init(canUndo: true, undoLabel: "Toggle Glasses", canRedo: true,
                                          redoLabel: "Change Hair Color", queued: true))
        _ = client.undo()
        #expect(client.undoOffer == .init(canUndo: true, undoLabel: "Change Name", canRedo: true,
                                          redoLabel: "Toggle Glasses", queued: false))
        _ = client.undo()
        // Below the hub's known top: something may be there, its name is not known.
        #expect(client.undoOffer == .init(canUndo: true, undoLabel: nil, canRedo: true, redoLabel: "Change Name", queued: false))
        _ = client.redo()
        #expect(client.undoOffer.undoLabel == "Change Name")
        #expect(!client.undoOffer.queued, "the step back on top is the hub's, not a queued edit")
        // A selective undo may take any step: what is on top afterwards is not known by name.
        _ = client.undo(entry: 1)
        #expect(client.undoOffer.undoLabel == nil && client.undoOffer.redoLabel == nil)
    }

    @Test("the offer made while requests are queued is what the hub's stacks say once they are answered (300 random offline sessions)")
    func undoOfferAgreesWithTheRoom() {
        for seed in 1...300 {
            var net = Network(seed: UInt64(seed), clients: 1)
            net.settle()
            // Some history first, answered; then offline: edits, undos, redos, scoped ones. Every edit
            // types into a name (never a change the hub finds empty, which the offer cannot foresee: a
            // teammate's same change, or a person an undo queued before it removes); the offline ones
            // with a coalesce key of their own (the hub's top step never shares it).
            let people = net.peers[0].client.view.tags
            for n in 0..<net.rng.int(0...4) {
                let tag = people[net.rng.int(0...(people.count - 1))]
                net.peers[0].up += (try? net.peers[0].client.edit([.text(tag, TextOperation([.insert("y")]))], label: "Before \(n)",
                                                                  coalesce: net.rng.chance(0.4) ? "before" : nil)) ?? []
                net.settle()
                #expect(net.peers[0].client.pendingCount == 0)
            }
            net.disconnect(0)
            var edits = 0
            for _ in 0..<net.rng.int(1...8) {
                switch net.rng.int(0...9) {
                case 0..<5:
                    edits += 1
                    let tag = people[net.rng.int(0...(people.count - 1))]
                    _ = try? net.peers[0].client.edit([.text(tag, TextOperation([.insert("x")]))], label: "Edit \(edits)",
                                                      coalesce: net.rng.chance(0.4) ? "offline" : nil)
                case 5..<8: _ = net.peers[0].client.undo(scope: net.rng.chance(0.3) ? people[0] : nil)
                default: _ = net.peers[0].client.redo(scope: net.rng.chance(0.2) ? people[0] : nil)
                }
            }
            let offer = net.peers[0].client.undoOffer
            let queued = net.peers[0].client.outbox.map(\.request)
            net.settle()
            let hub = net.peers[0].client.history
            let context = "seed \(seed): offer \(offer), hub \(hub), queued \(queued)"
            if let label = offer.undoLabel { #expect(hub.canUndo && hub.undoLabel == label, "\(context)") }
            if !offer.canUndo { #expect(!hub.canUndo, "\(context)") }
            if let label = offer.redoLabel { #expect(hub.canRedo && hub.redoLabel == label, "\(context)") }
            if !offer.canRedo { #expect(!hub.canRedo, "\(context)") }
        }
    }

    @Test("offline, an undo or redo of a queued edit shows at once; the hub's answers keep the view")
    func offlineUndoShowsAtOnce() throws {
        var client = Self.welcomed()
        client.disconnected()
        _ = try client.edit([.set(1, .hairColor(.red))], label: "Change Hair Color")
        _ = try client.edit([.text(2, TextOperation([.retain(4), .insert("!")]))], label: "Type")
        #expect(client.view[2]?.name == "Joan!")
        #expect(client.undo().isEmpty)
        #expect(client.view[2]?.name == "Joan" && client.view[1]?.hairColor == .red)
        _ = client.undo()
        #expect(client.view == PeopleModel(people: Fixtures.start))
        _ = client.redo()
        #expect(client.view[1]?.hairColor == .red && client.view[2]?.name == "Joan")
        // Typed after the undo: made on the view without the "!".
        _ = try client.edit([.text(2, TextOperation([.retain(4), .insert("?")]))], label: "Type again")
        #expect(client.view[2]?.name == "Joan?")
        let shown = client.view

        // The hub: each request answered as a room would (a second client's Network does this fully).
        var room = Room(name: "r", seed: PeopleModel(people: Fixtures.start))
        let (session, _) = room.join(session: "s1", user: "ann", role: .editor)
        _ = client.connect()
        var (send, _) = client.receive(.welcome(.init(session: session, user: "ann", role: .editor, rev: 0, people: nil,
                                                      tags: TagBlock(from: 4, to: 103), history: HistorySummary(), presence: [])))
        var now: Int64 = 10_000
        while let message = send.first {
            now += 1_000  // apart: no coalescing at the hub
            var replies: [ServerMessage] = []
            for case .send(let reply, let to) in room.receive(message, from: session, now: now) where to.contains(session) {
                replies.append(reply)
            }
            send = []
            for reply in replies { send += client.receive(reply).send }
            #expect(client.view == shown, "after \(message)")
        }
        #expect(client.pendingCount == 0)
        #expect(client.confirmed == room.model && room.model == shown)
    }

    @Test("a hub whose room has another history says reset: queued edits go again as new, inserts with tags of the new block")
    func resetHistory() throws {
        var client = Self.welcomed()
        _ = try client.edit([.set(1, .hairColor(.red))], label: "Hair")
        _ = client.receive(.ack(.init(seq: 1, rev: 1, time: 5_000, ops: [.set(1, .hairColor(.red))], noop: [])))
        #expect(client.revision == 1 && client.revisionTime == 5_000)
        let inFlight = try client.edit([.set(2, .eyeColor(.hazel))], label: "Eyes")
        #expect(inFlight.count == 1)
        client.disconnected()
        _ = client.undo(scope: 1)  // the hub's step (rev 1): not predicted, it names the old history
        let allocated = client.allocateTag()
        let kim = try #require(allocated)
        #expect(kim == 4)
        _ = try client.edit([.insert(Fixtures.person(kim, "Kim"), at: 0)], label: "Add Kim")
        _ = try client.edit([.set(kim, .glasses(true))], label: "Glasses")
        guard case .hello(let hello) = client.connect() else { Issue.record("expected a hello"); return }
        #expect(hello.since == 1 && hello.sinceTime == 5_000)

        // The hub lost its copy (restarted without its data): bob's block is now 4–103, and bob has
        // made another revision 1 (Zed, tag 4) and a revision 2.
        var room = Room(name: "r", seed: PeopleModel(people: Fixtures.start))
        let (bob, _) = room.join(session: "b1", user: "bob", role: .editor)
        _ = room.receive(.submit(.init(seq: 1, base: 0, ops: [.insert(Fixtures.person(4, "Zed"), at: 3)])), from: bob, now: 9_000)
        _ = room.receive(.submit(.init(seq: 2, base: 1, ops: [.set(3, .glasses(false))])), from: bob, now: 9_500)
        let (ann, joined) = room.join(session: "a1", user: "ann", role: .editor, resume: hello.resume,
                                      since: hello.since, sinceTime: hello.sinceTime)
        var send: [ClientMessage] = []
        var events: [ClientSync.Event] = []
        for case .send(let message, let to) in joined where to.contains(ann) {
            let (out, happened) = client.receive(message)
            send += out
            events += happened
        }
        // The hub's head (2) is past what ann had seen (1): which of her revisions went, it cannot tell.
        #expect(events.contains(.reset(dropped: 1, lost: [], perhapsMore: true)))
        #expect(client.revision == 2 && client.revisionTime == 9_500)
        // The edit that was in flight goes again, as a new request on the hub's revision.
        guard case .submit(let first) = send.first else { Issue.record("expected the eyes edit, got \(send)"); return }
        #expect(first.base == 2 && first.seq > 1 && first.ops == [.set(2, .eyeColor(.hazel))])
        var now: Int64 = 10_000
        while let message = send.first {
            now += 1_000
            send = []
            for case .send(let reply, let to) in room.receive(message, from: ann, now: now) where to.contains(ann) {
                send += client.receive(reply).send
            }
        }
        #expect(client.pendingCount == 0)
        #expect(client.confirmed == room.model && client.view == room.model)
        // Kim was added under a tag of ann's new block; bob's Zed kept tag 4; the old rev 1 is gone.
        let added = try #require(room.model.people.first { $0.name == "Kim" })
        #expect(added.tag >= 104 && added.glasses)
        #expect(room.model[4]?.name == "Zed" && room.model[1]?.hairColor == Fixtures.start[0].hairColor)
        #expect(room.model[2]?.eyeColor == .hazel && room.model[3]?.glasses == false)
    }

    @Test("a reset names this user's acknowledged revisions past the hub's head as lost, oldest first")
    func resetNamesTheLostRevisions() throws {
        var client = Self.welcomed()
        var sent = try client.edit([.set(1, .hairColor(.red))], label: "Hair")
        _ = client.receive(.ack(.init(seq: 1, rev: 1, time: 5_000, ops: [.set(1, .hairColor(.red))], noop: [])))
        // A teammate's revision 2, then ann's 3 (unlabelled) and her undo of it (4).
        _ = client.receive(.ops(.init(rev: 2, time: 6_000, author: "bob", kind: .edit, ops: [.set(2, .glasses(true))])))
        sent = try client.edit([.set(3, .glasses(false))], label: nil)
        guard case .submit(let third) = sent.first else { Issue.record("\(sent)"); return }
        _ = client.receive(.ack(.init(seq: third.seq, rev: 3, time: 7_000, ops: [.set(3, .glasses(false))], noop: [])))
        sent = client.undo()
        guard case .undo(let undo) = sent.first else { Issue.record("\(sent)"); return }
        _ = client.receive(.undone(.init(seq: undo.seq, rev: 4, time: 8_000, ops: [.set(3, .glasses(true))], skipped: [])))
        client.disconnected()
        _ = client.connect()

        // The hub was restored to a copy from revision 2.
        let (_, events) = client.receive(.welcome(.init(session: "s2", user: "ann", role: .editor, rev: 2, time: 6_000,
                                                        reset: true, people: Fixtures.start,
                                                        tags: TagBlock(from: 200, to: 299), history: HistorySummary(),
                                                        presence: [])))
        let lost = events.compactMap { event -> [ServerMessage.LogEntry]? in
            if case .reset(_, let lost, let perhapsMore) = event, !perhapsMore { lost } else { nil }
        }.first
        #expect(lost?.map(\.rev) == [3, 4])
        #expect(lost?.map(\.kind) == [.edit, .undo] && lost?.allSatisfy { $0.author == "ann" } == true)
        #expect(lost?.first?.ops == [.set(3, .glasses(false))] && lost?.first?.time == 7_000)
    }

    @Test("an undo of a queued edit that may join the hub's newest step (same coalesce key) waits for the hub")
    func undoThatMayCoalesceWaits() throws {
        var client = Self.welcomed()
        var room = Room(name: "r", seed: PeopleModel(people: Fixtures.start))
        let (session, _) = room.join(session: "s1", user: "ann", role: .editor)
        func deliver(_ messages: [ClientMessage], now: Int64) -> [ClientMessage] {
            var send: [ClientMessage] = []
            for message in messages {
                for case .send(let reply, let to) in room.receive(message, from: session, now: now) where to.contains(session) {
                    send += client.receive(reply).send
                }
            }
            return send
        }
        let typeA = try client.edit([.text(2, TextOperation([.retain(4), .insert("a")]))], label: "Rename", coalesce: "name:2")
        #expect(deliver(typeA, now: 1_000).isEmpty)
        let typeB = try client.edit([.text(2, TextOperation([.retain(5), .insert("b")]))], label: "Rename", coalesce: "name:2")
        #expect(client.view[2]?.name == "Joanab")
        // "b" is in flight; the hub will make it one step with "a" (100 ms apart): the undo takes back both.
        _ = client.undo()
        #expect(client.view[2]?.name == "Joanab", "not predicted: the hub's step may be more than the queued edit")
        var send = deliver(typeB, now: 1_100)
        while !send.isEmpty { send = deliver(send, now: 1_200) }
        #expect(client.view[2]?.name == "Joan" && room.model[2]?.name == "Joan")
        // Offline, an edit with another key is predicted as before.
        client.disconnected()
        _ = try client.edit([.set(1, .glasses(true))], label: "Toggle Glasses", coalesce: "glasses:1")
        _ = client.undo()
        #expect(client.view[1]?.glasses == false)
    }

    @Test("a predicted undo in flight when a full state arrives is not applied over it again")
    func predictionInFlightAcrossAFullState() throws {
        var client = Self.welcomed()
        _ = try client.edit([.text(2, TextOperation([.insert("X")]))], label: "Type")
        _ = client.undo()
        #expect(client.view[2]?.name == "Joan")
        let sent = client.receive(.ack(.init(seq: 1, rev: 1, ops: [.text(2, TextOperation([.insert("X")]))]))).send
        #expect(sent == [.undo(.init(seq: 2))])
        client.disconnected()
        _ = client.connect()
        // The hub had undone it before the drop; the welcome brings the full state (rev 2), then the
        // replayed answer.
        _ = client.receive(.welcome(.init(session: "s1", user: "ann", role: .editor, rev: 2, people: Fixtures.start,
                                          tags: TagBlock(from: 4, to: 103), history: HistorySummary(), presence: [])))
        #expect(client.view[2]?.name == "Joan")
        _ = client.receive(.undone(.init(seq: 2, rev: 2, ops: [.text(2, TextOperation([.delete(1)]))])))
        #expect(client.view[2]?.name == "Joan" && client.pendingCount == 0)
    }

    @Test("alone, what the view shows of offline undos and redos is what the hub then makes", arguments: 0..<200)
    func offlinePredictionsComeTrue(seed: Int) {
        var net = Network(seed: UInt64(seed) &* 6_700_417 &+ 1, clients: 1)
        net.settle()
        net.disconnect(0)
        let people = net.peers[0].client.view.tags
        for n in 0..<net.rng.int(1...12) {
            switch net.rng.int(0...9) {
            case 0..<5:
                let tag = people[net.rng.int(0...(people.count - 1))]
                let op: Diff = net.rng.chance(0.5) ? .text(tag, TextOperation([.insert("x\(n)")]))
                    : .set(tag, .glasses(net.rng.chance(0.5)))
                _ = try? net.peers[0].client.edit([op], label: "Edit \(n)")
            case 5..<8: _ = net.peers[0].client.undo()
            default: _ = net.peers[0].client.redo()
            }
        }
        let shown = net.peers[0].client.view
        net.settle()
        #expect(net.errors.isEmpty, "seed \(seed): \(net.errors)")
        #expect(net.room.model == shown, "seed \(seed)")
        #expect(net.peers[0].client.view == shown, "seed \(seed)")
    }

    @Test("an undo that goes with its edit is reported, with the edit's label and ops")
    func droppedUndoIsReported() throws {
        var client = Self.welcomed()
        client.disconnected()
        _ = try client.edit([.set(1, .glasses(true))], label: "Toggle Glasses")
        _ = client.undo()
        _ = client.connect()
        _ = client.receive(.welcome(.init(session: "s1", user: "ann", role: .editor, rev: 0, people: nil,
                                          tags: TagBlock(from: 4, to: 103), history: HistorySummary(), presence: [])))
        // bob made the same change meanwhile: the edit is acked changing nothing.
        let (send, events) = client.receive(.ack(.init(seq: 1, rev: 0, ops: [])))
        #expect(send.isEmpty)
        #expect(events == [.undoDropped(label: "Toggle Glasses", ops: [.set(1, .glasses(true))])])
    }

    @Test("the model at a past revision, walked back from the confirmed state, is the room's at that revision", .cpuBound, arguments: 0..<20)
    func modelAtPastRevisions(seed: Int) {
        var net = Network(seed: UInt64(seed) &* 104_729 &+ 3, clients: 3)
        for _ in 0..<600 { net.step() }
        net.settle()
        #expect(net.room.revision > 20, "seed \(seed): too short a history to say anything")
        for peer in net.peers {
            let client = peer.client
            #expect(client.model(at: client.revision + 1) == nil)
            // What it cannot walk back to is what came before its last full state (a connection that
            // dropped before its first welcome arrived gets one): a prefix, short in these runs.
            var walkable: [Int] = []
            for rev in 0...client.revision {
                guard let walked = client.model(at: rev) else { continue }
                walkable.append(rev)
                #expect(walked == net.room.people(at: rev), "seed \(seed): \(client.user) at rev \(rev)")
            }
            let from = walkable.first ?? client.revision + 1
            #expect(walkable == Array(from...client.revision), "seed \(seed): \(client.user)")
            #expect(from <= client.revision / 4, "seed \(seed): \(client.user) walks back only to rev \(from) of \(client.revision)")
        }
    }

    @Test("a full state starts the walk-back again; it reaches back keptRevisions revisions")
    func modelAtIsBounded() throws {
        var client = Self.welcomed()
        #expect(client.model(at: 0) == client.confirmed)
        for rev in 1...(ClientSync.keptRevisions + 5) {
            _ = client.receive(.ops(.init(rev: rev, author: "bob", kind: .edit, ops: [.set(1, .glasses(rev % 2 == 1))])))
        }
        let head = ClientSync.keptRevisions + 5
        let oldest = head - ClientSync.keptRevisions
        #expect(client.model(at: oldest)?[1]?.glasses == (oldest % 2 == 1))
        #expect(client.model(at: head - ClientSync.keptRevisions - 1) == nil)
        _ = client.receive(.welcome(.init(session: "s1", user: "ann", role: .editor, rev: head + 3, people: Fixtures.start,
                                          tags: TagBlock(from: 4, to: 103), history: HistorySummary(), presence: [])))
        #expect(client.model(at: head + 3) == PeopleModel(people: Fixtures.start))
        #expect(client.model(at: head + 2) == nil)
    }

    @Test("the answer to a restore says whether it made a revision")
    func restoreAnswered() {
        var client = Self.welcomed()
        #expect(client.restore(to: 0) == [.restore(.init(seq: 1, rev: 0))])
        var (_, events) = client.receive(.restored(.init(seq: 1, label: "Restore to revision 0")))
        #expect(events == [.restoreAnswered(rev: 0, made: nil)])
        _ = client.restore(to: 0)
        (_, events) = client.receive(.restored(.init(seq: 2, rev: 1, ops: [.set(1, .glasses(true))], label: "Restore to revision 0")))
        #expect(events == [.restoreAnswered(rev: 0, made: 1)])
    }

    @Test("a refused batch leaves the view and the error is reported")
    func refusedBatch() throws {
        var client = Self.welcomed()
        _ = try client.edit([.set(1, .hairColor(.red))])
        let (_, events) = client.receive(.error(.init(seq: 1, code: .forbidden, message: "viewers cannot edit")))
        #expect(client.view[1]?.hairColor == .brown)
        #expect(events == [.error(ProtocolError(.forbidden, "viewers cannot edit"))])
    }

    @Test("a queued edit on a person inserted by a refused batch is dropped, not sent")
    func refusedInsertDropsDependents() throws {
        var client = Self.welcomed()
        _ = try client.edit([.insert(Fixtures.person(4), at: 0)])  // in flight
        _ = try client.edit([.set(4, .glasses(true))])  // queued: it needs the insert
        let (send, _) = client.receive(.error(.init(seq: 1, code: .staleBase, message: "base 0 is too old")))
        #expect(send.isEmpty)
        #expect(client.pendingCount == 0 && client.view[4] == nil)
    }

    @Test("a queued edit on a person whose insert is answered after a full-state welcome without it is dropped")
    func replayedAnswerPrunesDependents() throws {
        var client = Self.welcomed()
        _ = try client.edit([.insert(Fixtures.person(4), at: 0)])  // in flight
        _ = try client.edit([.set(4, .glasses(true))])  // queued
        client.disconnected()
        _ = client.connect()
        // The hub applied the insert at rev 1, another tab of this user undid it at rev 2, and the
        // welcome carries the full state, without person 4; the resent insert is answered from the cache.
        let (resend, _) = client.receive(.welcome(.init(session: "s1", user: "ann", role: .editor, rev: 2,
                                                        people: Fixtures.start, tags: TagBlock(from: 4, to: 103),
                                                        history: HistorySummary(), presence: [])))
        #expect(resend.first.map { if case .submit(let s) = $0 { s.seq == 1 } else { false } } == true)
        let (send, _) = client.receive(.ack(.init(seq: 1, rev: 1, ops: [.insert(Fixtures.person(4), at: 0)])))
        #expect(send.isEmpty)
        #expect(client.pendingCount == 0)
    }

    @Test("a selective undo and a restore are queued like an undo, sent with their seq, and answered")
    func selectiveUndoAndRestoreAreRequests() throws {
        var client = Self.welcomed()
        _ = try client.edit([.set(1, .hairColor(.red))])
        #expect(client.undo(entry: 1).isEmpty, "it waits behind the edit in flight")
        var (send, _) = client.receive(.ack(.init(seq: 1, rev: 1, ops: [.set(1, .hairColor(.red))])))
        #expect(send == [.undo(.init(seq: 2, entry: 1))])
        #expect(client.restore(to: 0, label: "Start over").isEmpty)
        (send, _) = client.receive(.undone(.init(seq: 2, rev: 2, ops: [.set(1, .hairColor(.brown))], entry: 1)))
        #expect(send == [.restore(.init(seq: 3, rev: 0, label: "Start over"))])
        #expect(client.confirmed[1]?.hairColor == .brown && client.revision == 2)
        (send, _) = client.receive(.restored(.init(seq: 3, rev: 3, ops: [.remove(2)], label: "Start over")))
        #expect(send.isEmpty && client.pendingCount == 0)
        #expect(client.confirmed[2] == nil && client.view[2] == nil && client.revision == 3)
    }

    @Test("an edit queued behind a restore is rebased over what the restore did")
    func editQueuedBehindRestoreIsRebased() throws {
        var client = Self.welcomed()
        _ = client.restore(to: 0)  // in flight
        _ = try client.edit([.set(2, .glasses(true)), .set(1, .glasses(true))])  // queued
        let (send, _) = client.receive(.restored(.init(seq: 1, rev: 1, ops: [.remove(2)], label: "Restore to revision 0")))
        #expect(send == [.submit(.init(seq: 2, base: 1, ops: [.set(1, .glasses(true))]))])
    }

    @Test("typing in flight on a person a restore re-inserts under another name is overwritten in the view, as the hub does (decision 19)")
    func typingAcrossARenamingReinsert() throws {
        var client = Self.welcomed("dana")
        _ = try client.edit([.text(2, TextOperation([.retain(4), .insert("!")]))])  // "Joan!", in flight
        // ann shortens the name to "Jo" (dana's typing is rebased: "Jo!"), bob deletes Joan, carl's
        // restore puts her back as she was at revision 0, "Joan".
        _ = client.receive(.ops(.init(rev: 1, author: "ann", kind: .edit, ops: [.text(2, TextOperation([.retain(2), .delete(2)]))])))
        #expect(client.view[2]?.name == "Jo!")
        _ = client.receive(.ops(.init(rev: 2, author: "bob", kind: .edit, ops: [.remove(2)])))
        _ = client.receive(.ops(.init(rev: 3, author: "carl", kind: .restore, ops: [.insert(Fixtures.p2, at: 1)])))
        // The re-insert wrote the name whole: the hub answers dana's stale typing as a no-op.
        #expect(client.view[2]?.name == "Joan", "the view typed into the restored name: \(client.view[2]?.name ?? "-")")
        _ = client.receive(.ack(.init(seq: 1, rev: 3, ops: [])))
        #expect(client.view == client.confirmed && client.confirmed[2]?.name == "Joan")
    }

    @Test("questions go at once beside a request in flight, with seqs of their own, and nothing offline")
    func questionsTakeTheirOwnSeqs() throws {
        var client = Self.welcomed()
        _ = try client.edit([.set(1, .hairColor(.red))])  // seq 1, in flight
        let asked = client.ask { .log(.init(seq: $0, limit: 5)) }
        #expect(asked?.seq == 2 && asked?.message == .log(.init(seq: 2, limit: 5)))
        let (send, _) = client.receive(.ack(.init(seq: 1, rev: 1, ops: [.set(1, .hairColor(.red))])))
        #expect(send.isEmpty)
        _ = try client.edit([.set(1, .glasses(true))])
        #expect(client.pendingCount == 1)
        let (_, events) = client.receive(.log(.init(seq: 2, entries: [], more: false)))
        #expect(events == [.log(.init(seq: 2, entries: [], more: false))])
        client.disconnected()
        #expect(client.ask { .blame(.init(seq: $0, tag: 1)) } == nil)
    }

    @Test("a question's error is reported as unanswered and leaves the request in flight alone")
    func questionErrorLeavesTheRequest() throws {
        var client = Self.welcomed()
        let blame = client.ask { .blame(.init(seq: $0, tag: 9)) }  // seq 1
        _ = try client.edit([.set(1, .hairColor(.red))])  // seq 2, in flight
        let (_, events) = client.receive(.error(.init(seq: blame?.seq, code: .badMessage, message: "tag 9 is not present")))
        #expect(events == [.unanswered(seq: 1, ProtocolError(.badMessage, "tag 9 is not present"))])
        #expect(client.pendingCount == 1 && client.view[1]?.hairColor == .red)
        let (_, later) = client.receive(.ack(.init(seq: 2, rev: 1, ops: [.set(1, .hairColor(.red))])))
        #expect(later.isEmpty && client.pendingCount == 0)
    }
}
