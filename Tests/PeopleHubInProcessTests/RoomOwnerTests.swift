import Testing
@testable import PeopleHub

/// Which service thread owns a room (`HubGroup.thread(forRoom:threads:)`): the same for a room's
/// WebSocket path and every HTTP path under it, stable, spread over the threads, and the first
/// thread for everything that names no room. (The behaviour across threads is shown over real sockets
/// by `Tests/python/test_room_owners.py` and the transport's `ServiceThreadsTests`.)
@Suite("room owners")
struct RoomOwnerTests {
    @Test("a room's WebSocket path and its HTTP paths go to the same thread; other paths to the first")
    func pathsAgree() {
        for threads in [1, 2, 3, 8] {
            for name in ["a", "team-1", "Room_42", "x.y", String(repeating: "z", count: 64)] {
                let owner = HubGroup.thread(forRoom: name, threads: threads)
                #expect((0..<threads).contains(owner))
                for path in ["/v1/rooms/\(name)", "/v1/rooms/\(name)/batches", "/v1/rooms/\(name)/people/3/blame",
                             "/v1/rooms/\(name)/export"] {
                    #expect(HubGroup.thread(forPath: path, threads: threads) == owner, "\(path) with \(threads)")
                }
            }
            for path in ["/", "/healthz", "/metrics", "/v1/rooms", "/v1/rooms/", "/v1/webhooks", "/index.html"] {
                #expect(HubGroup.thread(forPath: path, threads: threads) == 0, "\(path)")
            }
        }
    }

    @Test("rooms spread evenly over the threads, and the same name always lands on the same one")
    func spread() {
        for threads in [2, 4] {
            var counts = [Int](repeating: 0, count: threads)
            for k in 0..<4_000 { counts[HubGroup.thread(forRoom: "room-\(k)", threads: threads)] += 1 }
            let even = 4_000 / threads
            #expect(counts.allSatisfy { abs($0 - even) < even / 10 }, "\(counts)")
        }
        // Pinned (FNV-1a 64, worked out apart from the hub): the owner of a room must not change between
        // releases, and the Python suite picks its rooms' threads the same way.
        let pinned: [(String, [Int])] = [("a", [0, 1, 4]), ("b", [1, 1, 5]), ("tutorial", [1, 1, 7]),
                                         ("team-1", [0, 2, 6]), ("Room_42", [1, 1, 1])]
        for (name, owners) in pinned {
            #expect([2, 3, 8].map { HubGroup.thread(forRoom: name, threads: $0) } == owners, "\(name)")
        }
    }
}
