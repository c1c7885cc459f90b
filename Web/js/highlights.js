// What teammates just changed, for a short highlight: a key per list row or detail field, with who
// changed it and until when. Time is a parameter (`now`), so this runs in node as it is.
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
    const until = this.now() + this.duration;
    for (const diff of diffs) {
      for (const key of changedKeys(diff)) this.marks.set(key, { by, until });
    }
  }

  /** Who changed `key` just now, or null. */
  by(key) {
    const mark = this.marks.get(key);
    if (!mark) return null;
    if (mark.until <= this.now()) {
      this.marks.delete(key);
      return null;
    }
    return mark.by;
  }

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
