import PeopleCore

/// Where a room's revisions go to outlive the connection that made them.
///
/// The hub hands every committed revision to `append` and acks or broadcasts it only after the store
/// says it is durable. A store may finish at once (the in-memory twin) or later from its own writer
/// (the durable stores of issue 4, which group many rooms' revisions into one commit); `append`'s
/// return value says which, so a synchronous store costs no thread hop.
public protocol PeopleStore: Sendable {
    /// A short name for logs and metrics ("memory", "sqlite", "postgres").
    var kind: String { get }

    /// Makes `revisions` of `room` durable, in order.
    ///
    /// Returns `.durable` when they already are (then `whenDurable` is never called), or `.pending`
    /// when `whenDurable` will be called, on any thread, once they are (or with the error if they
    /// cannot be). Revisions of one room are made durable in the order they were appended.
    func append(_ revisions: [Revision], room: String,
                whenDurable: @escaping @Sendable (StoreError?) -> Void) -> AppendOutcome

    /// Revisions of `room` after `revision`, oldest first (for catch-up beyond what memory keeps).
    func revisions(room: String, after revision: Int) throws(StoreError) -> [Revision]
}

/// Whether an append is already durable.
public enum AppendOutcome: Sendable, Hashable {
    case durable
    case pending
}

/// A store failure, with what was being done.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
