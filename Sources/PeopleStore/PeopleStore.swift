import PeopleCore

/// Where rooms go to outlive the process: each room's journal (`RoomRecord`s, revisions among them)
/// and its latest snapshot.
///
/// The hub hands every record to `append` and sends what depends on it (an ack, a broadcast, a welcome
/// with a new tag block) only once the store says it is durable. A store may be durable at once (the
/// in-memory twin) or later from its own writer (the durable stores, which group what many rooms
/// append meanwhile into one commit); `append`'s result says which, so a synchronous store costs no
/// thread hop. Reads (`load`, `revisions`, `checkpoint`) block: call them off the service thread.
public protocol PeopleStore: Sendable {
    /// A short name for logs and metrics ("memory", "sqlite", "postgres").
    var kind: String { get }

    /// Makes `entries` of `room` durable, in order, after everything appended or saved before.
    ///
    /// Returns `.durable` when they already are (then `whenDurable` is never called), or `.pending`
    /// when `whenDurable` will be called, on any thread, once they are (or with the error if they
    /// cannot be; then nothing appended after them is durable either).
    func append(_ entries: [JournalEntry], room: String,
                whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome

    /// Keeps `snapshot` as the room's latest, after everything appended before it, and its people as
    /// the room's checkpoint at its revision (`snapshot.checkpoint`, written with it, replacing one at
    /// the same revision). A room's first snapshot (position 0) creates it; later ones only make loading
    /// faster, so a failure is logged by the store and changes nothing else. `notices` (a new room's
    /// `room.created` for each webhook endpoint that wants it) are kept in the same commit.
    func save(_ snapshot: RoomSnapshot, room: String, notices: [WebhookNotice])

    /// Creates the room with a history, all in one commit: `snapshot` (its first, position 0) with
    /// `notices` as `save` keeps them, `entries` as `append` makes them durable, and `checkpoints` of
    /// that history as `keepCheckpoint` keeps them. A crash or a failure leaves all of it or none (an
    /// import's room is never found at revision 0 without the history it came with, nor with some of
    /// its checkpoints). The result and `whenDurable` are `append`'s.
    func create(_ snapshot: RoomSnapshot, notices: [WebhookNotice], entries: [JournalEntry],
                checkpoints: [Checkpoint], room: String,
                whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome

    /// The room as stored (latest snapshot, its window, the journal after it), or nil if it was never
    /// created.
    func load(room: String) throws(StoreError) -> StoredRoom?

    /// Revisions of `room` numbered `after + 1 ... through`, oldest first; fewer (or none) where the
    /// store no longer keeps them.
    func revisions(room: String, after: Int, through: Int) throws(StoreError) -> [Revision]

    /// The room's newest checkpoint at or below revision `rev` (one per snapshot ever saved, kept until
    /// the room is deleted), or nil if there is none: the room was stored before checkpoints were kept,
    /// or there is no such room. One indexed read.
    func checkpoint(room: String, atOrBelow rev: Int) throws(StoreError) -> Checkpoint?

    /// Keeps `checkpoint` of a room's past, written by `peoplekeeper-hub checkpoints` for rooms stored
    /// before checkpoints were kept; one the store has at that revision stays as it is. Not ordered
    /// with appends: only for revisions already durable. Blocks.
    func keepCheckpoint(_ checkpoint: Checkpoint, room: String) throws(StoreError)

    /// Rooms in the store (those with a snapshot), sorted by name in byte order: names greater than
    /// `after` (all when nil) that start with `prefix` (all when nil), at most `limit` of them. For the
    /// admin room list, a page at a time: the next page starts after the last name of this one.
    ///
    /// `rev` is the head revision in the journal, `people` the count in the latest snapshot (a loaded
    /// room's hub has newer numbers in memory and says so; an unloaded one was snapshotted at unload).
    func listRooms(after: String?, prefix: String?, limit: Int) throws(StoreError) -> [StoredRoomSummary]

    /// Deletes the room: its journal, snapshots, checkpoints and webhook cursors. Ordered after
    /// everything appended or saved before it (the durable stores pass it through their writer), so an
    /// append still on its way cannot bring the room back. Returns false if there was no such room. Afterwards `load`
    /// answers nil, and a later first snapshot creates the room anew. Blocks until done. `notices`
    /// (`room.deleted` for the endpoints that want it) are kept in the same commit, and the room's
    /// notices not yet delivered stay. An `owed` notice among them (`WebhookNotice.owed`) keeps, in the
    /// same commit, the room's revisions after its endpoint's cursor (none without a cursor), as notices
    /// of event `revision` at the deletion's time: what the endpoint had not been sent still reaches it.
    func deleteRoom(_ room: String, notices: [WebhookNotice]) throws(StoreError) -> Bool

    /// When the room of that name was last deleted (milliseconds since the epoch): the deletion
    /// remembered with `deleteRoom` (in its commit), for `DeletedRooms.remembered`, also after a room
    /// of the name is made again. Nil: no deletion of the name is remembered. The hub reads it when it
    /// loads a room, or finds none: a client of the deleted room, away when it was deleted, is told so
    /// when it comes back, instead of making the room again from the seed or being caught up with the
    /// room made since under the name. Blocks: call it off the service thread.
    func deletion(of room: String) throws(StoreError) -> Int64?

    /// The webhook cursors of one endpoint (an id the webhook dispatcher derives, its URL): room → the
    /// last revision delivered there, and the life of the room it counts in (`webhookCursors`: the
    /// revisions alone).
    func webhookCursorRecords(endpoint: String) throws(StoreError) -> [String: WebhookCursor]

    /// Records that `endpoint` has had every revision of `room` up to `rev` in the room's life `life`
    /// (`WebhookCursor.life`), if the stored cursor counts in that life (nil: one of no known life) or
    /// there is none; returns whether it did. Never lowers a cursor: a smaller `rev` than the one
    /// stored changes nothing (to start a room over, `resetWebhookCursor`). A write on its way while the
    /// room was deleted and made again finds the new life's cursor (its creation's start) and changes
    /// nothing: written, it put that cursor ahead of what the endpoint had of the new life, and a crash,
    /// or a deletion (which keeps the revisions after the cursor), before the lane's next step reset it
    /// lost those revisions (a model test of the lane, session 47).
    @discardableResult
    func setWebhookCursor(endpoint: String, room: String, rev: Int, life: Int64?) throws(StoreError) -> Bool

    /// Starts a room over for `endpoint`: puts its cursor at `rev` (lower or higher than the one stored),
    /// counting in the room's life `life`, if the room is in the store, or forgets it (`rev` nil) if the
    /// room is not. The room is checked and the cursor written together (one statement; on PostgreSQL
    /// also after the room's cursor lock, which its creation and deletion take): a deletion never finds
    /// the cursor missing half-way, a forget that comes after the room was made again leaves the new
    /// life's cursor, and a cursor put after a deletion makes none for a room that is gone.
    func resetWebhookCursor(endpoint: String, room: String, to rev: Int?, life: Int64?) throws(StoreError)

    /// The room events `endpoint` has not been told of yet, oldest first (by time; at the same time, in
    /// the order they were kept). Not the revisions owed (`owedRevisions`).
    func webhookNotices(endpoint: String) throws(StoreError) -> [WebhookNotice]

    /// The revisions of deleted rooms named `room` that `endpoint` is owed (kept by `deleteRoom`), after
    /// `after` (nil: from the first), in (deletion time, revision) order, at most `limit`: notices of
    /// event `revision` with the revision.
    func owedRevisions(endpoint: String, room: String, after: OwedPosition?, limit: Int) throws(StoreError) -> [WebhookNotice]

    /// The rooms where `endpoint` is owed revisions of deleted rooms, with how many of them.
    func revisionsOwed(endpoint: String) throws(StoreError) -> [String: Int]

    /// Forgets a notice (a room event, or an owed revision) once delivered (nothing if it is not there).
    func removeWebhookNotice(_ notice: WebhookNotice) throws(StoreError)

    /// The rooms where `endpoint` has something left to deliver: its cursor below the room's head, or
    /// a room event kept for it. Cluster mode's dispatcher reads this to find rooms whose deliveries
    /// no node is making (their owner died or unloaded them). One query in the durable stores.
    func webhookBacklog(endpoint: String) throws(StoreError) -> [WebhookBacklog]

    /// Every webhook endpoint the store keeps delivery state for (a cursor, a room event, a deleted
    /// room's revision owed), by id (its URL) in byte order, with how much of each: what
    /// `peoplekeeper-hub webhooks` lists, to find endpoints that are no longer configured.
    func webhookEndpoints() throws(StoreError) -> [StoredWebhookEndpoint]

    /// The ids of `webhookEndpoints`, without counting what each has: what a running dispatcher reads
    /// every scan (the durable stores step through their indexes, a few rows per endpoint).
    func webhookEndpointIDs() throws(StoreError) -> [String]

    /// Removes everything the store keeps for `endpoint` (its cursors, room events and owed revisions),
    /// in one commit, and returns what it was (nil: nothing). For an endpoint removed from the config
    /// of every hub: one still configured would write its cursors again, and start at each room's head
    /// where it has none.
    func forgetWebhookEndpoint(_ endpoint: String) throws(StoreError) -> StoredWebhookEndpoint?

    /// Throws if the store cannot be reached or written now (for `/healthz`). Blocks: call it off the
    /// service thread.
    func check() throws(StoreError)

    /// Waits for everything appended to be durable, then releases the store's resources.
    func close()
}

extension PeopleStore {
    /// The webhook cursors of one endpoint: room → the last revision delivered there.
    public func webhookCursors(endpoint: String) throws(StoreError) -> [String: Int] {
        try webhookCursorRecords(endpoint: endpoint).mapValues(\.rev)
    }

    /// From `webhookEndpoints`: for the in-memory store and stand-ins.
    public func webhookEndpointIDs() throws(StoreError) -> [String] {
        try webhookEndpoints().filter { !$0.isEmpty }.map(\.endpoint)
    }

    /// From `webhookCursors`, `webhookNotices`, `revisionsOwed` and `listRooms` (every room, a page at a
    /// time): for the in-memory store and stand-ins; the durable stores answer with one query.
    public func webhookBacklog(endpoint: String) throws(StoreError) -> [WebhookBacklog] {
        let cursors = try webhookCursorRecords(endpoint: endpoint)
        let owed = try revisionsOwed(endpoint: endpoint)
        let noticed = Set(try webhookNotices(endpoint: endpoint).map(\.room)).union(owed.keys)
        var heads: [String: Int] = [:]
        for summary in try everyRoom() { heads[summary.name] = summary.rev }
        return Set(cursors.keys).union(noticed).sorted().compactMap { room in
            let found = WebhookBacklog(room: room, cursor: cursors[room]?.rev, cursorLife: cursors[room]?.life, head: heads[room], noticed: noticed.contains(room),
                                       owed: owed[room] ?? 0)
            return found.isPending ? found : nil
        }
    }

    /// Every room in the store, in name order, read `listRooms` page by page (`pageSize` at a time).
    public func everyRoom(pageSize: Int = 500) throws(StoreError) -> [StoredRoomSummary] {
        var rooms: [StoredRoomSummary] = []
        var after: String?
        while true {
            let page = try listRooms(after: after, prefix: nil, limit: pageSize)
            rooms += page
            guard page.count == pageSize, let last = page.last else { return rooms }
            after = last.name
        }
    }

    /// Whether the store has the room (a snapshot of it): one `listRooms` read, no load. Blocks.
    public func hasRoom(_ room: String) throws(StoreError) -> Bool {
        try listRooms(after: nil, prefix: room, limit: 1).first?.name == room
    }

    /// A snapshot with no webhook notices.
    public func save(_ snapshot: RoomSnapshot, room: String) { save(snapshot, room: room, notices: []) }

    /// Deletes the room with no webhook notices.
    public func deleteRoom(_ room: String) throws(StoreError) -> Bool { try deleteRoom(room, notices: []) }
}

/// How long a store remembers that a room was deleted (`PeopleStore.deletion(of:)`): a client away
/// longer than that comes back to a room made again from the seed, as one of a hub without storage does.
public enum DeletedRooms {
    /// 90 days, in milliseconds.
    public static let remembered: Int64 = 90 * 24 * 3600 * 1000

    /// Whether a deletion at `deletedAt` is still remembered at `now`.
    public static func isRemembered(_ deletedAt: Int64, now: Int64) -> Bool { now - deletedAt < remembered }
}

/// A room event (`room.created`, `room.deleted`) a webhook endpoint has yet to be told of, or a
/// revision of a deleted room it had not been sent. The hub has it kept in the same commit as the
/// creation or deletion, and the webhook dispatcher removes it once delivered, so a crash in between
/// repeats it (same `id`), never loses it (the product contract's HTTP API §3: nothing kept in memory
/// only, nothing lost).
public struct WebhookNotice: Sendable, Hashable {
    /// The endpoint's id (its URL).
    public var endpoint: String
    public var room: String
    /// `room.created`, `room.deleted`, or `revision` (`revision` holds it).
    public var event: String
    /// When it happened (milliseconds since the epoch): part of a room event's delivery id. For a
    /// revision, when its room was deleted (its own time is in it).
    public var time: Int64
    /// The revision, for event `revision` as the store hands it back (nil in an `owed` request).
    public var revision: Revision?

    public init(endpoint: String, room: String, event: String, time: Int64, revision: Revision? = nil) {
        (self.endpoint, self.room, self.event, self.time, self.revision) = (endpoint, room, event, time, revision)
    }

    /// The event of a deleted room's revision kept for an endpoint.
    public static let revisionEvent = "revision"

    /// For `deleteRoom`: keep the revisions of `room` after `endpoint`'s cursor, at `deletedAt`.
    public static func owed(endpoint: String, room: String, deletedAt: Int64) -> WebhookNotice {
        WebhookNotice(endpoint: endpoint, room: room, event: revisionEvent, time: deletedAt)
    }

    /// Whether this is an `owed` request (a revision event without its revision).
    public var isOwedRequest: Bool { event == Self.revisionEvent && revision == nil }

    /// The event of a cursor start (`startsAtZero`).
    public static let cursorStartEvent = "cursor"

    /// For a room's creation: `endpoint`, which wants the room's revisions, has them from the first:
    /// the store sets its cursor for `room` at 0 in the creation's commit, not a notice. Written by
    /// the endpoint's delivery lane alone, the cursor was missing when the room was deleted before the
    /// lane got to it (an endpoint behind on an earlier room of the name), and the deletion kept none
    /// of the room's revisions for the endpoint (a tester's pass: a room made and deleted twice
    /// while its endpoint was slow never had its middle life's revisions delivered).
    /// `life`: when the room was made, the life its cursor counts in (`WebhookCursor.life`), kept as
    /// the notice's time.
    public static func startsAtZero(endpoint: String, room: String, life: Int64) -> WebhookNotice {
        WebhookNotice(endpoint: endpoint, room: room, event: cursorStartEvent, time: life)
    }

    /// Whether this is a cursor start (`startsAtZero`).
    public var isCursorStart: Bool { event == Self.cursorStartEvent && revision == nil }

    /// Whether the store keeps this as a room event to deliver (not an owed request or a cursor start).
    public var isKept: Bool { !isOwedRequest && !isCursorStart }

    /// Where an owed revision stands in `owedRevisions`' order (nil for a room event).
    public var owedPosition: OwedPosition? { revision.map { OwedPosition(time: time, rev: $0.number) } }
}

/// An endpoint's cursor in one room (`webhookCursorRecords`).
public struct WebhookCursor: Sendable, Hashable {
    /// The last revision delivered.
    public var rev: Int
    /// The life of the room it counts in: when the room was made (milliseconds since the epoch), as its
    /// creation's cursor start wrote it (`WebhookNotice.startsAtZero`), or a reset after it; nil for a
    /// cursor a lane began itself (a room made before the endpoint was configured) or kept before
    /// cursors had lives. A cursor write names the life it counts in (`setWebhookCursor`).
    public var life: Int64?

    public init(rev: Int, life: Int64?) {
        self.rev = rev
        self.life = life
    }
}

/// An owed revision's place: its room's deletion time, then its number.
public struct OwedPosition: Sendable, Hashable, Comparable {
    public var time: Int64
    public var rev: Int

    public init(time: Int64, rev: Int) { (self.time, self.rev) = (time, rev) }

    public static func < (a: OwedPosition, b: OwedPosition) -> Bool { (a.time, a.rev) < (b.time, b.rev) }
}

/// What the store keeps for one webhook endpoint (`webhookEndpoints`).
public struct StoredWebhookEndpoint: Sendable, Hashable {
    /// The endpoint's id (its URL, as configured).
    public var endpoint: String
    /// Rooms with a cursor (the last revision delivered there).
    public var cursors: Int
    /// Room events (`room.created`, `room.deleted`) not yet delivered.
    public var events: Int
    /// Revisions of deleted rooms not yet delivered, and the rooms they were in.
    public var owedRevisions: Int

    public init(endpoint: String, cursors: Int, events: Int, owedRevisions: Int) {
        (self.endpoint, self.cursors, self.events, self.owedRevisions) = (endpoint, cursors, events, owedRevisions)
    }

    /// Nothing kept: no cursor, no room event, no owed revision.
    public var isEmpty: Bool { cursors == 0 && events == 0 && owedRevisions == 0 }
}

/// A room where a webhook endpoint has something left to deliver (`webhookBacklog`).
public struct WebhookBacklog: Sendable, Hashable {
    public var room: String
    /// The endpoint's cursor there (nil: none yet), and the life of the room it counts in.
    public var cursor: Int?
    public var cursorLife: Int64?
    /// The room's head revision (nil: the room is not in the store: deleted).
    public var head: Int?
    /// Whether a room event (or a deleted room's revision) is kept for the endpoint.
    public var noticed: Bool
    /// How many revisions of deleted rooms under this name are kept for the endpoint.
    public var owed: Int

    public init(room: String, cursor: Int?, cursorLife: Int64? = nil, head: Int?, noticed: Bool, owed: Int = 0) {
        (self.room, self.cursor, self.cursorLife, self.head, self.noticed, self.owed) = (room, cursor, cursorLife, head, noticed, owed)
    }

    /// The cursor with its life (`WebhookCursor`).
    public var storedCursor: WebhookCursor? { cursor.map { WebhookCursor(rev: $0, life: cursorLife) } }

    /// A room event to deliver, or revisions past the cursor.
    public var isPending: Bool {
        if noticed { return true }
        guard let cursor, let head else { return false }
        return head > cursor
    }
}

/// Whether an append is already durable.
public enum AppendOutcome: Sendable, Hashable {
    case durable
    case pending
}

/// The serving nodes that share a store (cluster mode) and the webhook endpoints each one's config
/// lists, as their heartbeats say: every node must list the same (a room made on a node that does not
/// list an endpoint is not followed by it), and an endpoint another node lists is not one to forget.
public protocol ClusterNodes: Sendable {
    /// This node's id (`cluster.nodeId`).
    var node: String { get }
    /// Node id → the endpoint ids its config lists, for every serving node whose session with the
    /// store is there (this one's too, if it serves); nil for a node of an older version, which does
    /// not say.
    func webhooksOfLiveNodes() throws(StoreError) -> [String: [String]?]
}

extension ClusterNodes {
    /// `webhooksOfLiveNodes` as the hub's start and the `webhooks` commands read it, leaving out
    /// `except` (a node's own row).
    public func webhookListing(except: String? = nil) throws(StoreError) -> ClusterWebhooks {
        var listing = ClusterWebhooks()
        for (node, endpoints) in try webhooksOfLiveNodes().sorted(by: { $0.key < $1.key }) where node != except {
            guard let endpoints else { listing.unknown.append(node); continue }
            listing.byNode[node] = endpoints
            for endpoint in endpoints { listing.listed[endpoint, default: []].append(node) }
        }
        return listing
    }
}

/// The webhooks of a cluster's live nodes (`ClusterNodes.webhookListing`).
public struct ClusterWebhooks: Sendable, Hashable {
    /// Node → the endpoint ids its config lists.
    public var byNode: [String: [String]] = [:]
    /// Endpoint id → the nodes whose config lists it, in order of their ids.
    public var listed: [String: [String]] = [:]
    /// The nodes of an older version, which do not say (any endpoint may be theirs).
    public var unknown: [String] = []

    public init() {}
}

/// Room ownership among hub nodes sharing one store (cluster mode): a node serves a room only while
/// it holds the room's lease. Calls block: make them off the service thread.
public protocol RoomLeases: AnyObject, Sendable {
    /// This node's id and the URL clients reach it by (the base of `redirect` URLs).
    var node: String { get }
    var advertisedURL: String { get set }

    /// Takes the lease on `room` for `holder` if nobody holds it, or joins this node's hold on it (no
    /// round trip then): the lease stays this node's until every holder has released it.
    func acquire(room: String, for holder: LeaseHolder) throws(StoreError) -> LeaseOutcome

    /// `holder` no longer needs the room; the lease is given up when no holder on this node needs it.
    func release(room: String, for holder: LeaseHolder)

    /// Adds a handler called (on any thread) when every lease was lost at once (the store connection
    /// broke): the node must stop serving its rooms and delivering their webhooks. Every handler added
    /// is called.
    func onLeasesLost(_ handler: @escaping @Sendable () -> Void)

    /// Whether the node may act on its leases now: false after a pause of its process until a
    /// statement sent after it has been answered on the lease connection, and whenever none sent in
    /// the last three quarters of the lease timeout has been (`PauseWatch`). Meanwhile it answers no
    /// request from a room's memory and sends no webhook: another node may hold its rooms. Any thread.
    var leasesCertain: Bool { get }
}

extension RoomLeases {
    /// A node that cannot have been passed over while paused (a test's, or one with no heartbeat).
    public var leasesCertain: Bool { true }

    /// The hub's hold: the room is loaded (or loading) here.
    public func acquire(room: String) throws(StoreError) -> LeaseOutcome { try acquire(room: room, for: .room) }
    /// The hub's hold ends: the room was unloaded and is durable.
    public func release(room: String) { release(room: room, for: .room) }
}

/// What on a node needs a room's lease. A node keeps the lease while any of them does, so a room whose
/// webhook deliveries are not done stays with the node delivering them after its hub unloads it:
/// another node cannot load it and deliver the same revisions beside it, out of order.
public enum LeaseHolder: String, Sendable, Hashable, CaseIterable {
    /// The hub: the room is loaded or loading.
    case room
    /// The webhook dispatcher: the room has deliveries to make.
    case webhooks
}

/// Who may serve a room.
public enum LeaseOutcome: Sendable, Hashable {
    /// This node: load it and serve it.
    case acquired
    /// Another node: clients go there.
    case ownedBy(node: String, url: String)
    /// Held, but the owner has not said where yet (it is taking the room over): try again shortly.
    case busy
}
