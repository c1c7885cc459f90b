import Foundation
import PeopleCore
@testable import PeopleHub
import PeopleStore
import Testing
@testable import WebSocketTransport

/// The whole hub, in-process, through fake connections: admission, every error code the hub (rather
/// than the room) answers, resume and replay, sends held behind commits, store failures, redirects,
/// rate limits and the HTTP routes. The real-binary suites (PeopleHubTests, Tests/python) stay.
@Suite("Hub in-process")
struct HubInProcessTests {
    static func set(_ tag: PeopleCore.Tag, glasses: Bool) -> Diff { .set(tag, .glasses(glasses)) }

    // MARK: Admission

    @Test("admission: a bad path, a page of another origin, and the connection limits are refused at the upgrade")
    func admission() {
        let h = HubHarness { $0.limits.maxConnections = 3; $0.limits.maxConnectionsPerIP = 2 }
        #expect(h.connect("/v1/rooms/") == nil)
        #expect(h.connect("/v1/rooms/bad!name") == nil)
        #expect(h.connect("/v1/rooms/a/b") == nil)
        #expect(h.connect("/") == nil)
        #expect(h.connect(origin: "https://evil.example") == nil)
        #expect(h.connect(origin: "http://hub.test:8080") != nil, "the hub's own origin")
        let a = h.connect(peer: "10.9.9.9")
        #expect(a != nil)
        #expect(h.connect(peer: "10.9.9.9") != nil)
        #expect(h.connect(peer: "10.9.9.9") == nil, "maxConnectionsPerIP")
        #expect(h.connect(peer: "10.8.8.8") == nil, "maxConnections")
        h.hub.didClose(a!)
        #expect(h.connect(peer: "10.8.8.8") != nil, "a close frees a place")
    }

    @Test("allowed origins: listed ones (any case, a trailing slash) and * are let in")
    func origins() {
        #expect(Admission.originAllowed("HTTPS://App.Example/", host: nil, allowed: ["https://app.example"]))
        #expect(Admission.originAllowed("https://x.example", host: nil, allowed: ["*"]))
        #expect(Admission.originAllowed(nil, host: nil, allowed: []), "no Origin: not a browser")
        #expect(!Admission.originAllowed("https://x.example", host: "hub:1", allowed: []))
    }

    // MARK: Hello and its room

    @Test("a hello is answered with a welcome; the hello deadline is cleared; the deadline was set at open")
    func welcome() async throws {
        let h = HubHarness { $0.limits.helloTimeoutSeconds = 7 }
        let connection = try #require(h.connect())
        #expect(connection.deadline == 7)
        await h.send(.hello(.init(user: "ann")), on: connection)
        let welcome = try #require(connection.welcome)
        #expect(welcome.user == "ann" && welcome.rev == 0 && welcome.people?.count == 3)
        #expect(connection.deadline == 0)
    }

    @Test("every error code the hub answers before the room sees a frame", arguments: [
        ("{", ErrorCode.badJSON),
        (#"{"type":"submit","seq":1,"base":0,"ops":[]}"#, .notHello),
        (#"{"type":"hello","user":"ann"}"#, .badMessage),
        (#"{"type":"hello","protocol":9,"user":"ann"}"#, .unsupportedProtocol),
    ])
    func helloErrors(frame: String, code: ErrorCode) async throws {
        let h = HubHarness()
        let connection = try #require(h.connect())
        await h.send(frame, on: connection)
        #expect(connection.errors.map(\.code) == [code])
        #expect((connection.closeCode == 1008) == code.isFatal)
    }

    @Test("after the welcome: bad-json, bad-message (binary, second hello, envelope), invalid-op, stale-base, forbidden")
    func joinedErrors() async throws {
        let h = HubHarness()
        let ann = try await h.joined("ann")
        await h.send("{", on: ann)
        await h.sendBinary([1, 2, 3], on: ann)
        await h.send(.hello(.init(user: "ann")), on: ann)
        await h.send(#"{"type":"submit","seq":1}"#, on: ann)
        await h.send(#"{"type":"submit","seq":2,"base":0,"ops":[{"op":"set","tag":1,"field":"hairColor","value":"plaid"}]}"#, on: ann)
        await h.send(.submit(seq: 3, base: 99, [Self.set(1, glasses: false)]), on: ann)
        #expect(ann.errors.map(\.code) == [.badJSON, .badMessage, .badMessage, .badMessage, .invalidOp, .badMessage])
        #expect(ann.errors.map(\.seq) == [nil, nil, nil, 1, 2, 3])
        #expect(ann.closeCode == nil, "none of these closes the connection")
    }

    @Test("a frame over the size limit is answered too-large")
    func tooLarge() async throws {
        let h = HubHarness()
        let ann = try await h.joined("ann")
        h.hub.didReceiveOversized(ann, bytes: 5_000_000)
        #expect(ann.errors.map(\.code) == [.tooLarge])
    }

    @Test("a hello for a room over limits.maxRooms is room-full, and the connection may say hello again")
    func roomFull() async throws {
        let h = HubHarness { $0.limits.maxRooms = 1 }
        _ = try await h.joined("ann", room: "one")
        let bob = try #require(h.connect("/v1/rooms/two"))
        await h.send(.hello(.init(user: "bob")), on: bob)
        #expect(bob.errors.map(\.code) == [.roomFull] && bob.closeCode == nil)
        await h.send(.hello(.init(user: "bob")), on: bob)
        #expect(bob.errors.map(\.code) == [.roomFull, .roomFull])
    }

    @Test("at limits.maxRooms an HTTP request for a room the store does not have is 404, for one it has 503 room-full; DELETE still works")
    func roomFullOverHTTP() async throws {
        let h = HubHarness { $0.limits.maxRooms = 1 }
        _ = try await h.joined("ann", room: "one")
        h.store.save(Room(name: "stored").snapshot(), room: "stored")
        #expect(await h.http("GET", "/v1/rooms/nothing")?.status == 404)
        #expect(await h.http("GET", "/v1/rooms/stor")?.status == 404, "a prefix of a stored room's name is not that room")
        #expect(await h.http("GET", "/v1/rooms/nothing/log")?.json?["error"]?["code"] == .string("no-room"))
        let full = await h.http("GET", "/v1/rooms/stored")
        #expect(full?.status == 503 && full?.json?["error"]?["code"] == .string("room-full"))
        // An admin can still delete a room that is not loaded (it is not loaded to be deleted).
        #expect(await h.http("DELETE", "/v1/rooms/stored")?.status == 204)
        #expect(try h.store.inner.load(room: "stored") == nil)
        #expect(await h.http("GET", "/v1/rooms/stored")?.status == 404)
        #expect(await h.http("DELETE", "/v1/rooms/stored")?.json?["error"]?["code"] == .string("no-room"))
    }

    @Test("after an export with its history and after an import, malloc's freed pages are handed back at the second sweep, once")
    func memoryHandedBackAfterLongWork() async throws {
        let h = HubHarness()
        let bob = try await h.joined("bob")
        await h.send(.submit(seq: 1, base: 0, [Self.set(1, glasses: false)]), on: bob)
        #expect(await h.http("GET", "/v1/rooms/r/export", query: ["history": "true"])?.status == 200)
        h.hub.sweep()
        await h.settle()
        #expect(h.memory.releases.withLock { $0 } == 0, "not at once: what the answer held may not be freed yet")
        h.hub.sweep()
        await h.settle()
        #expect(h.memory.releases.withLock { $0 } == 1)
        h.hub.sweep()
        await h.settle()
        #expect(h.memory.releases.withLock { $0 } == 1, "once")
        #expect(await h.http("GET", "/v1/rooms/r/export")?.status == 200)  // people only: nothing to hand back
        h.hub.sweep()
        h.hub.sweep()
        await h.settle()
        #expect(h.memory.releases.withLock { $0 } == 1)
        #expect(await h.http("PUT", "/v1/rooms/copy", body: #"{"people":[]}"#)?.status == 201)
        h.hub.sweep()
        h.hub.sweep()
        await h.settle()
        #expect(h.memory.releases.withLock { $0 } == 2, "after the import")
    }

    @Test("over limits.maxMemoryMB no room is opened (room-full, 503), idle rooms go at once, loaded rooms go on; under 90 % rooms open again")
    func memoryShort() async throws {
        let mb = 1 << 20
        let h = HubHarness { $0.limits.maxMemoryBytes = 100 * mb }
        h.memory.heap.withLock { $0 = 60 * mb }
        let ann = try await h.joined("ann", room: "one")
        let bob = try await h.joined("bob", room: "two")
        await h.disconnect(bob)
        h.store.save(Room(name: "stored").snapshot(), room: "stored")
        h.hub.sweep()
        await h.settle()
        #expect(h.hub.host("two") != nil, "under the bound an idle room waits for rooms.unloadAfterSeconds")

        h.memory.heap.withLock { $0 = 100 * mb }
        h.hub.sweep()  // reads the heap: short from now on
        await h.settle()
        #expect(h.logs.lines.contains { $0.level == .warning && $0.message.hasPrefix("memory short (limits.maxMemoryMB)")
            && $0.metadata == ["heapMB": "100", "limitMB": "100"] })
        let cara = try #require(h.connect("/v1/rooms/three"))
        await h.send(.hello(.init(user: "cara")), on: cara)
        #expect(cara.errors.map(\.code) == [.roomFull] && cara.closeCode == nil)
        #expect(cara.errors.first?.message.contains("limits.maxMemoryMB, 100 MB") == true, "\(cara.errors)")
        let full = await h.http("GET", "/v1/rooms/stored")
        #expect(full?.status == 503 && full?.json?["error"]?["code"] == .string("room-full"))
        #expect(await h.http("PUT", "/v1/rooms/new", body: #"{"people":[]}"#)?.status == 503)

        h.hub.sweep()  // short: the idle room goes now, and the freed memory is handed back
        await h.settle()
        #expect(h.hub.host("two") == nil && h.logs.lines.contains { $0.message == "room unloaded (memory short)" })
        #expect(h.memory.releases.withLock { $0 } == 1)
        // What is open goes on: a teammate joins the loaded room, ann's edit is acknowledged.
        let dan = try await h.joined("dan", room: "one")
        await h.send(.submit(seq: 1, base: 0, [Self.set(1, glasses: false)]), on: ann)
        #expect(ann.acks().map(\.rev) == [1] && dan.closeCode == nil)

        h.memory.heap.withLock { $0 = 91 * mb }  // above 90 %: still short
        h.hub.sweep()
        await h.settle()
        await h.send(.hello(.init(user: "cara")), on: cara)
        #expect(cara.errors.map(\.code) == [.roomFull, .roomFull])
        h.memory.heap.withLock { $0 = 89 * mb }
        h.hub.sweep()
        await h.settle()
        #expect(h.logs.lines.contains { $0.level == .notice && $0.message.hasPrefix("memory back under 90 %") })
        await h.send(.hello(.init(user: "cara")), on: cara)
        await h.settle { cara.welcome != nil }
        #expect(cara.welcome != nil && h.hub.host("three") != nil)
        #expect(await h.http("GET", "/v1/rooms/stored")?.status == 200)
    }

    @Test("with no memory bound (limits.maxMemoryMB 0 outside a container) nothing is refused for memory, whatever the heap")
    func noMemoryBound() async throws {
        let h = HubHarness()
        h.memory.heap.withLock { $0 = Int.max }
        h.hub.sweep()
        await h.settle()
        _ = try await h.joined("ann", room: "one")
        #expect(!h.logs.lines.contains { $0.message.hasPrefix("memory short") })
    }

    @Test("`room cannot be loaded` is logged once every 10 s at most, saying how many failed meanwhile, and at the stop how many since")
    func loadFailuresAreLoggedOnceInTenSeconds() async throws {
        // A cluster pass counted 102 such critical lines per node in a 30 s PostgreSQL outage.
        let store = ScriptedStore()
        store.failLoads = true
        let h = HubHarness(store: store)
        func failOnce() async throws {
            let ann = try #require(h.connect())
            await h.send(.hello(.init(user: "ann")), on: ann)
            #expect(ann.errors.map(\.code) == [.serverError] && ann.closeCode == 1011)
        }
        func lines() -> [LogRecorder.Line] { h.logs.lines.filter { $0.message == "room cannot be loaded" } }
        for _ in 0..<4 { try await failOnce() }
        #expect(lines().count == 1 && lines().first?.level == .critical)
        h.clock.advance(by: 10_000)
        try await failOnce()
        #expect(lines().count == 2)
        #expect(lines().last?.metadata["failedSinceLastLine"] == "3")
        // Two more within 10 s, then the hub stops: they are said in a last line, not lost.
        try await failOnce()
        try await failOnce()
        #expect(lines().count == 2)
        h.hub.finishDrain()
        #expect(lines().count == 3)
        #expect(lines().last?.metadata == ["failedSinceLastLine": "2"] && lines().last?.level == .critical)
        h.hub.finishDrain()
        #expect(lines().count == 3)
    }

    @Test("a room that cannot be loaded: server-error, then close 1011; the next hello tries again")
    func loadFailure() async throws {
        let store = ScriptedStore()
        store.failLoads = true
        let h = HubHarness(store: store)
        let ann = try #require(h.connect())
        await h.send(.hello(.init(user: "ann")), on: ann)
        #expect(ann.errors.map(\.code) == [.serverError] && ann.closeCode == 1011)
        store.failLoads = false
        _ = try await h.joined("bob")
    }

    @Test("frames sent before the room is ready wait and are answered after the welcome, in order")
    func framesWaitForTheRoom() async throws {
        let h = HubHarness()
        let ann = try #require(h.connect())
        // Both frames go in before the service thread runs the room's load.
        h.hub.didReceive(ann, message: Array(ClientMessage.hello(.init(user: "ann")).json.bytes), binary: false)
        h.hub.didReceive(ann, message: Array(ClientMessage.submit(seq: 1, base: 0, [Self.set(1, glasses: false)]).json.bytes),
                         binary: false)
        await h.settle()
        guard case .welcome? = ann.replies.first, case .ack(let ack)? = ann.replies.dropFirst().first else {
            Issue.record("\(ann.replies)")
            return
        }
        #expect(ack.seq == 1 && ack.rev == 1)
    }

    // MARK: Sessions

    @Test("resume on a new connection: same session, the old connection closed 1000, a resent seq answered once")
    func resumeAndReplay() async throws {
        let h = HubHarness()
        let first = try await h.joined("ann")
        let session = try #require(first.welcome?.session)
        await h.send(.submit(seq: 1, base: 0, [Self.set(1, glasses: false)]), on: first)
        #expect(first.acks().map(\.rev) == [1])
        let second = try await h.joined("ann", resume: session, since: 1)
        #expect(second.welcome?.session == session)
        #expect(first.closeCode == 1000)
        await h.disconnect(first)  // the old connection's close must not end the resumed session
        await h.send(.submit(seq: 1, base: 0, [Self.set(1, glasses: false)]), on: second)
        #expect(second.acks().map(\.rev) == [1], "the cached ack, not a second revision")
        let bob = try await h.joined("bob")
        #expect(bob.welcome?.rev == 1)
        #expect(bob.welcome?.presence.map(\.user).sorted() == ["ann", "bob"])
    }

    @Test("acks and broadcasts wait until the store says the revision is durable")
    func heldBehindCommits() async throws {
        let h = HubHarness()
        let ann = try await h.joined("ann")
        let bob = try await h.joined("bob")
        h.store.hold()
        await h.send(.submit(seq: 1, base: 0, [Self.set(1, glasses: false)]), on: ann)
        #expect(ann.acks().isEmpty && bob.ops().isEmpty)
        h.store.release()
        await h.settle()
        #expect(ann.acks().map(\.rev) == [1] && bob.ops().map(\.rev) == [1])
    }

    @Test("an HTTP read of a revision that is not durable yet waits for it, as broadcasts do; a store failure answers 503")
    func readsWaitForDurability() async throws {
        let h = HubHarness()
        let ann = try await h.joined("ann")
        h.store.hold()
        await h.send(.submit(seq: 1, base: 0, [Self.set(1, glasses: false)]), on: ann)
        let now = h.start("GET", "/v1/rooms/r")
        let at = h.start("GET", "/v1/rooms/r", query: ["at": "1"])
        let csv = h.start("GET", "/v1/rooms/r/export", headers: ["accept": "text/csv"])
        let json = h.start("GET", "/v1/rooms/r/export")
        let before = await h.http("GET", "/v1/rooms/r", query: ["at": "0"])
        await h.settle()
        #expect(before?.json?["rev"] == .int(0), "a durable revision is answered at once")
        #expect(now.response == nil && at.response == nil && csv.response == nil && json.response == nil,
                "revision 1 is not durable: nobody is shown it yet")
        h.store.release()
        await h.settle()
        #expect(ann.acks().map(\.rev) == [1])
        #expect(now.response?.json?["rev"] == .int(1) && at.response?.json?["rev"] == .int(1))
        #expect(csv.response?.status == 200 && json.response?.json?["rev"] == .int(1))

        // Revision 2 never becomes durable: the reader is told, and never shown it.
        h.store.hold()
        await h.send(.submit(seq: 2, base: 1, [Self.set(1, glasses: true)]), on: ann)
        let lost = h.start("GET", "/v1/rooms/r")
        await h.settle()
        h.store.release(error: StoreError(.io, "disk full"))
        await h.settle()
        #expect(lost.response?.status == 503)
        #expect(await h.http("GET", "/v1/rooms/r")?.json?["rev"] == .int(1))
    }

    @Test("a store failure drops the room: held sends are never sent, connections close 1011, the room reloads")
    func storeFailure() async throws {
        let h = HubHarness()
        let ann = try await h.joined("ann")
        h.store.hold()
        await h.send(.submit(seq: 1, base: 0, [Self.set(1, glasses: false)]), on: ann)
        h.store.release(error: StoreError(.io, "disk full"))
        await h.settle()
        #expect(ann.acks().isEmpty && ann.closeCode == 1011)
        await h.disconnect(ann)
        let bob = try await h.joined("bob")
        #expect(bob.welcome?.rev != nil)
    }

    @Test("a store that keeps failing is logged once every 10 s, with how many rooms were dropped between, not at every reconnect")
    func storeFailureLogIsRateLimited() async throws {
        let h = HubHarness()
        func failOnce() async throws {
            let ann = try await h.joined("ann")
            h.store.hold()
            await h.send(.submit(seq: 1, base: ann.welcome?.rev ?? 0, [Self.set(1, glasses: true)]), on: ann)
            h.store.release(error: StoreError(.unavailable, "the files were deleted"))
            await h.settle()
            #expect(ann.closeCode == 1011)
            await h.disconnect(ann)
        }
        func lines() -> [LogRecorder.Line] { h.logs.lines.filter { $0.message == "store failed; room dropped and its connections closed" } }
        for _ in 0..<3 { try await failOnce() }
        #expect(lines().count == 1)
        h.clock.advance(by: 10_000)
        try await failOnce()
        #expect(lines().count == 2)
        #expect(lines().last?.metadata["droppedSinceLastLine"] == "2")
    }

    @Test("a viewer's token lets them in as a viewer; their edit is forbidden; a bad token is unauthorized")
    func tokens() async throws {
        let secret = Array(repeating: UInt8(7), count: 32)
        let authority = try await TokenAuthority(secret: secret)
        let h = HubHarness { $0.auth = authority }
        let viewer = try await authority.mint(user: "vic", rooms: ["r"], role: .viewer, ttl: 600)
        let vic = try #require(h.connect())
        await h.send(.hello(.init(user: "vic", token: viewer)), on: vic)
        await h.settle { vic.welcome != nil }
        #expect(vic.welcome?.role == .viewer)
        await h.send(.submit(seq: 1, base: 0, [Self.set(1, glasses: false)]), on: vic)
        #expect(vic.errors.map(\.code) == [.forbidden])

        let eve = try #require(h.connect())
        await h.send(.hello(.init(user: "eve", token: "not.a.token")), on: eve)
        await h.settle { eve.closeCode != nil }
        #expect(eve.errors.map(\.code) == [.unauthorized] && eve.closeCode == 1008)
    }

    @Test("a resume with a token of another role starts a new session: a session's role never changes")
    func resumeWithAnotherRole() async throws {
        let authority = try await TokenAuthority(secret: Array(repeating: UInt8(7), count: 32))
        let h = HubHarness { $0.auth = authority }
        let editor = try await authority.mint(user: "ann", rooms: ["r"], role: .editor, ttl: 3600)
        let ann = try await h.joined("ann", token: editor)
        let session = try #require(ann.welcome?.session)
        await h.send(.submit(seq: 1, base: 0, [Self.set(1, glasses: false)]), on: ann)
        #expect(ann.acks().map(\.rev) == [1])
        await h.disconnect(ann)

        let viewer = try await authority.mint(user: "ann", rooms: ["r"], role: .viewer, ttl: 3600)
        let asViewer = try await h.joined("ann", token: viewer, resume: session, since: 1)
        #expect(asViewer.welcome?.role == .viewer && asViewer.welcome?.session != session)
        await h.send(.undo(.init(seq: 1)), on: asViewer)
        #expect(asViewer.errors.map(\.code) == [.forbidden], "a viewer's session cannot undo the editor's step")
        await h.disconnect(asViewer)

        let back = try await h.joined("ann", token: editor, resume: session, since: 1)
        #expect(back.welcome?.role == .editor && back.welcome?.session == session, "the editor's session is still kept")
    }

    @Test("a session ends when its token expires: unauthorized, close 1008, it leaves the room; a new token resumes it")
    func tokenExpiry() async throws {
        let authority = try await TokenAuthority(secret: Array(repeating: UInt8(7), count: 32))
        let h = HubHarness(configure: { $0.auth = authority }, clockStart: HubRuntime.systemMilliseconds())
        // The hello's check reads the real time and the session's end the harness clock: a ttl long
        // enough that a parallel run starving the cooperative pool for a minute (CI did) cannot expire
        // the token before the hello is checked; the harness clock then carries it past its exp.
        let short = try await authority.mint(user: "ann", rooms: ["r"], role: .editor, ttl: 1800)
        let ann = try await h.joined("ann", token: short)
        let session = try #require(ann.welcome?.session)
        let bob = try await h.joined("bob", token: try await authority.mint(user: "bob", rooms: ["r"], role: .editor, ttl: 3600))
        h.clock.advance(by: 900_000)
        h.hub.sweep()
        await h.send(.submit(seq: 1, base: 0, [Self.set(1, glasses: false)]), on: ann)
        #expect(ann.acks().map(\.rev) == [1] && ann.closeCode == nil, "within its time the token counts")

        h.clock.advance(by: 901_000)  // past exp (rounded down to a whole second when minted)
        h.hub.sweep()
        await h.settle()
        #expect(ann.errors.map(\.code) == [.unauthorized] && ann.closeCode == 1008)
        #expect(ann.errors.first?.message.contains("expired") == true)
        #expect(bob.closeCode == nil, "a teammate's longer token goes on")
        await h.disconnect(ann)
        #expect(h.hub.host("r")?.connections.count == 1, "the expired session left the room")

        // A new token resumes the session, nothing lost (the same token again is refused by its
        // check at hello, which reads the real time: test_trust.py).
        let fresh = try await authority.mint(user: "ann", rooms: ["r"], role: .editor, ttl: 600, now: Date(timeIntervalSince1970: Double(h.clock.milliseconds) / 1000))
        let resumed = try await h.joined("ann", token: fresh, resume: session, since: 1)
        #expect(resumed.welcome?.session == session && resumed.welcome?.rev == 1)
    }

    @Test("a token that expires while its room loads gets no welcome: unauthorized and close 1008 instead")
    func tokenExpiresWhileOpening() async throws {
        let authority = try await TokenAuthority(secret: Array(repeating: UInt8(7), count: 32))
        let h = HubHarness(configure: { $0.auth = authority }, clockStart: HubRuntime.systemMilliseconds())
        h.background.hold()
        let ann = try #require(h.connect())
        // A long ttl for the real-time check at hello (see tokenExpiry); the harness clock passes it.
        await h.send(.hello(.init(user: "ann", token: try await authority.mint(user: "ann", rooms: ["r"], role: .editor, ttl: 1800))),
                     on: ann)
        await h.settle { h.background.waiting > 0 || ann.isClosing }
        #expect(ann.welcome == nil && ann.closeCode == nil && h.background.waiting > 0,
                "the token counts; the room's store read waits")
        h.clock.advance(by: 1_801_000)
        while h.background.next() { await h.settle() }
        #expect(ann.welcome == nil && ann.errors.map(\.code) == [.unauthorized] && ann.closeCode == 1008)
        await h.disconnect(ann)
        #expect(h.hub.host("r")?.connections.isEmpty == true)
    }

    @Test("cluster mode: a room whose leases were all lost while it loaded takes its lease again before anyone joins it")
    func leasesLostWhileLoading() async throws {
        let store = LeasingStore()
        let h = HubHarness(store: store)
        h.background.hold()
        let ann = try #require(h.connect())
        await h.send(.hello(.init(user: "ann")), on: ann)
        await h.settle { h.background.waiting > 0 }  // the lease is taken; the store read waits
        #expect(store.acquired == ["r"])
        store.loseLeases()  // the writer's connection broke: the lease just taken went too
        await h.settle()
        for _ in 0..<3 where ann.welcome == nil && !ann.isClosing {
            // The held read, then (a lease call away, on its own thread) the read after the new lease.
            await h.settle { h.background.waiting > 0 || ann.welcome != nil }
            while h.background.next() { await h.settle() }
        }
        // Before session 29 the room was served on the lease lost meanwhile, beside the next node to take it.
        #expect(store.acquired == ["r", "r"], "the lease is asked for again")
        #expect(ann.welcome != nil && h.hub.host("r") != nil)
    }

    @Test("cluster mode: a room made again by a hello that waited for its deletion is served under its lease")
    func leaseAfterADeletion() async throws {
        // A review (session 40): the deletion's end loaded the room again for the hello (taking the
        // lease this node still held), then gave the lease back: the room was served without it, and
        // another node could take it and serve the room too.
        let store = LeasingStore()
        let h = HubHarness(store: store)
        let ann = try await h.joined("ann")
        h.background.hold()
        let deletion = h.start("DELETE", "/v1/rooms/r")
        await h.settle()
        let bob = try #require(h.connect())
        h.hello(bob, as: "bob")  // waits for the deletion, then makes the room anew
        while h.background.next() { await h.settle() }
        await h.settle { bob.welcome != nil && deletion.response != nil }
        #expect(ann.closeReason == CloseReason.roomDeleted && deletion.response?.status == 204)
        #expect(bob.welcome?.rev == 0 && h.hub.host("r") != nil)
        #expect(store.held == ["r"], "the room is served under its lease")
    }

    @Test("cluster mode: /healthz answers 503 from the moment the leases are lost until a store check passes")
    func leasesLostTurnHealthRed() async throws {
        let store = LeasingStore()
        let h = HubHarness(store: store)
        let ann = try await h.joined("ann")
        #expect(await h.http("GET", "/healthz") == HTTPResponse(status: 200, text: "ok\n"))
        store.loseLeases()
        await h.settle()
        #expect(ann.closeCode == 1012)
        // Before session 30 it said 200 until a check had waited 10 s on the unreachable database.
        let red = await h.http("GET", "/healthz")
        #expect(red?.status == 503)
        let said = String(decoding: red?.body ?? [], as: UTF8.self)
        #expect(said.hasPrefix("store unavailable: lost the room leases"), "\(said)")
        for _ in 0..<StoreHealth.checkSeconds {
            h.clock.advance(by: 1_000)
            h.hub.sweep()
            await h.settle()
        }
        #expect(await h.http("GET", "/healthz") == HTTPResponse(status: 200, text: "ok\n"), "the next check passed")
    }

    @Test("cluster mode: a node not sure of its leases (woken from a pause) answers no read or write from the room's memory: 503 with Retry-After, a long poll whose wait ran out too; a long poll waiting when the room is dropped is answered 503")
    func unsureNodeAnswersNothingFromMemory() async throws {
        // A frozen node's pass (session 42): woken, a node answered the requests queued during the
        // freeze from its old copy of a room another node had taken and written to (a `409 reset`
        // to a feed follower, a stale export), and a long poll waited out its `wait`, then gave the
        // old head.
        let store = LeasingStore()
        let h = HubHarness(store: store)
        let ann = try await h.joined("ann")
        await h.send(.submit(seq: 1, base: 0, [.set(1, .glasses(false))]), on: ann)
        h.timers.hold()  // the polls' waits
        let dropped = h.start("GET", "/v1/rooms/r/revisions", query: ["after": "1", "wait": "30"])
        await h.settle()
        #expect(dropped.response == nil, "waiting for a revision")
        store.loseLeases()
        await h.settle()
        #expect(dropped.response?.status == 503, "the long poll is answered when the room is dropped")

        let ran = h.start("GET", "/v1/rooms/r/revisions", query: ["after": "1", "wait": "30"])  // the room loads anew
        await h.settle()
        #expect(ran.response == nil, "waiting for a revision")
        store.certain.withLock { $0 = false }
        for (method, path, body) in [("GET", "/v1/rooms/r", ""), ("GET", "/v1/rooms/r/export", ""),
                                     ("GET", "/v1/rooms/r/revisions", ""),
                                     ("POST", "/v1/rooms/r/batches", HTTPAPITests.insertBody(key: "k", base: 1))] {
            let answer = await h.http(method, path, query: method == "POST" ? ["user": "bob"] : [:], body: body)
            #expect(answer?.status == 503 && answer?.json?["error"]?["code"] == .string("unavailable"), "\(method) \(path)")
            #expect(answer?.headers.contains(.init("Retry-After", "1")) == true)
        }
        #expect(h.hub.host("r")?.room.revision == 1, "nothing applied")
        while h.timers.next() { await h.settle() }  // the wait runs out while the node is not sure
        #expect(ran.response?.status == 503, "a wait that ran out during a pause gives no head")
        store.certain.withLock { $0 = true }
        #expect(await h.http("GET", "/v1/rooms/r")?.status == 200, "sure again")
    }

    @Test("cluster mode: a hello that comes while the node is not sure of its leases is welcomed once it is sure, not from the room's memory before; one still waiting when the leases are lost is closed with the room")
    func unsureNodeWelcomesNobodyFromMemory() async throws {
        // Session 43's Left: a WebSocket hello that came while a node was unsure (woken from a pause,
        // or PostgreSQL silent) was welcomed from the room's memory, which another node may have
        // taken and written to meanwhile; the node's HTTP reads answered 503.
        let store = LeasingStore()
        let h = HubHarness(store: store)
        let ann = try await h.joined("ann")
        await h.send(.submit(seq: 1, base: 0, [.set(1, .glasses(false))]), on: ann)
        store.certain.withLock { $0 = false }
        let bob = try #require(h.connect())
        h.hello(bob, as: "bob")
        await h.settle()
        h.hub.sweep()
        await h.settle()
        #expect(bob.welcome == nil && bob.closeCode == nil, "no welcome while unsure")
        #expect(bob.deadline == 0, "the hello's deadline is lifted: the wait is the node's")
        store.certain.withLock { $0 = true }
        h.hub.sweep()
        await h.settle()
        #expect(bob.welcome?.rev == 1, "welcomed once sure")

        store.certain.withLock { $0 = false }
        let carl = try #require(h.connect())
        h.hello(carl, as: "carl")
        await h.settle()
        #expect(carl.welcome == nil)
        store.loseLeases()
        await h.settle()
        #expect(carl.welcome == nil && carl.closeCode == 1012, "closed with the room: \(String(describing: carl.closeCode))")
        #expect(h.hub.host("r") == nil, "the room was dropped")
    }

    @Test("cluster mode: a log or blame of a client in the room while the node is not sure of its leases is answered once it is sure, before the frames sent after it; one still waiting when the leases are lost goes with the room (1012)")
    func unsureNodeAnswersNoHistoryQuestionFromMemory() async throws {
        // Session 44's Left: a hello waited while the node was unsure, but a `log` or `blame` of a
        // client already in the room was answered from the room's memory, which another node may have
        // taken and written to meanwhile (the node's HTTP reads answered 503).
        let store = LeasingStore()
        let h = HubHarness(store: store)
        let ann = try await h.joined("ann")
        await h.send(.submit(seq: 1, base: 0, [.set(1, .glasses(false))]), on: ann)
        func answers() -> [String] {
            ann.replies.compactMap {
                switch $0 {
                case .log(let page): "log \(page.seq ?? -1)"
                case .blame(let blame): "blame \(blame.seq ?? -1)"
                case .pong(let seq, _): "pong \(seq ?? -1)"
                default: nil
                }
            }
        }
        store.certain.withLock { $0 = false }
        await h.send(.log(.init(seq: 2)), on: ann)
        await h.send(.blame(.init(seq: 3, tag: 1)), on: ann)
        await h.send(.ping(seq: 4), on: ann)
        h.hub.sweep()
        await h.settle()
        #expect(answers().isEmpty, "nothing answered while unsure: \(answers())")
        #expect(ann.closeCode == nil)
        store.certain.withLock { $0 = true }
        h.hub.sweep()
        await h.settle()
        #expect(answers() == ["log 2", "blame 3", "pong 4"], "answered once sure, in the order asked")
        let page = ann.replies.lazy.compactMap { if case .log(let page) = $0 { page } else { nil } }.first
        #expect(page?.entries.map(\.rev) == [1])

        store.certain.withLock { $0 = false }
        await h.send(.log(.init(seq: 5)), on: ann)
        await h.settle()
        store.loseLeases()
        await h.settle()
        #expect(ann.closeCode == 1012, "closed with the room: \(String(describing: ann.closeCode))")
        #expect(!answers().contains("log 5"))
    }

    @Test("a connection closed over its rate leaves the room when the close completes")
    func rateCloseLeaves() async throws {
        let h = HubHarness { $0.limits.opsPerSecond = 2 }
        let ann = try await h.joined("ann")
        let bob = try await h.joined("bob")
        for seq in 1...4 { await h.send(.undo(.init(seq: seq)), on: ann) }
        h.clock.advance(by: 500)
        for seq in 5...6 { await h.send(.undo(.init(seq: seq)), on: ann) }
        h.clock.advance(by: 501)
        for seq in 7...9 { await h.send(.undo(.init(seq: seq)), on: ann) }
        #expect(ann.closeCode == 1008)
        await h.disconnect(ann)
        #expect(h.hub.host("r")?.connections.count == 1)
        h.clock.advance(by: 2000)
        h.hub.sweep()
        await h.settle()
        let present = bob.sent.compactMap { if case .presence(let list) = $0 { list.map(\.user) } else { nil } }.last
        #expect(present == ["bob"], "ann is no longer shown as here")
    }

    @Test("over the rate: rate-limited with the seq, then closed after a second")
    func rateLimits() async throws {
        let h = HubHarness { $0.limits.opsPerSecond = 2 }
        let ann = try await h.joined("ann")
        for seq in 1...4 { await h.send(.undo(.init(seq: seq)), on: ann) }
        #expect(ann.errors.map(\.code) == [.rateLimited] && ann.errors.first?.seq == 4)
        // Still flooding: a token comes back every 500 ms, the frames after it are dropped; a drop more
        // than a second after the first drop in the run closes the connection.
        h.clock.advance(by: 500)
        for seq in 5...6 { await h.send(.undo(.init(seq: seq)), on: ann) }
        #expect(ann.errors.map(\.seq) == [4, 6] && ann.closeCode == nil)
        h.clock.advance(by: 501)
        for seq in 7...9 { await h.send(.undo(.init(seq: seq)), on: ann) }
        #expect(ann.closeCode == 1008)
    }

    // MARK: History from the store

    @Test("a restore below the room's memory reads the store; the session's next frame waits for its answer")
    func restoreBelowMemory() async throws {
        let h = HubHarness { $0.roomPolicy.keptRevisions = 3 }
        let ann = try await h.joined("ann")
        var models: [[Person]] = []
        for k in 1...12 {
            await h.send(.submit(seq: k, base: k - 1, [.set(1, .name("Bob \(k)"))]), on: ann)
            models.append(h.hub.host("r")!.room.model.people.elements)
        }
        #expect(h.hub.host("r")!.room.oldestKeptBase > 2)
        // The restore and a submit right behind it, before the service thread runs anything.
        h.hub.didReceive(ann, message: Array(ClientMessage.restore(.init(seq: 13, rev: 2)).json.bytes), binary: false)
        h.hub.didReceive(ann, message: Array(ClientMessage.submit(seq: 14, base: 12, [Self.set(2, glasses: true)]).json.bytes),
                         binary: false)
        await h.settle()
        let answers = ann.replies.filter {
            switch $0 {
            case .restored, .ack: true
            default: false
            }
        }.suffix(2)
        guard case .restored(let restored)? = answers.first, case .ack(let ack)? = answers.last else {
            Issue.record("\(ann.replies.suffix(3))")
            return
        }
        #expect(restored.rev == 13 && ack.seq == 14 && ack.rev == 14)
        #expect(h.hub.host("r")!.room.model.people.elements.map(\.name) == models[1].map(\.name))

        // The timeline pages through revisions the store holds.
        await h.send(.log(.init(seq: 1, before: 6, limit: 3)), on: ann)
        guard let page = ann.replies.lazy.compactMap({ if case .log(let p) = $0 { p } else { nil } }).last else {
            Issue.record("no log page: \(ann.replies.suffix(3))")
            return
        }
        #expect(page.entries.map(\.rev) == [5, 4, 3] && page.more)
    }

    // MARK: Redirects

    @Test("cluster mode: a room leased by another node sends the hello there (redirect, then 1000)")
    func redirect() async throws {
        let store = LeasedElsewhere()
        let h = HubHarness(store: store)
        let ann = try #require(h.connect("/v1/rooms/far"))
        await h.send(.hello(.init(user: "ann")), on: ann)
        await h.settle { ann.closeCode != nil }
        guard case .redirect(let url)? = ann.replies.first else { Issue.record("\(ann.sent)"); return }
        #expect(url == "ws://owner:9000/v1/rooms/far" && ann.closeCode == 1000)
        #expect(h.logs.lines.filter { $0.message == "redirect" }.map(\.metadata) == [["room": "far", "url": url]])
    }

    @Test("cluster mode: an HTTP request for a room leased by another node is 307 there, logged with that Location")
    func httpRedirect() async throws {
        for full in [false, true] {
            let store = LeasedElsewhere()
            let h = HubHarness(configure: { $0.limits.maxRooms = full ? 0 : 10 }, store: store)
            let response = await h.http("GET", "/v1/rooms/far", query: ["at": "2"])
            #expect(response?.status == 307, "full: \(full)")
            let location = response?.headers.first { $0.name == "Location" }?.value
            #expect(location == "http://owner:9000/v1/rooms/far?at=2", "full: \(full)")
            #expect(h.logs.lines.filter { $0.message == "redirect" }.map(\.metadata) == [["room": "far", "location": location ?? "-"]],
                    "full: \(full)")
        }
    }

    // MARK: HTTP

    @Test("cross-origin: pages of listed origins may read the API's answers and pass its preflight; other pages may not")
    func crossOrigin() async throws {
        let listed = "http://node-b:8080"
        let h = HubHarness { $0.allowedOrigins = [listed] }
        let ann = try #require(h.connect("/v1/rooms/r"))
        await h.send(.hello(.init(user: "ann")), on: ann)
        await h.settle()
        func header(_ response: HTTPResponse?, _ name: String) -> String? {
            response?.headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        let read = await h.http("GET", "/v1/rooms/r", query: ["at": "0"], headers: ["origin": listed, "host": "localhost:8080"])
        #expect(read?.status == 200)
        #expect(header(read, "Access-Control-Allow-Origin") == listed && header(read, "Vary") == "Origin")
        let preflight = await h.http("OPTIONS", "/v1/rooms/r", headers: ["origin": listed, "host": "localhost:8080"])
        #expect(preflight?.status == 200 && header(preflight, "Access-Control-Allow-Origin") == listed)
        #expect(header(preflight, "Access-Control-Allow-Methods") == "GET, HEAD, PUT, DELETE, OPTIONS")
        #expect(header(preflight, "Access-Control-Allow-Headers") == "Authorization, Content-Type")
        let own = await h.http("OPTIONS", "/v1/rooms/r/batches", headers: ["origin": "http://localhost:8080", "host": "localhost:8080"])
        #expect(header(own, "Access-Control-Allow-Methods") == "POST, OPTIONS", "the hub's own origin")

        let other = "https://evil.example"
        let refused = await h.http("OPTIONS", "/v1/rooms/r", headers: ["origin": other, "host": "localhost:8080"])
        #expect(refused?.status == 403 && refused?.json?["error"]?["code"] == .string("forbidden"))
        #expect(header(refused, "Access-Control-Allow-Origin") == nil)
        let unread = await h.http("GET", "/v1/rooms/r", headers: ["origin": other, "host": "localhost:8080"])
        #expect(unread?.status == 403 && header(unread, "Access-Control-Allow-Origin") == nil)
        let plain = await h.http("OPTIONS", "/v1/rooms/r/log")
        #expect(plain?.status == 200 && header(plain, "Allow") == "GET, HEAD, OPTIONS" && header(plain, "Access-Control-Allow-Origin") == nil,
                "no Origin: an ordinary OPTIONS")
        // A path no route takes: a listed page's preflight passes, so its request gets a 404 it can read.
        let typo = await h.http("OPTIONS", "/v1/room/r", headers: ["origin": listed, "host": "localhost:8080"])
        #expect(typo?.status == 200 && header(typo, "Access-Control-Allow-Methods") == "GET, HEAD, POST, PUT, DELETE, OPTIONS")
        let missing = await h.http("GET", "/v1/room/r", headers: ["origin": listed, "host": "localhost:8080"])
        #expect(missing?.status == 404 && header(missing, "Access-Control-Allow-Origin") == listed)
        #expect(await h.http("OPTIONS", "/v1/nothing")?.status == 404, "not a browser's: no route")
        #expect(await h.http("OPTIONS", "/v1/nothing", headers: ["origin": other, "host": "localhost:8080"])?.status == 404)
        let file = FakeExchange(HTTPRequest(method: "OPTIONS", path: "/index.html", headers: ["origin": listed]))
        #expect(!h.hub.handle(file), "the page's files are the transport's")
        let wrongMethod = await h.http("PATCH", "/v1/rooms/r", headers: ["origin": listed, "host": "localhost:8080"])
        #expect(wrongMethod?.status == 405 && header(wrongMethod, "Allow") == "GET, HEAD, PUT, DELETE, OPTIONS")

        // Open mode makes a loopback caller an admin, but never a page of another origin, listed or
        // not: it may do what the room's WebSocket lets it do, not delete, create, list or export rooms
        // for whoever opened it on the hub's machine (a helper's review of the CORS commit).
        let fromPage = ["origin": listed, "host": "localhost:8080"]
        #expect(await h.http("DELETE", "/v1/rooms/r", headers: fromPage)?.status == 403)
        #expect(await h.http("PUT", "/v1/rooms/made", body: #"{"people":[]}"#, headers: fromPage)?.status == 403)
        #expect(await h.http("GET", "/v1/rooms", headers: fromPage)?.status == 403)
        #expect(await h.http("GET", "/v1/rooms/r/export", headers: fromPage)?.status == 403)
        #expect(await h.http("GET", "/v1/rooms/r", headers: fromPage)?.status == 200, "a room's read is the WebSocket's too")
        let refusal = await h.http("DELETE", "/v1/rooms/r", headers: fromPage)?.json?["error"]?["message"]
        #expect(refusal == .string("this needs an admin: in auth.mode open, a web page of another origin is never one"))
        let ownPage = ["origin": "http://localhost:8080", "host": "localhost:8080"]
        #expect(await h.http("GET", "/v1/rooms", headers: ownPage)?.status == 200, "the hub's own page, on loopback")
        #expect(await h.http("GET", "/v1/rooms")?.status == 200, "no Origin: not a browser")
        #expect(await h.http("DELETE", "/v1/rooms/r", headers: ownPage)?.status == 204)
    }

    @Test("open mode with allowedOrigins *: any page's origin is let in, not any name for the hub (DNS rebinding stays refused)")
    func anyOriginIsNotAnyHost() async throws {
        let h = HubHarness { $0.allowedOrigins = ["*"] }
        let ann = try #require(h.connect("/v1/rooms/r"))
        await h.send(.hello(.init(user: "ann")), on: ann)
        await h.settle()
        // A page of evil.example whose name now points at 127.0.0.1: same-origin to the browser.
        let rebound = ["origin": "http://evil.example:8080", "host": "evil.example:8080"]
        #expect(await h.http("DELETE", "/v1/rooms/r", headers: rebound)?.status == 403)
        #expect(await h.http("GET", "/v1/rooms", headers: rebound)?.status == 403)
        #expect(await h.http("GET", "/v1/rooms/r", headers: rebound)?.status == 403)
        #expect(h.hub.rooms["r"] != nil, "not deleted")
        let page = ["origin": "http://evil.example:8080", "host": "localhost:8080"]
        #expect(await h.http("GET", "/v1/rooms/r", headers: page)?.status == 200, "any origin's page may read, addressing the hub by a loopback name")
        #expect(await h.http("DELETE", "/v1/rooms/r", headers: page)?.status == 403, "but is no admin")
        #expect(h.connect("/v1/rooms/r", peer: "127.0.0.1", origin: "http://evil.example:8080", host: "evil.example:8080") == nil,
                "nor may a rebinding page open the room's WebSocket")
    }

    @Test("cross-origin: a room another node holds is 307 there with the listed page's origin granted, so its browser follows it")
    func crossOriginRedirect() async throws {
        let h = HubHarness(configure: { $0.allowedOrigins = ["http://owner:9000"] }, store: LeasedElsewhere())
        let response = await h.http("GET", "/v1/rooms/far", query: ["at": "2"], headers: ["origin": "http://owner:9000"])
        #expect(response?.status == 307)
        #expect(response?.headers.contains(.init("Access-Control-Allow-Origin", "http://owner:9000")) == true)
    }

    @Test("HTTP routes: /healthz, /metrics when off, unknown /v1/ paths, and files left to the transport")
    func routes() async {
        let h = HubHarness { $0.metricsEnabled = false }
        #expect(await h.http("GET", "/healthz") == HTTPResponse(status: 200, text: "ok\n"))
        #expect(await h.http("GET", "/metrics")?.status == 404)
        #expect(await h.http("GET", "/v1/nothing")?.status == 404)
        #expect(await h.http("GET", "/v1/nothing")?.json?["error"]?["code"] == .string("not-found"))
        let exchange = FakeExchange(HTTPRequest(path: "/index.html"))
        #expect(!h.hub.handle(exchange))
        h.hub.storeHealth.problem = StoreError(.unavailable, "gone")
        #expect(await h.http("GET", "/healthz") == HTTPResponse(status: 503, text: "store unavailable: gone\n"))
    }

    @Test("a request that comes while the hub drains is 503 unavailable with Retry-After: 1, on every route of the API")
    func drainingAnswersEveryRoute() async throws {
        let h = HubHarness()
        let ann = try #require(h.connect("/v1/rooms/r"))
        await h.send(.hello(.init(user: "ann")), on: ann)
        await h.settle()
        h.hub.beginDrain()
        await h.settle()
        let batch = #"{"key":"k1","ops":[{"op":"set","tag":1,"field":"name","value":"Joan"}],"base":0}"#
        let calls: [(String, String, String)] = [
            ("GET", "/v1/rooms/r", ""), ("POST", "/v1/rooms/r/batches", batch), ("POST", "/v1/rooms/r/undo", #"{"key":"k2"}"#),
            ("GET", "/v1/rooms/r/log", ""), ("GET", "/v1/rooms/r/revisions", ""), ("GET", "/v1/rooms", ""),
            ("PUT", "/v1/rooms/new", #"{"people":[]}"#), ("DELETE", "/v1/rooms/r", ""), ("GET", "/v1/webhooks", ""),
        ]
        for (method, path, body) in calls {
            let response = await h.http(method, path, query: ["user": "ann"], body: body)
            #expect(response?.status == 503, "\(method) \(path)")
            #expect(response?.json?["error"]?["code"] == .string("unavailable"), "\(method) \(path)")
            #expect(response?.headers.first { $0.name == "Retry-After" }?.value == "1", "\(method) \(path)")
        }
        #expect(await h.http("GET", "/v1/rooms/r", query: ["user": "ann"])?.status == 503)
        #expect(h.hub.rooms["new"] == nil, "nothing made while draining")
    }

    /// An export of the tutorial's people with `count` revisions, each renaming the first person.
    static func export(revisions count: Int) -> (body: String, final: [Person]) {
        let seed = Array(PeopleModel.tutorialSeed.people.elements)
        var final = seed
        final[0].name = "N\(count)"
        let revisions = (1...count).map { rev in
            """
            {"rev":\(rev),"time":\(rev),"author":"ann","kind":"edit",\
            "ops":[{"op":"set","tag":\(seed[0].tag),"field":"name","value":"N\(rev)"}]}
            """
        }
        let body = """
            {"people":\(JSON.array(final.map(\.json)).text),"initial":\(JSON.array(seed.map(\.json)).text),\
            "revisions":[\(revisions.joined(separator: ","))]}
            """
        return (body, final)
    }

    @Test("an import: the room built off the service thread takes the new room's place, with a checkpoint every snapshotEvery")
    func importBuiltRoom() async throws {
        let h = HubHarness { $0.snapshotEvery = 2 }
        let (body, final) = Self.export(revisions: 5)
        let created = await h.http("PUT", "/v1/rooms/imp", body: body)
        #expect(created?.status == 201, "\(String(decoding: created?.body ?? [], as: UTF8.self))")
        #expect(created?.json?["rev"] == .int(5))
        let room = try #require(h.hub.host("imp")?.room)
        #expect(room.revision == 5 && Array(room.model.people.elements) == final)
        #expect(try h.store.inner.revisions(room: "imp", after: 0, through: 5).map(\.number) == [1, 2, 3, 4, 5])
        #expect(try h.store.inner.checkpoint(room: "imp", atOrBelow: 3)?.revision == 2)
        #expect(try h.store.inner.checkpoint(room: "imp", atOrBelow: 4)?.people.people.first?.name == "N4")
        let joined = try await h.joined("bob", room: "imp")
        #expect(joined.welcome?.rev == 5)
    }

    @Test("an import's room and history are one commit: when it fails, no room is left at revision 0, and the PUT can be made again")
    func importIsOneCommit() async throws {
        let h = HubHarness()
        let (body, final) = Self.export(revisions: 5)
        h.store.hold()
        let put = h.start("PUT", "/v1/rooms/whole", body: body)
        let member = try #require(h.connect("/v1/rooms/whole"))
        h.hello(member, as: "bob")
        await h.settle()
        #expect(h.store.created == ["whole"], "the first snapshot and the history go to the store together")
        #expect(put.response == nil && member.welcome == nil, "nothing is answered before the commit")
        h.store.release(error: StoreError(.io, "the disk is full"))
        await h.settle()
        #expect(put.response?.status == 503)
        #expect(member.welcome == nil)
        #expect(try h.store.inner.load(room: "whole") == nil, "no room at revision 0 without its history")
        #expect(await h.http("GET", "/v1/rooms/whole")?.status == 404)
        let again = await h.http("PUT", "/v1/rooms/whole", body: body)
        #expect(again?.status == 201, "\(String(decoding: again?.body ?? [], as: UTF8.self))")
        let stored = try #require(try h.store.inner.load(room: "whole"))
        let room = try Room(restoring: stored, policy: h.hub.configuration.roomPolicy)
        #expect(room.revision == 5 && Array(room.model.people.elements) == final)
    }

    @Test("a room loaded with snapshotEvery revisions or more after its stored snapshot gets a snapshot at once; fewer are left to the usual rule")
    func loadSavesALaggingSnapshot() async throws {
        // A first hub that never snapshots writes 12 revisions after the room's first snapshot (as an
        // `import` command stopped before its last snapshot, or a hub killed, leaves a room).
        let store = ScriptedStore()
        let first = HubHarness(configure: { $0.snapshotEvery = 1_000 }, store: store)
        let ann = try await first.joined("ann")
        for k in 1...12 { await first.send(.submit(seq: k, base: k - 1, [.set(1, .name("Bob \(k)"))]), on: ann) }
        let journal = try #require(try store.inner.load(room: "r")).tail.compactMap(\.record.revision).count
        #expect(journal == 12)

        // A hub whose rule is every 20: 12 behind is left alone, and replayed at the next load.
        let lenient = HubHarness(configure: { $0.snapshotEvery = 20 }, store: store, sessions: "b")
        _ = try await lenient.joined("bob")
        #expect(try #require(try store.inner.load(room: "r")).tail.compactMap(\.record.revision).count == 12)

        // Every 10: the load saves the room's snapshot at its head, so the next load replays nothing.
        let strict = HubHarness(configure: { $0.snapshotEvery = 10 }, store: store, sessions: "c")
        let carl = try await strict.joined("carl")
        #expect(carl.welcome?.rev == 12)
        let stored = try #require(try store.inner.load(room: "r"))
        #expect(stored.tail.compactMap(\.record.revision).isEmpty, "\(stored.tail.count) entries still to replay")
        let room = try Room(restoring: stored, policy: strict.hub.configuration.roomPolicy)
        #expect(room.revision == 12 && room.model == strict.hub.host("r")!.room.model)
        // And the usual rule counts from that snapshot: 10 more revisions make the next one.
        for k in 1...10 { await strict.send(.submit(seq: k, base: 11 + k, [.set(2, .name("Sam \(k)"))]), on: carl) }
        #expect(try #require(try store.inner.load(room: "r")).tail.compactMap(\.record.revision).isEmpty)
    }

    /// A hub whose store holds every commit until released, and what it tells the webhooks.
    static func heldStoreWithWebhookCalls() -> (HubHarness, WebhookCalls) {
        let h = HubHarness()
        let webhooks = WebhookCalls()
        h.hub.webhooks = webhooks
        h.store.hold()
        return (h, webhooks)
    }

    /// What the hub tells the webhooks, in order.
    final class WebhookCalls: HubWebhooks, @unchecked Sendable {
        var calls: [String] = []
        func revisionsDurable(room: String, after: Int, through: Int, revisions: () -> [Revision]) {
            calls.append("revisions \(room) \(after + 1)-\(through)")
        }
        func notices(roomCreated room: String, time: Int64) -> [WebhookNotice] { [] }
        func notices(roomDeleted room: String, time: Int64) -> [WebhookNotice] { [] }
        func roomCreated(room: String, time: Int64) { calls.append("created \(room)") }
        func roomDeleted(room: String, time: Int64) { calls.append("deleted \(room)") }
        func roomLoaded(room: String) { calls.append("loaded \(room)") }
        func status() -> JSON { .null }
        func reenable(_ endpoint: WebhookEndpointReference) -> Bool { false }
    }

    @Test("the webhooks hear of an imported room once its commit is durable, before its revisions; of a failed one, never")
    func importTellsTheWebhooksWhenDurable() async throws {
        let h = HubHarness()
        let webhooks = WebhookCalls()
        h.hub.webhooks = webhooks
        let (body, _) = Self.export(revisions: 3)
        h.store.hold()
        let failed = h.start("PUT", "/v1/rooms/told", body: body)
        await h.settle()
        #expect(webhooks.calls.isEmpty, "nothing is told before the commit")
        h.store.release(error: StoreError(.io, "the disk is full"))
        await h.settle()
        #expect(failed.response?.status == 503)
        #expect(webhooks.calls.isEmpty, "no room.created for a room that was never made")
        h.store.hold()
        let made = h.start("PUT", "/v1/rooms/told", body: body)
        await h.settle()
        h.store.release()
        await h.settle()
        #expect(made.response?.status == 201)
        #expect(webhooks.calls == ["created told", "revisions told 1-3"])
    }

    @Test("an import deleted before its commit was durable is told to the webhooks as created, then deleted")
    func importDeletedBeforeDurable() async throws {
        // A review: the creation's completion told nothing of a room deleted meanwhile, while its
        // commit had kept room.created and set the cursors at 0: the endpoint got that life's
        // revisions (owed by the deletion) and room.deleted, and room.created only at a later start.
        let (h, webhooks) = Self.heldStoreWithWebhookCalls()
        let made = h.start("PUT", "/v1/rooms/brief", body: Self.export(revisions: 3).body)
        await h.settle()
        h.background.hold()
        let deletion = h.start("DELETE", "/v1/rooms/brief")
        await h.settle()
        h.store.release()
        await h.settle()
        while h.background.next() { await h.settle() }
        #expect(made.response != nil && deletion.response?.status == 204)
        #expect(webhooks.calls == ["created brief", "deleted brief"])
    }

    @Test("a room a hello makes from the seed is told to the webhooks once its first snapshot is durable, before its revisions; its welcome waits for it too")
    func seedRoomTellsTheWebhooksWhenDurable() async throws {
        // Told at once, the deliverer removed the kept `room.created` before the commit that kept it
        // (a busy writer), and the notice stayed, to be delivered again by the next node (a cluster pass).
        let (h, webhooks) = Self.heldStoreWithWebhookCalls()
        let ann = try #require(h.connect("/v1/rooms/fresh"))
        h.hello(ann, as: "ann")
        await h.settle()
        #expect(webhooks.calls.isEmpty, "nothing is told before the commit")
        #expect(ann.welcome == nil, "the welcome waits for the room's first commit")
        #expect(h.store.created == ["fresh"])
        h.store.release()
        await h.settle()
        #expect(ann.welcome?.rev == 0)
        await h.send(.submit(seq: 1, base: 0, [Self.set(1, glasses: false)]), on: ann)
        #expect(ann.acks().map(\.rev) == [1])
        #expect(webhooks.calls == ["created fresh", "revisions fresh 1-1"])

        // A first commit that fails makes no room: no room.created, and the hello is refused.
        h.store.hold()
        let bob = try #require(h.connect("/v1/rooms/lost"))
        h.hello(bob, as: "bob")
        await h.settle()
        h.store.release(error: StoreError(.io, "the disk is full"))
        await h.settle()
        #expect(webhooks.calls == ["created fresh", "revisions fresh 1-1"])
        #expect(bob.welcome == nil && bob.closeCode == 1011, "\(bob.sent)")
        let stored = try h.store.inner.load(room: "lost")
        #expect(h.hub.host("lost") == nil && stored == nil, "no room is left of a failed first commit")
    }

    @Test("an import racing a hello: the hello waits and joins the imported room whole, at its head")
    func importRacingAHello() async throws {
        let h = HubHarness { $0.snapshotEvery = 2 }
        let (body, final) = Self.export(revisions: 5)
        let put = h.start("PUT", "/v1/rooms/race", body: body)
        let member = try #require(h.connect("/v1/rooms/race"))
        h.hello(member, as: "bob")
        await h.settle()
        #expect(put.response?.status == 201)
        #expect(member.welcome?.rev == 5)
        #expect(member.welcome?.people?.map(\.name) == final.map(\.name))
        #expect(member.ops().isEmpty, "the import is in the welcome, not sent after it")
        let room = try #require(h.hub.host("race")?.room)
        #expect(room.revision == 5 && Array(room.model.people.elements) == final)
    }

    /// A hub keeping 2 revisions in memory, where ann made room "again" with three revisions a second
    /// apart, left, and an admin deleted it; the ack of her third revision (its time is what a client
    /// resuming there gives as `sinceTime`).
    static func againDeletedAfterThreeRevisions() async throws -> (HubHarness, ServerMessage.Ack) {
        let h = HubHarness { $0.roomPolicy.keptRevisions = 2 }
        let ann = try await h.joined("ann", room: "again")
        for seq in 1...3 {
            h.clock.advance(by: 1_000)
            await h.send(.submit(.init(seq: seq, base: seq - 1, ops: [.set(1, .name("Bob \(seq)"))])), on: ann)
        }
        let third = try #require(ann.acks().last)
        #expect(third.rev == 3)
        await h.disconnect(ann)
        #expect(await h.http("DELETE", "/v1/rooms/again")?.status == 204)
        return (h, third)
    }

    @Test("a hello resuming into a room imported again waits for the import's commit, then is told its room was deleted: the import is another history")
    func resumeIntoAnImportWaitsForItsCommit() async throws {
        // A tester's pass: a client of a room deleted and imported again, reconnecting with `since` and
        // `sinceTime` while the import was written, got the whole room without `reset` (the store read
        // of its `since` found nothing yet), so it kept its queued undos of the old room's steps.
        let (h, third) = try await Self.againDeletedAfterThreeRevisions()
        let (body, _) = Self.export(revisions: 20)  // its revision 3 has another time
        h.store.hold()
        let put = h.start("PUT", "/v1/rooms/again", body: body)
        await h.settle()
        let back = try #require(h.connect("/v1/rooms/again"))
        await h.send(.hello(.init(user: "ann", since: 3, sinceTime: third.time)), on: back)
        #expect(back.welcome == nil && put.response == nil, "nothing before the import's commit")
        h.store.release()
        await h.settle { back.welcome != nil || back.isClosing }
        #expect(put.response?.status == 201)
        // Its revision 3 has another time: not the client's room, which an admin deleted (before
        // session 40 it was told the room went back, and its queued edits went into the import).
        #expect(back.welcome == nil && back.closeReason == CloseReason.roomDeleted)
    }

    @Test("after a deletion, the deleted room's own export imported again catches its clients up; another room's import turns them away")
    func ownExportAfterADeletion() async throws {
        // An operator's pass (session 40): clients of the deleted room were caught up into another
        // room's import made before the deletion (they were told it went back).
        let h = HubHarness { $0.roomPolicy.keptRevisions = 2 }
        let ann = try await h.joined("ann", room: "again")
        for seq in 1...3 {
            h.clock.advance(by: 1_000)
            await h.send(.submit(.init(seq: seq, base: seq - 1, ops: [.set(1, .name("Bob \(seq)"))])), on: ann)
        }
        let second = try #require(ann.acks().dropLast().last)
        let own = try #require(await h.http("GET", "/v1/rooms/again/export", query: ["history": "true"]))
        #expect(own.status == 200)
        await h.disconnect(ann)
        h.clock.advance(by: 1_000)
        #expect(await h.http("DELETE", "/v1/rooms/again")?.status == 204)
        h.clock.advance(by: 1_000)
        #expect(await h.http("PUT", "/v1/rooms/again", body: String(decoding: own.body, as: UTF8.self))?.status == 201)
        let back = try #require(h.connect("/v1/rooms/again"))
        await h.send(.hello(.init(user: "ann", since: 2, sinceTime: second.time)), on: back)
        await h.settle { back.welcome != nil || back.isClosing }
        #expect(back.welcome?.reset == false && back.ops().map(\.rev) == [3], "caught up: its room is back")

        // Another room's export (made before the deletion) under the name: not the client's room.
        #expect(await h.http("DELETE", "/v1/rooms/again")?.status == 204)
        #expect(await h.http("PUT", "/v1/rooms/again", body: Self.export(revisions: 20).body)?.status == 201)
        let other = try #require(h.connect("/v1/rooms/again"))
        await h.send(.hello(.init(user: "ann", since: 2, sinceTime: second.time)), on: other)
        await h.settle { other.welcome != nil || other.isClosing }
        #expect(other.welcome == nil && other.closeReason == CloseReason.roomDeleted)
    }

    @Test("a hello waiting for an import's commit when an admin deletes the room waits for the deletion, then is told the room was deleted")
    func waitingJoinAtADeletion() async throws {
        let (h, third) = try await Self.againDeletedAfterThreeRevisions()
        h.store.hold()
        let put = h.start("PUT", "/v1/rooms/again", body: Self.export(revisions: 20).body)
        await h.settle()
        let back = try #require(h.connect("/v1/rooms/again"))
        await h.send(.hello(.init(user: "ann", since: 3, sinceTime: third.time)), on: back)
        h.background.hold()  // the deletion's store work waits until the import's commit is durable
        let deletion = h.start("DELETE", "/v1/rooms/again")
        await h.settle()
        h.store.release()
        await h.settle()
        while h.background.next() { await h.settle() }
        await h.settle { back.welcome != nil || back.isClosing }
        #expect(put.response != nil && deletion.response?.status == 204)
        // Before, the hello waited for a durable revision of a room that was gone: for good. Then it
        // made the room anew from the seed (`reset`); its `since` names a revision of the deleted room.
        #expect(back.welcome == nil)
        #expect(back.closeCode == 1000 && back.closeReason == CloseReason.roomDeleted)
        #expect(h.hub.rooms["again"] == nil)
        #expect(try h.store.load(room: "again") == nil, "not made again")
    }

    @Test("a client away when an admin deleted its room is told so when it comes back, instead of making the room again from the seed")
    func helloOfADeletedRoom() async throws {
        // A black-box pass (session 39): a screen offline at the deletion reconnected with `since`, its
        // hello made the room again from the seed (undoing the delete), and it was told the room went back.
        let (h, third) = try await Self.againDeletedAfterThreeRevisions()
        let back = try #require(h.connect("/v1/rooms/again"))
        await h.send(.hello(.init(user: "ann", since: 3, sinceTime: third.time)), on: back)
        await h.settle { back.isClosing }
        #expect(back.welcome == nil && back.errors.isEmpty)
        #expect(back.closeCode == 1000 && back.closeReason == CloseReason.roomDeleted, "as the room's connections were")
        // A contract-only client names the revision without its time; one that saw revision 0 only,
        // with it: both were in the deleted room.
        for hello in [ClientMessage.Hello(user: "bob", since: 2), .init(user: "cy", since: 0, sinceTime: try #require(third.time) - 3_000)] {
            let other = try #require(h.connect("/v1/rooms/again"))
            await h.send(.hello(hello), on: other)
            await h.settle { other.isClosing }
            #expect(other.closeReason == CloseReason.roomDeleted, "\(hello)")
        }
        #expect(h.hub.rooms["again"] == nil, "nothing loaded, nothing kept")
        #expect(try h.store.load(room: "again") == nil, "not made again")
        #expect(await h.http("GET", "/v1/rooms/again")?.status == 404)

        // A hello that names no revision (`since: 0` without a time: nothing seen) makes the room anew,
        // as for a name never used.
        h.clock.advance(by: 1_000)
        let fresh = try #require(h.connect("/v1/rooms/again"))
        await h.send(.hello(.init(user: "dan", since: 0)), on: fresh)
        await h.settle { fresh.welcome != nil }
        #expect(fresh.welcome?.rev == 0 && fresh.welcome?.reset == false && !fresh.isClosing)
        // In the room made again, a client of the deleted one is still told it was deleted (its time
        // is before the deletion): before, it was caught up with the new room and its queued edits went
        // there (a black-box pass). Without a time a `since` cannot be told from the new room's: the
        // room went back, as before.
        let late = try #require(h.connect("/v1/rooms/again"))
        await h.send(.hello(.init(user: "ann", since: 3, sinceTime: third.time)), on: late)
        await h.settle { late.isClosing }
        #expect(late.welcome == nil && late.closeReason == CloseReason.roomDeleted)
        let timeless = try #require(h.connect("/v1/rooms/again"))
        await h.send(.hello(.init(user: "bob", since: 2)), on: timeless)
        await h.settle { timeless.welcome != nil }
        #expect(timeless.welcome?.reset == true && !timeless.isClosing)
        // A client of the room made again comes back to it.
        let freshRev = try #require(fresh.welcome)
        let again = try #require(h.connect("/v1/rooms/again"))
        await h.send(.hello(.init(user: "dan", since: 0, sinceTime: freshRev.time)), on: again)
        await h.settle { again.welcome != nil }
        #expect(again.welcome?.reset == false && !again.isClosing)
        #expect(try h.store.deletion(of: "again") != nil, "remembered after the room was made again")
    }

    @Test("of two hellos waiting for a deleted room's load, the old client's is turned away and the new one makes the room")
    func deletedRoomLoadMixed() async throws {
        let (h, third) = try await Self.againDeletedAfterThreeRevisions()
        h.background.hold()
        let old = try #require(h.connect("/v1/rooms/again"))
        await h.send(.hello(.init(user: "ann", since: 3, sinceTime: third.time)), on: old)
        let new = try #require(h.connect("/v1/rooms/again"))
        h.hello(new, as: "bob")
        await h.settle()
        #expect(old.welcome == nil && new.welcome == nil, "both wait for the store's read")
        while h.background.next() { await h.settle() }
        await h.settle { new.welcome != nil && old.isClosing }
        #expect(old.closeReason == CloseReason.roomDeleted && old.welcome == nil)
        #expect(new.welcome?.rev == 0 && new.welcome?.people?.map(\.name) == PeopleModel.tutorialSeed.people.map(\.name))
    }

    @Test("a hello that comes while an import's body is checked waits for the import, not the seed",
          arguments: [false, true])
    func helloDuringTheImportCheck(newestFirst: Bool) async throws {
        // The background work (the store read of the room, the check of the body) runs oldest or newest
        // first, so either ends first. Before, a hello's store read that ended before the check made the
        // room from the seed, and the PUT was 409.
        let h = HubHarness()
        h.background.hold()
        let (body, final) = Self.export(revisions: 5)
        let put = h.start("PUT", "/v1/rooms/held", body: body)
        let member = try #require(h.connect("/v1/rooms/held"))
        h.hello(member, as: "bob")
        await h.settle()
        #expect(member.welcome == nil, "the room is not made before the import's check ends")
        while h.background.next(newestFirst: newestFirst) { await h.settle() }
        #expect(put.response?.status == 201, "\(String(decoding: put.response?.body ?? [], as: UTF8.self))")
        #expect(member.welcome?.rev == 5 && member.ops().isEmpty)
        #expect(Array(try #require(h.hub.host("held")).room.model.people.elements) == final)

        // A second PUT during the check is refused at once; a body the check refuses leaves a waiting
        // hello the room from the seed.
        let other = h.start("PUT", "/v1/rooms/held2", body: "{\"people\": 5}")
        #expect(h.start("PUT", "/v1/rooms/held2", body: body).response?.status == 409)
        let waiting = try #require(h.connect("/v1/rooms/held2"))
        h.hello(waiting, as: "cy")
        while h.background.next() { await h.settle() }
        #expect(other.response?.status == 400)
        #expect(waiting.welcome?.rev == 0)
        #expect(try #require(h.hub.host("held2")).room.model == PeopleModel.tutorialSeed)
        #expect(h.start("PUT", "/v1/rooms/held2", body: body).response?.json?["error"]?["message"] == .string("room held2 exists; DELETE it first"))
    }

    @Test("a PUT that comes while the room is deleted takes the name: a hello after the deletion waits for the import")
    func importDuringADelete() async throws {
        let h = HubHarness()
        await h.disconnect(try await h.joined("ann", room: "gone"))
        h.background.hold()
        let deleted = h.start("DELETE", "/v1/rooms/gone")
        let (body, final) = Self.export(revisions: 3)
        let put = h.start("PUT", "/v1/rooms/gone", body: body)
        await h.settle()
        #expect(h.background.next())  // the deletion, first
        await h.settle()
        #expect(deleted.response?.status == 204)
        // Before, the name was free again here: this hello's store read, ending before the import's
        // check, made the room from the seed, and the PUT was 409.
        let member = try #require(h.connect("/v1/rooms/gone"))
        h.hello(member, as: "bob")
        await h.settle()
        while h.background.next(newestFirst: true) { await h.settle() }
        #expect(put.response?.status == 201, "\(String(decoding: put.response?.body ?? [], as: UTF8.self))")
        #expect(member.welcome?.rev == 3 && member.ops().isEmpty)
        #expect(Array(try #require(h.hub.host("gone")).room.model.people.elements) == final)
    }

    @Test("a DELETE of a room that must first be loaded goes in the order things came: a PUT, a hello and a GET after it see what comes after",
          arguments: [false, true])
    func deleteOfAStoredRoomInOrder(newestFirst: Bool) async throws {
        let h = HubHarness()
        h.store.save(Room(name: "kept").snapshot(), room: "kept")  // in the store, not loaded
        h.background.hold()
        let deleted = h.start("DELETE", "/v1/rooms/kept")           // loads the room first
        let (body, final) = Self.export(revisions: 4)
        let put = h.start("PUT", "/v1/rooms/kept", body: body)
        let member = try #require(h.connect("/v1/rooms/kept"))
        h.hello(member, as: "bob")
        let read = h.start("GET", "/v1/rooms/kept")
        await h.settle()
        while h.background.next(newestFirst: newestFirst) { await h.settle() }
        // Before: the PUT was 409 (it went ahead of the DELETE, or found the room still there), the
        // hello joined the room being deleted and was closed with 1000, and the GET was 503.
        #expect(deleted.response?.status == 204)
        #expect(put.response?.status == 201, "\(String(decoding: put.response?.body ?? [], as: UTF8.self))")
        #expect(member.closeCode == nil && member.welcome?.rev == 4)
        #expect(read.response?.json?["rev"] == .int(4))
        #expect(Array(try #require(h.hub.host("kept")).room.model.people.elements) == final)
    }

    @Test("the router: literals, parameters, a final *, HEAD on a GET route, and 405 for another method")
    func router() {
        var router = HTTPRouter()
        router.add("GET", "/v1/rooms/:room") { call throws in
            HTTPResponse(status: 200, text: call.parameters["room"]!)
        }
        router.add("GET", "/v1/*") { _ throws in throw HTTPFailure.notFound("no") }
        func run(_ method: String, _ path: String) -> HTTPResponse?? {
            let exchange = FakeExchange(HTTPRequest(method: method, path: path))
            return router.route(exchange) ? .some(exchange.response) : .none
        }
        #expect(run("GET", "/v1/rooms/abc")??.body == Array("abc".utf8))
        #expect(run("GET", "/v1/rooms/abc/x")??.status == 404)
        #expect(run("GET", "/v1/rooms/")??.status == 404)
        #expect(run("POST", "/v1/rooms/abc")??.status == 405)
        #expect(run("POST", "/v1/rooms/abc")??.headers == [.init("Allow", "GET, HEAD, OPTIONS")], "a preflight's too, under /v1/")
        #expect(run("HEAD", "/v1/rooms/abc")??.body == Array("abc".utf8), "the transport leaves the body out")
        #expect(run("GET", "/v2") == .none)
    }
}

/// A store whose rooms are all leased by another node.
final class LeasedElsewhere: PeopleStore, RoomLeases, @unchecked Sendable {
    let inner = ScriptedStore()
    var kind: String { "leased" }
    var node: String { "here" }
    var advertisedURL = "ws://here:1"
    func append(_ entries: [JournalEntry], room: String,
                whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        inner.append(entries, room: room, whenDurable: whenDurable)
    }
    func save(_ snapshot: RoomSnapshot, room: String, notices: [WebhookNotice]) {
        inner.save(snapshot, room: room, notices: notices)
    }
    func create(_ snapshot: RoomSnapshot, notices: [WebhookNotice], entries: [JournalEntry],
                checkpoints: [Checkpoint], room: String,
                whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        inner.create(snapshot, notices: notices, entries: entries, checkpoints: checkpoints, room: room,
                     whenDurable: whenDurable)
    }
    func load(room: String) throws(StoreError) -> StoredRoom? { try inner.load(room: room) }
    func revisions(room: String, after: Int, through: Int) throws(StoreError) -> [Revision] { [] }
    func checkpoint(room: String, atOrBelow rev: Int) throws(StoreError) -> Checkpoint? { nil }
    func keepCheckpoint(_ checkpoint: Checkpoint, room: String) throws(StoreError) {}
    func listRooms(after: String?, prefix: String?, limit: Int) throws(StoreError) -> [StoredRoomSummary] { [] }
    func deleteRoom(_ room: String, notices: [WebhookNotice]) throws(StoreError) -> Bool { false }
    func deletion(of room: String) throws(StoreError) -> Int64? { nil }
    func webhookNotices(endpoint: String) throws(StoreError) -> [WebhookNotice] { [] }
    func owedRevisions(endpoint: String, room: String, after: OwedPosition?, limit: Int) throws(StoreError) -> [WebhookNotice] { [] }
    func revisionsOwed(endpoint: String) throws(StoreError) -> [String: Int] { [:] }
    func removeWebhookNotice(_ notice: WebhookNotice) throws(StoreError) {}
    func webhookCursorRecords(endpoint: String) throws(StoreError) -> [String: WebhookCursor] { [:] }
    func setWebhookCursor(endpoint: String, room: String, rev: Int, life: Int64?) throws(StoreError) -> Bool { false }
    func resetWebhookCursor(endpoint: String, room: String, to rev: Int?, life: Int64?) throws(StoreError) {}
    func webhookEndpoints() throws(StoreError) -> [StoredWebhookEndpoint] { [] }
    func forgetWebhookEndpoint(_ endpoint: String) throws(StoreError) -> StoredWebhookEndpoint? { nil }
    func check() throws(StoreError) {}
    func close() {}
    func acquire(room: String, for holder: LeaseHolder) throws(StoreError) -> LeaseOutcome {
        .ownedBy(node: "there", url: "ws://owner:9000")
    }
    func release(room: String, for holder: LeaseHolder) {}
    func onLeasesLost(_ handler: @escaping @Sendable () -> Void) {}
}
