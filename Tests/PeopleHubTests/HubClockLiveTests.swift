import Foundation
import PeopleClient
import Testing

/// The terminal client's room measures "2 min ago" against the hub's clock: the ping after the welcome
/// and the hub's `pong` `time` (`HubClock`), with this computer's clock five minutes slow.
@Suite("The terminal client's hub clock against a running hub")
struct HubClockLiveTests {
    @Test("a client whose clock is five minutes slow takes the hub's clock from the pong after its welcome")
    func slowClock() async throws {
        let hub = try await HubProcess.start()
        let queue = DispatchQueue(label: "hub-clock-test")
        let skew: Int64 = 300_000
        let live = try LiveRoom(base: "ws://127.0.0.1:\(hub.port)", room: "clock", user: "ann", queue: queue,
                                localClock: { Int64((Date().timeIntervalSince1970 * 1000).rounded()) - skew })
        queue.async { live.start() }
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline, queue.sync(execute: { live.clock.offset }) == 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        let offset = queue.sync { live.clock.offset }
        #expect(abs(offset - skew) < 2_000, "the offset is the skew, within the round trip: \(offset)")
        let hubNow = queue.sync { live.hubNow }
        #expect(abs(hubNow.timeIntervalSinceNow) < 2, "hubNow is the hub's (here: the real) clock: \(hubNow)")
        await live.stop()
        _ = await hub.stop()
    }
}
