import PeopleCore
@testable import PeopleHub
import PeopleStore
import Testing

/// Restore and `?at=` far below the room's memory read the store's nearest checkpoint and the few
/// revisions after it, not every revision up to memory; a store without checkpoints still serves them.
@Suite("Hub in-process: the model at an old revision from a checkpoint")
struct CheckpointReadTests {
    /// A room `r` with a memory of 3 revisions, a snapshot (and so a checkpoint) every 5, and 40
    /// revisions by ann; the people after each revision.
    static func room(withoutCheckpoints: Bool = false) async throws -> (HubHarness, FakeConnection, [PeopleModel]) {
        let h = HubHarness {
            $0.roomPolicy.keptRevisions = 3
            $0.snapshotEvery = 5
        }
        h.store.withoutCheckpoints = withoutCheckpoints
        let ann = try await h.joined("ann")
        var models = [h.hub.host("r")!.room.model]
        for k in 1...40 {
            let ops: [Diff] = [.set(1, .name("Bob \(k)")), .set(2 + k % 2, .glasses(k % 3 == 0))]
            await h.send(.submit(seq: k, base: k - 1, ops), on: ann)
            models.append(h.hub.host("r")!.room.model)
        }
        #expect(h.hub.host("r")!.room.oldestKeptBase >= 36)
        return (h, ann, models)
    }

    static func people(_ model: PeopleModel) -> JSON { .array(model.people.map(\.json)) }

    static func restored(_ connection: FakeConnection) -> ServerMessage.Restored? {
        connection.replies.lazy.compactMap { if case .restored(let r) = $0 { r } else { nil } }.last
    }

    @Test("a WebSocket restore to 12 reads the checkpoint at 10 and revisions 11 and 12; then HTTP restore and ?at= likewise")
    func fromCheckpoints() async throws {
        let (h, ann, models) = try await Self.room()
        let before = h.store.revisionsRead
        await h.send(.restore(.init(seq: 41, rev: 12)), on: ann)
        guard let restored = Self.restored(ann) else { Issue.record("\(ann.replies.suffix(2))"); return }
        #expect(restored.rev == 41)
        #expect(h.hub.host("r")!.room.model == models[12])
        #expect(h.store.checkpointsRead == [10])
        #expect(h.store.revisionsRead - before == 2, "revisions 11 and 12, not 13 up to memory")

        let at = await h.http("GET", "/v1/rooms/r", query: ["at": "7"])
        #expect(at?.status == 200 && at?.json?["rev"] == .int(7))
        #expect(at?.json?["people"] == Self.people(models[7]))
        #expect(h.store.checkpointsRead == [10, 5])
        #expect(h.store.revisionsRead - before == 4)

        let restore = await h.http("POST", "/v1/rooms/r/restore", query: ["user": "bob"], body: #"{"key":"k","rev":3}"#)
        #expect(restore?.status == 200 && restore?.json?["rev"] == .int(42), "\(String(decoding: restore?.body ?? [], as: UTF8.self))")
        #expect(h.hub.host("r")!.room.model == models[3])
        #expect(h.store.checkpointsRead == [10, 5, 0])
        #expect(h.store.revisionsRead - before == 7)
    }

    @Test("a restore and a ?at= reading the store when an admin deletes the room are 404 no-room, whether the store read came before the deletion or after")
    func readsAtADeletion() async throws {
        // Session 41 left it: they were `503 try again` (the room "reloaded meanwhile", or the
        // revisions unreadable), which sent a retry to the room made next under the name; or, read
        // before the deletion, a state of the room the DELETE had already taken away.
        for deletionFirst in [false, true] {
            let (h, _, _) = try await Self.room()
            h.background.hold()
            let at = h.start("GET", "/v1/rooms/r", query: ["at": "7"])
            let restore = h.start("POST", "/v1/rooms/r/restore", query: ["user": "bob"], body: #"{"key":"k","rev":3}"#)
            await h.settle()
            #expect(at.response == nil && restore.response == nil, "both wait for the store")
            let deletion = h.start("DELETE", "/v1/rooms/r")
            await h.settle()
            while h.background.next(newestFirst: deletionFirst) { await h.settle() }
            await h.settle { deletion.response != nil }
            #expect(deletion.response?.status == 204)
            for read in [at, restore] {
                #expect(read.response?.status == 404, "\(deletionFirst): \(String(decoding: read.response?.body ?? [], as: UTF8.self))")
                #expect(read.response?.json?["error"]?["code"] == .string("no-room"))
            }
        }
    }

    @Test("without checkpoints (a room stored before them) the same restore and ?at= read every revision up to memory")
    func fallback() async throws {
        let (h, ann, models) = try await Self.room(withoutCheckpoints: true)
        let floor = h.hub.host("r")!.room.oldestKeptBase
        let before = h.store.revisionsRead
        await h.send(.restore(.init(seq: 41, rev: 12)), on: ann)
        guard let restored = Self.restored(ann) else { Issue.record("\(ann.replies.suffix(2))"); return }
        #expect(restored.rev == 41 && h.hub.host("r")!.room.model == models[12])
        #expect(h.store.revisionsRead - before == floor - 12)

        let at = await h.http("GET", "/v1/rooms/r", query: ["at": "7"])
        #expect(at?.json?["people"] == Self.people(models[7]))
        let restore = await h.http("POST", "/v1/rooms/r/restore", query: ["user": "bob"], body: #"{"key":"k","rev":3}"#)
        #expect(restore?.status == 200 && h.hub.host("r")!.room.model == models[3])
        #expect(h.store.checkpointsRead.isEmpty)
    }

    @Test("just below memory the revisions up to memory are read, unless a checkpoint is at the target itself")
    func nearMemory() async throws {
        let (h, ann, models) = try await Self.room()
        let target = h.hub.host("r")!.room.oldestKeptBase - 1
        let before = h.store.revisionsRead
        await h.send(.restore(.init(seq: 41, rev: target)), on: ann)
        #expect(h.hub.host("r")!.room.model == models[target])
        #expect(h.store.revisionsRead - before == (target % 5 == 0 ? 0 : 1))
    }
}
