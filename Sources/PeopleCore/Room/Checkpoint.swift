/// The people of a room right after one revision, as a store keeps them beside each snapshot.
///
/// The model at an older revision is the nearest checkpoint at or below it, replayed forward through
/// the revisions after it (`Room.model(at:older:checkpoint:)`), so a restore or `?at=` far below the
/// room's memory reads at most the revisions between two snapshots, not every revision up to memory.
/// Every snapshot carries one (`RoomSnapshot.checkpoint`); rooms stored before checkpoints existed have
/// none below their first snapshot after the upgrade, and are served the old way.
public struct Checkpoint: Hashable, Sendable {
    public var revision: Int
    public var people: PeopleModel

    public init(revision: Int, people: PeopleModel) {
        self.revision = revision
        self.people = people
    }
}

extension Checkpoint {
    /// The people as a snapshot stores them: the wire's person objects, in the room's order.
    public var peopleJSON: JSON { .array(people.people.map(\.json)) }

    /// A checkpoint read back from a store: `peopleJSON` as `peopleJSON` wrote it. A damaged one is a
    /// `server-error` (the store's, never the caller's).
    public init(revision: Int, peopleJSON: JSON) throws(ProtocolError) {
        guard case .array(let list) = peopleJSON else {
            throw ProtocolError(.serverError, "checkpoint \(revision): people must be an array")
        }
        var people: [Person] = []
        var tags = Set<Tag>()
        for item in list {
            let person = try Person(json: item, code: .serverError)
            guard tags.insert(person.tag).inserted else {
                throw ProtocolError(.serverError, "checkpoint \(revision): tag \(person.tag) is listed twice")
            }
            people.append(person)
        }
        self.init(revision: revision, people: PeopleModel(people: people))
    }
}

extension RoomSnapshot {
    /// The room's people at the snapshot's revision: what a store keeps as a checkpoint. O(1) (the
    /// model is shared, copy on write).
    public var checkpoint: Checkpoint { Checkpoint(revision: revision, people: room.model) }
}

/// A room's past, walked back one revision at a time from a model at a known revision, through each
/// revision's exact inverses: the checkpoints of a room stored before checkpoints were kept
/// (`peoplekeeper-hub checkpoints`). O(the diffs walked), on `ModelWalk`.
public struct CheckpointWalk: Sendable {
    private var walk: ModelWalk
    /// The revision the walk is at.
    public private(set) var revision: Int

    /// Starts at `start` (the room's head, or its oldest checkpoint).
    public init(from start: Checkpoint) {
        walk = ModelWalk(start.people)
        revision = start.revision
    }

    /// The people at `revision`.
    public var checkpoint: Checkpoint { Checkpoint(revision: revision, people: walk.model) }

    /// Takes `older` back: it must be the revision the walk is at (else nothing changes and this
    /// returns false). The walk is then at the revision before it.
    public mutating func takeBack(_ older: Revision) -> Bool {
        guard older.number == revision, revision > 0 else { return false }
        walk.undo(older.applied)
        revision -= 1
        return true
    }
}
