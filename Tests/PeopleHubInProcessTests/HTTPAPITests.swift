import Foundation
import PeopleCore
@testable import PeopleHub
import PeopleStore
import Testing
@testable import WebSocketTransport

/// The HTTP API through the hub in-process (the product contract's HTTP API): an HTTP write is the
/// caller's batch in the room — held until durable, broadcast, on the caller's undo stack — and the
/// errors, keys, roles and the change feed behave as the contract says.
@Suite("HTTP API in-process")
struct HTTPAPITests {
    static let zed = #"{"name":"Zed","hairColor":"red","hairLength":"short","eyeColor":"blue","glasses":false,"facialHair":[],"likes":[],"dislikes":[]}"#

    static func insertBody(key: String, base: Int = 0, at: Int = 0) -> String {
        #"{"base":\#(base),"key":"\#(key)","ops":[{"op":"insert","at":\#(at),"person":\#(zed)}]}"#
    }

    @Test("a refused room name is shown quoted, escaped and cut at 80 characters, not echoed whole")
    func refusedRoomNameIsNotEchoedWhole() async throws {
        let h = HubHarness()
        let long = String(repeating: "x", count: 5_000) + "!"
        let answer = try #require(await h.http("GET", "/v1/rooms/" + long))
        #expect(answer.status == 400)
        guard case .string(let message)? = answer.json?["error"]?["message"] else { Issue.record("\(answer)"); return }
        #expect(message.hasSuffix("(got \"" + String(repeating: "x", count: 80) + "…\" (5001 bytes))"), "\(message)")
        #expect(answer.body.count < 400, "\(answer.body.count) bytes")
        let odd = await h.http("GET", "/v1/rooms/a\u{1B}[2Jb")
        guard case .string(let shown)? = odd?.json?["error"]?["message"] else { Issue.record("\(String(describing: odd))"); return }
        #expect(shown.hasSuffix(#"(got "a\u{1b}[2Jb")"#), "control characters are escaped: \(shown)")
    }

    @Test("a batch whose commit was handed to the store before an admin's DELETE is answered once durable (it is a revision the webhooks tell); one the store failed to write is 404 no-room, not a 503 that invites a retry")
    func batchInFlightAtADeletion() async throws {
        // A backend's pass (session 41): the batch was answered 404 while its revision, written before
        // the deletion, reached the webhook endpoint. Before that (a tester's pass), a 503 "the room
        // stopped: room deleted; try again" sent the same key to the room made next under the name.
        for failing in [false, true] {
            let h = HubHarness()
            _ = try await h.joined("ann")
            h.store.hold()
            let batch = h.start("POST", "/v1/rooms/r/batches", query: ["user": "bob"], body: Self.insertBody(key: "k1"))
            await h.settle()
            #expect(batch.response == nil, "held behind its commit")
            let deletion = h.start("DELETE", "/v1/rooms/r")
            await h.settle()
            #expect(batch.response == nil, "still held: the store has not written it")
            h.store.release(error: failing ? StoreError(.io, "disk full") : nil)
            await h.settle()
            #expect(deletion.response?.status == 204)
            if failing {
                #expect(batch.response?.status == 404)
                #expect(batch.response?.json?["error"]?["code"] == .string("no-room"))
            } else {
                #expect(batch.response?.status == 200)
                #expect(batch.response?.json?["rev"] == .int(1))
            }
        }
    }

    @Test("a WebSocket submit whose commit was handed to the store before an admin's DELETE is acked once durable, then its connection closes (1000 room deleted); one the store failed to write gets no ack")
    func submitInFlightAtADeletion() async throws {
        // Session 41 left it: the connection was closed at the DELETE, so the submit had no `ack`
        // while its revision, written before the deletion, reached the webhooks.
        for failing in [false, true] {
            let h = HubHarness()
            let ann = try await h.joined("ann")
            let bob = try await h.joined("bob")
            h.store.hold()
            await h.send(.submit(seq: 1, base: 0, [.set(1, .glasses(false))]), on: ann)
            #expect(ann.acks().isEmpty, "held behind its commit")
            let deletion = h.start("DELETE", "/v1/rooms/r")
            await h.settle()
            // Here the store deletes at once, and (unlike a real store, which writes in order) writes
            // the room a hello makes anew before ann's commit: ann's socket still waits for its ack
            // beside the new room. What ann sends now reads nothing, and never reaches the new room.
            let carl = try #require(h.connect())
            h.hello(carl, as: "carl")
            await h.settle()
            while h.store.pendingCount > 1 { h.store.releaseNewest() }  // the new room's writes
            await h.settle()
            #expect(carl.welcome?.rev == 0)
            await h.send(.submit(seq: 2, base: 0, [.set(1, .glasses(true))]), on: ann)
            #expect(h.hub.host("r")?.room.revision == 0, "ann's frame went to the new room")
            #expect(ann.acks().isEmpty && ann.errors.isEmpty, "still held: the store has not written it")
            h.store.release(error: failing ? StoreError(.io, "disk full") : nil)  // ann's commit
            await h.settle()
            #expect(deletion.response?.status == 204)
            if failing {
                #expect(ann.acks().isEmpty && bob.ops().isEmpty)
            } else {
                #expect(ann.acks().map(\.seq) == [1] && ann.acks().map(\.rev) == [1], "\(ann.sent)")
                #expect(bob.ops().map(\.rev) == [1], "a teammate is told the revision as the webhooks are")
            }
            #expect(ann.errors.isEmpty, "the frame sent after the DELETE is not answered")
            for connection in [ann, bob] {
                #expect(connection.closeCode == 1000 && connection.closeReason == CloseReason.roomDeleted)
            }
        }
    }

    @Test("a deletion the store fails: 503, the room's sockets are closed 1011 (they come back to the room), and a read that waited is answered from the room, not 404")
    func failedDeletion() async throws {
        // A review (session 42): a read that came back while the room was being deleted was 404
        // whatever the store then did, and the sockets were told "room deleted" of a room still there.
        let (h, ann, models) = try await CheckpointReadTests.room()
        h.background.hold()
        let at = h.start("GET", "/v1/rooms/r", query: ["at": "7"])
        await h.settle()
        h.store.failDeletes = true
        let deletion = h.start("DELETE", "/v1/rooms/r")
        await h.settle()
        while h.background.next(newestFirst: true) { await h.settle() }  // the deletion first, then the read
        await h.settle { deletion.response != nil && at.response != nil }
        #expect(deletion.response?.status == 503)
        #expect(ann.closeCode == 1011 && ann.closeReason == "store failed")
        #expect(at.response?.status == 200 && at.response?.json?["people"] == CheckpointReadTests.people(models[7]),
                "\(String(decoding: at.response?.body ?? [], as: UTF8.self))")
        h.store.failDeletes = false
        let back = try #require(h.connect())
        h.hello(back, as: "ann")
        while back.welcome == nil && back.closeCode == nil {
            if !h.background.next() { await h.settle() }
        }
        #expect(back.welcome?.rev == 40, "the room is still there")
    }

    @Test("a read of the store under way keeps its room loaded: a DELETE that comes meanwhile makes it 404, not an answer from the room's copy", arguments: [false, true])
    func storeReadKeepsTheRoomLoaded(export: Bool) async throws {
        // Session 45's Left: the idle room was unloaded while the read ran, then deleted in the store
        // with no host to tell, and the read answered 200 from its copy of a room that was gone.
        let h = HubHarness { $0.roomPolicy.keptRevisions = 3 }
        let bob = try await h.joined("bob")
        for seq in 1...10 {
            await h.send(.submit(seq: seq, base: seq - 1, [.set(1, .glasses(seq % 2 == 0))], label: "G\(seq)"), on: bob)
        }
        await h.disconnect(bob)
        h.background.hold()
        let read = export ? h.start("GET", "/v1/rooms/r/export", query: ["history": "true"])
            : h.start("GET", "/v1/rooms/r", query: ["at": "2"])
        await h.settle()
        #expect(h.background.waiting == 1, "the read of the store waits")
        h.clock.advance(by: 61_000)                 // past rooms.unloadAfterSeconds (60)
        h.hub.sweep()
        await h.settle()
        #expect(h.hub.host("r") != nil, "not unloaded while the read is under way")
        let deletion = h.start("DELETE", "/v1/rooms/r")
        await h.settle()
        while h.background.next(newestFirst: true) { await h.settle() }  // the deletion first, then the read
        await h.settle { deletion.response != nil && read.response != nil }
        #expect(deletion.response?.status == 204)
        #expect(read.response?.status == 404 && read.response?.json?["error"]?["code"] == .string("no-room"),
                "\(read.response?.status ?? 0) \(String(decoding: read.response?.body.prefix(200) ?? [], as: UTF8.self))")
    }

    @Test("two batches held at a deletion are answered each by its own commit: the one written 200, the one the store failed 404")
    func batchesAtADeletionAreAnsweredByTheirOwnCommits() async throws {
        // A review (session 41): one empty append decided every held answer, so a batch written
        // before a failed one was told 404 while its revision reached the webhooks.
        let h = HubHarness()
        _ = try await h.joined("ann")
        h.store.hold()
        let first = h.start("POST", "/v1/rooms/r/batches", query: ["user": "bob"], body: Self.insertBody(key: "k1"))
        await h.settle()
        let second = h.start("POST", "/v1/rooms/r/batches", query: ["user": "bob"], body: Self.insertBody(key: "k2", base: 1))
        await h.settle()
        let deletion = h.start("DELETE", "/v1/rooms/r")
        await h.settle()
        #expect(first.response == nil && second.response == nil, "both held behind their commits")
        // Every commit but the last (the second batch's) is written.
        while h.store.pendingCount > 1 { h.store.releaseOne() }
        await h.settle()
        #expect(first.response?.status == 200 && first.response?.json?["rev"] == .int(1))
        #expect(second.response == nil, "still held")
        h.store.releaseOne(error: StoreError(.io, "disk full"))
        await h.settle()
        #expect(second.response?.status == 404 && second.response?.json?["error"]?["code"] == .string("no-room"))
        h.store.release()
        await h.settle()
        #expect(deletion.response?.status == 204)
    }

    @Test("an HTTP batch as ann: answered only once durable, broadcast to the room, undone by ann's WebSocket")
    func batchIsTheCallersEdit() async throws {
        let h = HubHarness()
        let ann = try await h.joined("ann")
        let bob = try await h.joined("bob")
        h.store.hold()
        let exchange = h.start("POST", "/v1/rooms/r/batches", query: ["user": "ann"], body: Self.insertBody(key: "k1"))
        await h.settle()
        #expect(exchange.response == nil, "answered before the revision was durable")
        #expect(bob.ops().isEmpty)
        h.store.release()
        await h.settle()
        let response = try #require(exchange.response)
        #expect(response.status == 200)
        #expect(response.json?["rev"] == .int(1))
        guard case .array(let ops)? = response.json?["ops"], case .int(let tag)? = ops.first?["person"]?["tag"] else {
            Issue.record("no ops in \(String(decoding: response.body, as: UTF8.self))"); return
        }
        #expect(tag > 0 && !Room.tagPlaceholders.contains(tag), "the hub gave the insert a tag")
        #expect(bob.ops().map(\.rev) == [1] && bob.ops().first?.author == "ann")
        #expect(ann.ops().map(\.rev) == [1], "ann's WebSocket session sees her HTTP edit as a broadcast")
        #expect(ann.replies.contains(.history(.init(canUndo: true, canRedo: false, undoLabel: nil, redoLabel: nil))),
                "and her undo button lights up")
        // ann undoes it from her WebSocket: it was on her stack.
        await h.send(.undo(.init(seq: 1)), on: ann)
        let undone = try #require(ann.replies.lazy.compactMap { if case .undone(let u) = $0 { u } else { nil } }.first)
        #expect(undone.rev == 2 && undone.ops == [.remove(tag)])
    }

    @Test("a key answers again with the first answer, applying nothing twice; a missing key is bad-message")
    func idempotencyKeys() async throws {
        let h = HubHarness()
        let first = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "ann"], body: Self.insertBody(key: "same"))
        #expect(first?.status == 404, "HTTP does not create rooms")
        _ = try await h.joined("bob")
        let one = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "ann"], body: Self.insertBody(key: "same"))
        let two = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "ann"], body: Self.insertBody(key: "same"))
        #expect(one?.status == 200 && one == two)
        let state = await h.http("GET", "/v1/rooms/r")
        #expect(state?.json?["rev"] == .int(1))
        let other = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "cat"], body: Self.insertBody(key: "same"))
        #expect(other?.json?["rev"] == .int(2), "a key is per user")
        let none = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "ann"], body: #"{"base":0,"ops":[]}"#)
        #expect(none?.status == 400 && none?.json?["error"]?["code"] == .string("bad-message"))
    }

    @Test("errors: bad JSON 400, invalid op 422, stale reads 400, unknown room 404, no user 400")
    func errors() async throws {
        let h = HubHarness()
        _ = try await h.joined("bob")
        func code(_ r: HTTPResponse?) -> String? { if case .string(let c)? = r?.json?["error"]?["code"] { c } else { nil } }
        let badJSON = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "ann"], body: "{")
        #expect(badJSON?.status == 400 && code(badJSON) == "bad-json")
        let invalid = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "ann"],
                                   body: #"{"base":0,"key":"x","ops":[{"op":"remove","tag":999}]}"#)
        #expect(invalid?.status == 422 && code(invalid) == "invalid-op")
        let noUser = await h.http("POST", "/v1/rooms/r/batches", body: Self.insertBody(key: "y"))
        #expect(noUser?.status == 400 && code(noUser) == "bad-message")
        let future = await h.http("GET", "/v1/rooms/r", query: ["at": "5"])
        #expect(future?.status == 400)
        let missing = await h.http("GET", "/v1/rooms/absent")
        #expect(missing?.status == 404 && code(missing) == "no-room")
        let badName = await h.http("GET", "/v1/rooms/bad%20name")
        #expect(badName?.status == 400)
    }

    @Test("bodies a backend gets wrong: a number too big for a double, a negative base, another user named, no body at all, a loose yes-or-no: each 400, nothing applied")
    func wrongBodies() async throws {
        let h = HubHarness()
        _ = try await h.joined("bob")
        let edit = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "ann"], body: Self.insertBody(key: "first"))
        #expect(edit?.json?["rev"] == .int(1))
        func refused(_ path: String, _ body: String, _ words: String, user: String = "ann") async {
            let r = await h.http("POST", "/v1/rooms/r/" + path, query: ["user": user], body: body)
            #expect(r?.status == 400 && r?.json?["error"]?["code"] == .string("bad-message"), "\(body): \(String(describing: r))")
            if case .string(let message)? = r?.json?["error"]?["message"] {
                #expect(message.contains(words), "\(body): \(message)")
            } else {
                Issue.record("\(body): no message")
            }
        }
        // Before: an entry or a scope of 1e400 was read as left out, and ann's last step was undone.
        await refused("undo", #"{"key":"u1","entry":1e400}"#, "`entry` must be an integer")
        await refused("undo", #"{"key":"u2","scope":1e400}"#, "`scope` must be an integer")
        await refused("redo", #"{"key":"u3","scope":-1e400}"#, "`scope` must be an integer")
        await refused("batches", #"{"key":"b1","base":1e400,"ops":[]}"#, "`base` must be an integer")
        await refused("restore", #"{"key":"r1","rev":1e400}"#, "`rev` must be an integer")
        // Before: 409 stale-base (the WebSocket said bad-message).
        await refused("batches", #"{"key":"b2","base":-1,"ops":[]}"#, "not a revision")
        await refused("batches", Self.insertBody(key: "b3").replacingOccurrences(of: "{\"base\"", with: "{\"user\":\"bob\",\"base\""),
                      "is not the caller")
        await refused("undo", "", "has no body")
        let state = await h.http("GET", "/v1/rooms/r")
        #expect(state?.json?["rev"] == .int(1), "nothing was applied")
        let loose = await h.http("GET", "/v1/rooms/r/export", query: ["history": "banana"])
        #expect(loose?.status == 400)
        let yes = await h.http("GET", "/v1/rooms/r/export", query: ["history": "true"])
        #expect(yes?.json?["revisions"] != nil)
    }

    @Test("an admin token lists only the rooms its patterns match, a page at a time, with next only when more of those follow")
    func listingFollowsThePatterns() throws {
        // The listing's read (`visibleRooms`, off the service thread); the route adds `next` when `more`.
        let store = InMemoryStore()
        for name in ["a-1", "team-1", "team-2", "team-3", "zeta"] { store.save(Room(name: name).snapshot(), room: name) }
        func names(_ patterns: [String]?, after: String? = nil, prefix: String? = nil, limit: Int) throws -> ([String], Bool) {
            let admin = HTTPCaller(user: "root", role: .admin, rooms: patterns?.map(RoomPattern.init))
            let page = try Hub.visibleRooms(in: store, to: admin, after: after, prefix: prefix, limit: limit)
            return (page.rooms.map(\.name), page.more)
        }
        #expect(try names(["team-*"], limit: 2) == (["team-1", "team-2"], true))
        // Before: `next` here (zeta follows, but the token does not see it), then an empty page.
        #expect(try names(["team-*"], after: "team-2", limit: 2) == (["team-3"], false))
        #expect(try names(["team-*"], prefix: "z", limit: 5) == ([], false))
        #expect(try names(["team-*"], prefix: "team-2", limit: 5) == (["team-2"], false))
        #expect(try names(["a-*", "zeta"], limit: 1) == (["a-1"], true))
        #expect(try names(["a-*", "zeta"], after: "a-1", limit: 1) == (["zeta"], false))
        #expect(try names(nil, after: "team-3", limit: 1) == (["zeta"], false))
        #expect(try names(["*-?"], limit: 10) == (["a-1", "team-1", "team-2", "team-3"], false))
    }

    @Test("token mode: no token 401, a viewer reads but cannot write (403), another room 403, an editor writes as the token's user")
    func tokens() async throws {
        let authority = try await TokenAuthority(secret: Array(repeating: UInt8(7), count: 32))
        let h = HubHarness { $0.auth = authority }
        let editor = try await authority.mint(user: "ann", rooms: ["r"], role: .editor, ttl: 600)
        let viewer = try await authority.mint(user: "vic", rooms: ["r"], role: .viewer, ttl: 600)
        _ = try await h.joined("ann", token: editor)
        let anonymous = await h.http("GET", "/v1/rooms/r")
        #expect(anonymous?.status == 401)
        let read = h.start("GET", "/v1/rooms/r", token: viewer)
        await h.settle(until: { read.response != nil })
        #expect(read.response?.status == 200)
        let write = h.start("POST", "/v1/rooms/r/batches", body: Self.insertBody(key: "v"), token: viewer)
        await h.settle(until: { write.response != nil })
        #expect(write.response?.status == 403)
        let elsewhere = h.start("GET", "/v1/rooms/other", token: editor)
        await h.settle(until: { elsewhere.response != nil })
        #expect(elsewhere.response?.status == 403)
        let written = h.start("POST", "/v1/rooms/r/batches", query: ["user": "mallory"], body: Self.insertBody(key: "e"),
                              token: editor)
        await h.settle(until: { written.response != nil })
        #expect(written.response?.status == 200)
        let log = h.start("GET", "/v1/rooms/r/log", token: editor)
        await h.settle(until: { log.response != nil })
        guard case .array(let entries)? = log.response?.json?["entries"] else { Issue.record("no log"); return }
        #expect(entries.first?["author"] == .string("ann"), "the token's user wrote it, not the query's")
        #expect(entries.first?["entry"] != nil, "ann's own entry is marked undoable for ann")
    }

    @Test("a write's body is read only once its caller may write there: without a token, as a viewer or for another room, a body that is not JSON is 401 or 403, not 400")
    func bodyReadAfterTheCaller() async throws {
        let authority = try await TokenAuthority(secret: Array(repeating: UInt8(7), count: 32))
        let h = HubHarness { $0.auth = authority }
        let viewer = try await authority.mint(user: "vic", rooms: ["r"], role: .viewer, ttl: 600)
        let editor = try await authority.mint(user: "ann", rooms: ["r"], role: .editor, ttl: 600)
        let notJSON = String(repeating: "[", count: 10_000)
        for (path, token, status) in [("/v1/rooms/r/batches", nil, 401), ("/v1/rooms/r/undo", viewer, 403),
                                      ("/v1/rooms/other/restore", editor, 403), ("/v1/webhooks/enable", editor, 403)] {
            let refused = h.start("POST", path, body: notJSON, token: token)
            await h.settle(until: { refused.response != nil })
            #expect(refused.response?.status == status, "\(path)")
        }
        let parsed = h.start("POST", "/v1/rooms/r/batches", body: notJSON, token: editor)
        await h.settle(until: { parsed.response != nil })
        #expect(parsed.response?.status == 400 && parsed.response?.json?["error"]?["code"] == .string("bad-json"))
    }

    @Test("a key is 1 to 128 code points: 64 letters each with a combining accent (128) pass, 65 do not; 128 two-byte letters pass")
    func keyLengthInCodePoints() async throws {
        let h = HubHarness()
        _ = try await h.joined("bob")
        let accented = String(repeating: "e\u{301}", count: 64)
        let fits = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "ann"], body: Self.insertBody(key: accented))
        #expect(fits?.status == 200)
        let over = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "ann"],
                                body: Self.insertBody(key: accented + "e\u{301}", base: 1))
        #expect(over?.status == 400 && over?.json?["error"]?["code"] == .string("bad-message"), "65 characters, 130 code points")
        let twoByte = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "ann"],
                                   body: Self.insertBody(key: String(repeating: "é", count: 128), base: 1))
        #expect(twoByte?.status == 200)
    }

    @Test("the change feed: every revision in order from 0, paged; only durable revisions; a waiting poll answered by the next commit")
    func changeFeed() async throws {
        let h = HubHarness()
        let bob = try await h.joined("bob")
        for seq in 1...5 {
            await h.send(.submit(seq: seq, base: seq - 1, [.set(1, .glasses(seq % 2 == 0))]), on: bob)
        }
        let page = await h.http("GET", "/v1/rooms/r/revisions", query: ["after": "1", "limit": "3"])
        guard case .array(let revisions)? = page?.json?["revisions"] else { Issue.record("no feed"); return }
        #expect(revisions.map { $0["rev"] } == [.int(2), .int(3), .int(4)])
        #expect(page?.json?["head"] == .int(5))
        #expect(revisions.allSatisfy { $0["author"] == .string("bob") && $0["kind"] == .string("edit") && $0["time"] != nil })
        h.store.hold()
        await h.send(.submit(seq: 6, base: 5, [.set(1, .glasses(true))]), on: bob)
        let notYet = await h.http("GET", "/v1/rooms/r/revisions", query: ["after": "5"])
        #expect(notYet?.json?["revisions"] == .array([]), "revision 6 is not durable yet")
        // A long poll (the harness runs timers at once, so a poll registered now would time out now:
        // this one is answered by the durable revision through `revisionsDurable`).
        h.store.release()
        await h.settle()
        let after = await h.http("GET", "/v1/rooms/r/revisions", query: ["after": "5"])
        guard case .array(let six)? = after?.json?["revisions"] else { Issue.record("no feed"); return }
        #expect(six.map { $0["rev"] } == [.int(6)])
    }

    @Test("restore and selective undo over HTTP, as the caller; log and blame read for the caller")
    func historyRoutes() async throws {
        let h = HubHarness()
        _ = try await h.joined("bob")
        _ = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "ann"], body: Self.insertBody(key: "1"))
        _ = await h.http("POST", "/v1/rooms/r/batches", query: ["user": "ann"],
                         body: #"{"base":1,"key":"2","ops":[{"op":"set","tag":1,"field":"glasses","value":false}]}"#)
        let log = await h.http("GET", "/v1/rooms/r/log", query: ["user": "ann"])
        guard case .array(let entries)? = log?.json?["entries"], case .int(let first)? = entries.last?["entry"] else {
            Issue.record("no entries: \(String(decoding: log?.body ?? [], as: UTF8.self))"); return
        }
        let undo = await h.http("POST", "/v1/rooms/r/undo", query: ["user": "ann"], body: #"{"key":"u","entry":\#(first)}"#)
        #expect(undo?.status == 200 && undo?.json?["rev"] == .int(3), "the older step undone, the later one kept")
        let blame = await h.http("GET", "/v1/rooms/r/people/1/blame")
        #expect(blame?.json?["fields"]?["glasses"]?["user"] == .string("ann"))
        let restore = await h.http("POST", "/v1/rooms/r/restore", query: ["user": "ann"], body: #"{"key":"r","rev":0}"#)
        #expect(restore?.status == 200 && restore?.json?["rev"] == .int(4))
        let state = await h.http("GET", "/v1/rooms/r")
        let seed = await h.http("GET", "/v1/rooms/r", query: ["at": "0"])
        #expect(state?.json?["people"] == seed?.json?["people"])
        let missing = await h.http("POST", "/v1/rooms/r/undo", query: ["user": "ann"], body: #"{"key":"m","entry":9999}"#)
        #expect(missing?.status == 404 && missing?.json?["error"]?["code"] == .string("no-entry"))
    }

    /// A hub keeping 3 revisions in memory, and bob's 10 revisions in room `r` (most of them in the store only).
    static func tenBelowMemory() async throws -> HubHarness {
        let h = HubHarness { $0.roomPolicy.keptRevisions = 3 }
        let bob = try await h.joined("bob")
        for seq in 1...10 {
            await h.send(.submit(seq: seq, base: seq - 1, [.set(1, .glasses(seq % 2 == 0))], label: "G\(seq)"), on: bob)
        }
        return h
    }

    @Test("an export whose room was made again while its pages were read is refused (503), not two lives mixed")
    func exportAcrossLives() async throws {
        let h = try await Self.tenBelowMemory()
        #expect(await h.http("GET", "/v1/rooms/r/export", query: ["history": "true"])?.status == 200)
        // The store's revision 1 as a new life of the room would have it, once the first page is read.
        h.store.rewriteRead = { after, through, revisions in
            guard after == 0, through == 1, let first = revisions.first else { return revisions }
            return [Revision(number: 1, author: "someone else", kind: first.kind, label: first.label,
                             applied: first.applied, timestamp: first.timestamp + 1)]
        }
        let mixed = await h.http("GET", "/v1/rooms/r/export", query: ["history": "true"])
        #expect(mixed?.status == 503 && mixed?.json?["error"]?["code"] == .string("unavailable"),
                "\(String(decoding: mixed?.body ?? [], as: UTF8.self))")
    }

    @Test("below the memory window (keptRevisions 3): ?at=, a restore, a long log, the feed and an export read the store")
    func belowMemory() async throws {
        let h = try await Self.tenBelowMemory()
        let at2 = await h.http("GET", "/v1/rooms/r", query: ["at": "2"])
        #expect(at2?.status == 200 && at2?.json?["rev"] == .int(2), "\(String(decoding: at2?.body ?? [], as: UTF8.self))")
        guard case .array(let people)? = at2?.json?["people"] else { Issue.record("no people"); return }
        #expect(people.first?["glasses"] == .bool(true), "after revision 2 (the seed's true, then false, then true)")
        let log = await h.http("GET", "/v1/rooms/r/log", query: ["limit": "8"])
        guard case .array(let entries)? = log?.json?["entries"] else { Issue.record("no log"); return }
        #expect(entries.map { $0["rev"] } == (3...10).reversed().map { .int($0) })
        let feed = await h.http("GET", "/v1/rooms/r/revisions", query: ["after": "0", "limit": "4"])
        guard case .array(let revisions)? = feed?.json?["revisions"] else { Issue.record("no feed"); return }
        #expect(revisions.map { $0["rev"] } == [.int(1), .int(2), .int(3), .int(4)])
        let export = await h.http("GET", "/v1/rooms/r/export", query: ["history": "true"])
        guard case .array(let all)? = export?.json?["revisions"] else { Issue.record("no export"); return }
        #expect(all.count == 10 && export?.json?["initial"] != nil)
        let at1 = await h.http("GET", "/v1/rooms/r", query: ["at": "1"])
        let restore = await h.http("POST", "/v1/rooms/r/restore", query: ["user": "ann"], body: #"{"key":"r","rev":1}"#)
        #expect(restore?.status == 200 && restore?.json?["rev"] == .int(11), "\(String(decoding: restore?.body ?? [], as: UTF8.self))")
        let now = await h.http("GET", "/v1/rooms/r")
        #expect(now?.json?["people"] == at1?.json?["people"] && at1?.json?["people"] != at2?.json?["people"])
        let again = await h.http("POST", "/v1/rooms/r/restore", query: ["user": "ann"], body: #"{"key":"r","rev":1}"#)
        #expect(again == restore, "the key answers again, without reading or applying anything")
    }
}
