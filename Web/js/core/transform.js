// Operational transform of PeopleKeeper diffs (port of Sources/PeopleCore/Diff/Transform.swift;
// SEMANTICS §3 and docs/SEMANTICS.md §7 decision 1).
//
// Positions are gaps: `move(t, to: j)` takes t out and puts it at gap j of the list without t. So
// positions are rebased with the tag order both diffs were made on: where a move's gap lands after a
// concurrent insert depends on where the moved person was. The hub rebuilds that order at a batch's
// base; a client uses its confirmed model.
//
// TP1 holds for every pair: with m the model both were made on,
// m · a · T(b, a, bFirst=false) == m · b · T(a, b, aFirst=true), diffs on absent tags being no-ops.

import * as D from './diff.js';
import { transformText } from './text.js';

function clamp(value, low, high) { return Math.min(Math.max(value, low), high); }

/**
 * Rebases `incoming` over `applied`; both were made on a model whose tag order is `order`.
 *
 * `incomingFirst`: true when the hub ordered `incoming` before `applied` (it then wins position ties
 * and loses last-writer-wins ties). The hub rebasing a new batch passes false.
 * Returns {diff} (the rebased diff, possibly unchanged) or {overwritten: target} (it became a no-op:
 * a later write to the same target wins, rules 4–6).
 */
export function transform(incoming, applied, order, incomingFirst = false) {
  const laterWins = (target) => (incomingFirst ? { overwritten: target } : { diff: incoming });
  const same = incoming.op === applied.op && D.diffTag(incoming) === D.diffTag(applied);
  if (incoming.op === 'move' && same) return laterWins({ kind: 'position', tag: incoming.tag });
  if (incoming.op === 'insert' && incomingFirst && applied.op === 'remove' && applied.tag === incoming.person.tag) {
    // A re-insert (an undo's, never a submit's: a submit inserts only new tags) ordered before a remove
    // of the same person: the remove takes out what it put back, so over the remove the re-insert does
    // nothing. (Ordered after it, it stands: the person comes back.) TP1 needs this.
    return { overwritten: { kind: 'person', tag: applied.tag } };
  }
  if (incoming.op === 'insert' && incomingFirst && applied.op === 'move' && applied.tag === incoming.person.tag) {
    // A re-insert ordered before a move of the same person: the move then takes the person to its gap,
    // so over the move the re-insert lands there (the list here lacks the person).
    return { diff: D.insert(incoming.person, clamp(applied.to, 0, order.length)) };
  }
  if ((incoming.op === 'insert' || incoming.op === 'move') && D.isPositional(applied)) {
    return { diff: rebasePosition(incoming, applied, order, incomingFirst) };
  }
  if (incoming.op === 'set' && same && incoming.field === applied.field) {
    return laterWins({ kind: 'field', tag: incoming.tag, field: incoming.field });
  }
  if (incoming.op === 'text' && applied.op === 'set' && applied.field === 'name' && incoming.tag === applied.tag) {
    return { overwritten: { kind: 'field', tag: incoming.tag, field: 'name' } };
  }
  if (incoming.op === 'text' && same) {
    return { diff: { op: 'text', tag: incoming.tag, edits: transformText(incoming.edits, applied.edits, incomingFirst) } };
  }
  if (incoming.op === 'facialHair' && same && incoming.style === applied.style) {
    return laterWins({ kind: 'facialHair', tag: incoming.tag, style: incoming.style });
  }
  if (incoming.op === 'preference' && same && incoming.topic === applied.topic) {
    return laterWins({ kind: 'preference', tag: incoming.tag, topic: incoming.topic });
  }
  // Different tags or fields commute; `set(name)` wins over an applied `text`; a diff on a removed
  // tag is kept and becomes a no-op when applied (rule 2), so a restore revives it.
  return { diff: incoming };
}

/**
 * Rebases a batch over an applied batch (each a sequence, made on `order`), pairwise on a grid.
 *
 * Returns {diffs, overwritten}: the rebased incoming diffs, and the targets of those that became
 * no-ops, each as {target, byApplied} with the index of the applied diff that overwrote it.
 */
export function transformBatch(incoming, applied, order, incomingFirst = false) {
  let diffs = incoming;
  const overwritten = [];
  let outer = order;
  applied.forEach((original, appliedIndex) => {
    let current = original;
    let inner = outer;
    const next = [];
    for (const d of diffs) {
      if (current === null) {
        next.push(d);
        continue;
      }
      const mine = transform(d, current, inner, incomingFirst);
      if (mine.diff) next.push(mine.diff);
      else overwritten.push({ target: mine.overwritten, byApplied: appliedIndex });
      const theirs = transform(current, d, inner, !incomingFirst);
      current = theirs.diff ?? null;
      inner = applyOrder(d, inner);
    }
    diffs = next;
    outer = applyOrder(original, outer);
  });
  return { diffs, overwritten };
}

/** The tag order after `diff`, with the clamping rules of apply; diffs on absent tags change nothing. */
export function applyOrder(diff, order) {
  switch (diff.op) {
    case 'insert': {
      if (order.includes(diff.person.tag)) return order;
      const out = [...order];
      out.splice(clamp(diff.at, 0, out.length), 0, diff.person.tag);
      return out;
    }
    case 'remove':
      return order.filter((t) => t !== diff.tag);
    case 'move': {
      const from = order.indexOf(diff.tag);
      if (from < 0) return order;
      const out = [...order];
      out.splice(from, 1);
      out.splice(clamp(diff.to, 0, out.length), 0, diff.tag);
      return out;
    }
    default:
      return order;
  }
}

/**
 * The list change of a positional diff on `order`: who leaves, and who enters at which gap of the
 * list without the leaver. {leaving: tag|null, entering: {tag, gap}|null}
 */
function listChange(diff, order) {
  const change = { leaving: null, entering: null };
  switch (diff.op) {
    case 'insert':
      if (!order.includes(diff.person.tag)) {
        change.entering = { tag: diff.person.tag, gap: clamp(diff.at, 0, order.length) };
      } else {
        // An undo's re-insert of a person put back meanwhile (rebased only in undo, never a submit's):
        // its gap, like a move's, is in the list without the person (Transform.swift).
        change.leaving = diff.person.tag;
        change.entering = { tag: diff.person.tag, gap: clamp(diff.at, 0, order.length - 1) };
      }
      break;
    case 'remove':
      if (order.includes(diff.tag)) change.leaving = diff.tag;
      break;
    case 'move': {
      // A gap in the list without the person. A move of a person absent here (removed, and maybe put
      // back later) still has its gap, so it keeps the same people on its left through changes made
      // meanwhile and lands right if the person comes back (§3 rules 2 and 3); applied, it changes
      // nothing while the person is absent.
      change.leaving = diff.tag;
      const without = order.includes(diff.tag) ? order.length - 1 : order.length;
      change.entering = { tag: diff.tag, gap: clamp(diff.to, 0, without) };
      break;
    }
    default:
      break;
  }
  return change;
}

/**
 * Rebases the gap of an insert or move over a positional applied diff.
 *
 * The incoming gap is kept after the same people it had on its left; the applied diff's entering
 * person is left of it when it lands left of that gap, or at the same gap and was ordered first.
 */
function rebasePosition(incoming, applied, order, incomingFirst) {
  const mine = listChange(incoming, order);
  const entering = mine.entering;
  if (entering === null) return incoming; // inserts a tag already present: unchanged
  const theirs = listChange(applied, order);
  const before = order.filter((t) => t !== mine.leaving);
  const leftOfGap = new Set(before.slice(0, entering.gap));
  const after = applyOrder(applied, order).filter((t) => t !== mine.leaving);
  let arrival = theirs.entering ? theirs.entering.tag : null;
  if (arrival === mine.leaving || arrival === entering.tag) arrival = null;
  // `after` without the arrival keeps the old relative order, so the people left of the gap are a
  // prefix of it: the rebased gap is their count (plus one if the arrival lands left of it).
  let gap = 0;
  let seen = 0;
  let arrivalGap = null;
  for (const tag of after) {
    if (tag === arrival) {
      arrivalGap = seen;
      continue;
    }
    seen += 1;
    if (leftOfGap.has(tag)) gap += 1;
  }
  if (arrivalGap !== null && (arrivalGap < gap || (arrivalGap === gap && !incomingFirst))) gap += 1;
  return incoming.op === 'insert' ? D.insert(incoming.person, gap) : D.move(incoming.tag, gap);
}
