import PeopleCore
import WebSocketTransport

/// A `PUT /v1/rooms/ROOM` body, checked before anything is created: `{"people":[…]}` makes a room at
/// revision 0 holding those people; an export with its history (`initial` and `revisions`) makes the
/// room with every revision, author and time again, and its `people` must be where they lead.
///
/// Pure and self-contained, so the hub builds it off the service thread: the check replays every
/// revision on a new room, and that room (`built`), the journal entries the replay made (`entries`)
/// and the people at every `snapshotEvery`-th revision (`checkpoints`, so that a later `?at=` or
/// restore far back in the imported history reads at most that many revisions) are what the hub
/// installs; it does not replay the history a second time.
public struct RoomImport: Sendable {
    public let room: String
    public let initial: PeopleModel
    /// A room made with `initial`, then every revision imported.
    public let built: Room
    /// What importing the revisions journalled, in order (one `imported` record per revision).
    public let entries: [JournalEntry]
    /// The people right after each revision that is a multiple of `snapshotEvery`, below the head.
    public let checkpoints: [Checkpoint]
    /// An export with its history (`revisions`, even none): its revision 0 keeps the export's time.
    private let hasHistory: Bool

    /// The room to make at `time`: a `PUT` of people's is made then (its revision 0 timed when it is
    /// made, after whatever it waited for: a deletion queued before it, a load), an export's is
    /// `built`, with its own times.
    public func room(madeAt time: Int64) -> Room {
        hasHistory ? built : startingRoom(madeAt: time)
    }

    /// `now` (ms since the epoch): revision times more than a day after it are refused, since a room's
    /// times never go back and every later revision would carry that time.
    public init(room: String, body: JSON, policy: RoomPolicy, now: Int64, snapshotEvery: Int = 1_000) throws {
        self.room = room
        let people = try Self.people(body["people"], field: "people")
        guard let list = body["revisions"], list != .null else {
            hasHistory = false
            // As a submit that would leave them there (an export's revisions are taken as they are:
            // undos may have brought its room past the limit).
            try Self.checkLimit(people, policy: policy, field: "people")
            initial = people
            built = Room(name: room, seed: people, policy: policy, created: now)
            entries = []
            checkpoints = []
            return
        }
        hasHistory = true
        guard case .array(let items) = list else { throw HTTPFailure.badMessage("revisions must be an array") }
        initial = try Self.people(body["initial"], field: "initial")
        // The room as it started holds what a PUT of people may (its revisions are taken as they are).
        try Self.checkLimit(initial, policy: policy, field: "initial")
        var parsed: [Room.ExportedRevision] = []
        for (index, item) in items.enumerated() {
            do {
                parsed.append(try Room.ExportedRevision(json: item))
            } catch {
                throw HTTPFailure(ProtocolError(error.code, "revisions[\(index)]: \(error.message)"))
            }
        }
        for (index, revision) in parsed.enumerated() {
            guard revision.time >= 0 else {
                throw HTTPFailure.badMessage("revisions[\(index)]: time \(revision.time) is before 1970 (times are ms since the epoch)")
            }
            guard revision.time <= now + 86_400_000 else {
                throw HTTPFailure.badMessage("revisions[\(index)]: time \(revision.time) is more than a day after this hub's clock (\(now))")
            }
            guard index == 0 || revision.time >= parsed[index - 1].time else {
                throw HTTPFailure.badMessage(
                    "revisions[\(index)]: time \(revision.time) is before the previous revision's (\(parsed[index - 1].time)): times never go back")
            }
        }
        // Replayed on a new room, so a bad import creates nothing; the people must be its result. The
        // export's revision-0 time is kept (the same history: a client at revision 0 of it is not told
        // the room went back); without one the room has none, as before.
        let created = try Self.created(body["created"])
        var room = Room(name: room, seed: initial, policy: policy, created: created)
        var entries: [JournalEntry] = []
        var checkpoints: [Checkpoint] = []
        entries.reserveCapacity(parsed.count)
        for (index, revision) in parsed.enumerated() {
            do {
                for case .persist(let entry) in try room.importRevision(revision, importedAt: now) { entries.append(entry) }
            } catch {
                throw HTTPFailure(ProtocolError(.invalidOp, "revisions[\(index)]: \(error.reason)"))
            }
            if room.revision % max(1, snapshotEvery) == 0, index < parsed.count - 1 {
                checkpoints.append(Checkpoint(revision: room.revision, people: room.model))
            }
        }
        guard room.model.people.elements == people.people.elements else {
            throw HTTPFailure(ProtocolError(.invalidOp, "people is not where initial and the revisions lead"))
        }
        built = room
        self.entries = entries
        self.checkpoints = checkpoints
    }

    /// The room at revision 0, `initial`, its first snapshot (before any imported revision: it and
    /// `entries` are created all or nothing, `PeopleStore.create`): made at `time` for a file of
    /// people, when the exported room was for an export with its history.
    public func startingRoom(madeAt time: Int64) -> Room {
        Room(name: room, seed: initial, policy: built.policy, created: hasHistory ? built.created : time)
    }

    /// An export's `created` (ms since the epoch), if any.
    private static func created(_ value: JSON?) throws -> Int64? {
        switch value {
        case nil, .null?: return nil
        case .int(let ms)? where ms >= 0: return Int64(ms)
        default: throw HTTPFailure.badMessage("created must be a time (ms since the epoch)")
        }
    }

    /// At most `limits.maxPeoplePerRoom` people (`409 room-full`, as a submit that would leave more).
    private static func checkLimit(_ people: PeopleModel, policy: RoomPolicy, field: String) throws {
        guard policy.maxPeople > 0, people.count > policy.maxPeople else { return }
        throw HTTPFailure.peopleLimit(ProtocolError(.roomFull,
            "the room holds at most \(policy.maxPeople) people (limits.maxPeoplePerRoom); \(field) has \(people.count)"))
    }

    /// People as an insert would take them: valid persons, distinct tags.
    private static func people(_ json: JSON?, field: String) throws -> PeopleModel {
        guard case .array(let items)? = json else { throw HTTPFailure.badMessage("\(field) (an array of people) is required") }
        var model = PeopleModel()
        for (index, item) in items.enumerated() {
            do {
                let person = try Person(json: item)
                guard !Room.tagPlaceholders.contains(person.tag) else {
                    throw InvalidOp("tag \(person.tag) is too large (tags are below \(Room.tagPlaceholders.lowerBound))")
                }
                _ = try model.apply(batch: [.insert(person, at: index)], absentTags: .reject)
            } catch let error as ProtocolError {
                throw HTTPFailure(ProtocolError(error.code, "\(field)[\(index)]: \(error.message)"))
            } catch let error as InvalidOp {
                throw HTTPFailure(ProtocolError(.invalidOp, "\(field)[\(index)]: \(error.reason)"))
            }
        }
        return model
    }
}

/// A room's people as CSV (RFC 4180): a header row, then one row per person in the room's order;
/// booleans `true` / `false`, sets joined with `;` in vocabulary order (as the wire sends them). A
/// cell that a spreadsheet would take for a formula (it starts with `=`, `+`, `-`, `@`, a tab or a
/// carriage return: a name is anyone's text) gets a `'` in front, which spreadsheets show as text;
/// the JSON export keeps names exactly.
public enum RoomExport {
    public static let columns = ["tag", "name", "hairColor", "hairLength", "eyeColor", "glasses", "facialHair", "likes", "dislikes"]

    public static func csv(_ model: PeopleModel) -> HTTPResponse {
        HTTPResponse(status: 200, contentType: "text/csv; charset=utf-8", body: Array(csvText(model).utf8))
    }

    public static func csvText(_ model: PeopleModel) -> String {
        var lines = [columns.joined(separator: ",")]
        for person in model.people {
            let fields: [String] = [
                String(person.tag), person.name, person.hairColor.rawValue, person.hairLength.rawValue,
                person.eyeColor.rawValue, person.glasses ? "true" : "false",
                FacialHairStyle.allCases.filter(person.facialHair.contains).map(\.rawValue).joined(separator: ";"),
                person.likes.map(\.rawValue).joined(separator: ";"),
                person.dislikes.map(\.rawValue).joined(separator: ";"),
            ]
            lines.append(fields.map { quoted(inert($0)) }.joined(separator: ","))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// `field`, or `'` + `field` when a spreadsheet would evaluate it (OWASP's "CSV injection").
    static func inert(_ field: String) -> String {
        guard let first = field.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) else { return field }
        return "'" + field
    }

    /// Quoted when it holds a `,`, a `"` or a line break. Looked for among the scalars: a `\r\n` is
    /// one `Character` in Swift, equal to neither `"\r"` nor `"\n"`, and left unquoted it ended the row.
    private static func quoted(_ field: String) -> String {
        guard field.unicodeScalars.contains(where: { ",\"\r\n".unicodeScalars.contains($0) }) else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
