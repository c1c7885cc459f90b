/// Which re-inserts replace a name whole (decision 19).
///
/// A person is re-inserted (by an undo, a redo or a restore) with the fields it is given; a restore's
/// come from an earlier revision, so the name may not be the one the person was removed with. Such a
/// re-insert writes the name as a whole, like a `set(name)`: a stale `text` edit of the name from before
/// is a no-op reported `overwritten` (SEMANTICS §3 rule 6), and an undo's text inverse whose path
/// crosses it is `overwritten` too. A re-insert under the name the person was removed with changes no
/// name, and text edits are rebased across it as if the person had stayed.
///
/// Fed the applied diffs of the people watched, in hub order, from a point where they were present.
struct ReinsertRenames {
    private var removedName: [Tag: String] = [:]

    /// The `set(name)` that `done` amounts to for the name, if it is a re-insert under another name.
    mutating func rename(by done: AppliedDiff) -> Diff? {
        switch (done.diff, done.inverse) {
        case (.remove(let tag), .insert(let person, _)):
            removedName[tag] = person.name
        case (.insert(let person, _), _):
            if let old = removedName[person.tag], !old.sameScalars(as: person.name) {
                return .set(person.tag, .name(person.name))
            }
        default:
            break
        }
        return nil
    }

    /// `revision`'s diffs, each re-insert of a person in `tags` under another name followed by the
    /// `set(name)` it amounts to: what a batch rebased over the revision sees. Positions are untouched.
    mutating func diffs(of revision: Revision, watching tags: Set<Tag>) -> [Diff] {
        guard !tags.isEmpty else { return revision.diffs }
        var out: [Diff] = []
        for done in revision.applied {
            out.append(done.diff)
            if tags.contains(done.diff.tag), let set = rename(by: done) { out.append(set) }
        }
        return out
    }
}
