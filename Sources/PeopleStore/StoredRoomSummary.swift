import PeopleCore

/// One line of the store's room list (`PeopleStore.listRooms`): what an operator sees of a room
/// without loading it.
public struct StoredRoomSummary: Sendable, Hashable {
    public var name: String
    /// The head revision in the journal; 0 for a room with none.
    public var rev: Int
    /// How many people the room's latest snapshot holds.
    public var people: Int
    /// Milliseconds since the epoch: when the head revision was made, or for a room without one, when
    /// its latest snapshot was saved.
    public var updated: Int64

    public init(name: String, rev: Int, people: Int, updated: Int64) {
        self.name = name
        self.rev = rev
        self.people = people
        self.updated = updated
    }
}

extension StoredRoomSummary {
    /// How many people an encoded snapshot (`RoomSnapshot.json`) holds: what the stores keep beside it
    /// so a room list never parses snapshots.
    package static func people(inSnapshot json: JSON) -> Int {
        if case .array(let people) = json["people"] { people.count } else { 0 }
    }

    /// Whether `name` belongs on a page of `listRooms(after:prefix:limit:)`.
    package static func listed(_ name: String, after: String?, prefix: String?) -> Bool {
        if let after, !after.utf8.lexicographicallyPrecedes(name.utf8) { return false }
        if let prefix, !name.utf8.starts(with: prefix.utf8) { return false }
        return true
    }
}
