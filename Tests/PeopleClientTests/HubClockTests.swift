import Foundation
import PeopleClient
import Testing

/// How far the hub's clock is from this one (`HubClock`, the twin of the web page's hub-clock.js): a
/// revision's `time` is the hub's, so "2 min ago" is measured against the hub's clock now.
@Suite("Hub clock")
struct HubClockTests {
    @Test("the offset is the pong's time minus the middle of the round trip")
    func offset() {
        var clock = HubClock()
        #expect(clock.hubTime(local: 5_000) == 5_000, "no pong yet: this clock")
        clock.pingSent(at: 10_000)
        clock.pong(time: 10_050 - 180_000, at: 10_100)  // the hub is three minutes behind
        #expect(clock.offset == -180_000)
        #expect(clock.hubTime(local: 20_000) == 20_000 - 180_000)
    }

    @Test("pongs answer pings in order; one without time, one after a long round trip or a lost connection changes nothing")
    func unusable() {
        var clock = HubClock()
        clock.pingSent(at: 0)
        clock.pingSent(at: 1_000)
        clock.pong(time: nil, at: 100)
        #expect(clock.offset == 0)
        clock.pong(time: 61_050, at: 1_100)
        #expect(clock.offset == 60_000)
        clock.pong(time: 999_999, at: 2_000)
        #expect(clock.offset == 60_000, "no ping waits for it")
        clock.pingSent(at: 10_000)
        clock.pong(time: 500_000, at: 10_000 + HubClock.longestUsefulRoundTrip + 1)
        #expect(clock.offset == 60_000, "a round trip over the limit says too little")
        clock.pingSent(at: 30_000)
        clock.connectionLost()
        clock.pong(time: 0, at: 30_010)
        #expect(clock.offset == 60_000)
    }

    @Test("a change made this instant on a hub whose clock is behind reads just now, not minutes ago")
    func words() {
        var clock = HubClock()
        let local: Int64 = 1_800_000_000_000
        clock.pingSent(at: local)
        clock.pong(time: local - 180_000 + 20, at: local + 40)
        let madeNow = local + 60 - 180_000
        func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }
        #expect(TimeWords.ago(madeNow, now: date(local + 100)) == "3 min ago", "this clock alone is three minutes off")
        #expect(TimeWords.ago(madeNow, now: date(clock.hubTime(local: local + 100))) == "just now")
    }
}
