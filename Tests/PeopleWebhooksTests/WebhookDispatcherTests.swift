import Foundation
import Logging
import MetricsTestKit
import PeopleCore
import PeopleStore
import PeopleStoreSQLite
import PeopleTestSupport
@testable import PeopleWebhooks
import Synchronization
import Testing

let testLogger = Logger(label: "peoplekeeper.webhook-tests")
let secret = Array("whsec-test-secret".utf8)

/// Milliseconds: tests retry in tens of milliseconds instead of seconds. An answer is waited for 30 s:
/// the tests that list exact deliveries count on none timing out (a loaded machine's answer can take
/// seconds); the one about a receiver that hangs sets its own timeout.
let quick = WebhookPolicy(timeout: 30_000, backoffStart: 10, backoffMax: 40, jitter: 0.2, giveUpAfter: 60_000, chunk: 3)

func endpoint(_ receiver: Receiver, rooms: [String] = ["*"], events: Set<WebhookEvent> = Set(WebhookEvent.allCases)) -> WebhookEndpoint {
    WebhookEndpoint(url: receiver.url, secret: secret, rooms: rooms.map(RoomPattern.init), events: events)
}

/// Tells the dispatcher of each revision, as the hub does once it is durable.
func announce(_ dispatcher: WebhookDispatcher, _ room: String, _ revisions: [Int]) {
    for rev in revisions { dispatcher.revisionDurable(room: room, rev: rev) }
}

/// The revision numbers delivered (2xx) for `room`, in arrival order.
func deliveredRevisions(_ requests: [Receiver.Request], room: String) -> [Int] {
    requests.filter { $0.delivered && $0.event == "revision" && $0.json["room"] == .string(room) }.compactMap(\.rev)
}

/// What `receiver` got of `room` (delivered, repeats by id dropped), as events and revision numbers:
/// `["room.created", "1", "2", "room.deleted"]`.
func receivedOnce(_ receiver: Receiver, room: String) -> [String] {
    var seen: Set<String> = []
    return receiver.delivered.filter { $0.json["room"] == .string(room) && seen.insert($0.id).inserted }
        .map { $0.event == "revision" ? "\($0.rev ?? -1)" : $0.event }
}

/// An SQLite store in a directory of its own; `remove()` closes it and deletes the directory.
struct ScratchSQLite {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pk-hooks-\(UUID().uuidString)").path
    let store: SQLiteStore

    init() throws { store = try SQLiteStore(path: directory + "/store.sqlite", logger: testLogger) }

    func remove() {
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

@Suite("Webhook dispatcher against a real HTTP receiver on loopback")
struct WebhookDispatcherTests {
    @Test("every revision is delivered once, in order, signed, with the feed's fields")
    func everyRevisionOnceInOrder() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let store = InMemoryStore()
        var feed = try await RoomFeed.start(store, name: "team-a")
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: quick)
        dispatcher.start()
        dispatcher.roomCreated(room: "team-a", time: 1_699_999_999_000)
        let revisions = try await feed.edit(12)
        announce(dispatcher, "team-a", revisions)
        #expect(await receiver.wait { deliveredRevisions($0, room: "team-a").count >= 12 })
        #expect(deliveredRevisions(receiver.requests, room: "team-a") == Array(1...12))

        let all = receiver.requests
        #expect(all.count == 13)
        #expect(all.first?.event == "room.created")
        #expect(Set(all.map(\.id)).count == all.count)
        for request in all {
            #expect(Receiver.verify(signature: request.signature, body: request.body, secret: secret))
            #expect(!Receiver.verify(signature: request.signature, body: request.body, secret: Array("other".utf8)))
            #expect(request.contentType == "application/json")
        }
        let stored = try store.revisions(room: "team-a", after: 0, through: 12)
        let third = try #require(all.first { $0.rev == 3 })
        #expect(third.json["room"] == .string("team-a"))
        #expect(third.json["author"] == .string("ann"))
        #expect(third.json["kind"] == .string(stored[2].kind.rawValue))
        #expect(third.json["label"] == .string("Edit 3"))
        #expect(third.json["time"] == .int(Int(stored[2].timestamp)))
        #expect(third.json["ops"] == .array(stored[2].diffs.map(\.json)))

        // The cursor is in the store, and the status says all is well.
        #expect(await eventually { (try? store.webhookCursors(endpoint: receiver.url)["team-a"]) == 12 })
        let status = try #require(dispatcher.status().first)
        #expect(status.state == .ok && status.backlog == 0 && status.delivered == 13 && status.lastSuccess != nil)
        await dispatcher.shutdown()
    }

    @Test("a receiver answering 500 and then recovering gets everything in order; a retry repeats the id")
    func retriesAfterServerErrors() async throws {
        let receiver = try Receiver { _, count in count < 3 ? .status(500) : .status(204) }
        defer { receiver.stop() }
        let metrics = TestMetrics()
        let store = InMemoryStore()
        var feed = try await RoomFeed.start(store, name: "r")
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision])], store: store, logger: testLogger,
                                           policy: quick, metricsFactory: metrics)
        dispatcher.start()
        dispatcher.roomCreated(room: "r", time: 1)
        announce(dispatcher, "r", try await feed.edit(6))
        #expect(await receiver.wait { deliveredRevisions($0, room: "r").count >= 6 })
        let requests = receiver.requests
        #expect(deliveredRevisions(requests, room: "r") == Array(1...6))
        // The three failures were all revision 1, with the id of its eventual delivery.
        #expect(requests.prefix(4).map(\.rev) == [1, 1, 1, 1])
        #expect(Set(requests.prefix(4).map(\.id)).count == 1)
        #expect(requests.count == 9)
        let dimensions = [("endpoint", WebhookEndpoint.displayName(of: receiver.url))]
        #expect(metrics.counterTotal(label: "peoplekeeper_webhook_deliveries_total", dimensions: dimensions + [("outcome", "http_error")]) == 3)
        // (The receiver records a request before the dispatcher has its answer.)
        #expect(await eventually {
            metrics.counterTotal(label: "peoplekeeper_webhook_deliveries_total", dimensions: dimensions + [("outcome", "ok")]) == 6
        })
        #expect(try metrics.expectTimer("peoplekeeper_webhook_lag_seconds", dimensions).values.count == 6)
        await dispatcher.shutdown()
    }

    @Test("the lag counts from the commit: revisions with older times (an import's) in a room made now are not years late")
    func lagCountsFromTheRoomsCreation() async throws {
        let receiver = try Receiver { _, _ in .status(204) }
        defer { receiver.stop() }
        let metrics = TestMetrics()
        let store = InMemoryStore()
        // Revision times of 2023, as an import of an old export keeps them; the room is made now.
        var feed = try await RoomFeed.start(store, name: "imp", clock: 1_700_000_000_000)
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision])], store: store, logger: testLogger,
                                           policy: quick, metricsFactory: metrics)
        dispatcher.start()
        dispatcher.roomCreated(room: "imp", time: Int64(Date().timeIntervalSince1970 * 1000))
        announce(dispatcher, "imp", try await feed.edit(4))
        let dimensions = [("endpoint", WebhookEndpoint.displayName(of: receiver.url))]
        #expect(await eventually { ((try? metrics.expectTimer("peoplekeeper_webhook_lag_seconds", dimensions))?.values.count ?? 0) == 4 })
        let lags = try metrics.expectTimer("peoplekeeper_webhook_lag_seconds", dimensions).values
        #expect(lags.allSatisfy { $0 < 60 * 1_000_000_000 }, "lags in ns: \(lags)")
        await dispatcher.shutdown()
    }

    @Test("the last error stays in the status while a room still retries, whatever other rooms deliver")
    func lastErrorStaysWhileRetrying() async throws {
        let receiver = try Receiver { request, _ in request.json["room"] == .string("bad") ? .status(500) : .status(204) }
        defer { receiver.stop() }
        let store = InMemoryStore()
        var bad = try await RoomFeed.start(store, name: "bad")
        var good = try await RoomFeed.start(store, name: "good")
        var policy = quick
        policy.backoffStart = 5_000   // one failure, then a long wait: the room stays retrying
        policy.backoffMax = 5_000
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision])], store: store, logger: testLogger,
                                           policy: policy)
        dispatcher.start()
        dispatcher.roomCreated(room: "bad", time: 1)
        dispatcher.roomCreated(room: "good", time: 1)
        announce(dispatcher, "bad", try await bad.edit(1))
        #expect(await eventually { dispatcher.status().first?.state == .retrying })
        announce(dispatcher, "good", try await good.edit(2))
        #expect(await receiver.wait { deliveredRevisions($0, room: "good").count >= 2 })
        #expect(await eventually { dispatcher.status().first?.delivered == 2 })
        let status = try #require(dispatcher.status().first)
        #expect(status.state == .retrying && status.lastError?.contains("bad:1:") == true, "\(status)")
        await dispatcher.shutdown()
    }

    @Test("a refused connection's last error is in the system's words, not NIO's layers")
    func refusedConnectionInWords() async throws {
        // A port bound and not listening refuses connections, and no other test can take it meanwhile
        // (a stopped receiver's port was taken by another test's listener once: "answered 404").
        let bound = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(bound) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let port = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> UInt16 in
                guard bind(bound, raw, length) == 0, getsockname(bound, raw, &length) == 0 else { return 0 }
                return UInt16(bigEndian: pointer.pointee.sin_port)
            }
        }
        try #require(port != 0)
        let refusing = WebhookEndpoint(url: "http://127.0.0.1:\(port)/hook", secret: secret, rooms: [RoomPattern("*")], events: [.revision])
        let store = InMemoryStore()
        var feed = try await RoomFeed.start(store, name: "r")
        var policy = quick
        policy.backoffStart = 5_000
        policy.backoffMax = 5_000
        let dispatcher = WebhookDispatcher(endpoints: [refusing], store: store, logger: testLogger,
                                           policy: policy)
        dispatcher.start()
        dispatcher.roomCreated(room: "r", time: 1)
        announce(dispatcher, "r", try await feed.edit(1))
        #expect(await eventually { dispatcher.status().first?.lastError != nil })
        let lastError = try #require(dispatcher.status().first?.lastError)
        #expect(lastError.contains("cannot connect: connection refused (errno \(ECONNREFUSED))") && !lastError.contains("error set"),
                "\(lastError)")
        await dispatcher.shutdown()
    }

    @Test("a receiver that hangs past the timeout is retried")
    func hangingReceiverIsRetried() async throws {
        let receiver = try Receiver { _, count in count == 0 ? .hang : .status(200) }
        defer { receiver.stop() }
        let metrics = TestMetrics()
        let store = InMemoryStore()
        var feed = try await RoomFeed.start(store, name: "r")
        var policy = quick
        // The first request hangs for ever; the retry's answer must come within it (one timeout counted).
        policy.timeout = 2_000
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: policy,
                                           metricsFactory: metrics)
        dispatcher.start()
        dispatcher.roomCreated(room: "r", time: 1)
        announce(dispatcher, "r", try await feed.edit(2))
        #expect(await receiver.wait { deliveredRevisions($0, room: "r").count >= 2 })
        let requests = receiver.requests
        #expect(requests.first?.answered == nil)
        #expect(requests.first?.event == "room.created")
        #expect(requests.filter(\.delivered).map(\.event) == ["room.created", "revision", "revision"])
        #expect(requests[0].id == requests[1].id)
        #expect(metrics.counterTotal(label: "peoplekeeper_webhook_deliveries_total",
                                     dimensions: [("endpoint", WebhookEndpoint.displayName(of: receiver.url)), ("outcome", "timeout")]) == 1)
        await dispatcher.shutdown()
    }

    @Test("a slow endpoint does not delay another")
    func slowEndpointDoesNotDelayAnother() async throws {
        let slow = try Receiver(path: "/slow") { _, _ in .status(200, afterMilliseconds: 2_000) }
        let fast = try Receiver(path: "/fast")
        defer { slow.stop(); fast.stop() }
        let store = InMemoryStore()
        var feed = try await RoomFeed.start(store, name: "r")
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(slow), endpoint(fast)], store: store, logger: testLogger,
                                           policy: WebhookPolicy(timeout: 10_000, backoffStart: 10, backoffMax: 40))
        dispatcher.start()
        dispatcher.roomCreated(room: "r", time: 1)
        announce(dispatcher, "r", try await feed.edit(5))
        #expect(await fast.wait { deliveredRevisions($0, room: "r").count >= 5 })
        // The fast one has had everything while the slow one is still on its first answers.
        #expect(slow.requests.count <= 2)
        let slowStatus = try #require(dispatcher.status().first { $0.url == slow.url })
        #expect(slowStatus.backlog >= 4)
        await dispatcher.shutdown()
    }

    @Test("a new dispatcher on the same SQLite file resumes from the cursor after a crash: nothing lost, nothing repeated")
    func resumesFromTheDurableCursor() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pk-hooks-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/store.sqlite"
        let url = receiver.url

        // The first life: revisions 1...5 delivered, then the process "dies" (no shutdown, no store
        // close) while 6...10 become durable without it hearing of them.
        let first = try SQLiteStore(path: path, logger: testLogger)
        var feed = try await RoomFeed.start(first, name: "r")
        let crashed = WebhookDispatcher(endpoints: [endpoint(receiver)], store: first, logger: testLogger, policy: quick)
        crashed.start()
        crashed.roomCreated(room: "r", time: 1)
        announce(crashed, "r", try await feed.edit(5))
        #expect(await receiver.wait { deliveredRevisions($0, room: "r").count >= 5 })
        #expect(await eventually { (try? first.webhookCursors(endpoint: url)["r"]) == 5 })
        _ = try await feed.edit(5)

        // The second life: a new store instance on the same file, a new dispatcher.
        let second = try SQLiteStore(path: path, logger: testLogger)
        defer { second.close() }
        let resumed = WebhookDispatcher(endpoints: [endpoint(receiver)], store: second, logger: testLogger, policy: quick)
        resumed.start()
        #expect(await receiver.wait { deliveredRevisions($0, room: "r").count >= 10 })
        #expect(deliveredRevisions(receiver.requests, room: "r") == Array(1...10))
        #expect(await eventually { (try? second.webhookCursors(endpoint: url)["r"]) == 10 })
        await resumed.shutdown()
        // What the dead process held is released only now (it did nothing since the "crash").
        await crashed.shutdown()
        first.close()
    }

    @Test("room events the store kept are delivered at start, then removed: a room created just before a crash from its first revision, a deleted room's events")
    func keptNoticesAfterACrash() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pk-hooks-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(path: directory + "/store.sqlite", logger: testLogger)
        defer { store.close() }
        let url = receiver.url
        // The first life died right after these commits, before any delivery: the hub kept each notice
        // in the commit of the creation or deletion, and nothing else of them.
        var born = try await RoomFeed.start(store, name: "born", notices: [
            WebhookNotice(endpoint: url, room: "born", event: "room.created", time: 1_000),
        ])
        _ = try await born.edit(3)
        _ = try await RoomFeed.start(store, name: "doomed", notices: [
            WebhookNotice(endpoint: url, room: "doomed", event: "room.created", time: 1_500),
        ])
        let deletion = WebhookNotice(endpoint: url, room: "doomed", event: "room.deleted", time: 2_000)
        #expect(try await blocking { try store.deleteRoom("doomed", notices: [deletion]) })

        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: quick)
        dispatcher.start()
        #expect(await receiver.wait { $0.filter(\.delivered).count >= 6 })
        let delivered = receiver.delivered
        let of = { (room: String) in delivered.filter { $0.json["room"] == .string(room) } }
        #expect(of("born").map(\.event) == ["room.created", "revision", "revision", "revision"])
        #expect(of("born").map(\.rev) == [nil, 1, 2, 3])
        #expect(of("doomed").map(\.event) == ["room.created", "room.deleted"])
        #expect(await eventually { (try? store.webhookNotices(endpoint: url))?.isEmpty == true })
        await dispatcher.shutdown()
    }

    @Test("room.created and room.deleted are delivered in order with the revisions; a room created again gets new ids")
    func roomEvents() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let store = InMemoryStore()
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: quick)
        dispatcher.start()
        var feed = try await RoomFeed.start(store, name: "r")
        dispatcher.roomCreated(room: "r", time: 1_000)
        announce(dispatcher, "r", try await feed.edit(2))
        #expect(await receiver.wait { deliveredRevisions($0, room: "r").count >= 2 })
        #expect(try store.deleteRoom("r"))
        dispatcher.roomDeleted(room: "r", time: 2_000)
        var again = try await RoomFeed.start(store, name: "r", clock: 1_800_000_000_000)
        dispatcher.roomCreated(room: "r", time: 3_000)
        announce(dispatcher, "r", try await again.edit(1))
        #expect(await receiver.wait { $0.filter(\.delivered).count >= 6 })
        let requests = receiver.requests
        #expect(requests.map(\.event) == ["room.created", "revision", "revision", "room.deleted", "room.created", "revision"])
        #expect(requests.map(\.rev) == [nil, 1, 2, nil, nil, 1])
        #expect(Set(requests.map(\.id)).count == 6)
        #expect(requests[3].json["time"] == .int(2_000))
        #expect(requests[3].json["room"] == .string("r"))
        await dispatcher.shutdown()
    }

    @Test("an export imported again after a deletion is delivered again, under new ids: the same revisions, not retries")
    func importedAgainGetsNewIDs() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let store = InMemoryStore()
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: quick)
        dispatcher.start()
        var first = try await RoomFeed.start(store, name: "imp")
        dispatcher.roomCreated(room: "imp", time: 10_000)
        announce(dispatcher, "imp", try await first.imports(2, at: 10_000))
        #expect(await receiver.wait { deliveredRevisions($0, room: "imp").count >= 2 })
        #expect(try store.deleteRoom("imp"))
        dispatcher.roomDeleted(room: "imp", time: 15_000)
        var again = try await RoomFeed.start(store, name: "imp")
        dispatcher.roomCreated(room: "imp", time: 20_000)
        announce(dispatcher, "imp", try await again.imports(2, at: 20_000))
        #expect(await receiver.wait { $0.filter(\.delivered).count >= 7 })
        let requests = receiver.requests
        #expect(requests.map(\.event) == ["room.created", "revision", "revision", "room.deleted", "room.created", "revision"]
                    + ["revision"])
        let revisions = requests.filter { $0.event == "revision" }
        try #require(revisions.count == 4)
        // Both imports delivered the same revisions (number, time, author, diffs) ...
        let bodies = revisions.map { request -> [JSON.Member] in
            guard case .object(let members) = request.json else { return [] }
            return members.filter { $0.key != "id" }
        }
        #expect(bodies[0] == bodies[2] && bodies[1] == bodies[3])
        // ... each under an id a receiver that remembers the first import does not drop.
        #expect(revisions.map(\.id) == ["imp:1:1600000000001:import:10000", "imp:2:1600000000002:import:10000",
                                         "imp:1:1600000000001:import:20000", "imp:2:1600000000002:import:20000"])
        #expect(Set(requests.map(\.id)).count == 7)
        await dispatcher.shutdown()
    }

    @Test("a room deleted while its endpoint failed: the revisions it had not been sent come before room.deleted, in order, and after a restart too")
    func deletionKeepsWhatWasNotSent() async throws {
        let down = Mutex(false)
        let receiver = try Receiver { _, _ in down.withLock { $0 } ? .status(500) : .status(204) }
        defer { receiver.stop() }
        let scratch = try ScratchSQLite()
        defer { scratch.remove() }
        let store = scratch.store
        func received(_ room: String) -> [String] { receivedOnce(receiver, room: room) }
        func failed(_ room: String) -> Int { receiver.requests.filter { !$0.delivered && $0.json["room"] == .string(room) }.count }
        var dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: quick)
        dispatcher.start()
        /// Makes `room` at `time`, sees `sent` revisions delivered, then `owed` more while the receiver
        /// answers 500, and deletes the room in the store at `time + 1_000` (the dispatcher is told only
        /// if `tell`). The receiver stays down.
        func deleteWhileFailing(_ room: String, at time: Int64, sent: Int, owed: Int, tell: Bool) async throws {
            var feed = try await RoomFeed.start(store, name: room, notices: dispatcher.notices(.roomCreated, room: room, time: time))
            dispatcher.roomCreated(room: room, time: time)
            announce(dispatcher, room, try await feed.edit(sent))
            #expect(await receiver.wait { _ in received(room).count == sent + 1 })
            down.withLock { $0 = true }
            announce(dispatcher, room, try await feed.edit(owed))
            #expect(await receiver.wait { _ in failed(room) >= 1 })
            let deletion = dispatcher.notices(.roomDeleted, room: room, time: time + 1_000)
            #expect(try await blocking { try store.deleteRoom(room, notices: deletion) })
            if tell { dispatcher.roomDeleted(room: room, time: time + 1_000) }
        }

        // In one life of the dispatcher: "r" made again under its name after the deletion.
        try await deleteWhileFailing("r", at: 1_000, sent: 2, owed: 4, tell: true)
        var again = try await RoomFeed.start(store, name: "r", clock: 1_800_000_000_000,
                                             notices: dispatcher.notices(.roomCreated, room: "r", time: 3_000))
        dispatcher.roomCreated(room: "r", time: 3_000)
        announce(dispatcher, "r", try await again.edit(1))
        down.withLock { $0 = false }
        let expected = ["room.created", "1", "2", "3", "4", "5", "6", "room.deleted", "room.created", "1"]
        #expect(await receiver.wait { _ in received("r").count >= expected.count })
        #expect(received("r") == expected)

        // Across a restart: "s" deleted while failing, the dispatcher stopped before it was told.
        try await deleteWhileFailing("s", at: 4_000, sent: 1, owed: 3, tell: false)
        await dispatcher.shutdown()
        down.withLock { $0 = false }
        dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: quick)
        dispatcher.start()
        #expect(await receiver.wait { _ in received("s").count >= 6 })
        #expect(received("s") == ["room.created", "1", "2", "3", "4", "room.deleted"])
        #expect(await eventually { (try? store.webhookNotices(endpoint: receiver.url))?.isEmpty == true })
        await dispatcher.shutdown()
    }

    @Test("a room made and deleted while its endpoint is failing: the store keeps its revisions for the endpoint, which gets them, in order, once re-enabled")
    func roomMadeAndDeletedWhileFailing() async throws {
        let down = Mutex(true)
        let receiver = try Receiver { _, _ in down.withLock { $0 } ? .status(500) : .status(204) }
        defer { receiver.stop() }
        let scratch = try ScratchSQLite()
        defer { scratch.remove() }
        let store = scratch.store
        var policy = quick
        policy.giveUpAfter = 150
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: policy)
        dispatcher.start()
        // Another room's delivery fails until the endpoint is marked failing.
        var other = try await RoomFeed.start(store, name: "a", notices: dispatcher.notices(.roomCreated, room: "a", time: 1_000))
        dispatcher.roomCreated(room: "a", time: 1_000)
        announce(dispatcher, "a", try await other.edit(1))
        #expect(await eventually { dispatcher.status().first?.state == .failing })
        // Now "r" is made, edited three times and deleted: no delivery runs meanwhile.
        var feed = try await RoomFeed.start(store, name: "r", notices: dispatcher.notices(.roomCreated, room: "r", time: 2_000))
        dispatcher.roomCreated(room: "r", time: 2_000)
        announce(dispatcher, "r", try await feed.edit(3))
        // Its cursor (0) is written though the endpoint fails, so the deletion keeps what it was owed.
        #expect(await eventually { (try? store.webhookCursors(endpoint: receiver.url))?["r"] == 0 },
                "cursors \(String(describing: try? store.webhookCursors(endpoint: receiver.url)))")
        let deletion = dispatcher.notices(.roomDeleted, room: "r", time: 3_000)
        #expect(try await blocking { try store.deleteRoom("r", notices: deletion) })
        dispatcher.roomDeleted(room: "r", time: 3_000)
        #expect(try store.revisionsOwed(endpoint: receiver.url) == ["r": 3])
        down.withLock { $0 = false }
        dispatcher.reenable(url: receiver.url)
        func received(_ room: String) -> [String] { receivedOnce(receiver, room: room) }
        #expect(await receiver.wait { _ in received("r").count >= 5 })
        #expect(received("r") == ["room.created", "1", "2", "3", "room.deleted"])
        #expect(await eventually { dispatcher.status().first?.backlog == 0 })
        await dispatcher.shutdown()
    }

    @Test("an endpoint the store keeps state for but the config does not list keeps a deleted room's revisions after its cursor, and gets nothing of a new room")
    func unconfiguredEndpointsKeepTheirRevisions() async throws {
        let receiver = try Receiver { _, _ in .status(204) }
        defer { receiver.stop() }
        let scratch = try ScratchSQLite()
        defer { scratch.remove() }
        let store = scratch.store
        let out = "http://127.0.0.1:9/taken-out"
        var feed = try await RoomFeed.start(store, name: "r")
        _ = try await feed.edit(3)
        try store.setWebhookCursor(endpoint: out, room: "r", rev: 1, life: nil)
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver, rooms: ["other-*"])], store: store, logger: testLogger,
                                           policy: quick)
        dispatcher.storeKeeps(try store.webhookEndpointIDs())
        let deletion = dispatcher.notices(.roomDeleted, room: "r", time: 3_000)
        #expect(deletion == [WebhookNotice.owed(endpoint: out, room: "r", deletedAt: 3_000)])
        #expect(try await blocking { try store.deleteRoom("r", notices: deletion) })
        #expect(try store.revisionsOwed(endpoint: out) == ["r": 2], "the revisions after its cursor, kept")
        let creation = dispatcher.notices(.roomCreated, room: "n", time: 4_000)
        #expect(creation.isEmpty, "which rooms and events it wants is not known here")
        var fresh = try await RoomFeed.start(store, name: "n", notices: creation)
        _ = try await fresh.edit(2)
        #expect(try store.webhookCursors(endpoint: out)["n"] == nil)
        let freshDeletion = dispatcher.notices(.roomDeleted, room: "n", time: 5_000)
        #expect(try await blocking { try store.deleteRoom("n", notices: freshDeletion) })
        #expect(try store.revisionsOwed(endpoint: out) == ["r": 2], "a room it never followed keeps nothing for it")
        dispatcher.storeKeeps([])
        #expect(dispatcher.notices(.roomDeleted, room: "r", time: 6_000).isEmpty, "forgotten: nothing asked for it")
        await dispatcher.shutdown()
    }

    @Test("a dispatcher with no endpoint of its own learns, within a scan, of an endpoint the store begins to keep state for")
    func endpointsTheStoreBeginsToKeep() async throws {
        let scratch = try ScratchSQLite()
        defer { scratch.remove() }
        let store = scratch.store
        var policy = quick
        policy.scanInterval = 1_000
        let dispatcher = WebhookDispatcher(endpoints: [], store: store, logger: testLogger, policy: policy)
        dispatcher.storeKeeps(try store.webhookEndpointIDs())
        dispatcher.start()
        #expect(dispatcher.notices(.roomDeleted, room: "r", time: 1_000).isEmpty)
        // Another node's config lists it: its deliveries write a cursor.
        let other = "http://127.0.0.1:9/another-nodes"
        try store.setWebhookCursor(endpoint: other, room: "r", rev: 2, life: nil)
        #expect(await eventually { dispatcher.notices(.roomDeleted, room: "r", time: 2_000) == [.owed(endpoint: other, room: "r", deletedAt: 2_000)] })
        _ = try store.forgetWebhookEndpoint(other)
        #expect(await eventually { dispatcher.notices(.roomDeleted, room: "r", time: 3_000).isEmpty })
        await dispatcher.shutdown()
    }

    @Test("a failing endpoint's backlog counts a deleted room's revisions it was owed before any is read, and after a restart")
    func owedRevisionsInTheBacklog() async throws {
        let receiver = try Receiver { _, _ in .status(500) }
        defer { receiver.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pk-hooks-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(path: directory + "/store.sqlite", logger: testLogger)
        defer { store.close() }
        var policy = quick
        policy.giveUpAfter = 150
        var dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision, .roomDeleted])], store: store, logger: testLogger, policy: policy)
        dispatcher.start()
        var feed = try await RoomFeed.start(store, name: "r", notices: dispatcher.notices(.roomCreated, room: "r", time: 1_000))
        dispatcher.roomCreated(room: "r", time: 1_000)
        announce(dispatcher, "r", try await feed.edit(8))
        #expect(await eventually { dispatcher.status().first?.state == .failing })
        #expect(dispatcher.status().first?.backlog == 8)
        let deletion = dispatcher.notices(.roomDeleted, room: "r", time: 2_000)
        #expect(try await blocking { try store.deleteRoom("r", notices: deletion) })
        dispatcher.roomDeleted(room: "r", time: 2_000)
        // The store keeps the 8 revisions for the endpoint, which reads them 3 at a time once it is
        // delivering again; room.deleted comes after them.
        #expect(dispatcher.status().first?.backlog == 9)
        #expect(try store.revisionsOwed(endpoint: receiver.url) == ["r": 8])
        await dispatcher.shutdown()

        dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision, .roomDeleted])], store: store, logger: testLogger, policy: policy)
        dispatcher.start()
        #expect(await eventually { dispatcher.status().first?.state == .failing },
                "status \(String(describing: dispatcher.status().first))")
        // It read the first 3 and failed on the first: the other 5 are counted unread.
        #expect(receiver.requests.map(\.rev).allSatisfy { $0 == 1 })
        #expect(dispatcher.status().first?.backlog == 9, "status \(String(describing: dispatcher.status().first))")
        await dispatcher.shutdown()
    }

    @Test("an endpoint whose patterns do not match a room hears nothing of it")
    func unmatchedEndpointHearsNothing() async throws {
        let team = try Receiver(path: "/team")
        let other = try Receiver(path: "/other")
        defer { team.stop(); other.stop() }
        let store = InMemoryStore()
        var feed = try await RoomFeed.start(store, name: "team-1")
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(team, rooms: ["team-*"]), endpoint(other, rooms: ["other-*", "team"])],
                                           store: store, logger: testLogger, policy: quick)
        dispatcher.start()
        dispatcher.roomCreated(room: "team-1", time: 1)
        announce(dispatcher, "team-1", try await feed.edit(4))
        #expect(await team.wait { $0.filter(\.delivered).count >= 5 })
        dispatcher.roomDeleted(room: "team-1", time: 2)
        #expect(await team.wait { $0.filter(\.delivered).count >= 6 })
        #expect(other.requests.isEmpty)
        let status = try #require(dispatcher.status().last)
        #expect(status.delivered == 0 && status.backlog == 0 && status.rooms == ["other-*", "team"])
        await dispatcher.shutdown()
    }

    @Test("an endpoint failing past the give-up period stops, and resumes from its cursor when re-enabled")
    func failingThenReenabled() async throws {
        let receiver = try Receiver { _, _ in .status(503) }
        defer { receiver.stop() }
        let store = InMemoryStore()
        var feed = try await RoomFeed.start(store, name: "r")
        var policy = quick
        policy.giveUpAfter = 150
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision])], store: store,
                                           logger: testLogger, policy: policy)
        dispatcher.start()
        dispatcher.roomCreated(room: "r", time: 1)
        announce(dispatcher, "r", try await feed.edit(3))
        #expect(await eventually { dispatcher.status().first?.state == .failing })
        let status = try #require(dispatcher.status().first)
        #expect(status.backlog == 3 && status.delivered == 0 && status.lastError?.contains("503") == true)
        // Failing: no more attempts, even as revisions come.
        let attempts = receiver.requests.count
        announce(dispatcher, "r", try await feed.edit(2))
        try await Task.sleep(for: .milliseconds(300))
        #expect(receiver.requests.count == attempts)
        #expect(dispatcher.status().first?.backlog == 5)

        receiver.reply.withLock { $0 = { _, _ in .status(200) } }
        #expect(dispatcher.reenable(url: receiver.url))
        #expect(await receiver.wait { deliveredRevisions($0, room: "r").count >= 5 })
        #expect(deliveredRevisions(receiver.requests, room: "r") == Array(1...5))
        #expect(await eventually { dispatcher.status().first.map { $0.state == .ok && $0.backlog == 0 } == true })
        await dispatcher.shutdown()
    }

    @Test("a 2xx with a body of megabytes is a delivery (the body is not read past 1 MiB)")
    func largeAnswerIsDelivered() async throws {
        let receiver = try Receiver { _, _ in .large(200, bytes: 3 << 20) }
        defer { receiver.stop() }
        let store = InMemoryStore()
        var feed = try await RoomFeed.start(store, name: "r")
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision])], store: store,
                                           logger: testLogger, policy: quick)
        dispatcher.start()
        announce(dispatcher, "r", try await feed.edit(2))
        #expect(await eventually { dispatcher.status().first.map { $0.delivered == 2 && $0.backlog == 0 } == true },
                "status \(String(describing: dispatcher.status().first)); answered \(receiver.requests.map { "\($0.rev ?? -1):\($0.answered ?? -1)" })")
        #expect(dispatcher.status().first?.state == .ok && dispatcher.status().first?.lastError == nil)
        await dispatcher.shutdown()
    }

    @Test("re-enabling an endpoint that is retrying, not failing, leaves it retrying with its backlog")
    func reenableWhileRetrying() async throws {
        let receiver = try Receiver { _, _ in .status(500) }
        defer { receiver.stop() }
        let store = InMemoryStore()
        var feed = try await RoomFeed.start(store, name: "r")
        var policy = quick
        policy.giveUpAfter = 60_000
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision])], store: store,
                                           logger: testLogger, policy: policy)
        dispatcher.start()
        announce(dispatcher, "r", try await feed.edit(3))
        #expect(await eventually { dispatcher.status().first?.state == .retrying })
        #expect(dispatcher.reenable(url: receiver.url))
        let status = try #require(dispatcher.status().first)
        #expect(status.state == .retrying && status.backlog == 3)
        await dispatcher.shutdown()
    }

    @Test("the backoff doubles from its start up to its cap, scaled by the jitter")
    func backoffSchedule() {
        let policy = WebhookPolicy(backoffStart: 1_000, backoffMax: 300_000, jitter: 0.2)
        #expect((1...10).map { policy.backoff(afterFailures: $0, unit: 0.5) }
                == [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000])
        #expect(policy.backoff(afterFailures: 500, unit: 0.5) == 300_000)
        #expect(policy.backoff(afterFailures: 1, unit: 0) == 800)
        #expect(policy.backoff(afterFailures: 1, unit: 0.999_999) == 1_200)
    }
}

/// Waits (polling) until `condition` holds, at most 30 s.
func eventually(_ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(30)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// An SQLite store that runs `hook` (once, off the test's task) at the first cursor reset of `room`:
/// right after one to 0 (a lane starting the room over), or right before a forget (a lane's forget
/// of a deleted room on its way to the store); or before the first listing of the rooms (the
/// dispatcher's start, between its reads of the store and its lanes); or right after the first read of
/// an endpoint's backlog (a cluster scan, before it acts on it); or before the first read of an
/// endpoint's cursors or of its notices (the start reads those, in that order, before the listing). A
/// test puts a deletion, a creation or a wait there.
final class ResetWatchingStore: PeopleStore, @unchecked Sendable {
    enum Moment: Sendable { case afterZero, beforeForget, beforeCursors, beforeNotices, beforeListing, afterBacklog }
    let inner: SQLiteStore
    let room: String
    let moment: Moment
    private let hook: Mutex<(@Sendable () -> Void)?>
    private let done = Mutex<[Int?]>([])
    /// The resets of `room` that have reached the store, in order (nil: a forget).
    var resets: [Int?] { done.withLock { $0 } }

    init(_ inner: SQLiteStore, room: String, _ moment: Moment = .afterZero, hook: @escaping @Sendable () -> Void) {
        (self.inner, self.room, self.moment) = (inner, room, moment)
        self.hook = Mutex(hook)
    }

    private func run(at moment: Moment, room: String) {
        guard room == self.room, moment == self.moment, let hook = hook.withLock({ hook in defer { hook = nil }; return hook })
        else { return }
        hook()
    }

    var kind: String { inner.kind }
    func append(_ entries: [JournalEntry], room: String,
                whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        inner.append(entries, room: room, whenDurable: whenDurable)
    }
    func save(_ snapshot: RoomSnapshot, room: String, notices: [WebhookNotice]) { inner.save(snapshot, room: room, notices: notices) }
    func create(_ snapshot: RoomSnapshot, notices: [WebhookNotice], entries: [JournalEntry], checkpoints: [Checkpoint],
                room: String, whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        inner.create(snapshot, notices: notices, entries: entries, checkpoints: checkpoints, room: room, whenDurable: whenDurable)
    }
    func load(room: String) throws(StoreError) -> StoredRoom? { try inner.load(room: room) }
    func revisions(room: String, after: Int, through: Int) throws(StoreError) -> [Revision] {
        try inner.revisions(room: room, after: after, through: through)
    }
    func checkpoint(room: String, atOrBelow rev: Int) throws(StoreError) -> Checkpoint? { try inner.checkpoint(room: room, atOrBelow: rev) }
    func keepCheckpoint(_ checkpoint: Checkpoint, room: String) throws(StoreError) { try inner.keepCheckpoint(checkpoint, room: room) }
    func listRooms(after: String?, prefix: String?, limit: Int) throws(StoreError) -> [StoredRoomSummary] {
        run(at: .beforeListing, room: room)
        return try inner.listRooms(after: after, prefix: prefix, limit: limit)
    }
    func deleteRoom(_ room: String, notices: [WebhookNotice]) throws(StoreError) -> Bool { try inner.deleteRoom(room, notices: notices) }
    func deletion(of room: String) throws(StoreError) -> Int64? { try inner.deletion(of: room) }
    func webhookCursorRecords(endpoint: String) throws(StoreError) -> [String: WebhookCursor] {
        run(at: .beforeCursors, room: room)
        return try inner.webhookCursorRecords(endpoint: endpoint)
    }
    func setWebhookCursor(endpoint: String, room: String, rev: Int, life: Int64?) throws(StoreError) -> Bool {
        try inner.setWebhookCursor(endpoint: endpoint, room: room, rev: rev, life: life)
    }
    func resetWebhookCursor(endpoint: String, room: String, to rev: Int?, life: Int64?) throws(StoreError) {
        if rev == nil { run(at: .beforeForget, room: room) }
        try inner.resetWebhookCursor(endpoint: endpoint, room: room, to: rev, life: life)
        if room == self.room { done.withLock { $0.append(rev) } }
        if rev == 0 { run(at: .afterZero, room: room) }
    }
    func webhookNotices(endpoint: String) throws(StoreError) -> [WebhookNotice] {
        run(at: .beforeNotices, room: room)
        return try inner.webhookNotices(endpoint: endpoint)
    }
    func owedRevisions(endpoint: String, room: String, after: OwedPosition?, limit: Int) throws(StoreError) -> [WebhookNotice] {
        try inner.owedRevisions(endpoint: endpoint, room: room, after: after, limit: limit)
    }
    func revisionsOwed(endpoint: String) throws(StoreError) -> [String: Int] { try inner.revisionsOwed(endpoint: endpoint) }
    func removeWebhookNotice(_ notice: WebhookNotice) throws(StoreError) { try inner.removeWebhookNotice(notice) }
    func webhookBacklog(endpoint: String) throws(StoreError) -> [WebhookBacklog] {
        let backlog = try inner.webhookBacklog(endpoint: endpoint)
        run(at: .afterBacklog, room: room)
        return backlog
    }
    func webhookEndpoints() throws(StoreError) -> [StoredWebhookEndpoint] { try inner.webhookEndpoints() }
    func forgetWebhookEndpoint(_ endpoint: String) throws(StoreError) -> StoredWebhookEndpoint? {
        try inner.forgetWebhookEndpoint(endpoint)
    }
    func check() throws(StoreError) { try inner.check() }
    func close() { inner.close() }
}

@Suite("A room deleted while its lane starts it over")
struct CursorResetRaceTests {
    @Test("a deletion right after the lane's cursor reset keeps every revision the endpoint was owed")
    func deletionRightAfterTheReset() async throws {
        let receiver = try Receiver { _, _ in .status(204) }
        defer { receiver.stop() }
        let scratch = try ScratchSQLite()
        defer { scratch.remove() }
        // The hook stands for the hub: the deletion's commit, then (once the test has told the
        // dispatcher) the lane's reset call returns.
        let steps = Mutex((deleted: false, told: false))
        let deletion = Mutex<[WebhookNotice]>([])
        let inner = scratch.store
        let store = ResetWatchingStore(inner, room: "r", .afterZero) {
            _ = try? inner.deleteRoom("r", notices: deletion.withLock { $0 })
            steps.withLock { $0.deleted = true }
            let deadline = Date().addingTimeInterval(10)
            while !steps.withLock({ $0.told }), Date() < deadline { usleep(2_000) }
        }
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: quick)
        dispatcher.start()
        deletion.withLock { $0 = dispatcher.notices(.roomDeleted, room: "r", time: 3_000) }
        var feed = try await RoomFeed.start(store, name: "r", notices: dispatcher.notices(.roomCreated, room: "r", time: 2_000))
        let revisions = try await feed.edit(3)
        dispatcher.roomCreated(room: "r", time: 2_000)
        announce(dispatcher, "r", revisions)
        #expect(await eventually { steps.withLock { $0.deleted } })
        // Kept in the deletion's commit: the revisions after the endpoint's cursor, which must be there.
        #expect(try store.revisionsOwed(endpoint: receiver.url) == ["r": 3])
        dispatcher.roomDeleted(room: "r", time: 3_000)
        steps.withLock { $0.told = true }
        #expect(await receiver.wait { _ in receivedOnce(receiver, room: "r").count >= 5 })
        #expect(receivedOnce(receiver, room: "r") == ["room.created", "1", "2", "3", "room.deleted"])
        #expect(await eventually { dispatcher.status().first?.backlog == 0 })
        await dispatcher.shutdown()
    }

    @Test("a room the hub loads before the start has given it its lane: an earlier life's owed revisions still come before its room.deleted")
    func newsBeforeTheStart() async throws {
        let receiver = try Receiver { _, _ in .status(204) }
        defer { receiver.stop() }
        let scratch = try ScratchSQLite()
        defer { scratch.remove() }
        let inner = scratch.store, hook = endpoint(receiver)
        func notices(_ event: WebhookEvent, at time: Int64) -> [WebhookNotice] {
            WebhookDispatcher.notices(event, room: "r", time: time, endpoints: [hook])
        }
        // What a hub that stopped with its endpoint behind left in the store: "r" made, edited three
        // times and deleted (its revisions kept for the endpoint, with its room.created and
        // room.deleted), then made again and edited once.
        var first = try await RoomFeed.start(inner, name: "r", clock: 1_700_000_000_000, notices: notices(.roomCreated, at: 1_000))
        _ = try await first.edit(3)
        #expect(try await blocking { try inner.deleteRoom("r", notices: notices(.roomDeleted, at: 2_000)) })
        var second = try await RoomFeed.start(inner, name: "r", clock: 1_800_000_000_000, notices: notices(.roomCreated, at: 3_000))
        _ = try await second.edit(1)
        // And "s", listed after "r": once its room.created and revision come, the start has given the
        // rooms of its page their lanes.
        var other = try await RoomFeed.start(inner, name: "s", clock: 1_800_000_000_000,
                                             notices: WebhookDispatcher.notices(.roomCreated, room: "s", time: 3_000, endpoints: [hook]))
        _ = try await other.edit(1)
        // The start waits between its reads of the store and its lanes, while the hub loads the room
        // for a hello (`Hub.loaded`): the lane that news makes has only itself to read the store.
        let go = Mutex(false)
        let store = ResetWatchingStore(inner, room: "r", .beforeListing) {
            let deadline = Date().addingTimeInterval(10)
            while !go.withLock({ $0 }), Date() < deadline { usleep(2_000) }
        }
        let dispatcher = WebhookDispatcher(endpoints: [hook], store: store, logger: testLogger, policy: quick)
        dispatcher.start()
        dispatcher.roomLoaded(room: "r")
        dispatcher.revisionDurable(room: "r", rev: 1, after: 1)
        let expected = ["room.created", "1", "2", "3", "room.deleted", "room.created", "1"]
        _ = await receiver.wait(seconds: 5) { _ in receivedOnce(receiver, room: "r").count >= expected.count }
        let beforeTheStart = receivedOnce(receiver, room: "r")
        go.withLock { $0 = true }
        // It posted the first life's room.deleted before the revisions that life owed (a model test of
        // the lane, session 46), which came once the start went on.
        #expect(beforeTheStart == expected)
        #expect(await receiver.wait { _ in receivedOnce(receiver, room: "s").count >= 2 })
        #expect(receivedOnce(receiver, room: "r") == expected)
        // The start left "r" to its lane: what it had read before the lane delivered it and removed it
        // from the store is not delivered again (a review).
        #expect(receiver.requests.filter { $0.delivered && $0.json["room"] == .string("r") }.count == expected.count)
        #expect(await eventually { (try? store.webhookNotices(endpoint: receiver.url))?.isEmpty == true })
        await dispatcher.shutdown()
    }

    /// The start reads the cursors, then the notices, then lists the rooms; the import lands before
    /// one of those reads (`.beforeNotices`: between the cursors and the notices, which an earlier
    /// order read the other way round; `.beforeListing`: after both).
    @Test("from a code review: a room the import command commits between two of the start's reads is delivered from its first revision, its room.created first",
          arguments: [ResetWatchingStore.Moment.beforeCursors, .beforeNotices, .beforeListing])
    func importBetweenTheStartsReads(moment: ResetWatchingStore.Moment) async throws {
        let receiver = try Receiver { _, _ in .status(204) }
        defer { receiver.stop() }
        let scratch = try ScratchSQLite()
        defer { scratch.remove() }
        let inner = scratch.store, hook = endpoint(receiver)
        // The import command, another process: the room with its room.created and the endpoint's cursor
        // at 0 (life 5000) in one commit, then three revisions.
        let store = ResetWatchingStore(inner, room: "r", moment) {
            var feed = try? RoomFeed(inner, name: "r", notices: WebhookDispatcher.notices(.roomCreated, room: "r", time: 5_000,
                                                                                      endpoints: [hook]))
            _ = try? feed?.editNow(3)
        }
        let dispatcher = WebhookDispatcher(endpoints: [hook], store: store, logger: testLogger, policy: quick)
        dispatcher.start()
        let expected = ["room.created", "1", "2", "3"]
        // Before the listing: the start read no cursor of "r" and listed it at 3, so its lane began
        // there, its first write was refused (the store's cursor is of life 5000), and it went on from
        // the store's cursor, after its notices. Before the notices: it read no cursor but the
        // room.created, so its lane began at 0. In the earlier order (notices, then cursors), an import
        // between them was read with its cursor and without its room.created: 1, 2, 3 came alone.
        #expect(await receiver.wait { _ in receivedOnce(receiver, room: "r").count >= expected.count })
        #expect(receivedOnce(receiver, room: "r") == expected)
        #expect(await eventually { (try? store.webhookCursorRecords(endpoint: receiver.url))?["r"] == WebhookCursor(rev: 3, life: 5_000) })
        #expect(await eventually { (try? store.webhookNotices(endpoint: receiver.url))?.isEmpty == true })
        await dispatcher.shutdown()
        #expect(receivedOnce(receiver, room: "r") == expected)
    }

    @Test("a lane's forget of a deleted room that reaches the store after the room was made again leaves the new life's cursor")
    func forgetAfterTheRoomWasMadeAgain() async throws {
        let receiver = try Receiver { _, _ in .status(204) }
        defer { receiver.stop() }
        let scratch = try ScratchSQLite()
        defer { scratch.remove() }
        let inner = scratch.store
        let again = Mutex<RoomFeed?>(nil)
        let creation = Mutex<[WebhookNotice]>([])
        // The room's second life is made (its creation's commit writes its cursor at 0) while the
        // lane's forget of the first is on its way to the store.
        let store = ResetWatchingStore(inner, room: "r", .beforeForget) {
            let feed = try? RoomFeed(inner, name: "r", clock: 1_700_000_100_000, notices: creation.withLock { $0 })
            again.withLock { $0 = feed }
        }
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: quick)
        dispatcher.start()
        var first = try await RoomFeed.start(store, name: "r", notices: dispatcher.notices(.roomCreated, room: "r", time: 1_000))
        dispatcher.roomCreated(room: "r", time: 1_000)
        announce(dispatcher, "r", try await first.edit(2))
        #expect(await receiver.wait { _ in receivedOnce(receiver, room: "r").count >= 3 })
        // The first life's cursor written (it trails the deliveries by up to 250 ms): its deletion
        // keeps nothing owed, so what is owed below is the second life's only.
        #expect(await eventually { (try? store.webhookCursors(endpoint: receiver.url))?["r"] == 2 })
        creation.withLock { $0 = dispatcher.notices(.roomCreated, room: "r", time: 3_000) }
        #expect(try await blocking { try store.deleteRoom("r", notices: dispatcher.notices(.roomDeleted, room: "r", time: 2_000)) })
        dispatcher.roomDeleted(room: "r", time: 2_000)
        #expect(await eventually { again.withLock { $0 } != nil && store.resets.contains(nil) })
        // The forget has reached the store; the new life gets three revisions and is deleted before the
        // dispatcher hears of it: what its endpoint is owed is kept after its cursor, still there.
        #expect(try store.webhookCursors(endpoint: receiver.url)["r"] == 0)
        var second = try #require(again.withLock { $0 })
        let revisions = try await second.edit(3)
        #expect(try await blocking { try store.deleteRoom("r", notices: dispatcher.notices(.roomDeleted, room: "r", time: 4_000)) })
        #expect(try store.revisionsOwed(endpoint: receiver.url) == ["r": 3])
        dispatcher.roomCreated(room: "r", time: 3_000)
        announce(dispatcher, "r", revisions)
        dispatcher.roomDeleted(room: "r", time: 4_000)
        let lives = ["room.created", "1", "2", "room.deleted", "room.created", "1", "2", "3", "room.deleted"]
        #expect(await receiver.wait { _ in receivedOnce(receiver, room: "r").count >= lives.count })
        #expect(receivedOnce(receiver, room: "r") == lives)
        await dispatcher.shutdown()
    }
}
