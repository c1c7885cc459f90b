import PeopleCore

extension Checkpoint {
    /// A snapshot's checkpoint as the durable stores keep it, taken from the snapshot's encoding
    /// (`RoomSnapshot.json`, whose `people` are `Checkpoint.peopleJSON`): the people are encoded once
    /// for both rows.
    package static func peopleText(inSnapshot json: JSON) -> String {
        String(decoding: (json["people"] ?? .array([])).bytes, as: UTF8.self)
    }

    /// The people as the durable stores keep them, from a checkpoint made on its own.
    package var peopleText: String { String(decoding: peopleJSON.bytes, as: UTF8.self) }
}
