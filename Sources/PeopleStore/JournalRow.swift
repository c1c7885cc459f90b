import PeopleCore

/// The columns of a journal row beside the record itself: readable with plain SQL (an audit trail).
/// The SQLite and PostgreSQL stores write the same columns. A NUL in a label or user name (the product
/// contract allows any text there) is written as U+FFFD in its column: PostgreSQL's text cannot hold
/// one, and refused it with 22021, which failed the commit and took the room down for everyone, again
/// at each resend (a code review). The record, JSON, keeps the exact text.
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
        author = author.map(Self.readable)
        label = label.map(Self.readable)
    }

    /// `text` with each NUL as U+FFFD.
    static func readable(_ text: String) -> String {
        text.utf8.contains(0) ? text.replacingOccurrences(of: "\0", with: "\u{FFFD}") : text
    }
}
