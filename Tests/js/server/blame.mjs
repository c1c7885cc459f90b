// Who wrote what, and when (port of Sources/PeopleCore/Room/Blame.swift; HISTORY §5).
//
// A writer is in its wire shape: {user, rev, time?}, `user` null for the seed (nobody, at revision 0,
// no time). A PersonBlame keeps the last writer of every scalar field and the position of one person,
// of each facial-hair style and topic register written since the person was (re)inserted, and who
// (re)inserted it. `json()` gives the `created` and `fields` members of a `blame` message.

import { diffTag } from '../../../Web/js/core/diff.js';
import { BlameFields } from '../../../Web/js/core/wire.js';
import { FacialHairStyle, Topic } from '../../../Web/js/core/model.js';

/** The seed's writer: nobody, at revision 0. */
export const seedWriter = Object.freeze({ user: null, rev: 0 });

/**
 * Whether inserting `person` (a re-insert by an undo, redo or restore included) writes `target`
 * (Swift `Person.insertWrites`): every field and the position, and only the facial-hair styles and
 * topics it lists (HISTORY §5, decision 17).
 */
export function insertWrites(person, target) {
  switch (target.kind) {
    case 'facialHair': return person.facialHair.includes(target.style);
    case 'preference': return person.likes.includes(target.topic) || person.dislikes.includes(target.topic);
    default: return true;
  }
}

/** The writer of a revision's diffs. */
export function revisionWriter(revision) {
  const w = { user: revision.author, rev: revision.number };
  if (revision.timestamp != null) w.time = revision.timestamp;
  return Object.freeze(w);
}

export class PersonBlame {
  /**
   * An insert (a re-insert by an undo or a restore too) writes every field, the position and every
   * listed element, and starts the record over.
   */
  constructor(person, writer) {
    this.created = writer;
    /** BlameField → writer. */
    this.fields = new Map(BlameFields.map((f) => [f, writer]));
    /** style → writer. */
    this.facialHair = new Map(person.facialHair.map((s) => [s, writer]));
    /** topic → writer. */
    this.preference = new Map([...person.likes, ...person.dislikes].map((t) => [t, writer]));
  }

  /** Files a diff (other than insert and remove) as applied to this person by `writer`. */
  record(diff, writer) {
    switch (diff.op) {
      case 'set': this.fields.set(diff.field, writer); break;
      case 'text': this.fields.set('name', writer); break;
      case 'move': this.fields.set('position', writer); break;
      case 'facialHair': this.facialHair.set(diff.style, writer); break;
      case 'preference': this.preference.set(diff.topic, writer); break;
      default: break;
    }
  }

  /** `{created, fields}` as on the wire: fields in BlameField order, then facialHair and preference. */
  json() {
    const fields = {};
    for (const f of BlameFields) if (this.fields.has(f)) fields[f] = this.fields.get(f);
    fields.facialHair = {};
    for (const s of FacialHairStyle.words) if (this.facialHair.has(s)) fields.facialHair[s] = this.facialHair.get(s);
    fields.preference = {};
    for (const t of Topic.words) if (this.preference.has(t)) fields.preference[t] = this.preference.get(t);
    return { created: this.created, fields };
  }
}

/** The last writers of every person present in a room, kept up to date revision by revision. */
export class BlameIndex {
  /** The seed's people (a PeopleModel), written by nobody at revision 0. */
  constructor(seed) {
    /** tag → PersonBlame */
    this.people = new Map();
    /** tag → PersonBlame of people removed, for the elements a re-insert does not list */
    this.departed = new Map();
    for (const person of seed.people) this.people.set(person.tag, new PersonBlame(person, seedWriter));
  }

  get(tag) { return this.people.get(tag); }

  /** Files a committed revision's applied diffs. */
  record(revision) {
    const writer = revisionWriter(revision);
    for (const { diff } of revision.applied) {
      if (diff.op === 'insert') {
        // A re-insert writes what it lists; an element it does not list keeps its writer from before.
        const record = new PersonBlame(diff.person, writer);
        const old = this.departed.get(diff.person.tag);
        if (old) {
          for (const [style, w] of old.facialHair) if (!record.facialHair.has(style)) record.facialHair.set(style, w);
          for (const [topic, w] of old.preference) if (!record.preference.has(topic)) record.preference.set(topic, w);
          this.departed.delete(diff.person.tag);
        }
        this.people.set(diff.person.tag, record);
      } else if (diff.op === 'remove') {
        const old = this.people.get(diff.tag);
        if (old) this.departed.set(diff.tag, old);
        this.people.delete(diff.tag);
      }
      else this.people.get(diffTag(diff))?.record(diff, writer);
    }
  }
}
