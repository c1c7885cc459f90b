/// An agent session's idempotency keys (the product contract's HTTP API §2): each key's first answer,
/// given again to a write with the same key for `Room.keyLifetime` (24 hours).
///
/// Bounded twice, so that one caller cannot grow a room's memory and every snapshot of it without
/// end: a key older than the lifetime goes, and beyond `RoomPolicy.keysKept` keys the oldest go. Both
/// are done in one pass now and then, not at every write (a pass reads every key): when the oldest key
/// is an hour past the lifetime, or the count a tenth past the limit. So at least the newest
/// `keysKept` keys of the last 24 hours are always answered again. Which keys a pass drops depends
/// only on the keys and the time, so a room replayed from its journal, or restored from a snapshot,
/// keeps the same ones as the room that made them.
struct IdempotencyKeys: Sendable {
    /// A first answer kept for an idempotency key, and when it was given.
    struct KeyedReply: Hashable, Sendable {
        var reply: ServerMessage
        var time: Int64
    }

    /// By the key's UTF-8 bytes: keys are opaque, and Swift's `String` equality would take "é" and
    /// "e" + U+0301 for one key (the second write answered with the first's answer, not applied).
    private(set) var replies: [[UInt8]: KeyedReply] = [:]
    /// The oldest kept key's time (nil: no key): a pass is due an hour after it expires.
    private var oldest: Int64?

    subscript(key: String) -> KeyedReply? { replies[Array(key.utf8)] }

    var isEmpty: Bool { replies.isEmpty }
    var count: Int { replies.count }

    /// The keys and their answers in the order of their bytes (a snapshot's).
    var sorted: [(key: String, kept: KeyedReply)] {
        replies.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map { (String(decoding: $0.key, as: UTF8.self), $0.value) }
    }

    /// Keeps `reply` as the answer for `key` from `time`; now and then forgets the keys past `lifetime`
    /// and, beyond `limit`, the oldest.
    mutating func keep(_ reply: ServerMessage, key: String, time: Int64, lifetime: Int64, limit: Int) {
        restore(reply, key: key, time: time)
        if let oldest, time - oldest >= lifetime + lifetime / 24 || replies.count > limit + limit / 10 {
            prune(now: time, lifetime: lifetime, limit: limit)
        }
    }

    /// A key from a snapshot, as it was kept.
    mutating func restore(_ reply: ServerMessage, key: String, time: Int64) {
        let replaced = replies.updateValue(KeyedReply(reply: reply, time: time), forKey: Array(key.utf8))
        if let replaced, replaced.time == oldest, replaced.time != time {
            // An expired key kept again: the oldest may be another now (exact, so that a room restored
            // from a snapshot, which works it out from the keys, prunes when this one does).
            oldest = replies.values.lazy.map(\.time).min()
        } else {
            oldest = min(oldest ?? time, time)
        }
    }

    private mutating func prune(now: Int64, lifetime: Int64, limit: Int) {
        replies = replies.filter { now - $0.value.time < lifetime }
        if replies.count > limit {
            // Newest first by time, then by the key's bytes: an order of its own, whatever the dictionary's.
            let newest = replies.sorted {
                $0.value.time != $1.value.time ? $0.value.time > $1.value.time : $1.key.lexicographicallyPrecedes($0.key)
            }.prefix(limit)
            replies = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
        }
        oldest = replies.values.lazy.map(\.time).min()
    }
}

extension IdempotencyKeys: Hashable {
    // The keys and their answers; `oldest` only says when to look again.
    static func == (a: Self, b: Self) -> Bool { a.replies == b.replies }
    func hash(into hasher: inout Hasher) { hasher.combine(replies) }
}
