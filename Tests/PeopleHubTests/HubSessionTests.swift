import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PeopleCore
import PeopleTestSupport
import Testing
import WebSocketTransport

/// Sessions, catch-up, resends, presence, limits and lifecycle, against a real hub over real sockets.
@Suite("Hub sessions over WebSocket")
struct HubSessionTests {
    static let hairRed = Diff.set(1, .hairColor(.red))
    static let hairBlack = Diff.set(1, .hairColor(.black))
    static let glassesOn = Diff.set(2, .glasses(true))

    /// Runs `body` with a fresh hub and client context; stops both and checks the hub exited 0.
    func withHub(config: String = "", _ body: (HubProcess, WebSocketClient) async throws -> Void) async throws {
        let hub = try await HubProcess.start(config: config)
        let client = try WebSocketClient()
        do {
            try await body(hub, client)
        } catch {
            Issue.record("\(error); hub stderr: \(hub.stderrText())")
        }
        await client.shutdown()
        #expect(await hub.stop() == 0)
    }

    @Test("catch-up: hello with since gets a welcome without people, then exactly the missed ops in order")
    func catchUp() async throws {
        try await withHub { hub, client in
            let url = hub.url(room: "catchup")
            let ann = try await TestClient.joined(url, user: "ann", on: client)
            var head = 0
            for diff in [Self.hairRed, Self.glassesOn, Self.hairBlack] {
                head = try await ann.ack(seq: ann.submit([diff], base: head)).rev
            }
            #expect(head == 3)
            let bob = try await TestClient.joined(url, user: "bob", on: client, since: 1)
            #expect(bob.welcome?.people == nil)
            #expect(bob.welcome?.rev == 3)
            let second = try await bob.next("ops 2") { if case .ops(let o) = $0 { o } else { nil } }
            let third = try await bob.next("ops 3") { if case .ops(let o) = $0 { o } else { nil } }
            #expect(second.rev == 2 && second.ops == [Self.glassesOn] && second.author == "ann")
            #expect(third.rev == 3 && third.ops == [Self.hairBlack])
            // A since the hub cannot serve (in the future) gets the whole state instead.
            let carol = try await TestClient.joined(url, user: "carol", on: client, since: 99)
            #expect(carol.welcome?.people?.first { $0.tag == 1 }?.hairColor == .black)
        }
    }

    @Test("a batch resent after a reconnect with resume is applied once and answered with the same ack")
    func resendIsAppliedOnce() async throws {
        try await withHub { hub, client in
            let url = hub.url(room: "resend")
            let watcher = try await TestClient.joined(url, user: "watcher", on: client)
            let ann = try await TestClient.joined(url, user: "ann", on: client)
            let session = try #require(ann.welcome?.session)
            let seq = ann.submit([Self.hairRed], base: 0, label: "Change Hair Color")
            let first = try await ann.ack(seq: seq)
            ann.close()
            _ = try await ann.closedCode()
            let again = try await TestClient.joined(url, user: "ann", on: client, resume: session)
            #expect(again.welcome?.session == session)
            _ = again.submit([Self.hairRed], base: 0, label: "Change Hair Color", seq: seq)
            let replay = try await again.ack(seq: seq)
            #expect(replay == first)
            #expect(replay.rev == 1)
            // The watcher sees the revision once; a ping round trip shows nothing else came.
            _ = try await watcher.ops(rev: 1)
            watcher.send(.ping(seq: 7))
            let afterwards = try await watcher.next("pong") { message -> [ServerMessage]? in
                if case .pong = message { return [] } else if case .ops = message { return [message] } else { return nil }
            }
            #expect(afterwards.isEmpty, "a second ops frame arrived for the resent batch")
            // The seq after it still works: the session continued.
            let next = try await again.ack(seq: again.submit([Self.glassesOn], base: 1, seq: seq + 1))
            #expect(next.rev == 2)
        }
    }

    @Test("a user's undo stack survives a reconnect and is shared by a second tab")
    func undoStackOutlivesConnections() async throws {
        try await withHub { hub, client in
            let url = hub.url(room: "stacks")
            let tab1 = try await TestClient.joined(url, user: "ann", on: client)
            _ = try await tab1.ack(seq: tab1.submit([Self.hairRed], base: 0, label: "Change Hair Color"))
            tab1.close()
            _ = try await tab1.closedCode()

            // A new session (no resume) of the same user has the same stack.
            let tab2 = try await TestClient.joined(url, user: "ann", on: client)
            #expect(tab2.welcome?.history == HistorySummary(canUndo: true, undoLabel: "Change Hair Color"))
            let tab3 = try await TestClient.joined(url, user: "ann", on: client)
            let seq = tab2.nextSeq()
            tab2.send(.undo(.init(seq: seq)))
            let undone = try await tab2.undone(seq: seq)
            #expect(undone.rev == 2 && undone.ops == [.set(1, .hairColor(.brown))])
            // The other tab gets the revision, then hears the change of the shared stacks.
            let ops = try await tab3.ops(rev: 2)
            #expect(ops.kind == .undo && ops.author == "ann")
            let history = try await tab3.next("history") { if case .history(let h) = $0 { h } else { nil } }
            #expect(history == HistorySummary(canRedo: true, redoLabel: "Change Hair Color"))
            // …and can redo what the first tab undid.
            let redoSeq = tab3.nextSeq()
            tab3.send(.redo(.init(seq: redoSeq)))
            #expect(try await tab3.undone(seq: redoSeq).ops == [Self.hairRed])
        }
    }

    @Test("presence: joins, what each connection views, and leaves reach everyone, one entry per connection")
    func presence() async throws {
        try await withHub { hub, client in
            let url = hub.url(room: "presence")
            let ann = try await TestClient.joined(url, user: "ann", on: client)
            #expect(ann.welcome?.presence == [PresenceEntry(user: "ann")])
            let bob = try await TestClient.joined(url, user: "bob", on: client)
            let both = try await ann.next("presence with bob") { if case .presence(let p) = $0, p.count == 2 { p } else { nil } }
            #expect(Set(both.map(\.user)) == ["ann", "bob"])
            bob.send(.presence(.init(viewing: 2, field: "name")))
            let viewing = try await ann.next("bob viewing") { message -> [PresenceEntry]? in
                if case .presence(let p) = message, p.contains(where: { $0.viewing == 2 }) { p } else { nil }
            }
            #expect(viewing.contains(PresenceEntry(user: "bob", viewing: 2, field: "name")))
            let bobTab2 = try await TestClient.joined(url, user: "bob", on: client)
            let three = try await ann.next("three entries") { if case .presence(let p) = $0, p.count == 3 { p } else { nil } }
            #expect(three.filter { $0.user == "bob" }.count == 2)
            bob.close()
            bobTab2.close()
            let alone = try await ann.next("bob gone") { if case .presence(let p) = $0, p.count == 1 { p } else { nil } }
            #expect(alone == [PresenceEntry(user: "ann")])
        }
    }

    @Test("a 2 MiB frame is answered too-large while the other users keep working")
    func tooLargeFrame() async throws {
        try await withHub { hub, client in
            let url = hub.url(room: "large")
            let ann = try await TestClient.joined(url, user: "ann", on: client)
            let bob = try await TestClient.joined(url, user: "bob", on: client)
            let carol = try await TestClient.joined(url, user: "carol", on: client)
            let huge = #"{"type":"submit","seq":1,"base":0,"ops":[],"label":""# + String(repeating: "x", count: 2 << 20) + #""}"#
            ann.send(text: huge)
            let bobSeq = bob.submit([Self.glassesOn], base: 0)
            let error = try await ann.error()
            #expect(error.code == .tooLarge)
            #expect(try await bob.ack(seq: bobSeq).rev == 1)
            #expect(try await carol.ops(rev: 1).ops == [Self.glassesOn])
            // The sender's connection still works.
            let annAck = try await ann.ack(seq: ann.submit([Self.hairRed], base: 1))
            #expect(annAck.rev == 2)
            #expect(try await bob.ops(rev: 2).author == "ann")
        }
    }

    @Test("SIGTERM drains: every client is closed with 1001 and the hub exits 0")
    func drainOnSigterm() async throws {
        let hub = try await HubProcess.start()
        let client = try WebSocketClient()
        let ann = try await TestClient.joined(hub.url(room: "drain"), user: "ann", on: client)
        let bob = try await TestClient.joined(hub.url(room: "drain-2"), user: "bob", on: client)
        let seq = ann.submit([Self.hairRed], base: 0)
        _ = try await ann.ack(seq: seq)
        let status = await hub.stop()
        #expect(status == 0)
        #expect(try await ann.closedCode() == 1001)
        #expect(try await bob.closedCode() == 1001)
        await client.shutdown()
    }

    @Test("HTTP on the same port: healthz, Prometheus metrics, the web root, and a room without an upgrade is the HTTP API")
    func httpEndpoints() async throws {
        try await withHub { hub, client in
            try "<h1>PeopleKeeper</h1>".write(to: hub.directory.appendingPathComponent("index.html"),
                                              atomically: true, encoding: .utf8)
            let base = "http://127.0.0.1:\(hub.port)"
            let (health, healthStatus) = try await get(base + "/healthz")
            #expect(healthStatus == 200 && health == "ok\n")
            let (index, indexStatus) = try await get(base + "/")
            #expect(indexStatus == 200 && index.contains("PeopleKeeper"))
            #expect(try await get(base + "/missing.js").1 == 404)
            #expect(try await get(base + "/../etc/passwd").1 == 404)
            // Without an upgrade, a room's path is the HTTP API: a room nobody opened is 404 no-room.
            let (noRoom, noRoomStatus) = try await get(base + "/v1/rooms/x")
            #expect(noRoomStatus == 404 && noRoom.contains("no-room"))

            // Provoke an undo skip, then read the counters.
            let url = hub.url(room: "metrics")
            let ann = try await TestClient.joined(url, user: "ann", on: client)
            let bob = try await TestClient.joined(url, user: "bob", on: client)
            _ = try await ann.ack(seq: ann.submit([Self.hairRed], base: 0))
            _ = try await bob.ack(seq: bob.submit([Self.hairBlack], base: 1))
            let seq = ann.nextSeq()
            ann.send(.undo(.init(seq: seq)))
            #expect(try await ann.undone(seq: seq).skipped.map(\.reason) == [.overwritten])
            ann.send(text: "{nope")
            _ = try await ann.error()
            let (metrics, metricsStatus) = try await get(base + "/metrics")
            #expect(metricsStatus == 200)
            #expect(metrics.contains("peoplekeeper_connections 2"))
            #expect(metrics.contains(#"peoplekeeper_undo_skips_total{reason="overwritten"} 1"#))
            #expect(metrics.contains(#"peoplekeeper_revisions_total{kind="edit"} 2"#))
            #expect(metrics.contains(#"peoplekeeper_errors_total{code="bad-json"} 1"#))
            #expect(metrics.contains("peoplekeeper_apply_duration_seconds_bucket"))
        }
    }

    @Test("an upgrade to a path that is not /v1/rooms/ROOM is refused")
    func badRoomPath() async throws {
        try await withHub { hub, client in
            for path in ["/v1/rooms/", "/v1/rooms/bad%20name", "/v1/rooms/" + String(repeating: "a", count: 65), "/elsewhere"] {
                await #expect(throws: HubTestError.self, "\(path)") {
                    _ = try await TestClient("ws://127.0.0.1:\(hub.port)\(path)", user: "x", on: client)
                }
            }
            // A valid one next to them works.
            _ = try await TestClient.joined(hub.url(room: "Good_room-1.2"), user: "ann", on: client)
        }
    }

    @Test("a connection that never says hello is closed after limits.helloTimeoutSeconds; one that did stays")
    func helloTimeout() async throws {
        try await withHub(config: "limits:\n  helloTimeoutSeconds: 1\n") { hub, client in
            let silent = try await TestClient(hub.url(room: "quiet"), user: "silent", on: client)
            let talker = try await TestClient.joined(hub.url(room: "quiet"), user: "ann", on: client)
            #expect(try await silent.closedCode(timeout: 5) == 1008)
            try await Task.sleep(for: .milliseconds(1500))
            #expect(try await talker.ack(seq: talker.submit([Self.hairRed], base: 0)).rev == 1)
        }
    }

    /// Contract reading: PROTOCOL.md says a frame that is not JSON is `bad-json`, but a text frame that is
    /// not UTF-8 breaks RFC 6455 itself, which requires failing the connection (1007). Other users go on.
    @Test("a text frame that is not UTF-8 closes that connection with 1007; the others keep working")
    func invalidUTF8() async throws {
        try await withHub { hub, client in
            let url = hub.url(room: "utf8")
            let ann = try await TestClient.joined(url, user: "ann", on: client)
            let bob = try await TestClient.joined(url, user: "bob", on: client)
            ann.send(bytes: Array(#"{"type":"ping","seq":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8))
            #expect(try await ann.closedCode() == 1007)
            #expect(try await bob.ack(seq: bob.submit([Self.glassesOn], base: 0)).rev == 1)
        }
    }

    @Test("a bad config stops the hub at start with exit 78 and a message naming the key")
    func badConfig() async throws {
        for (yaml, key) in [("undo:\n  dept: 3\n", "undo.dept"), ("limits:\n  maxRooms: lots\n", "limits.maxRooms"),
                            ("listen:\n  port: 70000\n", "listen.port"), ("undo:\n  conflicts: maybe\n", "undo.conflicts")] {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pk-bad-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let file = directory.appendingPathComponent("bad.yaml")
            try yaml.write(to: file, atomically: true, encoding: .utf8)
            let process = Process()
            process.executableURL = HubProcess.binary
            process.arguments = ["--config", file.path]
            let stderr = Pipe()
            process.standardError = stderr
            process.standardOutput = Pipe()
            try process.run()
            let exited = Unchecked((process, stderr))
            let message = try await blocking {
                let (process, stderr) = exited.value
                defer { process.waitUntilExit() }
                return String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            }
            #expect(process.terminationStatus == 78, "\(key)")
            #expect(message.contains(key), "\(key): \(message)")
            try? FileManager.default.removeItem(at: directory)
        }
    }

    private func get(_ url: String) async throws -> (String, Int) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        return (String(decoding: data, as: UTF8.self), (response as? HTTPURLResponse)?.statusCode ?? 0)
    }
}
