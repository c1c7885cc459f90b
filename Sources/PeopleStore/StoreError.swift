/// A store failure: what kind of thing went wrong, which a caller can switch on, and a message saying
/// what was being done (what logs and `/healthz` print).
///
/// The durable stores map their drivers' errors to a kind (`SQLiteStore.storeError`,
/// `PostgresStore.storeError`); the message keeps the driver's own words. The hub treats every kind
/// alike today (a failed append drops the room, a failed check makes `/healthz` answer 503); the kind
/// is for whoever needs to tell a lost database from a collision or bad data.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The store cannot be opened or reached, or stopped answering (a lost connection, a check that
        /// hangs). Trying again later may work.
        case unavailable
        /// A write collided with one already made: a uniqueness constraint, or in cluster mode a journal
        /// position another node wrote first (the fencing of a node that lost its lease unawares).
        case conflict
        /// Stored data does not decode or rebuild, or a copy fails its integrity check.
        case corrupt
        /// The room's lease (cluster mode) cannot be had: another node holds it and does not say where.
        case lease
        /// A read, a write or a copy failed for another reason (a full disk, permissions, …).
        case io
        /// What was asked cannot be done as asked: a malformed database URL, a backup onto a file that
        /// exists, a backup of a store that does not.
        case invalidRequest
        /// The store was closed; nothing more is written.
        case closed
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
