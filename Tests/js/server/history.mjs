// A room's kept history (port of Sources/PeopleCore/Room/RoomHistory.swift and Revision.swift).
//
// A revision: {number, author, kind: 'edit'|'undo'|'redo'|'restore', label, applied: [appliedDiff],
// timestamp, session, seq, inverts: [DiffRef|null]}, where a DiffRef {revision, index} names one applied
// diff and `inverts[i]` is, for an undo or redo, the diff that applied diff i reverts (decision 11).
// `timestamp` is the hub's clock when it applied the revision (milliseconds since the epoch, never
// earlier than the previous revision's: HISTORY §1), the `time` of its frames.
//
// The history keeps the revisions after `floor` and an index of them by tag: an undo looks at the
// events of the people its entry touched (and, only when both old neighbours of a removed or moved
// person are gone, at the positional diffs), never at the whole history.

import { diffTarget, targetKey, isPositional } from '../../../Web/js/core/diff.js';

/** A revision with defaults (`inverts` all null for an edit). */
export function makeRevision({ number, author, kind, label = null, applied, timestamp, session = null, seq = null,
  inverts = null }) {
  return { number, author, kind, label, applied, timestamp, session, seq,
    inverts: inverts ?? applied.map(() => null) };
}

/** The diffs of a revision as applied. */
export function revisionDiffs(revision) { return revision.applied.map((a) => a.diff); }

/** Lexicographic (revision, index) > (r, i). */
export function refAfter(revision, index, r, i) { return revision > r || (revision === r && index > i); }

export class RoomHistory {
  constructor(floor = 0) {
    /** Revisions up to and including `floor` are no longer kept. */
    this.floor = floor;
    this.kept = [];
    /** tag → [{revision, index, author, kind, target, inverts}], oldest first. */
    this.events = new Map();
    /** targetKey → the user who last wrote it. */
    this.lastWriter = new Map();
    /** Where each kept positional diff (insert, remove, move) is: [DiffRef {revision, index}], oldest first. */
    this.positional = [];
  }

  /** The newest revision number. */
  get head() { return this.floor + this.kept.length; }

  revision(number) {
    if (number <= this.floor || number > this.head) return undefined;
    return this.kept[number - this.floor - 1];
  }

  /** Revisions after `number` (≥ floor), oldest first. */
  revisionsAfter(number) {
    if (number < this.floor || number > this.head) throw new RangeError(`revision ${number} is not kept`);
    return this.kept.slice(number - this.floor);
  }

  append(revision) {
    if (revision.number !== this.head + 1) throw new Error('revisions are appended in order');
    this.kept.push(revision);
    revision.applied.forEach((done, index) => {
      const target = diffTarget(done.diff);
      let list = this.events.get(target.tag);
      if (!list) this.events.set(target.tag, (list = []));
      list.push({ revision: revision.number, index, author: revision.author, kind: revision.kind, target,
        inverts: revision.inverts[index] ?? null });
      this.lastWriter.set(targetKey(target), revision.author); // insert and remove both write person(tag)
      if (isPositional(done.diff)) this.positional.push({ revision: revision.number, index });
    });
  }

  /** Forgets revisions so that at most `count` are kept (0 = keep all). Raises `floor`. */
  trim(count) {
    if (!(count > 0) || !(this.head - this.floor > count + Math.floor(count / 2))) return;
    const newFloor = this.head - count;
    this.kept.splice(0, newFloor - this.floor);
    this.floor = newFloor;
    this.positional = this.positional.filter((p) => p.revision > newFloor);
    for (const [tag, list] of this.events) {
      const trimmed = list.filter((e) => e.revision > newFloor);
      if (trimmed.length) this.events.set(tag, trimmed);
      else this.events.delete(tag);
    }
  }

  /** Events on `tag` after position (revision, index), newest first. */
  eventsOn(tag, revision, index) {
    const list = this.events.get(tag) ?? [];
    const out = [];
    for (let i = list.length - 1; i >= 0; i--) {
      const e = list[i];
      if (!refAfter(e.revision, e.index, revision, index)) break;
      out.push(e);
    }
    return out;
  }

  /** The user who last wrote `target`, if any (undefined). */
  writer(target) { return this.lastWriter.get(targetKey(target)); }
}
