import PeopleStore
import Testing

/// A cluster node's own pauses and silences: from a gap between two looks at the clock until a
/// statement sent after it is answered on the writer session, and whenever no statement sent in the
/// last `sureFor` has been answered, the node may not act on its leases (a frozen node's pass, session
/// 42; the silence, session 43).
@Suite("Pause watch")
struct PauseWatchTests {
    static let second: Int64 = 1_000_000_000
    /// As for the default `cluster.leaseTimeoutSeconds` (30): sure for 22.5 s after an answer.
    static let sureFor = PauseWatch.sureFor(leaseTimeout: 30)

    /// One look (outside `#expect`, which cannot mutate).
    func look(_ watch: inout PauseWatch, _ now: Int64) -> Bool { watch.look(now: now) }

    func watch(at now: Int64) -> PauseWatch {
        PauseWatch(now: now, sureFor: Self.sureFor, answeredSentAt: now)
    }

    @Test("sure for three quarters of the lease timeout after an answer")
    func sureForIsThreeQuarters() {
        #expect(PauseWatch.sureFor(leaseTimeout: 30) == 22_500_000_000)
        #expect(PauseWatch.sureFor(leaseTimeout: 2) == 1_500_000_000)
    }

    @Test("looks a quarter of a second apart, or a busy machine's few seconds, are no pause while the store answers")
    func noPause() {
        var watch = watch(at: 0)
        for t in stride(from: Self.second / 4, through: 20 * Self.second, by: Int(Self.second / 4)) {
            if t % (5 * Self.second) == 0 { watch.answered(sentAt: t - Self.second / 100) }  // the 5 s check
            #expect(look(&watch, t))
        }
        #expect(look(&watch, 23 * Self.second), "3 s without a look is not a pause")
        #expect(watch.suspectedSince == nil)
    }

    @Test("a gap of 4 s or more is a pause: not sure until a statement sent after it is answered, not one sent before")
    func pauseUntilAnAnswerAfterIt() {
        var watch = watch(at: 0)
        #expect(look(&watch, Self.second))
        // A heartbeat was sent at 1 s; the process is frozen from then until 11 s.
        #expect(!look(&watch, 11 * Self.second))
        #expect(!look(&watch, 11 * Self.second + 1), "still not sure at the next look")
        watch.answered(sentAt: Self.second)  // the one sent before the pause, answered late
        #expect(!look(&watch, 12 * Self.second))
        watch.answered(sentAt: 12 * Self.second)
        #expect(look(&watch, 12 * Self.second + 1))
        #expect(watch.suspectedSince == nil)
    }

    @Test("a second pause before the first is settled: an answer to a statement sent between them does not settle it")
    func pausesInARow() {
        // A review (session 42): the suspicion kept the first pause's start, and a heartbeat sent
        // between the two (the session lived then) settled the second, after which it may have died.
        var watch = watch(at: 0)
        #expect(!look(&watch, 10 * Self.second))
        #expect(!look(&watch, 20 * Self.second))
        watch.answered(sentAt: 15 * Self.second)
        #expect(!look(&watch, 20 * Self.second + 1), "sent before the second pause")
        watch.answered(sentAt: 0)  // an old answer changes nothing
        #expect(!look(&watch, 20 * Self.second + 2))
        watch.answered(sentAt: 20 * Self.second + 3)
        #expect(look(&watch, 20 * Self.second + 4))
    }

    @Test("a clock that reads earlier (two threads' looks out of order) is no pause and does not move the last look back")
    func lookOutOfOrder() {
        var watch = watch(at: 10 * Self.second)
        #expect(look(&watch, 9 * Self.second))
        #expect(look(&watch, 13 * Self.second), "3 s after the latest look, not 4 after the earlier one")
    }

    @Test("a node that runs but is not answered (a partition, a stuck check) is not sure once its newest answered statement was sent sureFor ago")
    func silence() {
        var watch = watch(at: 0)
        var t: Int64 = 0
        // Looking every 250 ms, no pause: sure until 22.5 s after the last answer's statement was sent.
        while t < Self.sureFor - Self.second / 4 {
            t += Self.second / 4
            #expect(look(&watch, t), "sure at \(t)")
        }
        #expect(!look(&watch, Self.sureFor), "silent at 22.5 s")
        #expect(watch.suspectedSince == nil, "a silence is not a pause")
        // A statement sent at 0 answered only now (the heartbeat a partition held) proves nothing newer.
        watch.answered(sentAt: 0)
        #expect(!look(&watch, Self.sureFor + Self.second / 4))
        // One sent at 10 s proves the session lived then: sure to 32.5 s.
        watch.answered(sentAt: 10 * Self.second)
        t = Self.sureFor + Self.second / 4
        while t < 32 * Self.second + Self.second / 4 {
            t += Self.second / 4
            #expect(look(&watch, t), "sure at \(t)")
        }
        #expect(!look(&watch, 32 * Self.second + Self.second / 2))
    }

    @Test("an answer asked aside (the writer busy in a long statement) keeps the node sure until the time it proves, and settles a pause it was asked after")
    func answerAside() {
        var watch = PauseWatch(now: 0, sureFor: Self.sureFor, answeredSentAt: -20 * Self.second)
        #expect(!look(&watch, 5 * Self.second), "a pause")
        // Asked at 6 s: the session is busy, so it cannot be ended before 6 s + 15 s (half the lease
        // timeout, 15 s, bounds it too): sure until 21 s, not 6 s + 22.5 s.
        watch.answered(sentAt: 6 * Self.second, sureUntil: 21 * Self.second)
        var t = 6 * Self.second
        while t < 21 * Self.second - Self.second / 4 {
            t += Self.second / 4
            #expect(look(&watch, t), "sure at \(t)")
        }
        #expect(!look(&watch, 21 * Self.second))
        // One that proves less than an earlier answer changes nothing.
        watch.answered(sentAt: 21 * Self.second, sureUntil: 20 * Self.second)
        #expect(!look(&watch, 21 * Self.second + 1))
    }

    @Test("an answer is wanted once half of sureFor has gone without one, and while a pause is not settled")
    func wantsAnswer() {
        var watch = watch(at: 0)
        #expect(!watch.wantsAnswer(now: Self.sureFor / 2 - 1))
        #expect(watch.wantsAnswer(now: Self.sureFor / 2))
        watch.answered(sentAt: Self.sureFor / 2)
        #expect(!watch.wantsAnswer(now: Self.sureFor / 2 + Self.second / 4))
        // A pause (no look for 5 s) wants one at once.
        #expect(!look(&watch, Self.sureFor / 2 + 5 * Self.second))
        #expect(watch.wantsAnswer(now: Self.sureFor / 2 + 5 * Self.second))
    }
}
