// Typing in a name field as text edits, and a caret that survives a teammate's edit.
//
// The name input's value and the person's name are JavaScript strings (UTF-16); text edits count
// Unicode scalars (core/text.js). `nameEdit` turns "the value before" and "the value now" into one
// edit (retain, delete, insert); `caretAfter` moves a selection across a change of the value.

import { scalars } from './core/model.js';
import { textOp, applyText } from './core/text.js';

/** The common prefix and suffix of two scalar arrays (not overlapping): {prefix, suffix}. */
function common(a, b) {
  let prefix = 0;
  const max = Math.min(a.length, b.length);
  while (prefix < max && a[prefix] === b[prefix]) prefix += 1;
  let suffix = 0;
  while (suffix < max - prefix && a[a.length - 1 - suffix] === b[b.length - 1 - suffix]) suffix += 1;
  return { prefix, suffix };
}

/**
 * The text edits that turn `before` into `after` (canonical: retain, delete, insert), or null when
 * they are the same text. With `caret` (scalars, where the caret is in `after`) an ambiguous change,
 * such as a letter typed next to the same letter, is placed just before the caret.
 */
export function nameEdit(before, after, caret) {
  const a = scalars(before);
  const b = scalars(after);
  const { prefix, suffix } = common(a, b);
  if (prefix === a.length && prefix === b.length) return null;
  const edit = (p, s) => textOp([{ retain: p }, { insert: b.slice(p, b.length - s).join('') },
    { delete: a.length - p - s }]);
  const inserted = b.length - prefix - suffix;
  const deleted = a.length - prefix - suffix;
  if (caret != null && (inserted === 0 || deleted === 0)) {
    // A pure insert or delete may sit anywhere from its latest place (prefix first) back to its
    // earliest (suffix first): take the one that ends at the caret.
    const earliest = a.length - deleted - commonSuffix(a, b);
    const p = Math.max(earliest, Math.min(prefix, caret - inserted));
    const candidate = edit(p, a.length - p - deleted);
    if (applyText(candidate, before) === after) return candidate;
  }
  return edit(prefix, suffix);
}

function commonSuffix(a, b) {
  let n = 0;
  const max = Math.min(a.length, b.length);
  while (n < max && a[a.length - 1 - n] === b[b.length - 1 - n]) n += 1;
  return n;
}

/** UTF-16 offset → scalar offset in `s`. */
export function scalarOffset(s, utf16) {
  return scalars(s.slice(0, utf16)).length;
}

/** Scalar offset → UTF-16 offset in `s`. */
export function utf16Offset(s, scalar) {
  return scalars(s).slice(0, scalar).join('').length;
}

/** Moves a scalar position across `edits` (a caret at an insert stays before it). */
function throughEdits(edits, position) {
  let read = 0; // scalars of the old text read so far
  let shift = 0;
  for (const c of edits) {
    if (read > position) break;
    if ('retain' in c) read += c.retain;
    else if ('insert' in c) {
      if (read < position) shift += scalars(c.insert).length;
    } else {
      const end = read + c.delete;
      if (position >= end) shift -= c.delete;
      else if (position > read) shift -= position - read;
      read = end;
    }
  }
  return position + shift;
}

/**
 * Where a selection {start, end} (UTF-16 offsets in `before`) goes when the value becomes `after`.
 * `steps` are the text edits that made the change, one after the other, when known (teammates' `text`
 * diffs); otherwise the change is taken to be one replaced stretch, and a caret inside it goes to its
 * end.
 */
export function caretAfter(before, after, selection, steps) {
  const start = scalarOffset(before, selection.start);
  const end = scalarOffset(before, selection.end);
  let map;
  if (steps && steps.reduce((text, edits) => (text == null ? null : applyText(edits, text)), before) === after) {
    map = (p) => steps.reduce((q, edits) => throughEdits(edits, q), p);
  } else {
    const a = scalars(before);
    const b = scalars(after);
    const { prefix, suffix } = common(a, b);
    map = (p) => {
      if (p <= prefix) return p;
      if (p >= a.length - suffix) return p + b.length - a.length;
      return b.length - suffix;
    };
  }
  return { start: utf16Offset(after, map(start)), end: utf16Offset(after, map(end)) };
}
