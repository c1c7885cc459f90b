import PeopleStore
import Testing

/// A cluster node's own pauses: from a gap between two looks at the clock until a heartbeat sent
/// after it is answered, the node may not act on its leases (a frozen node's pass, session 42).
@Suite("Pause watch")
struct PauseWatchTests {
    static let second: Int64 = 1_000_000_000

    /// One look (outside `#expect`, which cannot mutate).
    func look(_ watch: inout PauseWatch, _ now: Int64) -> Bool { watch.look(now: now) }

    @Test("looks a quarter of a second apart, or a busy machine's few seconds, are no pause")
    func noPause() {
        var watch = PauseWatch(now: 0)
        for t in stride(from: Self.second / 4, through: 20 * Self.second, by: Int(Self.second / 4)) {
            #expect(look(&watch, t))
        }
        #expect(look(&watch, 23 * Self.second), "3 s without a look is not a pause")
        #expect(watch.suspectedSince == nil)
    }

    @Test("a gap of 4 s or more is a pause: not sure until a heartbeat sent after it is answered, not one sent before")
    func pauseUntilAHeartbeatAfterIt() {
        var watch = PauseWatch(now: 0)
        #expect(look(&watch, Self.second))
        // A heartbeat was sent at 1 s; the process is frozen from then until 21 s.
        #expect(!look(&watch, 21 * Self.second))
        #expect(!look(&watch, 21 * Self.second + 1), "still not sure at the next look")
        watch.heartbeatAnswered(sentAt: Self.second)  // the one sent before the pause, answered late
        #expect(!look(&watch, 22 * Self.second))
        watch.heartbeatAnswered(sentAt: 22 * Self.second)
        #expect(look(&watch, 22 * Self.second + 1))
        #expect(watch.suspectedSince == nil)
    }

    @Test("a second pause before the first is settled: a heartbeat sent between them, answered after the second, does not settle it")
    func pausesInARow() {
        // A review (session 42): the suspicion kept the first pause's start, and a heartbeat sent
        // between the two (the session lived then) settled the second, after which it may have died.
        var watch = PauseWatch(now: 0)
        #expect(!look(&watch, 10 * Self.second))
        #expect(!look(&watch, 20 * Self.second))
        watch.heartbeatAnswered(sentAt: 15 * Self.second)
        #expect(!look(&watch, 20 * Self.second + 1), "sent before the second pause")
        watch.heartbeatAnswered(sentAt: 0)  // an old answer changes nothing
        #expect(!look(&watch, 20 * Self.second + 2))
        watch.heartbeatAnswered(sentAt: 20 * Self.second + 3)
        #expect(look(&watch, 20 * Self.second + 4))
    }

    @Test("a clock that reads earlier (two threads' looks out of order) is no pause and does not move the last look back")
    func lookOutOfOrder() {
        var watch = PauseWatch(now: 10 * Self.second)
        #expect(look(&watch, 9 * Self.second))
        #expect(look(&watch, 13 * Self.second), "3 s after the latest look, not 4 after the earlier one")
    }
}
