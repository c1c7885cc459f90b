// Who last changed each part of the selected person, and when (HISTORY.md §5, §6): the person editor
// shows it beside each field ("bob · 2 min ago"). The hub's `blame` answer is the truth; a revision
// that touches the person updates the writers at once (its author wrote what its ops wrote) and asks
// the hub again, so the editor follows live and then settles on the hub's word.
//
// The page sends `blame(tag)` for what `nextRequest(present)` returns (only a person the hub has: a
// person added here and not yet acked would be `bad-message`), says so with `sent(seq)` and hands the
// answer to `answered(seq, blame)` (or `failed(seq)` for an error answering it). One request is in
// flight at a time; a revision that comes meanwhile asks once more after it. An answer for a person no
// longer selected is dropped. `reset()` after a reconnect asks again.
//
// Keys (as the editor names its fields): `name`, `hairColor`, `hairLength`, `eyeColor`, `glasses`,
// `position`, `created`, `facialHair-STYLE`, `topic-TOPIC`. No DOM, no socket, no clock.

import { diffTag } from './core/diff.js';
import { FacialHairStyle, Topic } from './core/model.js';

const SCALARS = ['name', 'hairColor', 'hairLength', 'eyeColor', 'glasses', 'position'];

export class Attribution {
  constructor() {
    /** The person whose writers are shown (a tag), or null. */
    this.tag = null;
    /** {tag, created, fields} as `blame` answers (possibly updated by later revisions), or null. */
    this.blame = null;
    /** The seq of the `blame` in flight, or null. */
    this.asked = null;
    /** Whether to ask (again). */
    this.wanted = false;
  }

  /** The selected person is `tag` (or nobody): their writers are asked for. */
  select(tag) {
    if (tag === this.tag) return;
    this.tag = tag ?? null;
    this.blame = null;
    this.asked = null;
    this.wanted = this.tag != null;
  }

  /** A new connection: a request in flight is lost; ask again. */
  reset() {
    this.asked = null;
    this.wanted = this.tag != null;
  }

  /** The tag to ask `blame` for now, or null. `present(tag)`: whether the hub's model has that person. */
  nextRequest(present = () => true) {
    if (this.tag == null || !this.wanted || this.asked != null || !present(this.tag)) return null;
    return this.tag;
  }

  sent(seq) {
    this.asked = seq;
    this.wanted = false;
  }

  /** A `blame` answer; false when it answers nothing asked here now. */
  answered(seq, blame) {
    if (seq !== this.asked) return false;
    this.asked = null;
    if (blame.tag !== this.tag) return true;
    const fresher = this.blame;
    this.blame = { tag: blame.tag, created: blame.created, fields: cloneFields(blame.fields) };
    // A revision applied here after the hub answered has a higher rev: it wins until the next answer.
    if (fresher && fresher.tag === blame.tag) {
      for (const key of SCALARS) {
        const mine = fresher.fields[key];
        if (mine && !(this.blame.fields[key]?.rev >= mine.rev)) this.blame.fields[key] = mine;
      }
      for (const group of ['facialHair', 'preference']) {
        for (const [word, mine] of Object.entries(fresher.fields[group] ?? {})) {
          if (!(this.blame.fields[group][word]?.rev >= mine.rev)) this.blame.fields[group][word] = mine;
        }
      }
    }
    return true;
  }

  /** An error answered the `blame` sent with `seq` (the person went meanwhile): nothing is asked again. */
  failed(seq) {
    if (seq !== this.asked) return false;
    this.asked = null;
    return true;
  }

  /**
   * A revision the hub applied ({rev, time?, author, ops}): what it wrote of the selected person is now
   * its author's, and the hub is asked again. Returns whether it touched the selected person.
   */
  revision({ rev, time, author, ops = [] }) {
    if (this.tag == null) return false;
    const mine = ops.filter((d) => diffTag(d) === this.tag);
    if (mine.length === 0) return false;
    this.wanted = true;
    if (!this.blame) return true;
    const w = { user: author, rev };
    if (time != null) w.time = time;
    const f = this.blame.fields;
    for (const d of mine) {
      switch (d.op) {
        case 'set': f[d.field] = w; break;
        case 'text': f.name = w; break;
        case 'facialHair': f.facialHair = { ...f.facialHair, [d.style]: w }; break;
        case 'preference': f.preference = { ...f.preference, [d.topic]: w }; break;
        case 'move': f.position = w; break;
        case 'insert': {
          // A (re-)insert writes every field, each listed element and the place; attribution starts over.
          const p = d.person;
          this.blame = {
            tag: this.tag,
            created: w,
            fields: {
              ...Object.fromEntries(SCALARS.map((k) => [k, w])),
              facialHair: Object.fromEntries(FacialHairStyle.words.filter((s) => p.facialHair.includes(s)).map((s) => [s, w])),
              preference: Object.fromEntries(Topic.words.filter((t) => p.likes.includes(t) || p.dislikes.includes(t)).map((t) => [t, w])),
            },
          };
          return true;
        }
        case 'remove': this.blame = null; return true;
        default: break;
      }
    }
    return true;
  }

  /** The writer of `key` ({user, rev, time?}) for the selected person, or null when not known. */
  writer(key) {
    const b = this.blame;
    if (!b || b.tag !== this.tag) return null;
    if (key === 'created') return b.created ?? null;
    if (key.startsWith('facialHair-')) return b.fields.facialHair?.[key.slice('facialHair-'.length)] ?? null;
    if (key.startsWith('topic-')) return b.fields.preference?.[key.slice('topic-'.length)] ?? null;
    return b.fields[key] ?? null;
  }
}

function cloneFields(fields) {
  return { ...fields, facialHair: { ...(fields.facialHair ?? {}) }, preference: { ...(fields.preference ?? {}) } };
}
