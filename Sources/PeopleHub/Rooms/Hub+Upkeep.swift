import Logging
import PeopleCore
import PeopleStore

/// What the store looks like from here: what the last check found (nil: it answered) and when the
/// check under way started. `/healthz` says 503 while `problem` is set.
struct StoreHealth {
    /// Seconds between checks (the sweep runs once a second).
    static let checkSeconds = 5
    var problem: StoreError?
    var checkStarted: Int64?
    var sweeps = 0
}

/// Upkeep, once a second: idle rooms are written out and unloaded, and every few seconds the store is
/// asked whether it can be reached and written.
extension Hub {
    /// Unloads rooms nobody has been connected to for `unloadAfterSeconds` (after a snapshot, so the
    /// next load replays little); they come back from the store on the next hello.
    func sweep() {
        storeHealth.sweeps += 1
        // One hub of a group checks the store (and answers `/healthz`, whose path is its).
        if index == 0, storeHealth.sweeps % StoreHealth.checkSeconds == 1 { checkStore() }
        endExpiredSessions()
        let now = clock
        let limit = Int64(configuration.unloadAfterSeconds) * 1000
        for (name, slot) in rooms {
            guard case .loaded(let host) = slot, host.connections.isEmpty, host.feedWaiters.isEmpty, !host.isHolding,
                  host.catchingUp == 0,
                  let idle = host.idleSince, now - idle >= limit else { continue }
            saveSnapshotIfChanged(host)
            rooms[name] = nil
            if let leases { leaseCalls.async { leases.release(room: name) } }
            metrics.roomUnloads.increment()
            logger.info("room unloaded (idle)", metadata: ["room": "\(name)"])
        }
    }

    /// Asks the store whether it can be reached and written (off the service thread); the answer is
    /// what `/healthz` says until the next check. A check that hangs (a database that accepts
    /// connections but never answers) counts as a failure after two periods.
    private func checkStore() {
        if let started = storeHealth.checkStarted {
            let waited = (clock - started) / 1000
            if waited >= Int64(StoreHealth.checkSeconds * 2), storeHealth.problem == nil {
                let problem = StoreError(.unavailable, "the store has not answered a check for \(waited) s")
                storeHealth.problem = problem
                logger.error("store check failed: /healthz answers 503", metadata: ["error": "\(problem)"])
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

    private func checked(_ found: StoreError?) {
        storeHealth.checkStarted = nil
        if let found, storeHealth.problem == nil {
            logger.error("store check failed: /healthz answers 503", metadata: ["error": "\(found)"])
        } else if found == nil, let old = storeHealth.problem {
            logger.notice("store check passes again", metadata: ["was": "\(old)"])
        }
        storeHealth.problem = found
    }

    func saveSnapshotIfChanged(_ host: RoomHost) {
        guard host.room.journalPosition > host.snapshotPosition else { return }
        store.save(host.room.snapshot(), room: host.room.name)
        host.snapshotPosition = host.room.journalPosition
        host.snapshotRevision = host.room.revision
    }
}
