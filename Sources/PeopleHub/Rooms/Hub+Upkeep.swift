import Logging
import PeopleCore
import PeopleStore
import Synchronization

/// What the store looks like from here: what the last check found (nil: it answered) and when the
/// check under way started. `/healthz` says 503 while `problem` is set.
struct StoreHealth {
    /// Seconds between checks (the sweep runs once a second).
    static let checkSeconds = 5
    var problem: StoreError?
    var checkStarted: Int64?
    var sweeps = 0
}

/// Upkeep, once a second: idle rooms are written out and unloaded, the heap in use is compared with
/// `limits.maxMemoryMB`, and every few seconds the store is asked whether it can be reached and
/// written.
extension Hub {
    /// Unloads rooms nobody has been connected to for `unloadAfterSeconds` (after a snapshot, so the
    /// next load replays little); they come back from the store on the next hello. While memory is
    /// short (`limits.maxMemoryMB`) every idle room goes at once, and the freed memory is handed back.
    func sweep() {
        storeHealth.sweeps += 1
        // One hub of a group checks the store (and answers `/healthz`, whose path is its) and the memory.
        if index == 0, storeHealth.sweeps % StoreHealth.checkSeconds == 1 { checkStore() }
        if index == 0 { checkMemory() }
        endExpiredSessions()
        goOnWhenSure()
        let now = clock
        let short = shared.memoryShort.load(ordering: .relaxed)
        let limit = short ? 0 : Int64(configuration.unloadAfterSeconds) * 1000
        var unloaded = false
        for (name, slot) in rooms {
            guard case .loaded(let host) = slot, host.connections.isEmpty, host.feedWaiters.isEmpty, !host.isHolding,
                  host.catchingUp == 0, host.storeReads == 0,
                  let idle = host.idleSince, now - idle >= limit else { continue }
            saveSnapshotIfChanged(host)
            rooms[name] = nil
            if let leases { leaseCalls.async { leases.release(room: name) } }
            metrics.roomUnloads.increment()
            unloaded = true
            logger.info(short ? "room unloaded (memory short)" : "room unloaded (idle)", metadata: ["room": "\(name)"])
        }
        if short, unloaded { runtime.background(runtime.releaseFreeMemory) }
        if releaseMemoryIn > 0 {
            releaseMemoryIn -= 1
            if releaseMemoryIn == 0 { runtime.background(runtime.releaseFreeMemory) }
        }
    }

    /// The joins and the history questions that waited for this node to be sure of its leases
    /// (`RoomHost.joinsAwaitingSure`, `readsAwaitingSure`) go on, once it is.
    private func goOnWhenSure() {
        guard !leasesUnsure else { return }
        for case .loaded(let host) in rooms.values {
            if !host.readsAwaitingSure.isEmpty { askWhenSure(host) }
            guard !host.joinsAwaitingSure.isEmpty else { continue }
            let waiting = host.joinsAwaitingSure
            host.joinsAwaitingSure = []
            joinAgain(waiting, host: host)
        }
    }

    /// malloc hands its freed pages back at the second sweep from now, once what an export or an import
    /// held (its parsed body, its revisions, the closures that answered it) is gone: a long one left the
    /// hub hundreds of MB larger for good, and a release right after its answer came before the last of
    /// it was freed.
    func releaseMemorySoon() {
        if releaseMemoryIn == 0 { releaseMemoryIn = 2 }  // one already due is not put off (a run of them)
    }

    /// Compares the heap in use with `limits.maxMemoryBytes` (off the service thread: it walks
    /// malloc's lists): at or over it, memory is short (no room is opened, idle rooms are unloaded at
    /// once) until it is back under 90 % of it, so that a hub at the edge does not flap.
    private func checkMemory() {
        guard !memoryCheckUnderWay else { return }
        memoryCheckUnderWay = true
        let (heapInUse, checkHeap) = (runtime.heapInUse, configuration.limits.maxMemoryBytes > 0)
        runtime.background { [weak self] in
            let reading = (resident: ProcessMemory.residentBytes(), heap: checkHeap ? heapInUse() : nil)
            self?.back(reading) { hub, reading in hub.memoryChecked(resident: reading.resident, heap: reading.heap) }
        }
    }

    private func memoryChecked(resident: Int?, heap: Int?) {
        memoryCheckUnderWay = false
        if let resident { metrics.residentMemory.record(resident) }
        guard let heap else { return }
        metrics.heapInUse.record(heap)
        let budget = configuration.limits.maxMemoryBytes
        let details: Logger.Metadata = ["heapMB": "\(heap >> 20)", "limitMB": "\(budget >> 20)"]
        if !shared.memoryShort.load(ordering: .relaxed), heap >= budget {
            shared.memoryShort.store(true, ordering: .relaxed)
            metrics.memoryShort.record(1)
            logger.warning("memory short (limits.maxMemoryMB): no other room is opened, idle rooms are unloaded", metadata: details)
        } else if shared.memoryShort.load(ordering: .relaxed), heap < budget / 10 * 9 {
            shared.memoryShort.store(false, ordering: .relaxed)
            metrics.memoryShort.record(0)
            logger.notice("memory back under 90 % of limits.maxMemoryMB: rooms are opened again", metadata: details)
        }
    }

    /// Asks the store whether it can be reached and written (off the service thread); the answer is
    /// what `/healthz` says until the next check. A check that hangs (a database that accepts
    /// connections but never answers) counts as a failure after two periods.
    private func checkStore() {
        if let started = storeHealth.checkStarted {
            let waited = (clock - started) / 1000
            if waited >= Int64(StoreHealth.checkSeconds * 2) {
                storeUnavailable(StoreError(.unavailable, "the store has not answered a check for \(waited) s"))
            }
            return
        }
        storeHealth.checkStarted = clock
        let store = store
        runtime.background { [weak self] in
            var found: StoreError?
            do { try store.check() } catch { found = error as? StoreError ?? StoreError(.unavailable, "\(error)") }
            self?.back(found) { hub, found in hub.checked(found) }
        }
    }

    /// `/healthz` answers 503 with `problem` from now until a check passes (the first problem stays).
    func storeUnavailable(_ problem: StoreError) {
        guard storeHealth.problem == nil else { return }
        storeHealth.problem = problem
        logger.error("store check failed: /healthz answers 503", metadata: ["error": "\(problem)"])
    }

    private func checked(_ found: StoreError?) {
        storeHealth.checkStarted = nil
        guard let found else {
            if let old = storeHealth.problem { logger.notice("store check passes again", metadata: ["was": "\(old)"]) }
            storeHealth.problem = nil
            return
        }
        storeUnavailable(found)      // said once, when it starts
        storeHealth.problem = found  // `/healthz` gives the latest check's
    }

    func saveSnapshotIfChanged(_ host: RoomHost) {
        guard host.room.journalPosition > host.snapshotPosition else { return }
        store.save(host.room.snapshot(), room: host.room.name)
        host.snapshotPosition = host.room.journalPosition
        host.snapshotRevision = host.room.revision
    }
}
