/// How hard the dispatcher tries (HTTP.md §3). Every duration is in milliseconds, so tests can make
/// them tiny.
public struct WebhookPolicy: Sendable, Hashable {
    /// A delivery counts only on a 2xx answer within this (the whole request, body included).
    public var timeout: Int64
    /// The wait after the first failure; it doubles after each further one...
    public var backoffStart: Int64
    /// ...up to this.
    public var backoffMax: Int64
    /// Each wait is scaled by a random factor in 1 ± jitter, so endpoints coming back are not hit in step.
    public var jitter: Double
    /// A room's delivery failing for this long (since its first failure) marks the whole endpoint
    /// failing: it stops retrying until it is re-enabled or the dispatcher restarts.
    public var giveUpAfter: Int64
    /// Revisions read from the store at once.
    public var chunk: Int
    /// A lane's cursor goes to the store after this many deliveries or this many milliseconds since
    /// its last write, whichever comes first: a crash repeats at most that much (each delivery keeps
    /// its `id`), and a busy endpoint does not cost a store write per delivery.
    public var cursorBatch: Int
    public var cursorInterval: Int64
    /// Cluster mode: how often the store is asked for rooms with deliveries left that no node makes
    /// (their owner died, or gave them up), which this node then takes if it can.
    public var scanInterval: Int64
    /// Cluster mode: a room whose deliveries have all been made for this long is given up (its lease,
    /// unless the room is loaded here).
    public var releaseAfter: Int64

    public init(timeout: Int64 = 10_000, backoffStart: Int64 = 1_000, backoffMax: Int64 = 300_000, jitter: Double = 0.2,
                giveUpAfter: Int64 = 72 * 3_600_000, chunk: Int = 100, cursorBatch: Int = 100, cursorInterval: Int64 = 250,
                scanInterval: Int64 = 30_000, releaseAfter: Int64 = 10_000) {
        self.scanInterval = max(10, scanInterval)
        self.releaseAfter = max(0, releaseAfter)
        self.cursorBatch = max(1, cursorBatch)
        self.cursorInterval = max(0, cursorInterval)
        self.timeout = timeout
        self.backoffStart = backoffStart
        self.backoffMax = backoffMax
        self.jitter = jitter
        self.giveUpAfter = giveUpAfter
        self.chunk = chunk
    }

    /// The wait before attempt `failures + 1`, after `failures` (≥ 1) failures in a row; `unit` is a
    /// random number in 0..<1.
    public func backoff(afterFailures failures: Int, unit: Double) -> Int64 {
        let doublings = min(max(failures - 1, 0), 62)
        let base = backoffStart > backoffMax >> doublings ? backoffMax : min(backoffStart << doublings, backoffMax)
        let factor = 1 + jitter * (2 * unit - 1)
        return max(1, Int64((Double(base) * factor).rounded()))
    }
}
