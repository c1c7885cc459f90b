// What teammates just changed, for a short highlight that fades: a key per list row or detail field,
// with who changed it, since and until when. Time is a parameter (`now`), so this runs in node as it is.
//
// Invariant: a highlight names the latest writer of what it marks. A teammate's revision marks its
// keys with their name (replacing an older mark); this user's own change (an edit, or an undo / redo
// as the hub applied it) takes the marks off its keys, since the value shown is then theirs.
//
// Keys: `row:TAG` (the list row), and for the detail editor `TAG:name`, `TAG:hairColor`,
// `TAG:hairLength`, `TAG:eyeColor`, `TAG:glasses`, `TAG:facialHair-STYLE`, `TAG:topic-TOPIC`.

import { diffTag } from './core/diff.js';

/** How long a change stays highlighted, in milliseconds. */
export const HIGHLIGHT_MS = 2000;

/** The keys a diff (as applied by the hub) lights up. */
export function changedKeys(diff) {
  const tag = diffTag(diff);
  const keys = [`row:${tag}`];
  switch (diff.op) {
    case 'set': keys.push(`${tag}:${diff.field}`); break;
    case 'text': keys.push(`${tag}:name`); break;
    case 'facialHair': keys.push(`${tag}:facialHair-${diff.style}`); break;
    case 'preference': keys.push(`${tag}:topic-${diff.topic}`); break;
    default: break; // insert, remove, move: the row says it
  }
  return keys;
}

export class Highlights {
  constructor({ now = () => Date.now(), duration = HIGHLIGHT_MS } = {}) {
    this.now = now;
    this.duration = duration;
    /** key → {by, until} */
    this.marks = new Map();
  }

  /** Lights up what `diffs` change, as done by `by`. */
  add(diffs, by) {
    const since = this.now();
    const until = since + this.duration;
    for (const diff of diffs) {
      for (const key of changedKeys(diff)) this.marks.set(key, { by, since, until });
    }
  }

  /** This user changed what `diffs` touch: no teammate is its latest writer any more. */
  clear(diffs) {
    for (const diff of diffs) {
      for (const key of changedKeys(diff)) this.marks.delete(key);
    }
  }

  /** The mark on `key` ({by, since, until}), or null when none is lit. */
  mark(key) {
    const mark = this.marks.get(key);
    if (!mark) return null;
    if (mark.until <= this.now()) {
      this.marks.delete(key);
      return null;
    }
    return mark;
  }

  /** Who changed `key` just now, or null. */
  by(key) { return this.mark(key)?.by ?? null; }

  /** Milliseconds until the next highlight ends, or null when none is lit. */
  nextExpiry() {
    const now = this.now();
    let next = null;
    for (const [key, mark] of this.marks) {
      if (mark.until <= now) this.marks.delete(key);
      else if (next === null || mark.until - now < next) next = mark.until - now;
    }
    return next;
  }
}
