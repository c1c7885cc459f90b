// Operational diffs (port of Sources/PeopleCore/Diff/Diff.swift and Wire/Diff+JSON.swift).
//
// A diff is a plain object in its wire form (PROTOCOL.md "Diffs"), always naming its person by tag:
//   {op:'insert', at, person} | {op:'remove', tag} | {op:'move', tag, to}
//   {op:'set', tag, field, value} | {op:'facialHair', tag, style, present}
//   {op:'preference', tag, topic, value} | {op:'text', tag, edits}
// Positions (`at`, `to`) are gaps that the hub rebases and clamps on apply. Diffs made by `parseDiff`
// or the makers below are canonical (person sets in vocabulary order, text edits canonical) and are
// treated as immutable values.

import { ErrorCode } from './errors.js';
import { WireFields } from './fields.js';
import {
  parsePerson, personJSON, isField, Fields, FacialHairStyle, Topic, Opinion, sameText,
} from './model.js';
import { textOp, validatedTextOp } from './text.js';

// MARK: Makers

export const insert = (person, at) => ({ op: 'insert', at, person });
export const remove = (tag) => ({ op: 'remove', tag });
export const move = (tag, to) => ({ op: 'move', tag, to });
export const set = (tag, field, value) => ({ op: 'set', tag, field, value });
export const facialHair = (tag, style, present) => ({ op: 'facialHair', tag, style, present });
export const preference = (tag, topic, value) => ({ op: 'preference', tag, topic, value });
/** A text diff; `edits` are made canonical. */
export const text = (tag, edits) => ({ op: 'text', tag, edits: textOp(edits) });

// MARK: Reading

/** The person this diff touches. */
export function diffTag(diff) { return diff.op === 'insert' ? diff.person.tag : diff.tag; }

/** Whether the diff changes the order of the list (insert, remove, move). */
export function isPositional(diff) { return diff.op === 'insert' || diff.op === 'remove' || diff.op === 'move'; }

/**
 * What part of the person the diff writes, for last-writer lookups and skip reports:
 * {kind:'person'|'position'|'field'|'facialHair'|'preference', tag, field?, style?, topic?}.
 */
export function diffTarget(diff) {
  switch (diff.op) {
    case 'insert': return { kind: 'person', tag: diff.person.tag };
    case 'remove': return { kind: 'person', tag: diff.tag };
    case 'move': return { kind: 'position', tag: diff.tag };
    case 'set': return { kind: 'field', tag: diff.tag, field: diff.field };
    case 'text': return { kind: 'field', tag: diff.tag, field: 'name' };
    case 'facialHair': return { kind: 'facialHair', tag: diff.tag, style: diff.style };
    case 'preference': return { kind: 'preference', tag: diff.tag, topic: diff.topic };
    default: throw new TypeError(`unknown op ${diff.op}`);
  }
}

/** A string naming a target, for maps and comparison. */
export function targetKey(t) {
  switch (t.kind) {
    case 'person': case 'position': return `${t.kind}:${t.tag}`;
    case 'field': return `field:${t.tag}:${t.field}`;
    case 'facialHair': return `facialHair:${t.tag}:${t.style}`;
    case 'preference': return `preference:${t.tag}:${t.topic}`;
    default: throw new TypeError(`unknown target ${t.kind}`);
  }
}

export function sameTarget(a, b) { return targetKey(a) === targetKey(b); }

/**
 * Reads a diff from its wire form; anything wrong throws InvalidOp with the reason (Swift `Diff(json:)`).
 * The result is canonical.
 */
export function parseDiff(json) {
  const f = new WireFields(json, 'op', ErrorCode.invalidOp);
  const op = f.string('op');
  if (op === 'insert') {
    const person = f.raw('person');
    if (person === undefined) throw f.fail('`person` is missing');
    const p = parsePerson(person);
    return insert(p, f.int('at'));
  }
  const tag = f.int('tag');
  if (!(tag > 0)) throw f.fail('tag must be positive');
  switch (op) {
    case 'remove': return remove(tag);
    case 'move': return move(tag, f.int('to'));
    case 'set': {
      const field = f.string('field');
      if (!isField(field)) throw f.fail(`'${field}' is not a settable field`);
      let value;
      if (field === 'name') value = f.string('value');
      else if (field === 'glasses') value = f.bool('value');
      else value = f.word('value', Fields[field]);
      return set(tag, field, value);
    }
    case 'facialHair': return facialHair(tag, f.word('style', FacialHairStyle), f.bool('present'));
    case 'preference': return preference(tag, f.word('topic', Topic), f.word('value', Opinion));
    case 'text': {
      const components = [];
      for (const edit of f.array('edits')) {
        const e = new WireFields(edit, 'text edit', ErrorCode.invalidOp);
        // Exactly one of the three: {retain: 1, insert: 'x'} has no single meaning.
        if (Object.keys(edit).length !== 1) throw e.fail('a text edit is one of {retain}, {insert} or {delete}');
        let n;
        let s;
        if ((n = e.optionalInt('retain')) !== undefined) components.push({ retain: n });
        else if ((n = e.optionalInt('delete')) !== undefined) components.push({ delete: n });
        else if ((s = e.optionalString('insert')) !== undefined) components.push({ insert: s });
        else throw e.fail('needs retain, insert or delete');
      }
      return { op: 'text', tag, edits: validatedTextOp(components) };
    }
    default: throw f.fail(`unknown op '${op}'`);
  }
}

/** The diff's wire form: a fresh plain object (JSON.stringify it to send). */
export function diffJSON(diff) {
  switch (diff.op) {
    case 'insert': return { op: 'insert', at: diff.at, person: personJSON(diff.person) };
    case 'text': return { op: 'text', tag: diff.tag, edits: diff.edits.map((c) => ({ ...c })) };
    default: return { ...diff };
  }
}

/** Diff equality as Swift's `Diff ==` (names and inserted text by code points, canonical text edits). */
export function sameDiff(a, b) { return sameJSON(a, b); }

/** Deep equality of JSON-like values, strings compared by code points (`sameText`). */
export function sameJSON(a, b) {
  if (a === b) return true;
  if (typeof a === 'string' && typeof b === 'string') return sameText(a, b);
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => sameJSON(x, b[i]));
  const ka = Object.keys(a).filter((k) => a[k] !== undefined);
  const kb = Object.keys(b).filter((k) => b[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameJSON(a[k], b[k]));
}

