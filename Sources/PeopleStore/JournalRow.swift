import PeopleCore

/// The columns of a journal row beside the record itself: readable with plain SQL (an audit trail).
/// The SQLite and PostgreSQL stores write the same columns.
package struct JournalRow {
    package var revision: Int?
    package var kind: String
    package var author: String?
    package var label: String?
    package var at: Int?
    package var record: String

    package init(_ entry: JournalEntry) {
        record = String(decoding: entry.record.json.bytes, as: UTF8.self)
        switch entry.record {
        case .answered(let answer):
            if let revision = answer.revision {
                self.revision = revision.number
                kind = revision.kind.rawValue
                author = revision.author
                label = revision.label
                at = Int(revision.timestamp)
            } else {
                kind = "reply"
            }
        case .opened(_, let user, _, _, _):
            kind = "opened"
            author = user
        case .tags:
            kind = "tags"
        case .forgotten:
            kind = "forgotten"
        case .imported(let revision):
            self.revision = revision.number
            kind = revision.kind.rawValue
            author = revision.author
            label = revision.label
            at = Int(revision.timestamp)
        }
    }
}
