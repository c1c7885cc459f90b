import PeopleCore

/// The names of the people a client has shown or read about, by tag, kept for naming someone removed
/// since ("Kim was removed by bob", "Kim (gone)", not "tag 104").
///
/// Two sources: the people on screen (`saw(_:at:)`: each keeps the name it had at that revision) and
/// the timeline's rows (`read(_:present:)`: the last name the rows gave each person, `lastNamings`).
/// The newer one wins: a name the rows gave at a later revision than the one the person was last seen
/// at replaces it (renamed and removed in one revision, by another client or through the HTTP API, or
/// while this client was too far behind to be sent each revision); otherwise the name seen stays (rows
/// read earlier may not have reached the latest rename). A review found a seen name that always won
/// (`New person (gone)` beside rows that said Kim).
public struct KnownNames: Sendable {
    /// By tag, the name and the revision it was seen or given at: two dictionaries, so that `byTag`
    /// (read at each render of the history view) is the first one, not a copy.
    private var names: [Tag: String] = [:]
    private var at: [Tag: Int] = [:]

    public init() {}

    public subscript(tag: Tag) -> String? { names[tag] }

    /// Every name known, by tag (as `ReportText` and `LogEntry.name(of:now:known:)` take them).
    public var byTag: [Tag: String] { names }

    /// The people shown at revision `rev`: each keeps the name seen (empty names are not kept).
    public mutating func saw(_ people: PeopleModel, at rev: Int) {
        for person in people.people where !person.name.isEmpty {
            names[person.tag] = person.name
            at[person.tag] = rev
        }
    }

    /// Timeline rows (newest first): for each person not in `present`, the name they gave last, if it
    /// was given after the revision the person was last seen or read at.
    public mutating func read(_ rows: some Sequence<ServerMessage.LogEntry>, present: PeopleModel) {
        for (tag, naming) in rows.lastNamings where present[tag] == nil && naming.rev > at[tag, default: -1] {
            names[tag] = naming.name
            at[tag] = naming.rev
        }
    }
}
