/// A connection's rate limit (`limits.opsPerSecond`): a token bucket of that many frames a second
/// with a burst of twice that, and how long the connection has been over it. Time is a parameter.
struct RateGate {
    enum Verdict: Equatable {
        /// Under the rate: take the frame.
        case pass
        /// Over the rate: drop the frame; `inARow` frames were dropped since the last quiet second.
        case drop(inARow: Int)
        /// Over the rate for more than a second with no quiet second between: close the connection.
        case close
    }

    let perSecond: Int
    private var bucket: TokenBucket
    private var refusedInARow = 0
    private var refusedSince: Int64?
    private var lastRefused: Int64?

    init(perSecond: Int, now: Int64) {
        self.perSecond = perSecond
        bucket = TokenBucket(perSecond: perSecond, burst: perSecond * 2, now: now)
    }

    /// Takes a token at `now` (milliseconds).
    mutating func admit(now: Int64) -> Verdict {
        if bucket.take(now: now) {
            if let last = lastRefused, now - last > 1000 {
                refusedSince = nil
                refusedInARow = 0
            }
            return .pass
        }
        refusedInARow += 1
        lastRefused = now
        let since = refusedSince ?? now
        refusedSince = since
        return now - since > 1000 ? .close : .drop(inARow: refusedInARow)
    }
}

/// A token bucket: `rate` tokens a second, holding at most `burst`.
struct TokenBucket {
    let rate: Double
    let burst: Double
    private var tokens: Double
    private var last: Int64

    init(perSecond rate: Int, burst: Int, now: Int64) {
        self.rate = Double(rate)
        self.burst = Double(burst)
        tokens = Double(burst)
        last = now
    }

    /// Takes a token at `now` (milliseconds); false when the bucket is empty.
    mutating func take(now: Int64) -> Bool {
        if now > last {
            tokens = min(burst, tokens + Double(now - last) * rate / 1000)
            last = now
        }
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}

extension TokenBucket {
    /// Whether the bucket has refilled by `now`: forgetting it changes nothing (a new one starts full).
    func isFull(at now: Int64) -> Bool {
        tokens + Double(max(0, now - last)) * rate / 1000 >= burst
    }
}

/// The HTTP API's buckets, one per caller (user and peer), shared by the hubs of every service thread.
///
/// The table is kept small by forgetting callers whose bucket has refilled, not by starting over: a
/// flood of new names (open mode, or many token subjects) emptied it before, and with it every other
/// caller's limit. A pass reads the whole table, so it runs when the table has doubled since the last
/// one (and holds at least `prunesAbove`).
struct CallerRates {
    private var buckets: [String: TokenBucket] = [:]
    private var pruneAt: Int
    private let prunesAbove: Int

    init(prunesAbove: Int = 10_000) {
        self.prunesAbove = prunesAbove
        pruneAt = prunesAbove
    }

    var count: Int { buckets.count }

    /// Takes a token from `caller`'s bucket (a new one: `rate` a second, a burst of twice that).
    mutating func take(_ caller: String, rate: Int, now: Int64) -> Bool {
        var bucket = buckets[caller] ?? TokenBucket(perSecond: rate, burst: rate * 2, now: now)
        let taken = bucket.take(now: now)
        buckets[caller] = bucket
        if buckets.count > pruneAt {
            buckets = buckets.filter { !$0.value.isFull(at: now) }
            pruneAt = max(prunesAbove, buckets.count * 2)
        }
        return taken
    }
}
