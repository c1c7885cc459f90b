import PeopleCore

/// What a store gives a room that asked for history older than its memory (`RoomAction.readHistory`):
/// revisions, oldest first, and the checkpoint they start after when it gave one.
public struct OlderHistory: Sendable {
    public var revisions: [Revision]
    public var checkpoint: Checkpoint?

    public init(revisions: [Revision], checkpoint: Checkpoint? = nil) {
        self.revisions = revisions
        self.checkpoint = checkpoint
    }
}

extension PeopleStore {
    /// Revisions `after + 1 ... through` of `room`, or nil if the store does not hold them all.
    ///
    /// When what is wanted is the model right after `modelAt` (a restore, `?at=`: `HistoryRead.modelAt`)
    /// and the store has a checkpoint at or below it from which fewer revisions lead there
    /// (`modelAt − checkpoint.revision < through − after`), it gives that checkpoint and revisions
    /// `checkpoint.revision + 1 ... modelAt` instead: at most a snapshot interval's worth, however far
    /// back `modelAt` is. Without one (rooms stored before checkpoints were kept), or if it cannot be
    /// read, the revisions up to `through` are read: slower, never wrong. Blocks: call it off the
    /// service thread.
    public func olderHistory(room: String, after: Int, through: Int, modelAt: Int? = nil) throws(StoreError) -> OlderHistory? {
        if let modelAt, let start = try? self.checkpoint(room: room, atOrBelow: modelAt),
           modelAt - start.revision < through - after {
            let read = modelAt > start.revision ? try self.revisions(room: room, after: start.revision, through: modelAt) : []
            if read.count == modelAt - start.revision { return OlderHistory(revisions: read, checkpoint: start) }
        }
        let read = try self.revisions(room: room, after: after, through: through)
        return read.count == through - after ? OlderHistory(revisions: read) : nil
    }
}
