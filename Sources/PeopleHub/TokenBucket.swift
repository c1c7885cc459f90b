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
