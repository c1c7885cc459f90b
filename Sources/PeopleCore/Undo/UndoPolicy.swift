/// How undo and redo behave in a room (the hub's `undo` config).
public struct UndoPolicy: Hashable, Sendable {
    /// `skip` never clobbers a teammate; `force` applies inverses over newer edits by others.
    public enum Conflicts: String, Hashable, Sendable, CaseIterable {
        case skip, force
    }

    /// Bound of each stack; 0 = unlimited.
    public var depth: Int
    public var conflicts: Conflicts
    /// Whether an undo that changes nothing goes on to the next entry.
    public var cascade: Bool
    /// Window within which batches with the same coalesce key form one entry.
    public var coalesceMillis: Int64

    public init(depth: Int = 100, conflicts: Conflicts = .skip, cascade: Bool = true, coalesceMillis: Int64 = 500) {
        self.depth = depth
        self.conflicts = conflicts
        self.cascade = cascade
        self.coalesceMillis = coalesceMillis
    }
}

/// Everything a room needs to be told, with defaults.
public struct RoomPolicy: Hashable, Sendable {
    public var undo: UndoPolicy
    /// Size of the tag block given to each session.
    public var tagBlockSize: Int
    /// Revisions kept for rebasing; older bases are `stale-base`, older undo entries `expired`. 0 = all.
    public var keptRevisions: Int
    /// Replies kept per session for replay of resent seqs.
    public var repliesKept: Int
    /// Idempotency keys kept per HTTP caller (an agent session) at least, each for `Room.keyLifetime`
    /// at most: beyond it the oldest keys' first answers go (`IdempotencyKeys`).
    public var keysKept: Int
    /// Most people a submit may leave in the room (`room-full` beyond it). 0 = no limit. Undo and redo
    /// may restore people above it: they only bring back what was there.
    public var maxPeople: Int
    /// Disconnected sessions kept for `hello.resume`; beyond it the oldest are forgotten.
    public var keptSessions: Int
    /// Most revisions a `hello` with `since` is caught up with as `ops` frames; further behind, the
    /// welcome carries the full state instead (smaller, and it never floods the connection).
    public var maxCatchUp: Int
    /// The most list work one request may cost, in positional diff pairs × (people + 1): rebasing a
    /// batch's inserts and moves over those made since its base, or an undo's people whose neighbours
    /// are gone over those made since the entry. One unit is a few nanoseconds (docs/PERFORMANCE.md,
    /// "List work per request"); the default is tens of milliseconds, far above what a screen's edits
    /// cost, so one caller cannot hold a service thread (and every room on it) for seconds. Beyond it a
    /// submit is `stale-base` (sent again on the current revision it costs nothing) and an undo places
    /// such people at their old gap unrebased.
    public var maxListWork: Double

    public static let defaultListWork: Double = 20_000_000

    public init(undo: UndoPolicy = UndoPolicy(), tagBlockSize: Int = 100, keptRevisions: Int = 0, repliesKept: Int = 64,
                keysKept: Int = 100_000, maxPeople: Int = 0, keptSessions: Int = 256, maxCatchUp: Int = 1000,
                maxListWork: Double = RoomPolicy.defaultListWork) {
        self.maxListWork = maxListWork
        self.keptSessions = keptSessions
        self.maxCatchUp = maxCatchUp
        self.undo = undo
        self.tagBlockSize = tagBlockSize
        self.keptRevisions = keptRevisions
        self.repliesKept = repliesKept
        self.keysKept = keysKept
        self.maxPeople = maxPeople
    }
}
