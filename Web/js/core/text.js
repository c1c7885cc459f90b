// Character-wise edits of a name (port of Sources/PeopleCore/Diff/TextOperation.swift).
//
// An operation is an array of components in wire form: {retain: n} | {insert: "s"} | {delete: n},
// counted in Unicode scalar values (code points), never UTF-16 units or graphemes. What the components
// do not reach is retained. Operations are kept in canonical form: no empty components, adjacent
// components of one kind merged, insert before delete in an adjacent pair, no trailing retain; so two
// operations with the same effect are equal component by component (inserted text by code points). An
// operation may be empty, or only retain (its canonical form is empty): it is valid and changes nothing
// (SEMANTICS §7 reading 6).

import { InvalidOp } from './errors.js';
import { NameLimit, scalars, scalarCount } from './model.js';

/** 'retain' | 'insert' | 'delete' (undefined for anything else). */
export function componentKind(c) {
  if (c === undefined || c === null) return undefined;
  if ('retain' in c) return 'retain';
  if ('insert' in c) return 'insert';
  if ('delete' in c) return 'delete';
  return undefined;
}

function amount(c) { return c.retain ?? c.delete; }

function append(out, component) {
  const kind = componentKind(component);
  if ((kind === 'retain' || kind === 'delete') && amount(component) <= 0) return;
  if (kind === 'insert' && component.insert === '') return;
  const last = out[out.length - 1];
  const lastKind = componentKind(last);
  if (lastKind === 'retain' && kind === 'retain') out[out.length - 1] = { retain: last.retain + component.retain };
  else if (lastKind === 'delete' && kind === 'delete') out[out.length - 1] = { delete: last.delete + component.delete };
  else if (lastKind === 'insert' && kind === 'insert') out[out.length - 1] = { insert: last.insert + component.insert };
  else if (lastKind === 'delete' && kind === 'insert') {
    // Insert-before-delete is the canonical order of an adjacent pair (same effect).
    out.pop();
    append(out, { insert: component.insert });
    out.push({ delete: last.delete });
  } else out.push({ ...component });
}

/** The canonical form of `components` (counts ≥ 1, inserts non-empty; see `validatedTextOp`). */
export function textOp(components) {
  const out = [];
  for (const c of components) append(out, c);
  if (componentKind(out[out.length - 1]) === 'retain') out.pop();
  return out;
}

/** An operation from untrusted components (already typed), or throws InvalidOp. */
export function validatedTextOp(components) {
  let reach = 0;
  for (const c of components) {
    const kind = componentKind(c);
    if (kind === 'insert') {
      if (c.insert === '') throw new InvalidOp('text insert must not be empty');
    } else {
      if (!(amount(c) >= 1)) throw new InvalidOp('text counts must be at least 1');
      // No name has more scalars than this: a longer reach is past the end of any name. Not the byte
      // limit: a name may have more scalars than its NFC form has bytes.
      reach += amount(c);
      if (reach > NameLimit.maxScalars) {
        throw new InvalidOp(`text edits reach past the end of any name (at most ${NameLimit.maxScalars} characters)`);
      }
    }
  }
  return textOp(components);
}

/** Scalars the operation reads from its input (retains and deletes): it needs a text at least this long. */
export function span(op) {
  let sum = 0;
  for (const c of op) if (componentKind(c) !== 'insert') sum += amount(c);
  return sum;
}

/** Applies the operation, or returns null when it reaches past the end of `text`. */
export function applyText(op, text) {
  const chars = scalars(text);
  if (span(op) > chars.length) return null;
  let out = '';
  let i = 0;
  for (const c of op) {
    switch (componentKind(c)) {
      case 'retain': out += chars.slice(i, i + c.retain).join(''); i += c.retain; break;
      case 'delete': i += c.delete; break;
      case 'insert': out += c.insert; break;
    }
  }
  return out + chars.slice(i).join('');
}

/** The operation that undoes `op`, given the text it was applied to (span(op) ≤ its length). */
export function invertText(op, text) {
  const chars = scalars(text);
  const out = [];
  let i = 0;
  for (const c of op) {
    switch (componentKind(c)) {
      case 'retain': out.push({ retain: c.retain }); i += c.retain; break;
      case 'delete': out.push({ insert: chars.slice(i, i + c.delete).join('') }); i += c.delete; break;
      case 'insert': out.push({ delete: scalarCount(c.insert) }); break;
    }
  }
  return textOp(out);
}

/** Walks an operation's components, splitting reads; past the end it is an endless retain. */
class Cursor {
  constructor(components) { this.components = components; this.index = 0; this.used = 0; }
  get atEnd() { return this.index >= this.components.length; }
  get current() { return this.atEnd ? undefined : this.components[this.index]; }
  get kind() { return componentKind(this.current); }
  get remaining() {
    const kind = this.kind;
    if (kind === undefined) return Infinity;
    if (kind === 'insert') return 0;
    return amount(this.current) - this.used;
  }
  advanceInsert() { this.index += 1; this.used = 0; }
  consume(n) {
    if (this.atEnd) return;
    this.used += n;
    const kind = this.kind;
    if ((kind === 'retain' || kind === 'delete') && this.used >= amount(this.current)) { this.index += 1; this.used = 0; }
  }
}

/**
 * Rebases `mine` over `applied`, both made on the same text.
 *
 * `selfFirst` says which of two inserts at the same position goes first: the one the hub ordered
 * earlier. Characters deleted by `applied` are not deleted again. TP1 holds:
 * a · transformText(b, a, false) == b · transformText(a, b, true).
 */
export function transformText(mine, applied, selfFirst) {
  const out = [];
  const m = new Cursor(mine);
  const t = new Cursor(applied);
  while (!(m.atEnd && t.atEnd)) {
    if (m.kind === 'insert' && (selfFirst || t.kind !== 'insert')) {
      out.push({ insert: m.current.insert });
      m.advanceInsert();
      continue;
    }
    if (t.kind === 'insert') {
      out.push({ retain: scalarCount(t.current.insert) });
      t.advanceInsert();
      continue;
    }
    if (m.kind === 'insert') {
      out.push({ insert: m.current.insert });
      m.advanceInsert();
      continue;
    }
    // Both read the input: retain or delete (an exhausted cursor retains for ever).
    const n = Math.min(m.remaining, t.remaining);
    const mk = m.kind;
    const tk = t.kind;
    if (mk === 'delete' && (tk === 'retain' || tk === undefined)) out.push({ delete: n });
    else if ((mk === 'retain' && (tk === 'retain' || tk === undefined)) || (mk === undefined && tk === 'retain')) {
      out.push({ retain: n });
    }
    // else: deleted by the applied side already
    m.consume(n);
    t.consume(n);
  }
  return textOp(out);
}
