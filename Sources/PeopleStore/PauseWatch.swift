import Foundation

/// Whether a cluster node may act on its room leases now, as far as its own pauses and silences go.
///
/// A node's leases live as long as its writer session in PostgreSQL. Another node ends that session
/// only once it has written no heartbeat and run no statement for `silentAfter` (15 s at least), and
/// PostgreSQL's keepalives end it about `cluster.leaseTimeoutSeconds` after the network went silent:
/// so a statement sent on that session at time `s` and answered proves the leases are this node's
/// until about `s` + the lease timeout, whatever happens after. A node learns it lost them only at
/// its next store check; until then it must not act on them. A frozen node's pass (session 42) saw a
/// woken node send a room's webhooks again after the new holder had, and answer the requests queued
/// during the freeze from its old copy of the room (`409 reset` to a feed follower, an export missing
/// the newest revisions).
///
/// Two rules, each a reason not to be sure:
/// - **A pause**: a look at the clock more than `pause` after the one before. From then until a
///   statement sent after it has been answered, the node is not sure (an earlier answer proves nothing
///   about a session another node may have ended during the pause).
/// - **A silence**: no statement answered that was sent less than `sureFor` ago (a partition that
///   holds the writer's statements, a stuck thread that writes no heartbeat, a pause too short to be
///   seen as one but repeated). `sureFor` is three quarters of the lease timeout: the rest is the margin
///   for what is decided before an action is done.
///
/// A node looks every 250 ms on a thread of its own (`PostgresStore`), and whenever it asks. Time is a
/// parameter (nanoseconds of a clock that runs through a suspend: `CLOCK_BOOTTIME`), so every rule has
/// a test without a process.
public struct PauseWatch: Sendable, Equatable {
    /// A gap between two looks at least this long is a pause (4 s): well under the 15 s at least
    /// that another node waits for a silent holder's heartbeat, well over what a busy machine keeps a
    /// thread waiting.
    public static let pause: Int64 = 4_000_000_000

    /// How long an answered statement keeps the node sure, from when it was sent.
    public let sureFor: Int64
    private var lastLook: Int64
    /// When a pause was seen, until a statement sent after it is answered.
    public private(set) var suspectedSince: Int64?
    /// When the newest answered statement on the writer session was sent.
    public private(set) var answeredSentAt: Int64

    /// A watch from `now`, sure for `sureFor` after `answeredSentAt` (the statement that opened the
    /// session or said the node lives, sent at or before `now`).
    public init(now: Int64, sureFor: Int64, answeredSentAt: Int64) {
        lastLook = now
        self.sureFor = sureFor
        self.answeredSentAt = answeredSentAt
    }

    /// Three quarters of `leaseTimeout` seconds, in nanoseconds (`sureFor`).
    public static func sureFor(leaseTimeout: Int) -> Int64 {
        Int64(leaseTimeout) * 750_000_000
    }

    /// Looks at the clock: true if the node may act on its leases (no pause seen since the newest
    /// answer, and that answer's statement sent less than `sureFor` ago). Each pause moves the
    /// suspicion's start to its end: only a statement sent after the latest settles it (one sent
    /// between two pauses, answered after the second, does not: a review, session 42).
    public mutating func look(now: Int64) -> Bool {
        if now - lastLook >= Self.pause { suspectedSince = now }
        lastLook = max(lastLook, now)
        return suspectedSince == nil && !silent(now: now)
    }

    /// No statement sent in the last `sureFor` has been answered.
    public func silent(now: Int64) -> Bool {
        now - answeredSentAt >= sureFor
    }

    /// Whether a statement should be sent now to keep the node sure: half of `sureFor` has gone since
    /// the newest answered one was sent, or a pause is not settled.
    public func wantsAnswer(now: Int64) -> Bool {
        suspectedSince != nil || now - answeredSentAt >= sureFor / 2
    }

    /// A statement sent at `sentAt` on the writer session was answered: the session lived then. It
    /// ends a suspicion that began before it was sent. `sureUntil`: how long the answer proves the
    /// leases when that is not `sureFor` after `sentAt` (a question asked on another connection).
    public mutating func answered(sentAt: Int64, sureUntil: Int64? = nil) {
        if let since = suspectedSince, sentAt > since { suspectedSince = nil }
        answeredSentAt = max(answeredSentAt, (sureUntil ?? sentAt + sureFor) - sureFor)
    }

    /// Nanoseconds of `CLOCK_BOOTTIME`: monotonic, and running while the machine is suspended.
    public static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_BOOTTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
