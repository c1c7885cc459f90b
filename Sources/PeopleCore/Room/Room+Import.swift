/// Bringing a room's history in (the HTTP API's import of an export, and `peoplekeeper-hub import`):
/// a new room holding the export's people at revision 0, then each exported revision as it was —
/// its number, author, kind, label, time and diffs — journalled as `RoomRecord.imported`, on nobody's
/// undo stack (the undo stacks stay where the room was).
extension Room {
    /// One exported revision as the change feed gives it: `{"rev","time"?,"author","kind","label"?,"ops"}`.
    public struct ExportedRevision: Hashable, Sendable {
        public var rev: Int
        public var author: String
        public var kind: RevisionKind
        public var label: String?
        public var time: Int64
        public var ops: [Diff]

        public init(json: JSON) throws(ProtocolError) {
            let f = try WireFields(json, context: "revision", code: .badMessage)
            let kindText = try f.string("kind")
            guard let kind = RevisionKind(rawValue: kindText) else {
                throw f.fail("kind \(kindText) is not edit, undo, redo or restore")
            }
            rev = try f.int("rev")
            author = try f.string("author")
            self.kind = kind
            label = try f.optionalString("label")
            time = Int64(try f.optionalInt("time") ?? 0)
            ops = try f.array("ops").map { (op: JSON) throws(ProtocolError) in try Diff(json: op) }
        }
    }

    /// Applies an exported revision as the next one (`rev` must be the next number); `importedAt` is
    /// when the import runs (ms since the epoch, `Revision.importedAt`).
    public mutating func importRevision(_ revision: ExportedRevision, importedAt: Int64) throws(InvalidOp) -> [RoomAction] {
        guard revision.rev == history.head + 1 else {
            throw InvalidOp("revision \(revision.rev) does not follow \(history.head): every revision, in order")
        }
        return try importRevision(author: revision.author, kind: revision.kind, label: revision.label,
                                  time: revision.time, ops: revision.ops, importedAt: importedAt)
    }

    /// Applies one exported revision as the next one. The diffs must apply as they are (an export's
    /// revisions do, in order, from its `initial` people); times never go back. The revision keeps
    /// `importedAt`, so that one export imported twice makes revisions a receiver can tell apart.
    public mutating func importRevision(author: String, kind: RevisionKind, label: String?, time: Int64,
                                        ops: [Diff], importedAt: Int64) throws(InvalidOp) -> [RoomAction] {
        guard (try? UserName(author)) != nil else { throw InvalidOp("revision \(history.head + 1): author must be 1 to 64 bytes") }
        for case .insert(let person, _) in ops where Self.tagPlaceholders.contains(person.tag) {
            throw InvalidOp("revision \(history.head + 1): tag \(person.tag) is too large (tags are below \(Self.tagPlaceholders.lowerBound))")
        }
        var copy = model
        let result = try copy.apply(batch: ops, absentTags: .reject)
        guard !result.applied.isEmpty else {
            throw InvalidOp("revision \(history.head + 1) changes nothing")
        }
        model = copy
        let revision = Revision(number: history.head + 1, author: author, kind: kind, label: label, applied: result.applied,
                                timestamp: max(time, headTime ?? time), importedAt: importedAt)
        record(revision)
        return [journal(.imported(revision)), .send(revision.opsMessage(), to: connectedSessions)]
    }

    /// The room as an export: `{"room","rev","people"}`, with `history` also `initial` (the people at
    /// revision 0), `created` (revision 0's time, when known: an import of the history keeps it, so a
    /// client at revision 0 is not told the room went back) and every revision as the change feed
    /// gives it. `older` holds the revisions below
    /// memory (`1 ... oldestKeptBase`); nil when they cannot be had.
    public func export(history: Bool, older: [Revision]) -> JSON? {
        var members: [JSON.Member] = [.init("room", .string(name)), .init("rev", .int(revision)),
                                      .init("people", .array(model.people.map(\.json)))]
        if history {
            guard let initial = people(at: 0, older: older) else { return nil }
            let kept = revisions(after: oldestKeptBase, through: revision)
            members.append(.init("initial", .array(initial.people.map(\.json))))
            if let created { members.append(.init("created", .int(Int(created)))) }
            members.append(.init("revisions", .array((older + kept).map(\.feedJSON))))
        }
        return .object(members)
    }

    /// `export(history: true, older:)`'s bytes, encoded as they are read: `initial` is the people at
    /// revision 0, and `older(after, through)` gives the revisions below memory (`after + 1 ...
    /// through`) a `page` at a time, so that no more than a page of them and their JSON are held at
    /// once beside the bytes. (Read whole and built as one JSON value, a room of a million revisions
    /// took six times its 151 MB export, and the hub kept most of it: a tester's pass.)
    public func exportBytes(initial: PeopleModel, page: Int = 10_000,
                            older: (_ after: Int, _ through: Int) throws -> [Revision]) rethrows -> [UInt8] {
        var members: [JSON.Member] = [.init("room", .string(name)), .init("rev", .int(revision)),
                                      .init("people", .array(model.people.map(\.json))),
                                      .init("initial", .array(initial.people.map(\.json)))]
        if let created { members.append(.init("created", .int(Int(created)))) }
        var out = JSON.object(members).bytes
        out.removeLast()  // the object's `}`: its revisions follow
        out.append(contentsOf: #","revisions":["#.utf8)
        var first = true
        func add(_ revision: Revision) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            revision.feedJSON.write(to: &out)
        }
        var after = 0
        while after < oldestKeptBase {
            let through = min(after + max(page, 1), oldestKeptBase)
            for revision in try older(after, through) { add(revision) }
            after = through
        }
        for revision in revisions(after: oldestKeptBase, through: revision) { add(revision) }
        out.append(contentsOf: "]}".utf8)
        return out
    }
}
