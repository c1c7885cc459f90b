/// An agent session's idempotency keys (the product contract's HTTP API §2): each key's first answer,
/// given again to a write with the same key for `Room.keyLifetime` (24 hours).
///
/// Bounded twice, so that one caller cannot grow a room's memory and every snapshot of it without
/// end: a key older than the lifetime goes, and beyond `RoomPolicy.keysKept` keys the oldest go. Both
/// are done in one pass now and then, not at every write (a pass reads every key): when the oldest key
/// is an hour past the lifetime, or the count a tenth past the limit. So at least the newest
/// `keysKept` keys of the last 24 hours are always answered again. Which keys a pass drops depends
/// only on the keys, their journal positions and the time, so a room replayed from its journal, or
/// restored from a snapshot, keeps the same ones as the room that made them.
///
/// A snapshot does not hold the keys (a backend writing once a second keeps some 86,000 of them: 17 MB
/// in every snapshot): each key's answer is in the journal already, on the `answered` record that
/// kept it, so a snapshot says only from which journal position each session's kept keys start
/// (`from`) and the store reads the room's keyed records from the lowest of those on with it
/// (`StoredRoom.keyed`). Kept in the order of the journal and pruned by it (the newest by position),
/// a session's records from its `from` on are exactly its keys kept, as long as time only goes
/// forward; a clock stepped back can bring back a key a pass had dropped as expired, which is still
/// expired (never answered) and goes at the next pass. Every keyed write in the room also lets the
/// other sessions' passes that are due by time run (`expire`), so that a caller who stopped writing
/// does not hold the room's `from`, and the records a load reads, at its last key for good.
struct IdempotencyKeys: Sendable {
    /// A first answer kept for an idempotency key, when it was given, and the journal position of the
    /// record that kept it (nil: a key restored from a snapshot written before positions were kept).
    ///
    /// The answer is kept encoded (its compact JSON), and decoded again only for a retry: with a UUID
    /// key and the ack of a one-`set` batch, a kept key took some 700 bytes of the hub's memory with
    /// the answer as a `ServerMessage`, 283 encoded (`scripts/key_size.py`, a release build).
    struct KeyedReply: Hashable, Sendable {
        var encoded: [UInt8]
        var time: Int64
        var position: Int?

        init(reply: ServerMessage, time: Int64, position: Int?) {
            encoded = reply.json.bytes
            self.time = time
            self.position = position
        }

        /// The answer, decoded (nil if it does not decode: it was encoded here, so never, short of a bug
        /// the tests missed; the retry is then refused, never applied again).
        var reply: ServerMessage? { try? ServerMessage(json: JSON.parse(encoded)) }
    }

    /// By the key's UTF-8 bytes: keys are opaque, and Swift's `String` equality would take "é" and
    /// "e" + U+0301 for one key (the second write answered with the first's answer, not applied).
    private(set) var replies: [[UInt8]: KeyedReply] = [:]
    /// The oldest kept key's time (nil: no key): a pass is due an hour after it expires.
    private var oldest: Int64?

    subscript(key: String) -> KeyedReply? { replies[Array(key.utf8)] }

    var isEmpty: Bool { replies.isEmpty }
    var count: Int { replies.count }

    /// The journal position of the oldest kept key's record (nil: none has one): where a snapshot's
    /// keys start in the journal.
    var from: Int? { replies.values.lazy.compactMap(\.position).min() }

    /// The keys restored from a snapshot of before positions, in the order of their bytes: a snapshot
    /// holds these (until they go) since the journal cannot say which records they were.
    var unplaced: [(key: String, kept: KeyedReply)] {
        replies.filter { $0.value.position == nil }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
            .map { (String(decoding: $0.key, as: UTF8.self), $0.value) }
    }

    /// Keeps `reply` as the answer for `key` from `time`, journalled at `position`; now and then
    /// forgets the keys past `lifetime` and, beyond `limit`, the oldest.
    mutating func keep(_ reply: ServerMessage, key: String, time: Int64, position: Int, lifetime: Int64, limit: Int) {
        restore(reply, key: key, time: time, position: position)
        if let oldest, time - oldest >= lifetime + lifetime / 24 || replies.count > limit + limit / 10 {
            prune(now: time, lifetime: lifetime, limit: limit)
        }
    }

    /// Runs the pass if it is due by time (the oldest key an hour past `lifetime` at `now`): for a
    /// session that has not written since, when another writes.
    mutating func expire(now: Int64, lifetime: Int64, limit: Int) {
        if let oldest, now - oldest >= lifetime + lifetime / 24 { prune(now: now, lifetime: lifetime, limit: limit) }
    }

    /// A key as it was kept: read back from the journal, or from a snapshot of before positions.
    mutating func restore(_ reply: ServerMessage, key: String, time: Int64, position: Int?) {
        let replaced = replies.updateValue(KeyedReply(reply: reply, time: time, position: position), forKey: Array(key.utf8))
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
            // Newest first by journal position (keys from a snapshot of before positions are older than
            // any other), then by time and the key's bytes: an order of its own, whatever the
            // dictionary's, and the journal's, so the records from the oldest kept on are the keys kept.
            let newest = replies.sorted { a, b in
                let (pa, pb) = (a.value.position ?? -1, b.value.position ?? -1)
                if pa != pb { return pa > pb }
                return a.value.time != b.value.time ? a.value.time > b.value.time : b.key.lexicographicallyPrecedes(a.key)
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
