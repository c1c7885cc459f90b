import Logging

/// One log line per `everyMillis` at most for an event that can repeat at every client's reconnect (a
/// store that keeps failing, a room that cannot be loaded): the line that goes says, under `countKey`,
/// how many were left out since the last one. A value on the service thread; the metrics count every
/// event.
struct LogThrottle {
    let countKey: String
    let everyMillis: Int64
    private var loggedAt: Int64?
    private var skipped = 0

    init(countKey: String, everyMillis: Int64 = 10_000) {
        self.countKey = countKey
        self.everyMillis = everyMillis
    }

    /// The event happened at `now`: nil when it is not to be logged (counted), else `metadata` for its
    /// line, with the count of those not logged since the last one when there were any.
    mutating func allow(now: Int64, _ metadata: Logger.Metadata) -> Logger.Metadata? {
        // A clock stepped back (the wall clock's) counts as time gone by: the line is not held back.
        if let loggedAt, now >= loggedAt, now - loggedAt < everyMillis {
            skipped += 1
            return nil
        }
        defer { loggedAt = now; skipped = 0 }
        var metadata = metadata
        if skipped > 0 { metadata[countKey] = "\(skipped)" }
        return metadata
    }
}
