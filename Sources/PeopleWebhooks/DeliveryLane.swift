import PeopleCore
import PeopleStore

/// One endpoint's deliveries for one room: a pure state machine (no I/O, time and randomness passed
/// in) that the dispatcher's lane task asks for its next step and tells what came of it.
///
/// Invariants: items go out one at a time, room events first, then revisions `cursor + 1, + 2, …` in
/// order; a revision counts only once delivered, and the cursor the store gets never runs ahead of
/// what was delivered, so a crash can only repeat deliveries, never lose one. The cursor is written
/// after `cursorBatch` deliveries or `cursorInterval` ms since the last write, whichever first (the
/// dispatcher wakes idle lanes to write what is left): a crash repeats at most that much. A room
/// deleted or created anew starts a new `generation`: what was in flight for the old one is dropped
/// when it returns. Revisions come from the store (`read`; the dispatcher serves recent ones from a
/// copy it keeps), never from memory only.
struct DeliveryLane: Sendable {
    /// The last revision delivered; nil until known (from the store, else where the lane started).
    private(set) var cursor: Int?
    /// Where to start if the store has no cursor: the head when the endpoint first saw the room, so a
    /// newly configured endpoint hears of changes from then on.
    private(set) var startAt: Int?
    /// The newest durable revision known.
    private(set) var head = 0
    /// What the store's cursor needs before it is written again.
    private(set) var reset: CursorReset?
    /// The life of the room the cursor counts in (`WebhookCursor.life`): when the room was made, if
    /// this lane saw it made, else as the store had it; every cursor write names it, so one on its way
    /// while the room is deleted and made again does not land in the new life's cursor.
    private(set) var life: Int64?
    /// A cursor delivered but not yet written to the store, how many deliveries it is ahead of the
    /// stored one, and when the cursor was last written (milliseconds).
    private(set) var unwritten: Int?
    private(set) var deliveredSinceWrite = 0
    private(set) var lastWrite: Int64?
    /// Room events, and deleted rooms' owed revisions read so far, to deliver before any revision.
    private(set) var notices: [RoomNotice] = []
    /// The store may hold revisions of a deleted room under this name that this endpoint was owed and
    /// the lane has not read yet: they are read a chunk at a time (`loadOwed`), after `owedRead`, and
    /// no room event goes before the unread ones that precede it.
    private(set) var owedPending = false
    /// How many of those the lane has not read yet, as far as it knows (the store's count at the start
    /// and in a scan; at a deletion here, the revisions the endpoint had not been sent), so the backlog
    /// counts them before they are read.
    private(set) var owedUnread = 0
    /// The last owed revision read.
    private(set) var owedRead: OwedPosition?
    /// How many times the lane was told the store may keep owed revisions (a deletion here, the start, a
    /// scan), and that count when the owed read under way was asked for: a read asked for before the
    /// latest cannot say none is left (a deletion while it ran keeps more, after what it read).
    private(set) var owedAsks = 0
    private var owedReadAsks = 0
    /// At each deletion here, by its time, the revisions this lane had delivered (up to its cursor,
    /// after `unconfirmedStart` if it had one): the store kept the revisions after the stored cursor,
    /// which trails the delivered one by up to a cursor batch, so those are forgotten when read, not
    /// sent again. Kept until every owed revision is read (a model test saw a room made and deleted
    /// again before the first deletion's were read send them twice: one value was kept, the latest
    /// deletion's).
    private(set) var sentBeforeDeletions: [Int64: SentSpan] = [:]
    /// Where the lane began by itself (at the head, the store having no cursor for it), until the store
    /// has taken a cursor write of its: the revisions up to there were never sent by this lane. A
    /// deletion before that forgets as sent only those after it: the store may hold another life's
    /// cursor below it (the `import` command's room, committed between the start's reads), and so keep
    /// those revisions as owed (a code review: they were taken as sent, and lost).
    private(set) var unconfirmedStart: Int?
    /// The generations those deletions ended, and their times: a revision of one whose POST was under
    /// way at its deletion and then answered 2xx counts as sent (`delivered`).
    private var deletionOf: [Int: Int64] = [:]
    /// Room events delivered whose record the store still keeps: removed before anything else.
    private(set) var forgetting: [RoomNotice] = []
    /// Revisions read from the store and not yet delivered: `cursor + 1`, `+ 2`, … in order.
    private(set) var buffer: [Revision] = []
    private(set) var generation = 0
    /// The generation the step under way was asked for in: a reset or a cursor write asked for before
    /// the room was deleted or made again reports into a lane that has moved on, and changes nothing
    /// (a code review found a stale reset clearing the new life's, so its writes were refused for good).
    private var issuedIn = 0
    /// A cursor write was refused (the store's cursor is of another life of the room than the lane's):
    /// the lane reads it again before anything else is written (`loaded`).
    private(set) var cursorStale = false
    /// When the room was made, if it was made while this process runs: its revisions (an import's
    /// keep their original times) were committed no earlier (the lag metric counts from then).
    private(set) var bornAt: Int64?
    /// Failures in a row of the item at the front, and when the first of them was.
    private(set) var failures = 0
    private(set) var failingSince: Int64?
    /// Whether a task is driving this lane (only one ever is).
    var running = false
    /// Since when the lane has had nothing to do (`isIdle` at a stop), else nil: in cluster mode a room
    /// whose lanes have all been idle for a while is given up (`WebhookPolicy.releaseAfter`).
    private(set) var idleSince: Int64?

    enum CursorReset: Sendable, Hashable {
        /// The room is gone: remove the cursor.
        case forget
        /// The room began anew: put the cursor at 0 (in one write), so every revision is delivered.
        case zero
    }

    /// What to do next.
    enum Step: Sendable {
        /// Nothing to do (or the endpoint is failing): the task ends.
        case stop
        /// Read the notices the store keeps for this room and endpoint, then `noticesRead(_:)`.
        case loadNotices
        /// Read the stored cursor and hand it to `loaded(_:)`.
        case loadCursor
        /// Apply the reset to the store (a cursor put counts in the room's life `life`), then `didReset(_:)`.
        case resetCursor(CursorReset, life: Int64?)
        /// Remove the delivered notice's record from the store, then `forgot(_:)`.
        case forgetNotice(RoomNotice)
        /// Read at most `limit` revisions the store keeps for this endpoint of deleted rooms under this
        /// name, after `after`, then `owedLoaded(_:after:limit:)`.
        case loadOwed(after: OwedPosition?, limit: Int)
        /// Write this cursor, of the room's life `life`, then `wrote(_:)`.
        case writeCursor(Int, life: Int64?)
        /// Read revisions `after + 1 ... through`, then `read(_:after:through:generation:)`.
        case read(after: Int, through: Int, generation: Int)
        /// POST it, then `delivered(_:generation:)` or `failed(now:policy:unit:generation:)`.
        case post(LaneItem, generation: Int)
    }

    /// How many deliveries wait: room events and owed revisions (read or not), and revisions up to the
    /// known head.
    var backlog: Int {
        notices.count + owedUnread + revisionsBehind
    }

    /// Revisions up to the known head not delivered yet.
    private var revisionsBehind: Int {
        max(head - (cursor ?? startAt ?? head), 0)
    }

    var isRetrying: Bool { failingSince != nil }

    /// The room was loaded from the store: notices kept for it by another process (the `import`
    /// command's `room.created`) are read before anything is delivered (`mayHaveNotices`).
    private(set) var noticesUnread = false

    /// The room was loaded from the store, not made here: its kept notices are read first.
    mutating func mayHaveNotices() { noticesUnread = true }

    /// What the store keeps for this room and endpoint (`loadNotices`): delivered first, as at a start.
    mutating func noticesRead(_ kept: [RoomNotice]) {
        noticesUnread = false
        if !kept.isEmpty { restored(kept) }
    }

    /// Everything known delivered and written: no room event, no reset, no failure, the cursor in the
    /// store at the head.
    var isIdle: Bool {
        reset == nil && forgetting.isEmpty && notices.isEmpty && !owedPending && !noticesUnread && unwritten == nil && buffer.isEmpty
            && failures == 0 && (cursor.map { $0 >= head } ?? (startAt == nil))
    }

    /// Whether the lane has store work that goes even while its endpoint fails (`next`): a cursor to
    /// reset, or the first read of what a deleted room owes. The dispatcher runs a failing endpoint's
    /// lane for that alone (it ran none, so a room made and deleted meanwhile had no cursor, and the
    /// store kept none of its revisions for the endpoint: a test found them lost).
    var hasStoreWork: Bool {
        reset != nil || firstOwedReadDue
    }

    /// What a deleted room owes has not been read at all yet (and comes before the next notice).
    private var firstOwedReadDue: Bool { owedPending && owedRead == nil && notices.first?.revision == nil }

    /// Nothing known and nothing to do (a deleted room whose cursor is gone): the lane can be dropped.
    var isEmpty: Bool {
        cursor == nil && startAt == nil && head == 0 && reset == nil && unwritten == nil && notices.isEmpty
            && !owedPending && !noticesUnread && forgetting.isEmpty && failures == 0
    }

    /// The next step at `now`. A delivered cursor is written once `cursorBatch` deliveries or
    /// `cursorInterval` ms have gone by since the last write (0 and 0: after each delivery); a start
    /// position or a skipped gap at once.
    mutating func next(endpointFailing: Bool, stopping: Bool = false, chunk: Int, now: Int64 = 0, cursorBatch: Int = 1,
                       cursorInterval: Int64 = 0) -> Step {
        let step = step(endpointFailing: endpointFailing, stopping: stopping, chunk: chunk, now: now,
                        cursorBatch: cursorBatch, cursorInterval: cursorInterval)
        issuedIn = generation
        if case .stop = step, isIdle {
            idleSince = idleSince ?? now
        } else {
            idleSince = nil
        }
        return step
    }

    private mutating func step(endpointFailing: Bool, stopping: Bool, chunk: Int, now: Int64, cursorBatch: Int,
                               cursorInterval: Int64) -> Step {
        // A cursor to reset is a store write, not a POST: it goes even while the endpoint fails, so a
        // room made meanwhile has its cursor before a deletion looks for what the endpoint is owed.
        if let reset { return .resetCursor(reset, life: life) }
        if stopping { return stop() }
        if endpointFailing {
            // So does the first read of what the store kept of a deleted room (one chunk): the backlog
            // then counts what is there, not the lane's guess; the rest waits for the endpoint.
            if firstOwedReadDue { return readOwed(after: nil, chunk: chunk) }
            return stop()
        }
        if let done = forgetting.first { return .forgetNotice(done) }
        if noticesUnread { return .loadNotices }
        // An owed revision read is the earliest left; a room event may have unread ones before it.
        if owedPending, notices.first?.revision == nil { return readOwed(after: owedRead, chunk: chunk) }
        if let notice = notices.first { return .post(.notice(notice), generation: generation) }
        if cursor == nil {
            guard startAt != nil else { return stop() }
            return .loadCursor
        }
        if cursorStale { return .loadCursor }
        if let unwritten, cursorDue(now: now, batch: cursorBatch, interval: cursorInterval) {
            return .writeCursor(unwritten, life: life)
        }
        if let revision = buffer.first { return .post(.revision(revision), generation: generation) }
        if let cursor, cursor < head {
            return .read(after: cursor, through: min(head, cursor + max(chunk, 1)), generation: generation)
        }
        return stop()
    }

    /// The read of a chunk of owed revisions after `after`, noting how many times the lane had been told
    /// that some may be owed when it was asked for (`owedLoaded`).
    private mutating func readOwed(after: OwedPosition?, chunk: Int) -> Step {
        owedReadAsks = owedAsks
        return .loadOwed(after: after, limit: max(chunk, 1))
    }

    /// Whether the unwritten cursor should go to the store now.
    func cursorDue(now: Int64, batch: Int, interval: Int64) -> Bool {
        guard unwritten != nil else { return false }
        guard let lastWrite else { return true }
        return deliveredSinceWrite == 0 || deliveredSinceWrite >= batch || now - lastWrite >= interval
    }

    private mutating func stop() -> Step {
        running = false
        return .stop
    }

    // MARK: Events from the hub

    /// A revision of the room is durable.
    mutating func revisionDurable(_ rev: Int, after: Int? = nil) {
        // Revisions `after`+1 ... `rev` became durable together (one revision by default): a lane that
        // has no cursor yet starts before the first of them (at room load, `after` is the head: the
        // lane starts there, as an endpoint without a stored cursor does).
        if cursor == nil && startAt == nil { startAt = min(after ?? rev - 1, rev) }
        head = max(head, rev)
    }

    /// The room is in the store with this head, and `stored` is the endpoint's cursor there (the
    /// dispatcher's start). Without a stored cursor the lane starts at the head (or where a revision
    /// seen meanwhile put it), and writes that.
    mutating func resume(head rev: Int, stored: WebhookCursor?) {
        if cursor == nil && reset == nil {
            if let stored {
                cursor = stored.rev
                life = stored.life
            } else {
                let start = min(startAt ?? rev, rev)
                cursor = start
                unwritten = start
                unconfirmedStart = start
            }
        }
        head = max(head, rev)
    }

    /// Notices the store kept and nobody delivered (the dispatcher's start): delivered before anything
    /// else, oldest first. A room whose latest event is its creation is delivered from its first
    /// revision where the endpoint has no cursor for it (the creation committed, the reset to 0 never
    /// did); one whose latest is its deletion has nothing more to deliver.
    mutating func restored(_ kept: [RoomNotice]) {
        let new = kept.filter { !notices.contains($0) && !forgetting.contains($0) }
        // By time; at the same time a deleted room's revisions first, by number (then as they came).
        notices = (new + notices).enumerated().sorted { a, b in
            let (x, y) = (a.element, b.element)
            return (x.time, x.revision == nil ? 1 : 0, x.revision?.number ?? 0, a.offset)
                < (y.time, y.revision == nil ? 1 : 0, y.revision?.number ?? 0, b.offset)
        }.map(\.element)
        if notices.last(where: { $0.revision == nil })?.event == .roomCreated, cursor == nil { startAt = 0 }
    }

    /// The store may keep revisions owed to this endpoint of a deleted room under this name (the
    /// dispatcher's start, a scan; `count`: how many it said): they are read before any room event they
    /// precede.
    mutating func mayBeOwed(count: Int = 0) {
        owedAsks += 1
        owedPending = true
        owedUnread = max(owedUnread, count)
    }

    /// Owed revisions read after `after` (a chunk of at most `limit`): fewer than `limit` means none is
    /// left, unless the lane was told of more since the read was asked for (a model test found a
    /// deletion's owed revisions never read: the room was made, edited and deleted again while the
    /// last chunk of an earlier deletion's was being read).
    mutating func owedLoaded(_ kept: [RoomNotice], after: OwedPosition?, limit: Int) {
        guard owedPending, after == owedRead else { return }
        let sent = kept.filter { notice in
            guard let at = notice.owedPosition, let sent = sentBeforeDeletions[at.time] else { return false }
            return sent.contains(at.rev)
        }
        let owed = kept.filter { !sent.contains($0) }
        restored(owed)
        forgetting += sent.filter { !forgetting.contains($0) }
        if let last = kept.last?.owedPosition { owedRead = last }
        owedUnread = max(owedUnread - owed.count, 0)
        if kept.count < max(limit, 1), owedReadAsks == owedAsks {
            owedPending = false
            owedUnread = 0
            sentBeforeDeletions = [:]
            deletionOf = [:]
        }
    }

    /// The room was created: every revision from the first is delivered, after `notice` if any.
    mutating func created(_ notice: RoomNotice?, at time: Int64? = nil) {
        beginGeneration()
        bornAt = time
        life = time
        reset = .zero
        cursor = 0
        head = 0
        if let notice { notices.append(notice) }
    }

    /// The room was deleted (at `time`): nothing more of it is delivered but the revisions the store
    /// kept for this endpoint (`owed`: it wants the room's revisions) that this lane had not delivered,
    /// then `notice`; its cursor goes.
    mutating func deleted(_ notice: RoomNotice?, owed: Bool = false, at time: Int64? = nil) {
        // The store keeps what the endpoint had not been sent: the backlog keeps counting it.
        if owed { owedUnread += revisionsBehind }
        if owed, let time, let cursor {
            sentBeforeDeletions[time] = SentSpan(after: unconfirmedStart ?? 0, through: cursor)
            deletionOf[generation] = time
        }
        beginGeneration()
        bornAt = nil
        life = nil
        reset = .forget
        cursor = nil
        head = 0
        if owed {
            owedPending = true
            owedAsks += 1
        }
        if let notice { notices.append(notice) }
    }

    private mutating func beginGeneration() {
        generation += 1
        cursorStale = false
        unconfirmedStart = nil
        buffer = []
        unwritten = nil
        deliveredSinceWrite = 0
        startAt = nil
        if notices.isEmpty { clearFailures() }
    }

    /// The endpoint was re-enabled: the front item is tried again at once, with a new give-up period.
    mutating func clearFailures() {
        failures = 0
        failingSince = nil
    }

    // MARK: Outcomes of steps

    /// The stored cursor (`loadCursor`): where a lane without one starts, or, after a refused write,
    /// which life the store counts in.
    mutating func loaded(_ stored: WebhookCursor?) {
        if cursorStale {
            // Set in this generation (a new one clears it), so this read is of it.
            cursorStale = false
            reconcile(with: stored)
            return
        }
        guard cursor == nil, let startAt else { return }
        if let stored {
            cursor = stored.rev
            life = stored.life
        } else {
            cursor = startAt
            unwritten = startAt
            unconfirmedStart = startAt
        }
        head = max(head, cursor!)
    }

    mutating func forgot(_ notice: RoomNotice) {
        if let index = forgetting.firstIndex(of: notice) { forgetting.remove(at: index) }
    }

    /// After a refused write, the store's cursor: a life the lane did not hear of (the room made again
    /// by another process: the `import` command, which commits a room with its cursors at 0 between
    /// two of the start's reads; or another node) is the room's, and the lane goes on from the store's
    /// cursor, after what the store keeps for it (that process's room.created; in a cluster, also the
    /// room events and owed revisions of the lives between); an earlier life (or none, where the lane
    /// knows its own) is put right with the lane's, and the cursor written again; no cursor, or the
    /// lane's life by now, is written again as it is.
    private mutating func reconcile(with stored: WebhookCursor?) {
        guard let stored, stored.life != life else { return }
        let unheard = switch (life, stored.life) {
        case (nil, _): true
        case (let mine?, let theirs?): theirs > mine
        case (_?, nil): false
        }
        guard unheard else {
            reset = .zero
            return
        }
        // The head the lane knows is of the life the store has only where the lane began by itself at
        // the head the start listed (the import's race); any other is of an earlier life, and reading
        // up to it would skip the new life's revisions that are not there yet, for good (a code
        // review). The new life's head comes with the hub's news or the next scan.
        head = unconfirmedStart == nil ? stored.rev : max(head, stored.rev)
        cursor = stored.rev
        life = stored.life
        unconfirmedStart = nil
        noticesUnread = true
        mayBeOwed()
        buffer = []
        unwritten = nil
        deliveredSinceWrite = 0
    }

    /// The reset asked for in this generation is in the store; one asked for before the room was
    /// deleted or made again clears nothing (the lane's own reset goes again).
    mutating func didReset(_ done: CursorReset) {
        if reset == done && issuedIn == generation { reset = nil }
    }

    /// The cursor write asked for in this generation is done: `landed` false when the store refused it
    /// (its cursor counts in another life of the room), so the lane reads the cursor again.
    mutating func wrote(_ rev: Int, now: Int64 = 0, landed: Bool = true) {
        guard issuedIn == generation else { return }
        guard landed else {
            cursorStale = true
            return
        }
        if unwritten == rev {
            unwritten = nil
            deliveredSinceWrite = 0
        }
        unconfirmedStart = nil
        lastWrite = now
    }

    /// Revisions read for `after + 1 ... through`; returns the numbers the store did not have, which
    /// are skipped (logged by the caller), so one lost revision cannot stop a room's deliveries for good.
    mutating func read(_ revisions: [Revision], after: Int, through: Int, generation: Int) -> [Int] {
        guard generation == self.generation, cursor == after, buffer.isEmpty else { return [] }
        buffer = revisions.filter { $0.number > after && $0.number <= through }.sorted { $0.number < $1.number }
        var missing: [Int] = []
        var expected = after + 1
        for revision in buffer {
            missing.append(contentsOf: expected..<revision.number)
            expected = revision.number + 1
        }
        if buffer.isEmpty {
            missing.append(contentsOf: expected...through)
            cursor = through
            unwritten = through
        }
        return missing
    }

    /// The front item was answered with a 2xx.
    mutating func delivered(_ item: LaneItem, generation: Int) {
        switch item {
        case .notice(let sent):
            // The event that was sent, wherever it is now: `restored` may have put an older one in
            // front of it while it was being posted.
            if let index = notices.firstIndex(of: sent) { forgetting.append(notices.remove(at: index)) }
        case .revision(let revision):
            if generation != self.generation {
                // Under way when the room was deleted, and delivered: not sent again as owed (a model
                // test saw it come twice with nothing failing).
                if let time = deletionOf[generation], let before = sentBeforeDeletions[time]?.through, revision.number == before + 1 {
                    let sent = OwedPosition(time: time, rev: revision.number)
                    sentBeforeDeletions[time]?.through = revision.number
                    if let index = notices.firstIndex(where: { $0.owedPosition == sent }) {
                        forgetting.append(notices.remove(at: index))
                    }
                }
                return
            }
            guard buffer.first?.number == revision.number else { return }
            buffer.removeFirst()
            cursor = revision.number
            // A cursor gap (skipped revisions) is closed by the same write.
            unwritten = revision.number
            deliveredSinceWrite += 1
        }
        clearFailures()
    }

    /// What to do after a failure.
    enum Retry: Sendable, Hashable {
        case after(milliseconds: Int64)
        /// Failing since longer than the give-up period: the endpoint is marked failing.
        case giveUp
        /// The item is no longer wanted (its room began anew meanwhile): go on at once.
        case moveOn
    }

    mutating func failed(_ item: LaneItem, now: Int64, policy: WebhookPolicy, unit: Double, generation: Int) -> Retry {
        if case .revision = item, generation != self.generation { return .moveOn }
        failures += 1
        let since = failingSince ?? now
        failingSince = since
        if now - since >= policy.giveUpAfter { return .giveUp }
        return .after(milliseconds: policy.backoff(afterFailures: failures, unit: unit))
    }
}

/// A room event waiting to be delivered, or a revision of a deleted room that the store kept for the
/// endpoint (`revision`; delivered as any revision, with its own id).
struct RoomNotice: Sendable, Hashable {
    var event: WebhookEvent
    /// When it happened (milliseconds since the epoch): part of its id, so a room created again gets
    /// new ids. For a kept revision, when its room was deleted.
    var time: Int64
    var revision: Revision?

    /// Where an owed revision stands among those the store keeps (nil for a room event).
    var owedPosition: OwedPosition? { revision.map { OwedPosition(time: time, rev: $0.number) } }
}

extension RoomNotice {
    /// A notice as the store kept it (nil for an event this build does not know).
    init?(kept: WebhookNotice) {
        guard let event = WebhookEvent(rawValue: kept.event) else { return nil }
        self.init(event: event, time: kept.time, revision: kept.revision)
    }
}

/// The revisions of a deleted life a lane had sent when the deletion came: `after + 1 ... through`.
struct SentSpan: Sendable, Hashable {
    var after: Int
    var through: Int

    func contains(_ rev: Int) -> Bool { rev > after && rev <= through }
}

/// One thing a lane POSTs.
enum LaneItem: Sendable {
    case notice(RoomNotice)
    case revision(Revision)
}
