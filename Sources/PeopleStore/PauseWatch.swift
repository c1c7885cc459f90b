import Foundation

/// Whether a cluster node may act on its room leases now, as far as its own pauses go.
///
/// A node whose process was paused (SIGSTOP, a frozen VM, a machine that did not schedule it) for
/// longer than another node waits for its heartbeat has had its session ended and its rooms taken, and
/// learns it only at its next store check. Until then it must not act on its leases: a frozen node's
/// pass (session 42) saw a woken node send a room's webhooks again after the new holder had (and after
/// the room was deleted and made again), and answer the requests queued during the freeze from its old
/// copy of the room (`409 reset` to a feed follower, an export missing the newest revisions).
///
/// A look at the clock more than `pause` after the one before is a pause: from then until a heartbeat
/// sent after it has been answered, the node is not sure. A node looks every 250 ms on a thread of its
/// own (`PostgresStore`), and whenever it asks. Time is a parameter (nanoseconds of a clock that runs
/// through the pause: `CLOCK_BOOTTIME`), so every rule has a test without a process.
public struct PauseWatch: Sendable, Equatable {
    /// A gap between two looks at least this long is a pause (4 s): well under the 15 s at least
    /// that another node waits for a silent holder's heartbeat, well over what a busy machine keeps a
    /// thread waiting.
    public static let pause: Int64 = 4_000_000_000

    private var lastLook: Int64
    /// When a pause was seen, until a heartbeat sent after it is answered.
    public private(set) var suspectedSince: Int64?

    public init(now: Int64) {
        lastLook = now
    }

    /// Looks at the clock: true if the node may act on its leases (no pause seen since the last
    /// heartbeat answered). Each pause moves the suspicion's start to its end: only a heartbeat sent
    /// after the latest settles it (one sent between two pauses, answered after the second, does not:
    /// a review, session 42).
    public mutating func look(now: Int64) -> Bool {
        if now - lastLook >= Self.pause { suspectedSince = now }
        lastLook = max(lastLook, now)
        return suspectedSince == nil
    }

    /// A heartbeat sent at `sentAt` was answered: the node's session lived then. It ends a suspicion
    /// that began before it was sent.
    public mutating func heartbeatAnswered(sentAt: Int64) {
        if let since = suspectedSince, sentAt > since { suspectedSince = nil }
    }

    /// Nanoseconds of `CLOCK_BOOTTIME`: monotonic, and running while the machine is suspended.
    public static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
