import Foundation
import GRDB
import Synchronization
import Logging
import PeopleCore
import PeopleStore

/// The embedded store: one SQLite file (WAL, `synchronous=FULL`), written by a group-commit thread.
///
/// Tables: `journal` (every record of every room: position, and for revisions their number, kind,
/// author, label and time, then the record itself as JSON), `snapshots` (each room's latest, with its
/// count of people and when it was saved), `checkpoints` (room, revision → the people then, one per
/// snapshot ever saved) and `webhook_cursors` (endpoint, room → last delivered revision, and the
/// life of the room it counts in).
/// Reads run on their own connections beside the writer (WAL), so a catch-up read never waits for a
/// commit. The schema is created and upgraded by GRDB migrations at open.
public final class SQLiteStore: PeopleStore {
    public let path: String
    private let pool: DatabasePool
    private let writer: GroupCommitWriter
    private let logger: Logger
    private let claim: StoreClaim?
    /// The files as opened: a commit on a file deleted or replaced since fails (`StoreFiles`).
    private let files: StoreFiles
    /// A deletion's emptying of the write-ahead log found a reader busy (`forgetDeletedPages`): each
    /// store check tries again until it is done.
    private let logNotEmptied = Atomic<Bool>(false)

    /// Opens (creating it and its directory if needed) the store at `path`. `logger` is the caller's:
    /// the store logs snapshots it could not save there. With `claim`, the store is this process's alone
    /// until `close()` (or the process ends, however it ends): a second claim on the same file, from
    /// another hub, fails with `conflict` naming the holder. One writer per file is what keeps the
    /// journal one history (two hubs would both serve a room and collide at its next append); the
    /// tools that read or add rooms beside a running hub (`backup`, `export`, `history`, `import`) do
    /// not claim.
    public init(path: String, logger: Logger, claim: Bool = false) throws(StoreError) {
        self.path = path
        self.logger = logger
        let directory = (path as NSString).deletingLastPathComponent
        do {
            if !directory.isEmpty { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        } catch {
            throw StoreError(.io, "cannot create the directory of the SQLite store \(path): \(error)")
        }
        self.claim = claim ? try StoreClaim(store: path) : nil
        do {
            var configuration = Configuration()
            configuration.label = "peoplekeeper"
            // Another process writing the file (the `import` and `checkpoints` commands beside a hub)
            // holds its write lock for a while: wait for it, as documented, instead of failing the
            // commit (which drops every room in it) with "database is locked".
            configuration.busyMode = .timeout(Self.busyTimeout)
            configuration.prepareDatabase { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                // Checkpoint every 16 MiB of WAL instead of SQLite's 4 MiB: 64 rooms writing at once dirty
                // ~128 pages a commit, and each checkpoint (on the commit thread) writes every distinct page
                // once. Measured (docs/PERFORMANCE.md, store-embedded-durable): 9,400-10,000 -> 12,400-13,300
                // durable revisions/s through the hub, answer p99 17 -> 24-28 ms at that load.
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 4096")
                // A commit bigger than that (an import's, one transaction) grows the log past it, and
                // SQLite keeps a log's size once grown: cut back to 16 MiB whenever a checkpoint has
                // emptied it (a review, session 43: it stayed at the import's size).
                try db.execute(sql: "PRAGMA journal_size_limit = \(Self.walLimit)")
                // A deleted room's pages are zeroed, not left readable in the file's free pages (Debian's
                // SQLite does this by default; another build might not).
                try db.execute(sql: "PRAGMA secure_delete = ON")
            }
            pool = try DatabasePool(path: path, configuration: configuration)
            // GRDB's WAL set-up on the writer ends with `synchronous = NORMAL` (after prepareDatabase): a
            // commit would then reach the disk only at the next checkpoint, so an ack could be lost to a
            // power cut. FULL again, on the one writer connection: every commit is flushed (fdatasync)
            // before its append is reported durable.
            try pool.barrierWriteWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            // A command (`export`, `history`, …) beside a hub of an older version, the binary replaced
            // on disk before the hub was started again: migrating here would change the schema under
            // that hub (an index build holds the write lock, its commits fail meanwhile). A review,
            // session 43. Only a hub upgrades a store a hub is using (one of this version may be doing
            // it right now: the message says both).
            if self.claim == nil, try !pool.read({ try Self.migrator.hasCompletedMigrations($0) }),
               let holder = StoreClaim.heldBy(store: path) {
                throw StoreError(.conflict, "the SQLite store at \(path) is in use by a hub (\(holder.map { "pid \($0)" } ?? "pid unknown")) that has not upgraded it to this command's version, and this command would upgrade it under that hub: a hub of an older version: restart it with this version (it upgrades the store); a hub of this version upgrading it now: try again once it listens")
            }
            try Self.migrator.migrate(pool)
            // Deletions remembered longer than `DeletedRooms.remembered` go at every open too, not only
            // with a later deletion (a read never answers with them).
            try pool.write { db in
                try db.execute(sql: "DELETE FROM deleted_rooms WHERE deleted_at <= ?",
                               arguments: [Self.now() - DeletedRooms.remembered])
            }
        } catch {
            throw Self.storeError(error, "cannot open the SQLite store at \(path): \(error)", otherwise: .unavailable)
        }
        let pool = self.pool
        let files = StoreFiles(paths: [path, path + "-wal"] + (self.claim.map { [$0.path] } ?? []))
        self.files = files
        writer = GroupCommitWriter(
            name: "pk-sqlite-write", kind: "sqlite", probeWrites: true,
            commit: { batch in
                try files.check()
                do { try Self.commit(batch, to: pool) } catch { throw Self.storeError(error, "\(error)") }
            },
            onSnapshotFailure: { room, error in
                logger.error("snapshot not saved", metadata: ["room": "\(room)", "error": "\(error)"])
            })
    }

    public var kind: String { "sqlite" }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: journal and snapshots") { db in
            try db.execute(sql: """
                CREATE TABLE journal (
                    room TEXT NOT NULL,
                    position INTEGER NOT NULL,
                    revision INTEGER,
                    kind TEXT NOT NULL,
                    author TEXT,
                    label TEXT,
                    at INTEGER,
                    record TEXT NOT NULL,
                    PRIMARY KEY (room, position)
                ) WITHOUT ROWID;
                CREATE UNIQUE INDEX journal_revision ON journal (room, revision) WHERE revision IS NOT NULL;
                CREATE TABLE snapshots (
                    room TEXT PRIMARY KEY NOT NULL,
                    position INTEGER NOT NULL,
                    revision INTEGER NOT NULL,
                    floor INTEGER NOT NULL,
                    state TEXT NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        // The room list reads these instead of parsing every snapshot; rows from before get their count
        // once, here (SQLite's JSON functions), and their save time as the migration's.
        migrator.registerMigration("v2: room summaries and webhook cursors") { db in
            try db.execute(sql: """
                ALTER TABLE snapshots ADD COLUMN people INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE snapshots ADD COLUMN saved_at INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE webhook_cursors (
                    endpoint TEXT NOT NULL,
                    room TEXT NOT NULL,
                    rev INTEGER NOT NULL,
                    PRIMARY KEY (endpoint, room)
                ) WITHOUT ROWID;
                CREATE INDEX webhook_cursors_room ON webhook_cursors (room);
                """)
            try db.execute(sql: "UPDATE snapshots SET people = coalesce(json_array_length(state, '$.people'), 0), saved_at = ?",
                           arguments: [Self.now()])
        }
        // One row per snapshot saved from now on: a restore or `?at=` far back replays from the nearest
        // one below it instead of reading every revision up to the room's memory. A rowid table (its
        // rows are a room's people, often many pages: too big for WITHOUT ROWID) whose primary key is
        // the (room, revision) index the read walks. Rooms stored before get none: they fall back.
        migrator.registerMigration("v3: checkpoints") { db in
            try db.execute(sql: """
                CREATE TABLE checkpoints (
                    room TEXT NOT NULL,
                    revision INTEGER NOT NULL,
                    people TEXT NOT NULL,
                    PRIMARY KEY (room, revision)
                );
                """)
        }
        // Room events not yet delivered to a webhook endpoint, kept with the creation or deletion that
        // made them (a rowid table: notices come back in the order kept).
        migrator.registerMigration("v4: webhook notices") { db in
            try db.execute(sql: """
                CREATE TABLE webhook_notices (
                    endpoint TEXT NOT NULL,
                    room TEXT NOT NULL,
                    event TEXT NOT NULL,
                    at INTEGER NOT NULL,
                    UNIQUE (endpoint, room, event, at)
                );
                """)
        }
        // The revisions of a deleted room that an endpoint had not been sent, copied from the journal
        // by the deletion (a journal row as it was), delivered before the room's `room.deleted`.
        migrator.registerMigration("v5: webhook revisions owed") { db in
            try db.execute(sql: """
                CREATE TABLE webhook_owed (
                    endpoint TEXT NOT NULL,
                    room TEXT NOT NULL,
                    deleted_at INTEGER NOT NULL,
                    revision INTEGER NOT NULL,
                    position INTEGER NOT NULL,
                    record TEXT NOT NULL,
                    PRIMARY KEY (endpoint, room, deleted_at, revision)
                ) WITHOUT ROWID;
                """)
        }
        // The answers that kept an idempotency key, found by their record's own `"keyTime":` member
        // (`JournalEntry.keyMarker`): a room's load reads those from its snapshot's `keysFrom` on
        // (`StoredRoom.keyed`) instead of every record since. On the record's text, not a new column,
        // so rows written before, and by a hub of an older version beside this one, are in it too.
        // Building it reads the journal once.
        migrator.registerMigration("v6: keyed answers") { db in
            try db.execute(sql: "CREATE INDEX journal_keys ON journal (room, position) WHERE \(Self.keyedRecord)")
        }
        // The rooms deleted (`deletion(of:)`): a name and a time, nothing of what the room held; a row
        // goes once `DeletedRooms.remembered` old, with a later deletion or at an open.
        migrator.registerMigration("v7: deleted rooms") { db in
            try db.execute(sql: """
                CREATE TABLE deleted_rooms (
                    room TEXT PRIMARY KEY NOT NULL,
                    deleted_at INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE INDEX deleted_rooms_at ON deleted_rooms (deleted_at);
                """)
        }
        // The life of the room each webhook cursor counts in (`WebhookCursor.life`): a write of an earlier
        // life does not land in the cursor a room made again has. Cursors from before have none.
        migrator.registerMigration("v8: webhook cursor lives") { db in
            try db.execute(sql: "ALTER TABLE webhook_cursors ADD COLUMN life INTEGER")
        }
        return migrator
    }

    /// The predicate of the keyed answers' index, which a query must repeat word for word to use it.
    static let keyedRecord = "instr(record, '\(JournalEntry.keyMarker)') > 0"
    /// A room's keyed answers between two positions (room, from, through), on that index (named: without
    /// statistics SQLite takes the primary key's, and reads every record in the range).
    static let keyedQuery = """
        SELECT position, record FROM journal INDEXED BY journal_keys
        WHERE room = ? AND position >= ? AND position <= ? AND \(keyedRecord)
        ORDER BY position
        """

    public func append(_ entries: [JournalEntry], room: String,
                       whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        writer.submit(.append(room: room, entries: entries, whenDurable: whenDurable))
        return .pending
    }

    public func save(_ snapshot: RoomSnapshot, room: String, notices: [WebhookNotice]) {
        writer.submit(.snapshot(room: room, snapshot, notices: notices))
    }

    public func create(_ snapshot: RoomSnapshot, notices: [WebhookNotice], entries: [JournalEntry],
                       checkpoints: [Checkpoint], room: String,
                       whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome {
        writer.create(room: room, snapshot, notices: notices, entries: entries, checkpoints: checkpoints,
                      whenDurable: whenDurable)
        return .pending
    }

    /// Milliseconds since the epoch (a snapshot's save time).
    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// One transaction for the whole batch: records, snapshots (each with its checkpoint) and
    /// deletions, in order.
    static func commit(_ batch: [WriterWork], to pool: DatabasePool) throws {
        try pool.write { db in
            let insert = try db.cachedStatement(sql: """
                INSERT INTO journal (room, position, revision, kind, author, label, at, record)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
            let snapshot = try db.cachedStatement(sql: """
                INSERT OR REPLACE INTO snapshots (room, position, revision, floor, state, people, saved_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """)
            // A room's first snapshot (position 0) creates it, and fails if the room exists: another
            // process (the import command beside a hub) made it meanwhile; it is never replaced.
            let first = try db.cachedStatement(sql: """
                INSERT INTO snapshots (room, position, revision, floor, state, people, saved_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """)
            let checkpoint = try db.cachedStatement(sql: """
                INSERT OR REPLACE INTO checkpoints (room, revision, people) VALUES (?, ?, ?)
                """)
            let kept = try db.cachedStatement(sql: """
                INSERT OR IGNORE INTO checkpoints (room, revision, people) VALUES (?, ?, ?)
                """)
            let notice = try db.cachedStatement(sql: """
                INSERT OR IGNORE INTO webhook_notices (endpoint, room, event, at) VALUES (?, ?, ?, ?)
                """)
            let cursorStart = try db.cachedStatement(sql: """
                INSERT INTO webhook_cursors (endpoint, room, rev, life) VALUES (?, ?, 0, ?)
                ON CONFLICT (endpoint, room) DO UPDATE SET rev = 0, life = excluded.life
                """)
            func keep(_ notices: [WebhookNotice]) throws {
                for kept in notices where kept.isKept {
                    try notice.execute(arguments: [kept.endpoint, kept.room, kept.event, kept.time])
                }
                for start in notices where start.isCursorStart {
                    try cursorStart.execute(arguments: [start.endpoint, start.room, start.time])
                }
            }
            let now = Self.now()
            for work in batch {
                switch work {
                case .append(let room, let entries, _):
                    for entry in entries {
                        let row = JournalRow(entry)
                        try insert.execute(arguments: [room, entry.position, row.revision, row.kind, row.author,
                                                       row.label, row.at, row.record])
                    }
                case .snapshot(let room, let s, let notices):
                    let json = s.json
                    try (s.position == 0 ? first : snapshot).execute(arguments: [room, s.position, s.revision, s.floor,
                                                     String(decoding: json.bytes, as: UTF8.self),
                                                     StoredRoomSummary.people(inSnapshot: json), now])
                    try checkpoint.execute(arguments: [room, s.revision, Checkpoint.peopleText(inSnapshot: json)])
                    try keep(notices)
                case .checkpoints(let room, let checkpoints):
                    for past in checkpoints { try kept.execute(arguments: [room, past.revision, past.peopleText]) }
                case .delete(let room, let found, let notices, _):
                    for owed in notices where owed.isOwedRequest {
                        // No cursor: the subquery is NULL and no row compares above it.
                        try db.execute(sql: """
                            INSERT OR IGNORE INTO webhook_owed (endpoint, room, deleted_at, revision, position, record)
                            SELECT ?1, room, ?2, revision, position, record FROM journal
                            WHERE room = ?3 AND revision > (SELECT rev FROM webhook_cursors WHERE endpoint = ?1 AND room = ?3)
                            """, arguments: [owed.endpoint, owed.time, room])
                    }
                    try db.execute(sql: "DELETE FROM journal WHERE room = ?", arguments: [room])
                    var existed = db.changesCount > 0
                    try db.execute(sql: "DELETE FROM snapshots WHERE room = ?", arguments: [room])
                    existed = existed || db.changesCount > 0
                    try db.execute(sql: "DELETE FROM checkpoints WHERE room = ?", arguments: [room])
                    try db.execute(sql: "DELETE FROM webhook_cursors WHERE room = ?", arguments: [room])
                    if existed {
                        try db.execute(sql: "DELETE FROM deleted_rooms WHERE deleted_at <= ?",
                                       arguments: [now - DeletedRooms.remembered])
                        try db.execute(sql: "INSERT OR REPLACE INTO deleted_rooms (room, deleted_at) VALUES (?, ?)",
                                       arguments: [room, now])
                    }
                    try keep(notices)
                    found.found = existed
                case .probe:
                    // A page written (the header's user version, set to what it is), so a disk that is
                    // still full or read-only fails the probe: an empty transaction passed there.
                    let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
                    try db.execute(sql: "PRAGMA user_version = \(version)")
                }
            }
        }
    }

    /// How long a write waits for another process's write lock on the file, in seconds.
    static let busyTimeout: TimeInterval = 30

    /// Holds the file's write lock for `seconds` from this store's own connection, as another process
    /// writing the file would (for tests).
    func holdWriteLock(seconds: Double, taken: () -> Void) throws {
        try pool.barrierWriteWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            taken()
            Thread.sleep(forTimeInterval: seconds)
            try db.execute(sql: "COMMIT")
        }
    }

    /// An integer pragma as the writer connection has it (`synchronous`: 2 is FULL, every commit
    /// flushed; `journal_size_limit`: bytes), for the tests.
    func writerPragma(_ name: String) throws -> Int {
        try pool.barrierWriteWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA \(name)") ?? -1 }
    }

    /// The size the write-ahead log is cut back to once emptied (bytes): 16 MiB, the checkpoint's.
    static let walLimit = 16 << 20

    /// The last commit did not fail (`GroupCommitWriter.recheck`) and the file can be read.
    public func check() throws(StoreError) {
        try files.check()
        try writer.recheck()
        do { _ = try pool.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM snapshots") } } catch {
            throw Self.storeError(error, "cannot read the database: \(error)", otherwise: .unavailable)
        }
        if logNotEmptied.load(ordering: .relaxed) { forgetDeletedPages() }
    }

    public func load(room: String) throws(StoreError) -> StoredRoom? {
        let stored: StoredRoom?
        do {
            stored = try pool.read { db -> StoredRoom? in
                guard let row = try Row.fetchOne(db, sql: """
                    SELECT position, revision, floor, state FROM snapshots WHERE room = ?
                    """, arguments: [room]) else { return nil }
                let position: Int = row["position"]
                let revision: Int = row["revision"]
                let floor: Int = row["floor"]
                let state: String = row["state"]
                let window = try Self.records(db, sql: """
                    SELECT position, record FROM journal WHERE room = ? AND revision > ? AND revision <= ? ORDER BY revision
                    """, arguments: [room, floor, revision]).compactMap(\.record.revision)
                let tail = try Self.records(db, sql: """
                    SELECT position, record FROM journal WHERE room = ? AND position > ? ORDER BY position
                    """, arguments: [room, position])
                let snapshot = try JSON.parse(state)
                let keyed = try StoredRoom.keyedPositions(inSnapshot: snapshot).map { range in
                    try Self.records(db, sql: Self.keyedQuery, arguments: [room, range.lowerBound, range.upperBound])
                } ?? []
                return StoredRoom(snapshot: snapshot, window: window, keyed: keyed, tail: tail)
            }
        } catch {
            throw Self.storeError(error, "cannot load room \(room): \(error)")
        }
        writer.reopen(room: room)
        return stored
    }

    public func revisions(room: String, after: Int, through: Int) throws(StoreError) -> [Revision] {
        do {
            return try pool.read { db in
                try Self.records(db, sql: """
                    SELECT position, record FROM journal WHERE room = ? AND revision > ? AND revision <= ? ORDER BY revision
                    """, arguments: [room, after, through]).compactMap(\.record.revision)
            }
        } catch {
            throw Self.storeError(error, "cannot read revisions of room \(room): \(error)")
        }
    }

    public func checkpoint(room: String, atOrBelow rev: Int) throws(StoreError) -> Checkpoint? {
        do {
            return try pool.read { db -> Checkpoint? in
                guard let row = try Row.fetchOne(db, sql: """
                    SELECT revision, people FROM checkpoints WHERE room = ? AND revision <= ?
                    ORDER BY revision DESC LIMIT 1
                    """, arguments: [room, rev]) else { return nil }
                let people: String = row["people"]
                return try Checkpoint(revision: row["revision"], peopleJSON: JSON.parse(people))
            }
        } catch {
            throw Self.storeError(error, "cannot read a checkpoint of room \(room): \(error)")
        }
    }

    /// Straight to the file (beside the writer: SQLite takes turns), for a room the store has.
    public func keepCheckpoint(_ checkpoint: Checkpoint, room: String) throws(StoreError) {
        do {
            try pool.write { db in
                try db.execute(sql: """
                    INSERT OR IGNORE INTO checkpoints (room, revision, people)
                    SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM snapshots WHERE room = ?)
                    """, arguments: [room, checkpoint.revision, checkpoint.peopleText, room])
            }
        } catch {
            throw Self.storeError(error, "cannot keep a checkpoint of room \(room): \(error)")
        }
    }

    /// One query: the snapshots' rows in name order (SQLite compares TEXT bytewise), each with its head
    /// revision and that revision's time from the journal's revision index.
    public func listRooms(after: String?, prefix: String?, limit: Int) throws(StoreError) -> [StoredRoomSummary] {
        do {
            return try pool.read { db in
                let rows = try Row.fetchAll(db, sql: """
                    SELECT s.room, s.people, s.saved_at,
                           (SELECT j.revision FROM journal j WHERE j.room = s.room AND j.revision IS NOT NULL
                            ORDER BY j.revision DESC LIMIT 1) AS head,
                           (SELECT j.at FROM journal j WHERE j.room = s.room AND j.revision IS NOT NULL
                            ORDER BY j.revision DESC LIMIT 1) AS head_at
                    FROM snapshots s
                    WHERE s.room > ? AND s.room >= ? AND substr(s.room, 1, length(?)) = ?
                    ORDER BY s.room LIMIT ?
                    """, arguments: [after ?? "", prefix ?? "", prefix ?? "", prefix ?? "", max(limit, 0)])
                return rows.map { row in
                    StoredRoomSummary(name: row["room"], rev: row["head"] ?? 0, people: row["people"],
                                      updated: row["head_at"] ?? row["saved_at"])
                }
            }
        } catch {
            throw Self.storeError(error, "cannot list rooms: \(error)")
        }
    }

    /// Through the writer, after everything appended before; then the write-ahead log is emptied into
    /// the file (`forgetDeletedPages`), so the room's people are not left readable in it.
    public func deleteRoom(_ room: String, notices: [WebhookNotice]) throws(StoreError) -> Bool {
        let deleted = try writer.delete(room: room, notices: notices)
        if deleted { forgetDeletedPages() }
        return deleted
    }

    public func deletion(of room: String) throws(StoreError) -> Int64? {
        do {
            return try pool.read { db in
                try Int64.fetchOne(db, sql: "SELECT deleted_at FROM deleted_rooms WHERE room = ? AND deleted_at > ?",
                                   arguments: [room, Self.now() - DeletedRooms.remembered])
            }
        } catch {
            throw Self.storeError(error, "cannot read whether room \(room) was deleted: \(error)")
        }
    }

    /// Copies the write-ahead log into the file (where `secure_delete` has zeroed what was deleted) and
    /// truncates it: until then a deleted room's revisions are still readable in the `-wal` file, even
    /// after a clean stop. It does not wait for readers: a read transaction open on the file (a long
    /// export, `backup`, an operator's `sqlite3`) keeps the log, and each store check (every 5 s) tries
    /// again until it is emptied. Before session 43 it waited for them, up to the 30 s busy timeout, on
    /// the writer connection: every room's commits waited behind it (a review measured a batch in
    /// another room at 29.6 s, and a stop at 30 s).
    func forgetDeletedPages() {
        // The flag is read and set on the writer connection's queue, in the order of the attempts (a
        // check's success stored after a later deletion's failure would have dropped the retry).
        let (was, busy, failure) = pool.writeWithoutTransaction { db -> (Bool, Bool, (any Error)?) in
            let was = logNotEmptied.load(ordering: .relaxed)
            let outcome: (Bool, (any Error)?)
            do {
                // 100 ms for a gap between readers (a hub serving reads all the time has few), not the
                // 30 s a commit waits: every room's commits wait behind this.
                try db.execute(sql: "PRAGMA busy_timeout = 100")
                defer { try? db.execute(sql: "PRAGMA busy_timeout = \(Int(Self.busyTimeout * 1000))") }
                let row = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                outcome = ((row?[0] as Int?) != 0, nil)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
                outcome = (true, nil)
            } catch {
                outcome = (true, error)
            }
            logNotEmptied.store(outcome.0, ordering: .relaxed)
            return (was, outcome.0, outcome.1)
        }
        // A command (no claim) has no store checks: the hub empties the log at its next deletion or stop.
        let again = claim != nil ? "each store check tries again" : "the hub empties it at its next room deletion or clean stop"
        if let failure {
            if !was { logger.warning("the write-ahead log was not emptied: \(again)", metadata: ["error": "\(failure)"]) }
        } else if busy && !was {
            logger.warning("the write-ahead log was not emptied (a reader was busy): \(again)")
        } else if !busy && was {
            logger.notice("the write-ahead log was emptied")
        }
    }

    public func webhookNotices(endpoint: String) throws(StoreError) -> [WebhookNotice] {
        do {
            return try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT room, event, at FROM webhook_notices WHERE endpoint = ? ORDER BY at, rowid",
                                 arguments: [endpoint]).map { row in
                    WebhookNotice(endpoint: endpoint, room: row["room"], event: row["event"], time: row["at"])
                }
            }
        } catch {
            throw Self.storeError(error, "cannot read an endpoint's webhook notices: \(error)")
        }
    }

    public func owedRevisions(endpoint: String, room: String, after: OwedPosition?, limit: Int) throws(StoreError) -> [WebhookNotice] {
        do {
            return try pool.read { db in
                let (time, rev) = after.map { ($0.time, $0.rev) } ?? (Int64.min, Int.min)
                var owed: [WebhookNotice] = []
                let rows = try Row.fetchCursor(db, sql: """
                    SELECT deleted_at, record FROM webhook_owed WHERE endpoint = ? AND room = ? AND (deleted_at, revision) > (?, ?)
                    ORDER BY deleted_at, revision LIMIT ?
                    """, arguments: [endpoint, room, time, rev, max(limit, 0)])
                while let row = try rows.next() {
                    let text: String = row["record"]
                    guard let revision = try RoomRecord(json: JSON.parse(text)).revision else { continue }
                    owed.append(WebhookNotice(endpoint: endpoint, room: room, event: WebhookNotice.revisionEvent,
                                              time: row["deleted_at"], revision: revision))
                }
                return owed
            }
        } catch {
            throw Self.storeError(error, "cannot read the revisions of \(room) owed to an endpoint: \(error)")
        }
    }

    public func revisionsOwed(endpoint: String) throws(StoreError) -> [String: Int] {
        do {
            return try pool.read { db in
                let rows = try Row.fetchAll(db, sql: "SELECT room, COUNT(*) FROM webhook_owed WHERE endpoint = ? GROUP BY room",
                                            arguments: [endpoint])
                return Dictionary(uniqueKeysWithValues: rows.map { (row: Row) -> (String, Int) in (row[0], row[1]) })
            }
        } catch {
            throw Self.storeError(error, "cannot read the rooms owed to an endpoint: \(error)")
        }
    }

    public func removeWebhookNotice(_ notice: WebhookNotice) throws(StoreError) {
        do {
            try pool.write { db in
                if let revision = notice.revision {
                    try db.execute(sql: "DELETE FROM webhook_owed WHERE endpoint = ? AND room = ? AND deleted_at = ? AND revision = ?",
                                   arguments: [notice.endpoint, notice.room, notice.time, revision.number])
                } else {
                    try db.execute(sql: "DELETE FROM webhook_notices WHERE endpoint = ? AND room = ? AND event = ? AND at = ?",
                                   arguments: [notice.endpoint, notice.room, notice.event, notice.time])
                }
            }
        } catch {
            throw Self.storeError(error, "cannot remove a webhook notice for \(notice.room): \(error)")
        }
    }

    public func webhookEndpoints() throws(StoreError) -> [StoredWebhookEndpoint] {
        do {
            return try pool.read { db in
                try Row.fetchAll(db, sql: """
                    WITH endpoints AS (SELECT endpoint FROM webhook_cursors UNION SELECT endpoint FROM webhook_notices
                                       UNION SELECT endpoint FROM webhook_owed)
                    SELECT e.endpoint,
                           (SELECT count(*) FROM webhook_cursors c WHERE c.endpoint = e.endpoint) AS cursors,
                           (SELECT count(*) FROM webhook_notices n WHERE n.endpoint = e.endpoint) AS events,
                           (SELECT count(*) FROM webhook_owed o WHERE o.endpoint = e.endpoint) AS owed
                    FROM endpoints e ORDER BY CAST(e.endpoint AS BLOB)
                    """).map { row in
                    StoredWebhookEndpoint(endpoint: row["endpoint"], cursors: row["cursors"], events: row["events"],
                                          owedRevisions: row["owed"])
                }
            }
        } catch {
            throw Self.storeError(error, "cannot list the webhook endpoints: \(error)")
        }
    }

    /// Each table's endpoints by a skip through its index (the next id after the last), not a count of its rows.
    public func webhookEndpointIDs() throws(StoreError) -> [String] {
        do {
            return try pool.read { db in
                try String.fetchAll(db, sql: """
                    WITH RECURSIVE
                      c(e) AS (SELECT min(endpoint) FROM webhook_cursors UNION ALL
                               SELECT (SELECT min(endpoint) FROM webhook_cursors WHERE endpoint > c.e) FROM c WHERE c.e IS NOT NULL),
                      n(e) AS (SELECT min(endpoint) FROM webhook_notices UNION ALL
                               SELECT (SELECT min(endpoint) FROM webhook_notices WHERE endpoint > n.e) FROM n WHERE n.e IS NOT NULL),
                      o(e) AS (SELECT min(endpoint) FROM webhook_owed UNION ALL
                               SELECT (SELECT min(endpoint) FROM webhook_owed WHERE endpoint > o.e) FROM o WHERE o.e IS NOT NULL)
                    SELECT e FROM (SELECT e FROM c UNION SELECT e FROM n UNION SELECT e FROM o)
                    WHERE e IS NOT NULL ORDER BY CAST(e AS BLOB)
                    """)
            }
        } catch {
            throw Self.storeError(error, "cannot list the webhook endpoints: \(error)")
        }
    }

    /// One transaction; then, as after a room's deletion, the write-ahead log is emptied into the file
    /// (`forgetDeletedPages`), where `secure_delete` has zeroed the rows: what the endpoint was owed
    /// (copies of deleted rooms' people) is left readable in neither file. Beside a running hub (the
    /// `webhooks forget` command) a reader of the hub's may be busy: tried again for 2 s, never waiting
    /// with the write lock held (the hub's commits would wait meanwhile).
    public func forgetWebhookEndpoint(_ endpoint: String) throws(StoreError) -> StoredWebhookEndpoint? {
        let forgotten: StoredWebhookEndpoint?
        do {
            forgotten = try pool.write { db in
                let held = StoredWebhookEndpoint(
                    endpoint: endpoint,
                    cursors: try Self.deleted(db, "DELETE FROM webhook_cursors WHERE endpoint = ?", endpoint),
                    events: try Self.deleted(db, "DELETE FROM webhook_notices WHERE endpoint = ?", endpoint),
                    owedRevisions: try Self.deleted(db, "DELETE FROM webhook_owed WHERE endpoint = ?", endpoint))
                return held.isEmpty ? nil : held
            }
        } catch {
            throw Self.storeError(error, "cannot forget a webhook endpoint: \(error)")
        }
        if forgotten != nil {
            // A command beside a running hub has no store checks to try again at: it tries for 2 s.
            for _ in 0..<13 {
                forgetDeletedPages()
                if claim != nil || !logNotEmptied.load(ordering: .relaxed) { break }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        return forgotten
    }

    private static func deleted(_ db: Database, _ sql: String, _ endpoint: String) throws -> Int {
        try db.execute(sql: sql, arguments: [endpoint])
        return db.changesCount
    }

    /// One query: the endpoint's cursored and noticed rooms, each with its head from the journal's
    /// revision index; the pending ones kept.
    public func webhookBacklog(endpoint: String) throws(StoreError) -> [WebhookBacklog] {
        do {
            return try pool.read { db in
                try Row.fetchAll(db, sql: """
                    WITH rooms AS (SELECT room FROM webhook_cursors WHERE endpoint = ?1
                                   UNION SELECT room FROM webhook_notices WHERE endpoint = ?1
                                   UNION SELECT room FROM webhook_owed WHERE endpoint = ?1)
                    SELECT r.room,
                           (SELECT c.rev FROM webhook_cursors c WHERE c.endpoint = ?1 AND c.room = r.room) AS cursor,
                           (SELECT c.life FROM webhook_cursors c WHERE c.endpoint = ?1 AND c.room = r.room) AS life,
                           (SELECT j.revision FROM journal j WHERE j.room = r.room AND j.revision IS NOT NULL
                            ORDER BY j.revision DESC LIMIT 1) AS head,
                           EXISTS (SELECT 1 FROM snapshots s WHERE s.room = r.room) AS present,
                           EXISTS (SELECT 1 FROM webhook_notices n WHERE n.endpoint = ?1 AND n.room = r.room) AS events,
                           (SELECT COUNT(*) FROM webhook_owed o WHERE o.endpoint = ?1 AND o.room = r.room) AS owed
                    FROM rooms r ORDER BY r.room
                    """, arguments: [endpoint]).compactMap { row in
                    let present: Bool = row["present"]
                    let head: Int? = present ? (row["head"] ?? 0) : nil
                    let (events, owed): (Bool, Int) = (row["events"], row["owed"])
                    let found = WebhookBacklog(room: row["room"], cursor: row["cursor"], cursorLife: row["life"], head: head, noticed: events || owed > 0,
                                               owed: owed)
                    return found.isPending ? found : nil
                }
            }
        } catch {
            throw Self.storeError(error, "cannot read an endpoint's webhook backlog: \(error)")
        }
    }

    public func webhookCursorRecords(endpoint: String) throws(StoreError) -> [String: WebhookCursor] {
        do {
            return try pool.read { db in
                var cursors: [String: WebhookCursor] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT room, rev, life FROM webhook_cursors WHERE endpoint = ?",
                                            arguments: [endpoint]) {
                    cursors[row["room"]] = WebhookCursor(rev: row["rev"], life: row["life"])
                }
                return cursors
            }
        } catch {
            throw Self.storeError(error, "cannot read an endpoint's webhook cursors: \(error)")
        }
    }

    /// Written directly (not through the group commit): a cursor is the webhook dispatcher's, which
    /// calls from its own threads, and waits for nothing the hub appends.
    @discardableResult
    public func setWebhookCursor(endpoint: String, room: String, rev: Int, life: Int64?) throws(StoreError) -> Bool {
        do {
            return try pool.write { db in
                try db.execute(sql: """
                    INSERT INTO webhook_cursors (endpoint, room, rev, life) VALUES (?, ?, ?, ?)
                    ON CONFLICT (endpoint, room) DO UPDATE SET rev = max(rev, excluded.rev) WHERE life IS excluded.life
                    """, arguments: [endpoint, room, rev, life])
                return db.changesCount > 0
            }
        } catch {
            throw Self.storeError(error, "cannot set an endpoint's webhook cursor for \(room): \(error)")
        }
    }

    public func resetWebhookCursor(endpoint: String, room: String, to rev: Int?, life: Int64?) throws(StoreError) {
        do {
            try pool.write { db in
                if let rev {
                    try db.execute(sql: """
                        INSERT INTO webhook_cursors (endpoint, room, rev, life)
                        SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM snapshots WHERE room = ?2)
                        ON CONFLICT (endpoint, room) DO UPDATE SET rev = excluded.rev, life = excluded.life
                        """, arguments: [endpoint, room, rev, life])
                } else {
                    try db.execute(sql: """
                        DELETE FROM webhook_cursors WHERE endpoint = ?1 AND room = ?2
                        AND NOT EXISTS (SELECT 1 FROM snapshots WHERE room = ?2)
                        """, arguments: [endpoint, room])
                }
            }
        } catch {
            throw Self.storeError(error, "cannot reset an endpoint's webhook cursor for \(room): \(error)")
        }
    }

    static func records(_ db: Database, sql: String, arguments: StatementArguments) throws -> [JournalEntry] {
        let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
        var entries: [JournalEntry] = []
        while let row = try rows.next() {
            let text: String = row["record"]
            entries.append(JournalEntry(position: row["position"], record: try RoomRecord(json: JSON.parse(text))))
        }
        return entries
    }

    /// Copies the whole store, consistently, into a new SQLite file at `destination` while it is in use
    /// (SQLite's online backup).
    public func backup(to destination: String) throws(StoreError) {
        do {
            let target = try DatabaseQueue(path: destination)
            try pool.backup(to: target)
        } catch {
            throw Self.storeError(error, "backup to \(destination) failed: \(error)")
        }
    }

    /// Copies the store at `source` (which a running hub may be writing) into a new file at
    /// `destination`, consistently, in one step of SQLite's online backup (a read transaction: the hub
    /// goes on committing meanwhile), then checks the copy's integrity. Opens `source` read-only and
    /// runs no migration. Returns the number of rooms and journal records in the copy.
    public static func backup(from source: String, to destination: String) throws(StoreError) -> (rooms: Int, records: Int) {
        guard FileManager.default.fileExists(atPath: source) else {
            throw StoreError(.invalidRequest, "there is no SQLite store at \(source)")
        }
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw StoreError(.invalidRequest, "\(destination) exists already (a backup never overwrites)")
        }
        do {
            var configuration = Configuration()
            configuration.readonly = true
            let pool = try DatabasePool(path: source, configuration: configuration)
            let target = try DatabaseQueue(path: destination)
            try pool.backup(to: target)
            try pool.close()
            return try target.read { db in
                let check = try String.fetchAll(db, sql: "PRAGMA integrity_check")
                guard check == ["ok"] else { throw StoreError(.corrupt, "the copy fails its integrity check: \(check)") }
                let rooms = try Int.fetchOne(db, sql: "SELECT count(*) FROM snapshots") ?? 0
                let records = try Int.fetchOne(db, sql: "SELECT count(*) FROM journal") ?? 0
                return (rooms, records)
            }
        } catch let error as StoreError {
            try? FileManager.default.removeItem(atPath: destination)
            throw error
        } catch {
            try? FileManager.default.removeItem(atPath: destination)
            throw Self.storeError(error, "backup of \(source) to \(destination) failed: \(error)")
        }
    }

    public func close() {
        writer.close()
        // The hub's own store (claimed): a clean stop leaves no deleted room readable in the -wal
        // file. Not a command reading beside a running hub: its checkpoint would wait for the hub's
        // readers and hold up the hub's commits meanwhile.
        if claim != nil { forgetDeletedPages() }
        try? pool.close()
        claim?.release()
    }

    /// `error` (GRDB's, or a stored record that does not decode) as a `StoreError` saying `message`,
    /// of the kind SQLite's result code names; `otherwise` for the codes that name none.
    static func storeError(_ error: any Error, _ message: String, otherwise: StoreError.Kind = .io) -> StoreError {
        if let error = error as? StoreError { return error }
        return StoreError(kind(of: error) ?? otherwise, message)
    }

    private static func kind(of error: any Error) -> StoreError.Kind? {
        switch error {
        case is JSONParseError, is ProtocolError: return .corrupt
        case let error as DatabaseError:
            switch error.resultCode {
            case .SQLITE_CONSTRAINT: return .conflict
            case .SQLITE_CORRUPT, .SQLITE_NOTADB, .SQLITE_FORMAT: return .corrupt
            case .SQLITE_CANTOPEN, .SQLITE_BUSY, .SQLITE_LOCKED: return .unavailable
            case .SQLITE_IOERR, .SQLITE_FULL, .SQLITE_READONLY, .SQLITE_PERM: return .io
            default: return nil
            }
        default: return nil
        }
    }
}
