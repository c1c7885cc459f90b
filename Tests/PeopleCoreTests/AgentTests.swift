@testable import PeopleCore
import Testing

/// Requests without a connection (the HTTP API, Room+Agent.swift) and imports (Room+Import.swift):
/// the same batch and undo stack as a WebSocket session's, idempotency keys that outlive restarts,
/// tags filled in, imported history replayed exactly.
@Suite("Agent sessions and imports")
struct AgentTests {
    static let zed = Person(tag: Room.tagPlaceholders.lowerBound, name: "Zed")

    /// Everything the room journalled, so a restart can be played from any snapshot.
    struct Journalled {
        var room: Room
        var journal: [JournalEntry] = []
        var snapshots: [RoomSnapshot] = []

        init(_ room: Room) {
            self.room = room
            snapshots = [room.snapshot()]
        }

        mutating func take(_ actions: [RoomAction]) -> [ServerMessage] {
            var sent: [ServerMessage] = []
            for action in actions {
                switch action {
                case .persist(let entry): journal.append(entry)
                case .send(let message, _): sent.append(message)
                case .readHistory: Issue.record("no history read expected here")
                }
            }
            return sent
        }

        func restored(from snapshot: RoomSnapshot) throws -> Room {
            try Room(restoring: StoredRoom.stored(from: snapshot, journal: journal), policy: room.policy)
        }
    }

    static func reply(_ sent: [ServerMessage], to user: String) -> ServerMessage? { sent.first }

    @Test("an agent's batch is the user's edit: on their stack, undone from their WebSocket session; its insert gets a tag of the user's")
    func agentEditIsTheUsersEdit() throws {
        var h = Harness(people: Fixtures.start, users: ["ann", "bob"])
        let actions = h.room.request(.submit(.init(seq: 0, base: 0, ops: [.insert(Self.zed, at: 0)])),
                                     as: "ann", key: "k", now: 1_000)
        let acks = actions.compactMap { action -> ServerMessage.Ack? in
            if case .send(.ack(let a), let to) = action, to == [Room.agentSession(of: "ann")] { a } else { nil }
        }
        let ack = try #require(acks.first)
        guard case .insert(let person, _)? = ack.ops.first else { Issue.record("no insert"); return }
        #expect(!Room.tagPlaceholders.contains(person.tag))
        #expect(h.room.users["ann"]!.tagBlocks.contains { $0.contains(person.tag) })
        let broadcast = actions.contains { if case .send(.ops(let o), let to) = $0 { o.rev == 1 && to.count == 2 } else { false } }
        #expect(broadcast, "both WebSocket sessions (ann's and bob's) get the revision")
        #expect(h.room.presence.count == 2, "the agent session is not in presence")
        guard case .undone(let undone)? = h.send(.undo(.init(seq: h.nextSeq("ann"))), from: "ann") else {
            Issue.record("ann's WebSocket undo did not answer undone"); return
        }
        #expect(undone.ops == [.remove(person.tag)])
    }

    @Test("a key gets its first answer again, after a restart from any snapshot too, until it is 24 hours old")
    func keysOutliveRestarts() throws {
        var j = Journalled(Room(name: "r", seed: PeopleModel(people: Fixtures.start)))
        let batch = ClientMessage.submit(.init(seq: 0, base: 0, ops: [.set(Fixtures.start[0].tag, .glasses(true))]))
        let first = j.take(j.room.request(batch, as: "ann", key: "once", now: 1_000))
        #expect(j.room.revision == 1)
        j.snapshots.append(j.room.snapshot())
        _ = j.take(j.room.request(.submit(.init(seq: 0, base: 1, ops: [.set(Fixtures.start[0].tag, .glasses(false))])),
                                  as: "ann", key: "twice", now: 2_000))
        for snapshot in j.snapshots {
            var restored = try j.restored(from: snapshot)
            #expect(DurableState(restored) == DurableState(j.room))
            let again = restored.request(batch, as: "ann", key: "once", now: 3_000)
            #expect(again == [.send(first.first!, to: [Room.agentSession(of: "ann")])], "the first answer, nothing applied")
            #expect(restored.revision == 2)
            let late = restored.request(batch, as: "ann", key: "once", now: 1_000 + Room.keyLifetime)
            #expect(late.contains { if case .persist = $0 { true } else { false } }, "a day later the key is new again")
        }
        let other = j.room.request(batch, as: "bob", key: "once", now: 3_000)
        #expect(other.contains { if case .persist = $0 { true } else { false } }, "keys are per user")
    }

    @Test("a caller's keys are bounded: past rooms.keysKept the oldest go, a tenth at a time, the same in a room restored from any snapshot")
    func keysAreBounded() throws {
        var j = Journalled(Room(name: "r", seed: PeopleModel(people: Fixtures.start), policy: RoomPolicy(keysKept: 10)))
        let tag = Fixtures.start[0].tag
        func write(_ n: Int, at now: Int64) -> ClientMessage {
            .submit(.init(seq: 0, base: j.room.revision, ops: [.set(tag, .name("Bob \(n)"))]))
        }
        var answers: [String: ServerMessage] = [:]
        for n in 1...11 {
            answers["k\(n)"] = j.take(j.room.request(write(n, at: Int64(n)), as: "ann", key: "k\(n)", now: Int64(n) * 1_000)).first
            if n == 5 { j.snapshots.append(j.room.snapshot()) }
        }
        // 11 keys: not yet a tenth past 10, all kept.
        #expect(j.room.sessions[Room.agentSession(of: "ann")]!.keys.count == 11)
        answers["k12"] = j.take(j.room.request(write(12, at: 12), as: "ann", key: "k12", now: 12_000)).first
        #expect(j.room.sessions[Room.agentSession(of: "ann")]!.keys.count == 10, "the newest 10 kept")
        j.snapshots.append(j.room.snapshot())
        for snapshot in j.snapshots {
            var restored = try j.restored(from: snapshot)
            #expect(DurableState(restored) == DurableState(j.room))
            for n in 3...12 {
                let again = restored.request(write(n, at: 20), as: "ann", key: "k\(n)", now: 20_000)
                #expect(again == [.send(answers["k\(n)"]!, to: [Room.agentSession(of: "ann")])], "k\(n): the first answer")
            }
            #expect(restored.revision == 12)
            let forgotten = restored.request(write(1, at: 20), as: "ann", key: "k1", now: 20_000)
            #expect(forgotten.contains { if case .persist = $0 { true } else { false } }, "the oldest key went: applied again")
        }
        // A key past its 24 hours goes at the next pass, whatever the count.
        let late = 12_000 + Room.keyLifetime + Room.keyLifetime / 24
        _ = j.take(j.room.request(write(13, at: late), as: "ann", key: "k13", now: late))
        #expect(j.room.sessions[Room.agentSession(of: "ann")]!.keys.count == 1)
    }

    @Test("a key kept again after it expired: the room restored from a snapshot prunes when the live room does")
    func expiredKeyKeptAgain() throws {
        var j = Journalled(Room(name: "r", seed: PeopleModel(people: Fixtures.start), policy: RoomPolicy(keysKept: 10)))
        let tag = Fixtures.start[0].tag
        let hour = Room.keyLifetime / 24
        func write(_ key: String, at now: Int64) {
            let batch = ClientMessage.submit(.init(seq: 0, base: j.room.revision, ops: [.set(tag, .name("Bob \(key)"))]))
            _ = j.take(j.room.request(batch, as: "ann", key: key, now: now))
        }
        write("a", at: 1_000)
        write("a", at: 1_000 + 24 * hour + hour / 2)  // expired: applied and kept again
        for n in 1...9 { write("k\(n)", at: 1_000 + 24 * hour + hour / 2 + Int64(n)) }
        j.snapshots.append(j.room.snapshot())
        write("k10", at: 1_000 + 25 * hour + 100)
        let restored = try j.restored(from: j.snapshots.last!)
        #expect(DurableState(restored) == DurableState(j.room))
        #expect(restored.sessions[Room.agentSession(of: "ann")]!.keys.count == j.room.sessions[Room.agentSession(of: "ann")]!.keys.count)
    }

    @Test("a snapshot says where the keys start in the journal, not the keys: it does not grow with them, and the room comes back with them from the journal")
    func snapshotsDoNotHoldKeys() throws {
        var j = Journalled(Room(name: "r", seed: PeopleModel(people: Fixtures.start)))
        var twin = Room(name: "r", seed: PeopleModel(people: Fixtures.start))
        let tag = Fixtures.start[0].tag
        var firstKeyed: Int?
        for n in 1...200 {
            let batch = ClientMessage.submit(.init(seq: 0, base: j.room.revision, ops: [.set(tag, .name("Bob \(n)"))]))
            _ = j.take(j.room.request(batch, as: "ann", key: "key-\(n)-" + String(repeating: "x", count: 100), now: Int64(n) * 1_000))
            _ = twin.request(batch, as: "ann", key: nil, now: Int64(n) * 1_000)
            firstKeyed = firstKeyed ?? j.journal.last!.position
            if n == 1 { j.snapshots.append(j.room.snapshot()) }
        }
        j.snapshots.append(j.room.snapshot())
        let (one, many) = (j.snapshots[1].json, j.snapshots[2].json)
        #expect(many["keysFrom"] == .int(firstKeyed!) && one["keysFrom"] == .int(firstKeyed!))
        #expect(!many.text.contains("key-"), "no key in the snapshot")
        // The same as the twin room's, whose writes had no keys, but for `"keysFrom":N` (the room's and
        // the session's).
        func keyless(_ json: JSON) -> JSON {
            switch json {
            case .object(let members): .object(members.filter { $0.key != "keysFrom" }.map { .init($0.key, keyless($0.value)) })
            case .array(let items): .array(items.map(keyless))
            default: json
            }
        }
        #expect(keyless(many) == twin.snapshot().json)
        // The store hands back the 200 keyed answers with it (by the marker in their text), and only those.
        let stored = try StoredRoom.stored(from: j.snapshots[2], journal: j.journal)
        #expect(stored.keyed.count == 200 && stored.keyed.allSatisfy(\.keepsKey))
        #expect(j.journal.filter { $0.record.json.text.contains(JournalEntry.keyMarker) } .count == 200)
        var restored = try j.restored(from: j.snapshots[2])
        #expect(DurableState(restored) == DurableState(j.room))
        let retry = ClientMessage.submit(.init(seq: 0, base: 0, ops: [.set(tag, .name("Again"))]))
        let again = restored.request(retry, as: "ann", key: "key-7-" + String(repeating: "x", count: 100), now: 300_000)
        #expect(again.count == 1 && !again.contains { if case .persist = $0 { true } else { false } }, "answered, not applied")
        // Without them the room would not know its keys: they come from the journal, not the snapshot.
        var bare = try Room(restoring: StoredRoom(snapshot: stored.snapshot, window: stored.window, tail: stored.tail),
                            policy: j.room.policy)
        #expect(bare.request(retry, as: "ann", key: "key-7-" + String(repeating: "x", count: 100), now: 300_000)
            .contains { if case .persist = $0 { true } else { false } })
    }

    @Test("two callers: each comes back with its own keys only, and one who stopped writing does not hold the room's keysFrom past a day")
    func keysOfTwoCallers() throws {
        var j = Journalled(Room(name: "r", seed: PeopleModel(people: Fixtures.start), policy: RoomPolicy(keysKept: 10)))
        let tag = Fixtures.start[0].tag
        func write(_ user: String, _ key: String, at now: Int64) {
            let batch = ClientMessage.submit(.init(seq: 0, base: j.room.revision, ops: [.set(tag, .name("\(user) \(key)"))]))
            _ = j.take(j.room.request(batch, as: user, key: key, now: now))
        }
        func keys(_ room: Room, _ user: String) -> Int { room.sessions[Room.agentSession(of: user)]!.keys.count }
        write("ann", "a", at: 1_000)
        for n in 1...200 { write("bob", "b\(n)", at: 1_000 + Int64(n)) }
        j.snapshots.append(j.room.snapshot())
        let restored = try j.restored(from: j.snapshots.last!)
        #expect(DurableState(restored) == DurableState(j.room))
        #expect(keys(restored, "bob") <= 11 && keys(restored, "ann") == 1, "bob's newest 10 (or 11), not his 200")
        // A day and an hour later bob writes once: ann's key is past its 24 hours and goes, though she
        // did not write; the room's keys start at bob's now, and a load reads only his.
        let late = 2_000 + Room.keyLifetime + Room.keyLifetime / 24
        write("bob", "late", at: late)
        #expect(keys(j.room, "ann") == 0 && keys(j.room, "bob") == 1)
        let snapshot = j.room.snapshot()
        j.snapshots.append(snapshot)
        let stored = try StoredRoom.stored(from: snapshot, journal: j.journal)
        #expect(stored.keyed.count == 1, "only bob's last key is read back, not \(stored.keyed.count)")
        #expect(DurableState(try j.restored(from: snapshot)) == DurableState(j.room))
    }

    @Test("keys in a snapshot of before positions come back, stay in later snapshots while they are kept, and go when pruned")
    func keysFromAnOlderSnapshot() throws {
        var j = Journalled(Room(name: "r", seed: PeopleModel(people: Fixtures.start)))
        let tag = Fixtures.start[0].tag
        let first = ClientMessage.submit(.init(seq: 0, base: 0, ops: [.set(tag, .name("Old"))]))
        let answer = j.take(j.room.request(first, as: "ann", key: "old", now: 1_000)).first!
        // The snapshot as a hub of the previous version wrote it: the key in the session, no `keysFrom`.
        guard case .object(var members) = j.room.snapshot().json,
              let s = members.firstIndex(where: { $0.key == "sessions" }), case .array(var sessions) = members[s].value,
              let a = sessions.firstIndex(where: { $0["id"] == .string(Room.agentSession(of: "ann")) }),
              case .object(var agent) = sessions[a] else { Issue.record("no agent session"); return }
        members.removeAll { $0.key == "keysFrom" }
        agent.append(.init("keys", .array([.object(["key": .string("old"), "time": .int(1_000), "reply": answer.json])])))
        sessions[a] = .object(agent)
        members[s].value = .array(sessions)
        var stored = try StoredRoom.stored(from: j.room.snapshot(), journal: j.journal)
        stored.snapshot = try JSON.parse(JSON.object(members).bytes)
        stored.keyed = []
        var room = try Room(restoring: stored, policy: j.room.policy)
        #expect(room.request(first, as: "ann", key: "old", now: 2_000) == [.send(answer, to: [Room.agentSession(of: "ann")])])
        // A keyed write after it: the next snapshot starts the journal's keys there and still holds the old one.
        var later = Journalled(room)
        later.journal = j.journal
        let second = ClientMessage.submit(.init(seq: 0, base: 1, ops: [.set(tag, .name("New"))]))
        _ = later.take(later.room.request(second, as: "ann", key: "new", now: 3_000))
        let snapshot = later.room.snapshot()
        #expect(snapshot.json["keysFrom"] == .int(later.journal.last!.position))
        #expect(snapshot.json.text.contains(#""key":"old""#) && !snapshot.json.text.contains(#""key":"new""#))
        room = try later.restored(from: snapshot)
        #expect(DurableState(room) == DurableState(later.room))
        // A day and an hour on, the old key is pruned: no longer in a snapshot.
        let late = 1_000 + Room.keyLifetime + Room.keyLifetime / 24
        _ = later.take(later.room.request(.submit(.init(seq: 0, base: 2, ops: [.set(tag, .name("Late"))])),
                                          as: "ann", key: "late", now: late))
        #expect(!later.room.snapshot().json.text.contains(#""key":"old""#))
        #expect(later.room.snapshot().json["sessions"].map { !$0.text.contains(#""keys""#) } == true)
    }

    @Test("keys are compared byte for byte: \"é\" and \"e\" with a combining accent are two keys, both applied")
    func keysAreBytes() throws {
        var room = Room(name: "r", seed: PeopleModel(people: Fixtures.start))
        let tag = Fixtures.start[0].tag
        for (n, key) in ["\u{e9}", "e\u{301}"].enumerated() {
            let batch = ClientMessage.submit(.init(seq: 0, base: room.revision, ops: [.set(tag, .name("Bob \(n)"))]))
            let actions = room.request(batch, as: "ann", key: key, now: 1_000 + Int64(n))
            #expect(actions.contains { if case .persist = $0 { true } else { false } }, "key \(n) applied")
        }
        #expect(room.revision == 2)
    }

    @Test("an error is not kept for its key: the same key, retried with a fresher base, is applied once")
    func errorsAreNotKeptForTheirKey() throws {
        var j = Journalled(Room(name: "r", seed: PeopleModel(people: Fixtures.start)))
        let tag = Fixtures.start[0].tag
        _ = j.take(j.room.request(.submit(.init(seq: 0, base: 0, ops: [.set(tag, .glasses(true))])), as: "bob", key: nil, now: 1_000))
        let ahead = j.take(j.room.request(.submit(.init(seq: 0, base: 5, ops: [.set(tag, .eyeColor(.hazel))])),
                                          as: "ann", key: "k", now: 2_000))
        guard case .error(let refused)? = ahead.first else { Issue.record("expected an error, got \(ahead)"); return }
        #expect(refused.code == .badMessage)
        let retry = ClientMessage.submit(.init(seq: 0, base: 1, ops: [.set(tag, .eyeColor(.hazel))]))
        let applied = j.take(j.room.request(retry, as: "ann", key: "k", now: 3_000))
        guard case .ack(let ack)? = applied.first else { Issue.record("expected an ack, got \(applied)"); return }
        #expect(ack.rev == 2 && j.room.revision == 2)
        // Once applied, the key answers that again, after a restart too.
        let again = j.take(j.room.request(retry, as: "ann", key: "k", now: 4_000))
        #expect(again.first == applied.first && j.room.revision == 2)
        var restored = try j.restored(from: j.snapshots[0])
        #expect(restored.request(retry, as: "ann", key: "k", now: 5_000) == [.send(applied[0], to: [Room.agentSession(of: "ann")])])
    }

    @Test("inserts without tags across more people than a tag block: a new block is journalled, every tag distinct")
    func tagsFilledAcrossBlocks() throws {
        var j = Journalled(Room(name: "r", seed: PeopleModel(), policy: RoomPolicy(tagBlockSize: 3)))
        let ops = (0..<5).map { Diff.insert(Person(tag: Room.tagPlaceholders.lowerBound + $0, name: "P\($0)"), at: $0) }
        let sent = j.take(j.room.request(.submit(.init(seq: 0, base: 0, ops: ops)), as: "ann", key: nil, now: 1))
        guard case .ack(let ack)? = sent.first else { Issue.record("\(sent)"); return }
        let tags = ack.ops.compactMap { if case .insert(let p, _) = $0 { p.tag } else { nil } }
        #expect(tags.count == 5 && Set(tags).count == 5 && tags.allSatisfy { $0 > 0 && $0 < 100 })
        #expect(j.journal.contains { if case .tags = $0.record { true } else { false } })
        let restored = try j.restored(from: j.snapshots[0])
        #expect(DurableState(restored) == DurableState(j.room))
    }

    @Test("an export encoded as it is read, a page of older revisions at a time, is the export's bytes")
    func exportBytesPaged() throws {
        // The same edits in a room that keeps every revision and in one that keeps 3 in memory (the
        // store gives it the rest, here the first room, in pages of 2).
        var whole = Harness(people: Fixtures.start, users: ["ann", "bob"])
        var short = Harness(people: Fixtures.start, policy: RoomPolicy(keptRevisions: 3), users: ["ann", "bob"])
        for n in 0..<9 {
            let (user, ops) = (n % 2 == 0 ? "ann" : "bob", [Diff.set(Fixtures.start[n % 3].tag, .name("N\(n)"))])
            whole.submit(user, ops, label: "Rename")
            short.submit(user, ops, label: "Rename")
        }
        #expect(short.room.oldestKeptBase > 0)
        guard let expected = whole.room.export(history: true, older: []), let initial = whole.room.people(at: 0) else {
            Issue.record("no export"); return
        }
        var asked: [ClosedRange<Int>] = []
        let bytes = short.room.exportBytes(initial: initial, page: 2) { after, through in
            asked.append((after + 1)...through)
            return whole.room.revisions(after: after, through: through)
        }
        #expect(bytes == expected.bytes)
        #expect(asked.first == 1...2 && asked.last?.upperBound == short.room.oldestKeptBase && asked.allSatisfy { $0.count <= 2 })
    }

    @Test("an import replays its revisions exactly, on nobody's stack; a revision that does not apply is refused")
    func importReplays() throws {
        var source = Harness(people: Fixtures.start, users: ["ann", "bob"])
        source.submit("ann", [.set(Fixtures.start[0].tag, .glasses(true))], label: "Glasses")
        source.submit("bob", [.remove(Fixtures.start[1].tag)])
        guard let export = source.room.export(history: true, older: []), case .array(let revisions)? = export["revisions"],
              case .array(let initial)? = export["initial"] else { Issue.record("no export"); return }
        var j = Journalled(Room(name: "copy", seed: PeopleModel(people: try initial.map { try Person(json: $0) })))
        for revision in revisions {
            _ = j.take(try j.room.importRevision(Room.ExportedRevision(json: revision), importedAt: 5_000))
        }
        #expect(j.room.model == source.room.model)
        #expect(j.room.export(history: true, older: [])?["revisions"] == export["revisions"])
        #expect(j.room.stacks(of: "ann").undo.isEmpty)
        // Each imported revision says when the import made it (the exported ones said nothing), and
        // keeps it through the journal: a restart tells two imports of one export apart as well.
        #expect(source.room.revisions(after: 0, through: 2).map(\.importedAt) == [nil, nil])
        #expect(j.room.revisions(after: 0, through: 2).map(\.importedAt) == [5_000, 5_000])
        let restored = try j.restored(from: j.snapshots[0])
        #expect(DurableState(restored) == DurableState(j.room))
        #expect(restored.revisions(after: 0, through: 2).map(\.importedAt) == [5_000, 5_000])
        var bad = Room(name: "bad", seed: PeopleModel())
        #expect(throws: InvalidOp.self) {
            try bad.importRevision(author: "ann", kind: .edit, label: nil, time: 1, ops: [.remove(7)], importedAt: 5_000)
        }
    }
}
