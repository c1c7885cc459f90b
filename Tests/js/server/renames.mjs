// Which re-inserts replace a name whole (port of Sources/PeopleCore/Room/ReinsertRenames.swift;
// decision 19).
//
// A re-insert (by an undo, a redo or a restore) under another name than the one the person was removed
// with writes the name as a whole, like a `set(name)`: a stale `text` edit of the name from before is a
// no-op reported `overwritten`, and an undo's text inverse whose path crosses it is `overwritten` too.
// A re-insert under the name the person was removed with changes no name. Fed the applied diffs of the
// people watched, in hub order, from a point where they were present.

import { diffTag } from '../../../Web/js/core/diff.js';
import { sameText } from '../../../Web/js/core/model.js';

export class ReinsertRenames {
  constructor() {
    /** tag → the name the person had when last removed */
    this.removedName = new Map();
  }

  /** The `set(name)` that the applied diff `done` amounts to for the name, or undefined. */
  rename(done) {
    const { diff, inverse } = done;
    if (diff.op === 'remove' && inverse.op === 'insert') {
      this.removedName.set(diff.tag, inverse.person.name);
    } else if (diff.op === 'insert') {
      const old = this.removedName.get(diff.person.tag);
      if (old !== undefined && !sameText(old, diff.person.name)) {
        return { op: 'set', tag: diff.person.tag, field: 'name', value: diff.person.name };
      }
    }
    return undefined;
  }

  /**
   * `revision`'s diffs, each re-insert of a person in `tags` (a Set) under another name followed by the
   * `set(name)` it amounts to: what a batch rebased over the revision sees. Positions are untouched.
   */
  diffsOf(revision, tags) {
    const out = [];
    for (const done of revision.applied) {
      out.push(done.diff);
      if (tags.size && tags.has(diffTag(done.diff))) {
        const set = this.rename(done);
        if (set) out.push(set);
      }
    }
    return out;
  }
}
