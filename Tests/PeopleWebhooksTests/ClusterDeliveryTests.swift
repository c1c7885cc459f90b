import Foundation
import PeopleCore
import PeopleStore
import PeopleTestSupport
import PeopleWebhooks
import Synchronization
import Testing

/// Room leases of several nodes sharing one table, as PostgreSQL's advisory locks are: a room is one
/// node's while any holder there (`LeaseHolder`) needs it.
final class LeaseTable: Sendable {
    private let holders = Mutex<[String: (node: String, holders: Set<LeaseHolder>)]>([:])

    func node(_ name: String) -> NodeLeases { NodeLeases(table: self, node: name) }

    /// Who holds `room`: the node and what there needs it.
    func holder(of room: String) -> (node: String, holders: Set<LeaseHolder>)? { holders.withLock { $0[room] } }

    fileprivate func acquire(_ room: String, node: String, holder: LeaseHolder) -> LeaseOutcome {
        holders.withLock { table in
            guard let current = table[room] else {
                table[room] = (node, [holder])
                return .acquired
            }
            guard current.node == node else { return .ownedBy(node: current.node, url: "ws://\(current.node)") }
            table[room]?.holders.insert(holder)
            return .acquired
        }
    }

    fileprivate func release(_ room: String, node: String, holder: LeaseHolder) {
        holders.withLock { table in
            guard table[room]?.node == node else { return }
            table[room]?.holders.remove(holder)
            if table[room]?.holders.isEmpty == true { table[room] = nil }
        }
    }

    /// Every lease of `node` ends at once (its connection to the store died).
    fileprivate func dropAll(of node: String) {
        holders.withLock { table in table = table.filter { $0.value.node != node } }
    }
}

/// One node's view of a `LeaseTable`.
final class NodeLeases: RoomLeases, @unchecked Sendable {
    let table: LeaseTable
    let node: String
    var advertisedURL: String { get { "ws://\(node)" } set {} }
    private let handlers = Mutex<[@Sendable () -> Void]>([])

    init(table: LeaseTable, node: String) { (self.table, self.node) = (table, node) }

    func acquire(room: String, for holder: LeaseHolder) throws(StoreError) -> LeaseOutcome {
        table.acquire(room, node: node, holder: holder)
    }
    func release(room: String, for holder: LeaseHolder) { table.release(room, node: node, holder: holder) }
    func onLeasesLost(_ handler: @escaping @Sendable () -> Void) { handlers.withLock { $0.append(handler) } }

    /// Whether the node is sure of its leases (false: as after a pause, `PauseWatch`).
    let certain = Mutex(true)
    var leasesCertain: Bool { certain.withLock { $0 } }

    /// The node's store connection broke: its leases are gone and it is told.
    func loseAll() {
        table.dropAll(of: node)
        for handler in handlers.withLock({ $0 }) { handler() }
    }
}

/// Cluster mode: one node delivers a room at a time (the lease holder), a room keeps its lease while
/// its deliveries are not done, and a backlog no node is delivering is found and taken.
@Suite("Webhook delivery in cluster mode: the lease holder delivers")
struct ClusterDeliveryTests {
    let policy = WebhookPolicy(timeout: 30_000, backoffStart: 10, backoffMax: 40, jitter: 0.2, giveUpAfter: 60_000, chunk: 3,
                               scanInterval: 50, releaseAfter: 100)

    @Test("a room another node holds is not delivered here; once it is let go, this node's scan takes it, delivers the rest in order, and lets it go when done")
    func orphanedBacklogIsTakenOver() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let store = InMemoryStore(), table = LeaseTable()
        var feed = try await RoomFeed.start(store, name: "r")
        _ = try await feed.edit(6)
        try store.setWebhookCursor(endpoint: receiver.url, room: "r", rev: 2, life: nil)
        // Node a has the room (its hub loaded it); b is the node under test.
        let a = table.node("a")
        #expect(try a.acquire(room: "r", for: .room) == .acquired)
        let b = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: policy,
                                  leases: table.node("b"))
        b.start()
        // Eight scans: none makes a lane (nor shows a backlog) for the room a holds.
        var backlogs: Set<Int> = []
        for _ in 0..<200 {
            backlogs.insert(b.status().first?.backlog ?? -1)
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(backlogs == [0])
        #expect(receiver.requests.isEmpty)
        #expect(table.holder(of: "r")?.node == "a")

        a.release(room: "r")  // node a unloads the room with deliveries left (or dies)
        #expect(await receiver.wait { deliveredRevisions($0, room: "r").count >= 4 })
        #expect(deliveredRevisions(receiver.requests, room: "r") == [3, 4, 5, 6])
        #expect(await eventually { (try? store.webhookCursors(endpoint: receiver.url)["r"]) == 6 })
        // Done: b lets the room go, so any node may load it.
        #expect(await eventually { table.holder(of: "r") == nil })
        #expect(b.status().first?.backlog == 0)
        await b.shutdown()
        #expect(receiver.requests.count == 4)
    }

    @Test("a scan that read the store before this node's own lane of the room delivered what it found, and let the room go, does not deliver it again")
    func scanOlderThanTheLanesDeliveries() async throws {
        let receiver = try Receiver { _, _ in .status(200) }
        defer { receiver.stop() }
        let scratch = try ScratchSQLite()
        defer { scratch.remove() }
        let inner = scratch.store
        var feed = try await RoomFeed.start(inner, name: "r")
        _ = try await feed.edit(4)
        try inner.setWebhookCursor(endpoint: receiver.url, room: "r", rev: 2, life: nil)
        // The first scan has read the backlog (r: cursor 2, head 4) and waits before acting on it.
        let read = Mutex(false), go = Mutex(false)
        let store = ResetWatchingStore(inner, room: "r", .afterBacklog) {
            read.withLock { $0 = true }
            let deadline = Date().addingTimeInterval(10)
            while !go.withLock({ $0 }), Date() < deadline { usleep(2_000) }
        }
        let table = LeaseTable(), leases = table.node("b")
        let b = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision])], store: store, logger: testLogger,
                                  policy: policy, leases: leases)
        b.start()
        #expect(await eventually { read.withLock { $0 } })
        // Meanwhile b's hub loads the room: its lane delivers 3 and 4, writes the cursor, and once idle
        // lets the room's webhooks go (the hub keeps the room).
        #expect(try leases.acquire(room: "r", for: .room) == .acquired)
        b.roomLoaded(room: "r")
        b.revisionDurable(room: "r", rev: 4, after: 4)
        #expect(await receiver.wait { deliveredRevisions($0, room: "r").count >= 2 })
        #expect(await eventually { (try? inner.webhookCursors(endpoint: receiver.url)["r"]) == 4 })
        #expect(await eventually { table.holder(of: "r")?.holders == [.room] })
        go.withLock { $0 = true }
        // Before, the scan made a lane from what it had read, which posted 3 and 4 again.
        try await Task.sleep(for: .milliseconds(400))
        #expect(deliveredRevisions(receiver.requests, room: "r") == [3, 4])
        #expect(receiver.requests.count == 2)
        await b.shutdown()
    }

    @Test("a room deleted with revisions owed and no node left to deliver them: a scan takes its name and delivers them in order, then room.deleted")
    func owedRevisionsOfADeletedRoomAreTakenOver() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let store = InMemoryStore(), table = LeaseTable()
        var feed = try await RoomFeed.start(store, name: "r")
        _ = try await feed.edit(5)
        try store.setWebhookCursor(endpoint: receiver.url, room: "r", rev: 2, life: nil)
        // Node a deleted the room (what it owed kept in the same commit) and died before delivering.
        #expect(try store.deleteRoom("r", notices: [WebhookNotice.owed(endpoint: receiver.url, room: "r", deletedAt: 9_000),
                                                    WebhookNotice(endpoint: receiver.url, room: "r", event: "room.deleted", time: 9_000)]))
        let b = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: policy,
                                  leases: table.node("b"))
        b.start()
        #expect(await receiver.wait { $0.filter(\.delivered).count >= 4 })
        #expect(receiver.delivered.map { $0.rev.map(String.init) ?? $0.event } == ["3", "4", "5", "room.deleted"])
        #expect(await eventually { (try? store.revisionsOwed(endpoint: receiver.url))?.isEmpty == true })
        #expect(await eventually { table.holder(of: "r") == nil })
        await b.shutdown()
    }

    @Test("a room made again on a node that did not hold its last life: that life's room events and owed revisions go first, in order")
    func newLifeAfterAnotherNodesLife() async throws {
        let receiver = try Receiver()
        defer { receiver.stop() }
        let store = InMemoryStore(), table = LeaseTable()
        // No scan in the test's time: only the lane can find what node a left.
        let slow = WebhookPolicy(timeout: 30_000, backoffStart: 10, backoffMax: 40, jitter: 0.2, giveUpAfter: 60_000, chunk: 3,
                                 scanInterval: 600_000, releaseAfter: 100)
        let leasesB = table.node("b")
        let b = WebhookDispatcher(endpoints: [endpoint(receiver)], store: store, logger: testLogger, policy: slow, leases: leasesB)
        b.start()
        try await Task.sleep(for: .milliseconds(300))  // its start and first scan read an empty store
        // Node a makes the room, three revisions and deletes it, delivering nothing, and dies.
        let a = table.node("a")
        #expect(try a.acquire(room: "r", for: .room) == .acquired)
        var first = try await RoomFeed.start(store, name: "r", notices: b.notices(.roomCreated, room: "r", time: 1_000))
        _ = try await first.edit(3)
        #expect(try store.deleteRoom("r", notices: b.notices(.roomDeleted, room: "r", time: 2_000)))
        a.loseAll()
        // Node b makes it again, with two revisions.
        #expect(try leasesB.acquire(room: "r", for: .room) == .acquired)
        var second = try await RoomFeed.start(store, name: "r", notices: b.notices(.roomCreated, room: "r", time: 3_000))
        b.roomCreated(room: "r", time: 3_000)
        for rev in try await second.edit(2) { b.revisionDurable(room: "r", rev: rev) }
        #expect(await receiver.wait { $0.filter(\.delivered).count >= 8 })
        #expect(receiver.delivered.map { $0.rev.map(String.init) ?? $0.event }
                == ["room.created", "1", "2", "3", "room.deleted", "room.created", "1", "2"])
        await b.shutdown()
    }

    @Test("a room whose deliveries are not done keeps its lease after the hub lets it go, so no other node can take it; it is let go once they are")
    func backlogKeepsTheLease() async throws {
        let down = Mutex(true)
        let receiver = try Receiver { _, _ in down.withLock { $0 } ? .status(503) : .status(200) }
        defer { receiver.stop() }
        let store = InMemoryStore(), table = LeaseTable()
        let a = table.node("a")
        #expect(try a.acquire(room: "r", for: .room) == .acquired)  // a's hub loads the room
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision])], store: store,
                                           logger: testLogger, policy: policy, leases: a)
        dispatcher.start()
        var feed = try await RoomFeed.start(store, name: "r")
        dispatcher.roomCreated(room: "r", time: 1)
        announce(dispatcher, "r", try await feed.edit(5))
        #expect(await eventually { table.holder(of: "r")?.holders == [.room, .webhooks] })
        a.release(room: "r")  // the hub unloads the room; the endpoint is still down
        try await Task.sleep(for: .milliseconds(300))
        #expect(table.holder(of: "r")?.node == "a")
        #expect(try table.node("b").acquire(room: "r", for: .room) == .ownedBy(node: "a", url: "ws://a"))
        // A second node's dispatcher scanning meanwhile finds the backlog but cannot take the room.
        let b = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision])], store: store, logger: testLogger,
                                  policy: policy, leases: table.node("b"))
        b.start()
        try await Task.sleep(for: .milliseconds(200))

        down.withLock { $0 = false }
        #expect(await receiver.wait { deliveredRevisions($0, room: "r").count >= 5 })
        #expect(await eventually { table.holder(of: "r") == nil })
        await dispatcher.shutdown()
        await b.shutdown()
        // Every revision was delivered once, by a, in order.
        #expect(deliveredRevisions(receiver.requests, room: "r") == [1, 2, 3, 4, 5])
    }

    @Test("a node that is not sure of its leases (woken from a pause) posts nothing until it is; then it delivers in order")
    func noPostWhileUnsure() async throws {
        // A frozen node's pass (session 42): woken, a node sent a room's revisions again after the
        // node that took the room had, before its check found its leases gone.
        let receiver = try Receiver { _, _ in .status(200) }
        defer { receiver.stop() }
        let store = InMemoryStore(), table = LeaseTable()
        var feed = try await RoomFeed.start(store, name: "r")
        _ = try await feed.edit(3)
        try store.setWebhookCursor(endpoint: receiver.url, room: "r", rev: 0, life: nil)
        let a = table.node("a")
        a.certain.withLock { $0 = false }
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision])], store: store,
                                           logger: testLogger, policy: policy, leases: a)
        dispatcher.start()
        #expect(await eventually { table.holder(of: "r")?.node == "a" })
        try await Task.sleep(for: .milliseconds(300))
        #expect(receiver.delivered.isEmpty, "posted while not sure")
        a.certain.withLock { $0 = true }
        #expect(await receiver.wait { deliveredRevisions($0, room: "r").count >= 3 })
        #expect(deliveredRevisions(receiver.requests, room: "r") == [1, 2, 3])
        await dispatcher.shutdown()
    }

    @Test("when a node's leases are lost at once its lanes stop, and its next scan takes back the rooms still free")
    func leasesLostStopsTheLanes() async throws {
        let down = Mutex(true)
        let receiver = try Receiver { _, _ in down.withLock { $0 } ? .status(500) : .status(200) }
        defer { receiver.stop() }
        let store = InMemoryStore(), table = LeaseTable()
        var feed = try await RoomFeed.start(store, name: "r")
        _ = try await feed.edit(4)
        try store.setWebhookCursor(endpoint: receiver.url, room: "r", rev: 1, life: nil)
        let a = table.node("a")
        let dispatcher = WebhookDispatcher(endpoints: [endpoint(receiver, events: [.revision])], store: store,
                                           logger: testLogger, policy: policy, leases: a)
        dispatcher.start()
        #expect(await eventually { table.holder(of: "r")?.node == "a" })
        #expect(await receiver.wait { !$0.isEmpty })
        // The connection holding the leases breaks, and node c takes the room meanwhile.
        a.loseAll()
        #expect(try table.node("c").acquire(room: "r", for: .room) == .acquired)
        #expect(await eventually { dispatcher.status().first?.backlog == 0 })
        down.withLock { $0 = false }
        try await Task.sleep(for: .milliseconds(300))
        #expect(receiver.delivered.isEmpty)  // c holds it: a delivers nothing
        table.node("c").release(room: "r")
        #expect(await receiver.wait { deliveredRevisions($0, room: "r").count >= 3 })
        #expect(deliveredRevisions(receiver.requests, room: "r") == [2, 3, 4])
        await dispatcher.shutdown()
    }
}
