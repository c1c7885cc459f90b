import Foundation
import Metrics
import PeopleCore
import Synchronization

/// What a durable store's writer commits: appends, snapshots and room deletions, in the order they
/// were handed over.
package enum WriterWork: Sendable {
    case append(room: String, entries: [JournalEntry], whenDurable: @Sendable (StoreError?) -> Void)
    /// The snapshot, and webhook notices to keep in the same commit (a room's creation).
    case snapshot(room: String, RoomSnapshot, notices: [WebhookNotice])
    /// Checkpoints of a room's past (an import's), kept in the commit of its creation; one the store
    /// has at a revision stays as it is.
    case checkpoints(room: String, [Checkpoint])
    /// Delete the room (journal, snapshot, webhook cursors) and keep `notices` in the same commit; the
    /// commit sets `found` to whether it existed, and `whenDone` is called once the deletion is
    /// committed (or with the error).
    case delete(room: String, found: RoomDeletion, notices: [WebhookNotice], whenDone: @Sendable (StoreError?) -> Void)
    /// The store's own small write (or, for a store whose probe writes nothing, an empty
    /// transaction), to learn whether commits work again after one failed
    /// (`GroupCommitWriter.recheck`); `whenDone` gets its outcome. Always committed alone.
    case probe(whenDone: @Sendable (StoreError?) -> Void)

    var isProbe: Bool {
        if case .probe = self { true } else { false }
    }

    /// A snapshot that only makes loading faster (not a room's first, which creates it): its failure
    /// loses nothing and breaks nothing (`PeopleStore.save`).
    var isLaterSnapshot: Bool {
        if case .snapshot(_, let snapshot, let notices) = self { snapshot.position > 0 && notices.isEmpty } else { false }
    }

    package var room: String {
        switch self {
        case .append(let room, _, _), .snapshot(let room, _, _), .checkpoints(let room, _), .delete(let room, _, _, _): room
        case .probe: ""
        }
    }
}

/// What a deletion found, set by the commit that made it (the last attempt, if a batch was retried
/// room by room) and read once the writer says it is done.
package final class RoomDeletion: Sendable {
    private let existed = Mutex(false)

    package init() {}

    package var found: Bool {
        get { existed.withLock { $0 } }
        set { existed.withLock { $0 = newValue } }
    }
}

/// Group commit on a thread of its own: whatever was handed over while the previous commit ran goes
/// into the next one, so many appends (from many rooms) cost one transaction and one sync.
///
/// `commit` gets the work in order and must write all of it in one transaction, or throw. A failed
/// batch of several rooms is committed again room by room, so only the failing rooms fail. After a
/// failure a room refuses further appends and snapshots until `reopen(room:)` (the hub reloads such a
/// room from what is durable): a later append must never land after a gap.
package final class GroupCommitWriter: @unchecked Sendable {
    private let condition = NSCondition()
    /// Work handed over, in groups that go into one transaction whole (`submit(together:)`).
    private var queue: [[WriterWork]] = []
    private var closed = false
    private var broken: [String: StoreError] = [:]
    /// How many times each room was loaded again after a failure (`reopen`; guarded by `condition`):
    /// a batch taken before that holds the earlier life's work, which is not written, nor does its
    /// failure break the new life.
    private var lives: [String: Int] = [:]
    private let finished = DispatchSemaphore(value: 0)
    private let maxBatch: Int
    /// Whether the store's probe writes (SQLite's writes a page, PostgreSQL's grows a table), so it can
    /// tell a disk that works again from one still full; a probe that writes nothing is tried only
    /// after `.unavailable` failures.
    private let probeWrites: Bool
    private let commit: ([WriterWork]) throws -> Void
    private let onSnapshotFailure: (String, Error) -> Void
    private var failing: StoreError?
    private let commitDuration: Metrics.Timer
    private let commitSize: Recorder
    private let commitFailures: Counter

    /// - Parameters:
    ///   - name: the writer thread's name, as `top -H` and a debugger show it (at most 15 bytes: Linux
    ///     keeps no longer name).
    ///   - maxBatch: the most pieces of work in one transaction (a bound on its size and latency).
    ///   - kind: the store's kind, the `store` label of the writer's metrics
    ///     (`peoplekeeper_store_commit_duration_seconds`, `peoplekeeper_store_commit_size`: appends and
    ///     snapshots per transaction, `peoplekeeper_store_commit_failures_total`).
    package init(name: String, kind: String, maxBatch: Int = 4096, probeWrites: Bool = false,
                 commit: @escaping ([WriterWork]) throws -> Void, onSnapshotFailure: @escaping (String, Error) -> Void) {
        self.probeWrites = probeWrites
        let dimensions = [("store", kind)]
        commitDuration = Metrics.Timer(label: "peoplekeeper_store_commit_duration_seconds", dimensions: dimensions)
        commitSize = Recorder(label: "peoplekeeper_store_commit_size", dimensions: dimensions)
        commitFailures = Counter(label: "peoplekeeper_store_commit_failures_total", dimensions: dimensions)
        self.maxBatch = maxBatch
        self.commit = commit
        self.onSnapshotFailure = onSnapshotFailure
        // Foundation on Linux names only a running thread, and only once `start()` has returned to
        // the thread that started it (a name set before, or by the thread too early, is dropped).
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            started.wait()
            Thread.current.name = name
            run()
        }
        thread.start()
        started.signal()
    }

    /// Hands work over: its completion comes from the writer thread, or for work refused at once
    /// (`submit(together:)`), from this call.
    package func submit(_ work: WriterWork) { submit(together: [work]) }

    /// Hands over `works` (appends and snapshots of one room) to be written in one transaction:
    /// a batch never ends between them, so a crash leaves all or none of them (a room's creation with
    /// its history). Several pieces are refused as a whole when the room broke or the store is
    /// closed: every append's completion gets the error. (One piece alone: an append is refused then,
    /// a deletion or a probe only when the store is closed, a snapshot never.)
    package func submit(together works: [WriterWork]) {
        guard !works.isEmpty else { return }
        condition.lock()
        let refusal = enqueue(works)
        condition.unlock()
        if let refusal { fail(works, refusal) }
    }

    /// Lock held. Queues a group, or returns the error it is refused with.
    private func enqueue(_ works: [WriterWork]) -> StoreError? {
        let closedError = closed ? StoreError(.closed, "the store is closed") : nil
        if works.count == 1 {
            switch works[0] {
            case .append(let room, _, _): if let error = broken[room] ?? closedError { return error }
            case .delete, .probe: if let closedError { return closedError }
            case .snapshot, .checkpoints: break
            }
        } else if let error = works.first.flatMap({ broken[$0.room] }) ?? closedError {
            return error
        }
        queue.append(works)
        condition.signal()
        return nil
    }

    /// Tells each piece of work that it was not written (lock not held).
    private func fail(_ works: [WriterWork], _ error: StoreError) {
        for work in works {
            switch work {
            case .append(_, _, let whenDurable): whenDurable(error)
            case .snapshot(let room, _, _): onSnapshotFailure(room, error)
            case .delete(_, _, _, let whenDone), .probe(let whenDone): whenDone(error)
            case .checkpoints: break
            }
        }
    }

    /// `PeopleStore.create` for a durable store: the room's first snapshot, its checkpoints and its
    /// history in one transaction. (Writing a long history a chunk per transaction, so that other
    /// rooms' commits go between, was tried and taken back: another process creating the same room
    /// meanwhile, the `import` command beside a hub, could mix its rows with these. STATUS.md.)
    package func create(room: String, _ snapshot: RoomSnapshot, notices: [WebhookNotice], entries: [JournalEntry],
                        checkpoints: [Checkpoint], whenDurable: @escaping @Sendable (StoreError?) -> Void) {
        submit(together: [.snapshot(room: room, snapshot, notices: notices), .checkpoints(room: room, checkpoints),
                          .append(room: room, entries: entries, whenDurable: whenDurable)])
    }

    /// The error of the last commit, unless one has succeeded since.
    private var lastFailure: StoreError? {
        condition.lock()
        defer { condition.unlock() }
        return failing
    }

    /// Deletes `room` after everything handed over before, and waits for the commit. A room that had
    /// failed takes appends again afterwards (it starts anew).
    package func delete(room: String, notices: [WebhookNotice] = []) throws(StoreError) -> Bool {
        let found = RoomDeletion()
        let outcome = Mutex<StoreError?>(nil)
        let done = DispatchSemaphore(value: 0)
        submit(.delete(room: room, found: found, notices: notices, whenDone: { error in
            outcome.withLock { $0 = error }
            done.signal()
        }))
        done.wait()
        if let error = outcome.withLock({ $0 }) { throw error }
        reopen(room: room)
        return found.found
    }

    /// A store's check of its commits: throws the last commit's failure, unless that failed for want
    /// of the store (`.unavailable`) or, for a store whose probe writes (`probeWrites`), of its disk
    /// (`.io`: full, read-only, a file size limit) or for a collision with another node's rows
    /// (`.conflict`: that room's failure, not the store's), and a probe commit works now
    /// (each store's probe writes as its commits do, so a disk still full fails it; an empty one
    /// would pass there, and the node would flap between 503 and 200); so a store that works again
    /// says so without waiting for a client's write (a load balancer reading `/healthz` might send
    /// none: an SRE's pass saw a hub whose disk had been freed stay at 503 until one came).
    package func recheck() throws(StoreError) {
        guard let failure = lastFailure else { return }
        guard failure.kind == .unavailable || ((failure.kind == .io || failure.kind == .conflict) && probeWrites) else {
            throw failure
        }
        try probe()
    }

    /// Commits the store's probe after everything handed over before, and waits for it.
    private func probe() throws(StoreError) {
        let outcome = Mutex<StoreError?>(nil)
        let done = DispatchSemaphore(value: 0)
        submit(.probe(whenDone: { error in
            outcome.withLock { $0 = error }
            done.signal()
        }))
        done.wait()
        if let error = outcome.withLock({ $0 }) { throw error }
    }

    /// The rooms failed at once from outside a commit (a cluster node lost the connection holding
    /// their leases): what is queued for them is failed, not written, and they take nothing more until
    /// reloaded (`reopen`). Without this, work queued behind the commit that found the connection gone
    /// waited in the queue, and once a client's return had loaded the room again (its lease taken on
    /// the new connection) it passed the lease fence and was written: edits whose clients had been
    /// answered 503, colliding with the new life's (a partition pass, session 43).
    package func breakRooms(_ rooms: some Sequence<String>, _ error: StoreError) {
        condition.lock()
        let lost = Set(rooms)
        for room in lost { broken[room] = error }
        let stale = takeQueued(of: lost)
        condition.unlock()
        if !stale.isEmpty { fail(stale, error) }
    }

    /// Lock held. Takes the appends, snapshots and checkpoints of `rooms` out of the queue (their
    /// deletions and probes stay), for `fail`.
    private func takeQueued(of rooms: Set<String>) -> [WriterWork] {
        var taken: [WriterWork] = []
        for index in queue.indices {
            queue[index].removeAll { work in
                switch work {
                case .append, .snapshot, .checkpoints:
                    guard rooms.contains(work.room) else { return false }
                    taken.append(work)
                    return true
                case .delete, .probe:
                    return false
                }
            }
        }
        queue.removeAll(where: \.isEmpty)
        return taken
    }

    /// Lets a room that failed take appends again (after it was reloaded from what is durable). What
    /// its failed life still had queued is failed first, not written: a snapshot handed over after the
    /// failure but before the hub knew of it holds records that never became durable, and written
    /// after the reload it would hide the new life's journal rows at or below its position (a review,
    /// session 43; before, the queue was filtered only when a batch was taken, after this had cleared
    /// the room's failure).
    package func reopen(room: String) {
        condition.lock()
        let error = broken[room]
        let stale = error != nil ? takeQueued(of: [room]) : []
        broken[room] = nil
        lives[room, default: 0] += 1
        condition.unlock()
        if let error, !stale.isEmpty { fail(stale, error) }
    }

    /// Commits what was handed over, then stops the thread.
    package func close() {
        condition.lock()
        let wasClosed = closed
        closed = true
        condition.signal()
        condition.unlock()
        if !wasClosed { finished.wait() }
    }

    /// Commits the batch; if that fails and it holds several rooms, commits each room's part on its
    /// own, so one room's failure (a collision, a bad record) does not fail the others; and a room's
    /// part that fails with later snapshots in it is committed again without them, so a snapshot's
    /// failure (the one big write on a disk nearly full) breaks no room. Returns the rooms that failed,
    /// and those whose later snapshots alone were not written.
    ///
    /// `storeSaid`: the store's own last answer to the batch, for `recheck` — the last failure an
    /// attempt met (in the batch's room order), nil when the last attempt worked; a room failed
    /// without an attempt (broken or loaded again meanwhile) says nothing of the store (a model-based
    /// test saw `recheck` pass after a disk failure because such a room's `.unavailable` was picked).
    private func commitIsolatingFailures(_ batch: [WriterWork], lives taken: [String: Int])
        -> (failed: [String: StoreError], snapshotsLost: [String: StoreError], storeSaid: StoreError?)
    {
        // A room broken (its leases lost with the connection) or loaded again since the batch was taken:
        // its part is not tried again. The first attempt's failure may take seconds (a reconnect
        // during a partition), and meanwhile a client's return can load the room on the new
        // connection, after which the lease fence passes (a partition pass, session 43).
        func gone(_ room: String) -> StoreError? {
            condition.lock()
            defer { condition.unlock() }
            if let error = broken[room] { return error }
            guard lives[room, default: 0] == taken[room, default: 0] else {
                return StoreError(.unavailable, "room \(room) was loaded again meanwhile: its earlier records were not written")
            }
            return nil
        }
        var storeSaid: StoreError?
        func attempt(_ part: [WriterWork]) -> StoreError? {
            do {
                try commit(part)
                storeSaid = nil
            } catch {
                storeSaid = error as? StoreError ?? StoreError(.io, "\(error)")
            }
            return storeSaid
        }
        guard let error = attempt(batch) else { return ([:], [:], nil) }
        var rooms: [String] = []
        for work in batch where !rooms.contains(work.room) { rooms.append(work.room) }
        var failed: [String: StoreError] = [:]
        var snapshotsLost: [String: StoreError] = [:]
        for room in rooms {
            let part = batch.filter { $0.room == room }
            if rooms.count > 1, let lost = gone(room) {
                failed[room] = lost
                continue
            }
            guard let error = rooms.count == 1 ? error : attempt(part) else { continue }
            guard part.contains(where: \.isLaterSnapshot) else {
                failed[room] = error
                continue
            }
            let rest = part.filter { !$0.isLaterSnapshot }
            // Later snapshots alone: their failure breaks nothing, whatever it was (a model-based test
            // found a lone snapshot that met a locked store breaking its room, and its next append
            // refused once the store worked again).
            if rest.isEmpty {
                snapshotsLost[room] = error
                continue
            }
            // A store that cannot be had (locked by another process, unreachable, closed) fails the rest
            // as well: trying again without the snapshots would only wait as long again (a review).
            guard error.kind != .unavailable, error.kind != .closed else {
                failed[room] = error
                continue
            }
            if let lost = gone(room) {
                failed[room] = lost
            } else if let restError = attempt(rest) {
                failed[room] = restError
            } else {
                snapshotsLost[room] = error
            }
        }
        return (failed, snapshotsLost, storeSaid)
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty && !closed { condition.wait() }
            if queue.isEmpty && closed {
                condition.unlock()
                finished.signal()
                return
            }
            // Whole groups, at least one, up to `maxBatch` pieces of work. A probe is committed alone:
            // its failure must not fail appends beside it, nor its transaction hold theirs up.
            var groups = 1
            var count = queue[0].count
            while groups < queue.count && count + queue[groups].count <= maxBatch
                    && !queue[0].contains(where: \.isProbe) && !queue[groups].contains(where: \.isProbe) {
                count += queue[groups].count
                groups += 1
            }
            var batch = Array(queue.prefix(groups).joined())
            var taken: [String: Int] = [:]
            for work in batch where taken[work.room] == nil { taken[work.room] = lives[work.room, default: 0] }
            queue.removeFirst(groups)
            // Appends and snapshots of a room that broke while they were queued fail without being
            // written: a snapshot (and its checkpoint) may include records that never became durable.
            var refused: [(WriterWork, StoreError)] = []
            batch.removeAll { work in
                if case .delete = work { return false }
                if case .probe = work { return false }
                guard let error = broken[work.room] else { return false }
                refused.append((work, error))
                return true
            }
            condition.unlock()
            for (work, error) in refused {
                switch work {
                case .append(_, _, let whenDurable): whenDurable(error)
                case .snapshot(let room, _, _): onSnapshotFailure(room, error)
                case .checkpoints, .delete, .probe: break
                }
            }

            // Every piece was refused (its room broke): nothing to commit. (An empty transaction that
            // failed, the file locked by another process, had no room to blame: the hub crashed.)
            if batch.isEmpty { continue }
            let started = DispatchTime.now().uptimeNanoseconds
            let (failures, snapshotsLost, storeSaid) = commitIsolatingFailures(batch, lives: taken)
            commitDuration.recordNanoseconds(Int64(DispatchTime.now().uptimeNanoseconds - started))
            commitSize.record(batch.count)
            condition.lock()
            // Not the new life of a room loaded again since the batch was taken.
            for (room, error) in failures where lives[room, default: 0] == taken[room, default: 0] { broken[room] = error }
            failing = storeSaid
            condition.unlock()
            if !failures.isEmpty || !snapshotsLost.isEmpty { commitFailures.increment() }
            for work in batch {
                let failure = failures[work.room]
                switch work {
                case .append(_, _, let whenDurable): whenDurable(failure)
                case .snapshot(let room, _, _):
                    if let failure = failure ?? (work.isLaterSnapshot ? snapshotsLost[room] : nil) {
                        onSnapshotFailure(room, failure)
                    }
                case .checkpoints: break
                case .delete(_, _, _, let whenDone): whenDone(failure)
                case .probe(let whenDone): whenDone(failure)
                }
            }
        }
    }
}
