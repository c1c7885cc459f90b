import PeopleCore
import WebSocketTransport

/// One room in the hub: the core's `Room`, which connection carries each session, and the sends
/// waiting for a revision to become durable.
///
/// Service thread only. Sends that follow a `commit` in the core's actions wait (in order) until the
/// store says that revision is durable; a store that is durable at once costs no waiting.
final class RoomHost {
    var room: Room
    /// When the store says a room of this name was last deleted (read with the room): a client of that
    /// room, away at the deletion, whose revision is not in this room's history, is turned away from it
    /// (`ConnectionMachine.roomWasDeleted`).
    var deletedAt: Int64?
    /// The connection currently carrying each connected session.
    var connections: [SessionID: any ClientConnection] = [:]
    /// Revision and journal position of the latest snapshot handed to the store.
    var snapshotRevision: Int
    var snapshotPosition: Int
    /// Joins waiting for revisions read from the store (the room stays loaded meanwhile).
    var catchingUp = 0
    /// HTTP reads of the room's history from the store under way (`readOlder`, an export): the room
    /// stays loaded meanwhile, so that a `DELETE` that comes finds it and they answer `404` (unloaded
    /// first, it was deleted in the store with no host to tell, and they answered from their copy).
    var storeReads = 0
    /// Joins whose `since` needs revisions from the store that are not durable yet (an import's, in
    /// its creation's commit): joined once they are (`Hub.revisionsDurable`). Counted in `catchingUp`.
    var joinsAwaitingDurable: [(any ClientConnection, through: Int)] = []
    /// Joins that came while this node could not be sure it still holds its rooms (`Hub.leasesUnsure`):
    /// welcomed from memory, they could be shown a room another node has taken and written to since;
    /// joined once the node is sure again (`Hub.sweep`), or closed with the room if it is dropped.
    /// Counted in `catchingUp`.
    var joinsAwaitingSure: [any ClientConnection] = []

    /// Takes every join waiting (for a durable revision or for the node to be sure), for a drop or a
    /// deletion: they are no longer counted in `catchingUp`.
    func takeWaitingJoins() -> [any ClientConnection] {
        let waiting = joinsAwaitingDurable.map(\.0) + joinsAwaitingSure
        joinsAwaitingDurable = []
        joinsAwaitingSure = []
        catchingUp -= waiting.count
        return waiting
    }
    /// Sessions whose `restore` or `log` waits for revisions read from the store.
    var fetching: Set<SessionID> = []
    /// `log` and `blame` questions of clients in the room that came while this node could not be sure
    /// it still holds its rooms (`Hub.leasesUnsure`): answered from memory, they could show a room
    /// another node has taken and written to since. Each session's later frames wait behind its
    /// question (its machine is `fetching`); asked again once the node is sure (`Hub.sweep`); the
    /// room's drop closes their connections (1012).
    var readsAwaitingSure: [(any ClientConnection, ClientMessage, session: SessionID)] = []
    /// When the last connection left (milliseconds), nil while someone is connected.
    var idleSince: Int64?
    /// Set when the store failed for this room: it is dropped and reloaded from what is durable.
    var broken = false
    /// A presence broadcast is on its way (`Hub.schedulePresence`, Effects/Hub+Effects.swift).
    var presenceScheduled = false
    /// When the last presence broadcast went out (milliseconds).
    var lastPresence: Int64?
    /// Sends held behind commits that are not durable yet, in order, each addressed to the connections
    /// its sessions had when it was made (a session resumed on a new connection meanwhile is caught up
    /// there by its welcome; the frame goes to the old connection, which is closing, and is dropped).
    var held: [Held] = []
    private var nextBarrier = 0
    /// Settled barriers whose records the store failed to write (a deleted room's), until passed.
    private var failedBarriers: Set<Int> = []
    /// What reads that outlast the room see of it: its deletion, if an admin deleted it.
    let life = RoomLife()
    /// An admin deleted the room: who still waits on it, and the outcome (`Hub.settleDeleted`). Nil
    /// while the room lives.
    var deletion: RoomLife.Deletion? {
        get { life.deletion }
        set { life.deletion = newValue }
    }
    /// The newest revision the store has made durable: the change feed serves up to it.
    var durableRevision: Int
    /// Long polls of the change feed waiting for a revision.
    var feedWaiters: [FeedWaiter] = []
    /// What to do when the room asks for older revisions for an HTTP caller's session (first first).
    var historyReads: [SessionID: [(HistoryRead) -> Void]] = [:]

    enum Held {
        case barrier(Int, durable: Bool)
        case send(OutboundMessage, to: [any ClientConnection])
        /// An HTTP read's answer, made when it was asked, given once the revision it shows is durable
        /// (`Hub.answerDurable`).
        case answer(any HTTPExchange, HTTPResponse)
    }

    init(room: Room) {
        self.room = room
        snapshotRevision = room.revision
        snapshotPosition = room.journalPosition
        durableRevision = room.revision
    }

    /// True while some sends wait for durability.
    var isHolding: Bool { !held.isEmpty }

    /// An id for the barrier of a commit that may turn out not to be durable yet.
    func makeBarrierID() -> Int {
        nextBarrier += 1
        return nextBarrier
    }

    /// Holds later sends behind `barrier` until `release(barrier)`.
    func hold(behind barrier: Int) {
        held.append(.barrier(barrier, durable: false))
    }

    /// Marks a barrier durable and returns the sends and answers now free to go, in order.
    func release(_ barrier: Int) -> [Held] {
        settle(barrier, failed: false).map(\.item)
    }

    /// Marks a barrier settled (`failed`: the store did not write its record; only a deleted room's
    /// barriers settle so, a living room is dropped instead) and returns what is now free to go, in
    /// order, each with whether the commit it waited for is durable.
    func settle(_ barrier: Int, failed: Bool) -> [(item: Held, durable: Bool)] {
        if failed { failedBarriers.insert(barrier) }
        for index in held.indices {
            if case .barrier(barrier, _) = held[index] { held[index] = .barrier(barrier, durable: true) }
        }
        var ready: [(item: Held, durable: Bool)] = []
        var written = true
        while let first = held.first {
            if case .barrier(let id, let settled) = first {
                guard settled else { return ready }
                written = failedBarriers.remove(id) == nil
            } else {
                ready.append((first, written))
            }
            held.removeFirst()
        }
        return ready
    }

    /// Forgets everything held (the room stops: what it waited for may never be durable) and returns
    /// the HTTP requests whose answers were held, for the caller to tell why.
    func discardHeld() -> [any HTTPExchange] {
        defer { held.removeAll() }
        return held.compactMap { if case .answer(let exchange, _) = $0 { exchange } else { nil } }
    }
}

/// A room rebuilt from what the store holds, and the revision and journal position of the stored
/// snapshot it was rebuilt from (the journal after it was replayed). Built off the service thread.
struct RestoredRoom: Sendable {
    var room: Room
    var snapshotRevision: Int
    var snapshotPosition: Int

    init(_ stored: StoredRoom, policy: RoomPolicy) throws(RestoreError) {
        room = try Room(restoring: stored, policy: policy)
        let replayed = stored.tail.reduce(0) { $0 + ($1.record.revision == nil ? 0 : 1) }
        snapshotRevision = room.revision - replayed
        snapshotPosition = stored.tail.first.map { $0.position - 1 } ?? room.journalPosition
    }
}

/// A room's deletion as the reads that outlast the room see it: a class, so a read of older revisions
/// (or an export) holds this, not the whole room, until it comes back (`Hub.readOlder`).
///
/// Service thread only.
final class RoomLife {
    var deletion: Deletion?

    /// An admin's deletion of the room: who still waits on it, and whether the store deleted it.
    struct Deletion {
        enum Outcome { case pending, deleted, failed }
        var outcome = Outcome.pending
        /// HTTP callers whose requests the room had not answered: `404 no-room` once the deletion is
        /// committed (`503` if it failed), after what is held for them.
        var callers: [HTTPReplies] = []
        /// The room's WebSockets, reading nothing more: closed once nothing is held for them and the
        /// outcome is known: 1000 `room deleted`, or 1011 `store failed` if the store could not delete
        /// the room (it is still there; they come back to it).
        var sockets: [any ClientConnection] = []
        /// What waits for the outcome (reads that came back meanwhile): called with `deleted`.
        var decided: [(Bool) -> Void] = []
    }

    /// Runs `body` with whether the room was deleted: now if that is known (false while the room
    /// lives, or after a deletion the store failed), else once the store has said.
    func whenDecided(_ body: @escaping (_ deleted: Bool) -> Void) {
        switch deletion?.outcome {
        case .pending?: deletion?.decided.append(body)
        case .deleted?: body(true)
        case .failed?, nil: body(false)
        }
    }

    /// The store said: what waited for it runs.
    func decide(deleted: Bool) {
        guard deletion?.outcome == .pending else { return }
        deletion?.outcome = deleted ? .deleted : .failed
        let waiting = deletion?.decided ?? []
        deletion?.decided = []
        for body in waiting { body(deleted) }
    }
}
