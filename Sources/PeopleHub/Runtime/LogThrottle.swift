import Logging

/// One log line per `everyMillis` at most for an event that can repeat at every client's reconnect (a
/// store that keeps failing, a room that cannot be loaded, a deleted room's client turned away): the line
/// that goes says, under `countKey`, how many were left out since the last one, and a line at the hub's
/// stop says how many were left out after it (`flush`). A value on the service thread; the metrics count
/// every event.
struct LogThrottle {
    let level: Logger.Level
    let message: Logger.Message
    let countKey: String
    let everyMillis: Int64
    private var loggedAt: Int64?
    private var skipped = 0

    init(_ level: Logger.Level, _ message: Logger.Message, countKey: String, everyMillis: Int64 = 10_000) {
        self.level = level
        self.message = message
        self.countKey = countKey
        self.everyMillis = everyMillis
    }

    /// The event happened at `now`: logs the line with `metadata` (and the count of those left out
    /// since the last line, when there were any) unless one went less than `everyMillis` ago; else
    /// counts it.
    mutating func log(_ logger: Logger, now: Int64, _ metadata: @autoclosure () -> Logger.Metadata) {
        // A clock stepped back (the wall clock's) counts as time gone by: the line is not held back.
        if let loggedAt, now >= loggedAt, now - loggedAt < everyMillis {
            skipped += 1
            return
        }
        var metadata = metadata()
        if skipped > 0 { metadata[countKey] = "\(skipped)" }
        loggedAt = now
        skipped = 0
        logger.log(level: level, message, metadata: metadata)
    }

    /// The hub stops: the events left out since the last line, if any, are said in one last line (its
    /// only metadata the count), so that a stop within 10 s of a burst does not hide it.
    mutating func flush(_ logger: Logger) {
        guard skipped > 0 else { return }
        logger.log(level: level, message, metadata: [countKey: "\(skipped)"])
        skipped = 0
    }
}
