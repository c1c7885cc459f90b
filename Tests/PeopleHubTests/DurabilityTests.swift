import Foundation
import GRDB
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PeopleCore
import PeopleTestSupport
import Testing
import WebSocketTransport

/// What outlives a hub restart (SIGTERM or SIGKILL), against the real binary on the SQLite store.
@Suite("Hub durability on SQLite")
struct DurabilityTests {
    static let sqlite = "kind: embedded\npath: $DIR/data/peoplekeeper.sqlite"

    enum Stop: String, CaseIterable { case sigterm, sigkill }

    @Test("acked revisions, undo stacks, tag blocks and cached replies survive a restart", arguments: Stop.allCases)
    func restart(stop: Stop) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pk-durable-\(UUID().uuidString)")
        let hub = try await HubProcess.start(storage: Self.sqlite, directory: directory)
        let client = try WebSocketClient()
        defer { Task { await client.shutdown() } }
        let url = hub.url(room: "durable")
        let ann = try await TestClient.joined(url, user: "ann", on: client)
        let bob = try await TestClient.joined(url, user: "bob", on: client)
        let annSession = try #require(ann.welcome?.session)
        let annBlock = try #require(ann.welcome?.tags)
        var head = 0
        head = try await ann.ack(seq: ann.submit([.set(1, .hairColor(.red))], base: head, label: "Change Hair Color")).rev
        head = try await bob.ack(seq: bob.submit([.set(2, .glasses(true))], base: head, label: "Toggle Glasses")).rev
        let newcomer = Person(tag: annBlock.from, name: "Kim", hairColor: .black, hairLength: .short, eyeColor: .brown)
        let insertSeq = ann.submit([.insert(newcomer, at: 0)], base: head, label: "Add Person")
        let inserted = try await ann.ack(seq: insertSeq)
        head = inserted.rev
        head = try await ann.ack(seq: ann.submit([.set(3, .eyeColor(.green))], base: head, label: "Change Eye Color")).rev
        let undoSeq = ann.nextSeq()
        ann.send(.undo(.init(seq: undoSeq)))
        let undone = try await ann.undone(seq: undoSeq)
        head = try #require(undone.rev)
        #expect(head == 5)

        switch stop {
        case .sigterm: #expect(await hub.stop() == 0)
        case .sigkill: await hub.crash()
        }
        let again = try await hub.restarted()
        defer {
            again.killNow()
            try? FileManager.default.removeItem(at: again.directory)
        }
        let url2 = again.url(room: "durable")

        // A newcomer catching up from revision 1 gets exactly revisions 2...5, as they were.
        let carol = try await TestClient.joined(url2, user: "carol", on: client, since: 1)
        #expect(carol.welcome?.rev == 5)
        #expect(carol.welcome?.people == nil)
        let second = try await carol.ops(rev: 2)
        #expect(second.author == "bob" && second.ops == [.set(2, .glasses(true))] && second.label == "Toggle Glasses")
        let third = try await carol.ops(rev: 3)
        #expect(third.ops == inserted.ops)
        _ = try await carol.ops(rev: 4)
        let fifth = try await carol.ops(rev: 5)
        #expect(fifth.kind == .undo && fifth.ops == [.set(3, .eyeColor(Person.tutorial(3).eyeColor))])
        // A new session's tag block is beyond every block handed out before the restart.
        #expect(try #require(carol.welcome?.tags).from > annBlock.to)

        // Ann resumes her session: her stacks are there (undo offers the insert, redo the eye colour)…
        let ann2 = try await TestClient.joined(url2, user: "ann", on: client, resume: annSession, since: 5)
        #expect(ann2.welcome?.session == annSession)
        #expect(ann2.welcome?.history == HistorySummary(canUndo: true, canRedo: true, undoLabel: "Add Person",
                                                         redoLabel: "Change Eye Color"))
        // …a resent seq is answered with the very same reply, and applied once…
        ann2.send(.submit(.init(seq: insertSeq, base: 2, ops: [.insert(newcomer, at: 0)], label: "Add Person")))
        let replayed = try await ann2.ack(seq: insertSeq)
        #expect(replayed == inserted)
        // …and her undo still works: it removes the person she added (seq numbers go on from hers).
        ann2.continueSeq(after: undoSeq)
        let nextUndo = ann2.nextSeq()
        ann2.send(.undo(.init(seq: nextUndo)))
        let second2 = try await ann2.undone(seq: nextUndo)
        #expect(second2.rev == 6 && second2.ops == [.remove(annBlock.from)] && second2.label == "Add Person")
        _ = try await carol.ops(rev: 6)
        await client.shutdown()
    }
}

extension DurabilityTests {
    /// Submits `count` edits from `client` (each waiting for its ack); returns the head.
    func edits(_ count: Int, by client: TestClient, from head: Int) async throws -> Int {
        var head = head
        for k in 0..<count {
            head = try await client.ack(seq: client.submit([.set(2, .glasses(k % 2 == 0))], base: head, label: "Toggle Glasses")).rev
        }
        return head
    }

    @Test("a catch-up older than the memory window is read from the store: exactly the missed revisions")
    func catchUpFromStore() async throws {
        let hub = try await HubProcess.start(config: "rooms:\n  keptRevisions: 4\n", storage: Self.sqlite)
        let client = try WebSocketClient()
        let url = hub.url(room: "window")
        let ann = try await TestClient.joined(url, user: "ann", on: client)
        let head = try await edits(20, by: ann, from: 0)
        let bob = try await TestClient.joined(url, user: "bob", on: client, since: 2)
        #expect(bob.welcome?.people == nil && bob.welcome?.rev == head)
        for rev in 3...head {
            let ops = try await bob.ops(rev: rev)
            #expect(ops.ops == [.set(2, .glasses((rev - 1) % 2 == 0))], "rev \(rev)")
        }
        // Ann's undo of a step older than the memory window is reported expired, not guessed.
        var reasons: [SkipReport.Reason] = []
        for _ in 0..<10 {
            let seq = ann.nextSeq()
            ann.send(.undo(.init(seq: seq)))
            reasons += try await ann.undone(seq: seq).skipped.map(\.reason)
        }
        #expect(reasons.contains(.expired))
        await client.shutdown()
        #expect(await hub.stop() == 0)
    }

    @Test("a hello further behind than rooms.maxCatchUp gets the full state, never more frames than its send queue holds")
    func farBehind() async throws {
        // 200 missed revisions would overflow a 128-message send queue (the connection used to be closed
        // 1008 before its welcome); maxCatchUp is capped at 128 - 64.
        let config = "rooms:\n  keptRevisions: 4\nlimits:\n  sendQueueMessages: 128\n  opsPerSecond: 100000\n"
        let hub = try await HubProcess.start(config: config, storage: Self.sqlite)
        let client = try WebSocketClient()
        let url = hub.url(room: "behind")
        let ann = try await TestClient.joined(url, user: "ann", on: client)
        let head = try await edits(200, by: ann, from: 0)
        let bob = try await TestClient.joined(url, user: "bob", on: client, since: 0)
        #expect(bob.welcome?.rev == head)
        #expect(bob.welcome?.people?.first { $0.tag == 2 }?.glasses == false)
        #expect(try await bob.ack(seq: bob.submit([.set(1, .hairColor(.red))], base: head)).rev == head + 1)
        #expect(!bob.pending.contains { if case .ops = $0 { true } else { false } })
        // 50 behind (older than the 4 kept in memory) is still a catch-up, read from the store.
        let carol = try await TestClient.joined(url, user: "carol", on: client, since: head - 50)
        #expect(carol.welcome?.people == nil)
        for rev in head - 49...head + 1 { _ = try await carol.ops(rev: rev) }
        await client.shutdown()
        #expect(await hub.stop() == 0)
    }

    @Test("an idle room is unloaded (after a snapshot) and comes back from the store with its undo stacks")
    func unloadAndReload() async throws {
        let hub = try await HubProcess.start(config: "rooms:\n  unloadAfterSeconds: 1\n", storage: Self.sqlite)
        let client = try WebSocketClient()
        let url = hub.url(room: "idle")
        let ann = try await TestClient.joined(url, user: "ann", on: client)
        let session = try #require(ann.welcome?.session)
        let head = try await ann.ack(seq: ann.submit([.set(1, .hairColor(.red))], base: 0, label: "Change Hair Color")).rev
        ann.close()
        _ = try await ann.closedCode()
        let metrics = "http://127.0.0.1:\(hub.port)/metrics"
        var unloaded = false
        for _ in 0..<50 where !unloaded {
            try await Task.sleep(for: .milliseconds(100))
            unloaded = try await Self.get(metrics).contains("peoplekeeper_rooms 0")
        }
        #expect(unloaded, "the room was not unloaded")
        let back = try await TestClient.joined(url, user: "ann", on: client, resume: session, since: head)
        #expect(back.welcome?.session == session && back.welcome?.rev == head)
        #expect(back.welcome?.history.undoLabel == "Change Hair Color")
        back.continueSeq(after: 1)
        let seq = back.nextSeq()
        back.send(.undo(.init(seq: seq)))
        #expect(try await back.undone(seq: seq).ops == [.set(1, .hairColor(Person.tutorial(1).hairColor))])
        await client.shutdown()
        #expect(await hub.stop() == 0)
    }

    @Test("a failed append closes the room's clients with 1011, acks nothing, and the room comes back from the store")
    func storeFailure() async throws {
        let hub = try await HubProcess.start(storage: Self.sqlite)
        let client = try WebSocketClient()
        let url = hub.url(room: "broken")
        let ann = try await TestClient.joined(url, user: "ann", on: client)
        let first = try await ann.ack(seq: ann.submit([.set(2, .glasses(true))], base: 0)).rev
        // A fault injected into the file beside the hub: SQLite refuses the room's next revision.
        let database = try DatabaseQueue(path: hub.directory.path + "/data/peoplekeeper.sqlite")
        try await blocking {
            try database.write { db in
                try db.execute(sql: """
                    CREATE TRIGGER injected_failure BEFORE INSERT ON journal
                    WHEN NEW.room = 'broken' AND NEW.revision IS NOT NULL
                    BEGIN SELECT RAISE(ABORT, 'injected failure'); END
                    """)
            }
        }
        let seq = ann.submit([.set(1, .hairColor(.red))], base: first)
        #expect(try await ann.closedCode() == 1011)
        #expect(!ann.pending.contains { if case .ack(let a) = $0 { a.seq == seq } else { false } })
        #expect(await hub.stderrWillContain("store failed"))
        try await blocking { try database.write { db in try db.execute(sql: "DROP TRIGGER injected_failure") } }
        // The room is loaded again from the store: the acked edit is there, the failed one is not.
        let carol = try await TestClient.joined(url, user: "carol", on: client)
        #expect(carol.welcome?.rev == first)
        #expect(carol.welcome?.people?.first { $0.tag == 2 }?.glasses == true)
        #expect(carol.welcome?.people?.first { $0.tag == 1 }?.hairColor == Person.tutorial(1).hairColor)
        _ = try await carol.ack(seq: carol.submit([.set(1, .hairColor(.red))], base: first))
        try await blocking { try database.close() }
        await client.shutdown()
        #expect(await hub.stop() == 0)
    }

    @Test("one hub per SQLite file: a second is refused while the first runs, and starts once it is gone, even killed")
    func oneHubPerFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pk-claim-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try await HubProcess.start(storage: Self.sqlite, directory: directory)
        let storage = "kind: embedded\npath: \(directory.path)/data/peoplekeeper.sqlite"
        await #expect {
            _ = try await HubProcess.start(storage: storage)
        } throws: { error in
            "\(error)".contains("the SQLite store at \(directory.path)/data/peoplekeeper.sqlite is in use by another hub (pid ")
        }
        // The same file by other names: a symbolic link to it, and one to its directory.
        let file = directory.path + "/data/peoplekeeper.sqlite"
        try FileManager.default.createSymbolicLink(atPath: directory.path + "/alias.sqlite", withDestinationPath: file)
        try FileManager.default.createSymbolicLink(atPath: directory.path + "/alias-dir", withDestinationPath: directory.path + "/data")
        for alias in ["alias.sqlite", "alias-dir/peoplekeeper.sqlite"] {
            await #expect {
                _ = try await HubProcess.start(storage: "kind: embedded\npath: \(directory.path)/\(alias)")
            } throws: { error in
                "\(error)".contains("is in use by another hub (pid ") && "\(error)".contains("holding \(file).lock")
            }
        }
        #expect(await first.stop() == 0)
        let second = try await HubProcess.start(storage: storage)
        await second.crash()
        try? FileManager.default.removeItem(at: second.directory)  // a crashed hub's own files stay
        let third = try await HubProcess.start(storage: storage)
        #expect(await third.stop() == 0)
    }

    static func get(_ url: String) async throws -> String {
        let (data, _) = try await URLSession.shared.data(from: URL(string: url)!)
        return String(decoding: data, as: UTF8.self)
    }
}

extension Person {
    /// A person of the tutorial seed, by tag.
    static func tutorial(_ tag: PeopleCore.Tag) -> Person { PeopleModel.tutorialSeed[tag]! }
}
