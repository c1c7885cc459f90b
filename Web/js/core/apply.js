// Applying diffs to a model with exact inverses (port of Diff/PeopleModel+Apply.swift, AppliedDiff.swift).
//
// An applied diff is {diff, inverse, neighbours?}: `diff` as applied (resolved index, plain values),
// `inverse` its exact inverse captured at apply time (applied right after `diff`, it restores the model
// exactly), and for remove and move `neighbours` = {before, after}: the person's neighbours before it.

import { InvalidOp } from './errors.js';
import { NameLimit, opinion, withOpinion, withFields, sameValue, sameText, FacialHairStyle } from './model.js';
import { applyText, invertText, span } from './text.js';
import * as D from './diff.js';

const nameTooLong = `name is over ${NameLimit.maxUTF8Bytes} UTF-8 bytes`;

function clamp(value, low, high) { return Math.min(Math.max(value, low), high); }

function presentIndex(model, tag) {
  const index = model.indexOf(tag);
  if (index < 0) throw new InvalidOp(`tag ${tag} is not present`);
  return index;
}

/**
 * Applies one diff to `model` (mutating it). Returns the applied diff, or null when it changes nothing;
 * throws InvalidOp when it is invalid (model unchanged).
 */
export function applyDiff(model, diff) {
  const people = model.people;
  switch (diff.op) {
    case 'insert': {
      const person = diff.person;
      if (!(person.tag > 0)) throw new InvalidOp(`tag ${person.tag} is not positive`);
      if (model.contains(person.tag)) throw new InvalidOp(`tag ${person.tag} is already present`);
      if (!NameLimit.allows(person.name)) throw new InvalidOp(nameTooLong);
      const index = clamp(diff.at, 0, people.length);
      people.splice(index, 0, person);
      return { diff: D.insert(person, index), inverse: D.remove(person.tag) };
    }
    case 'remove': {
      const index = presentIndex(model, diff.tag);
      const neighbours = model.neighbours(index);
      const [person] = people.splice(index, 1);
      return { diff: D.remove(diff.tag), inverse: D.insert(person, index), neighbours };
    }
    case 'move': {
      const from = presentIndex(model, diff.tag);
      const index = clamp(diff.to, 0, people.length - 1);
      if (index === from) return null;
      const neighbours = model.neighbours(from);
      const [person] = people.splice(from, 1);
      people.splice(index, 0, person);
      return { diff: D.move(diff.tag, index), inverse: D.move(diff.tag, from), neighbours };
    }
    case 'set': {
      const index = presentIndex(model, diff.tag);
      if (diff.field === 'name' && !NameLimit.allows(diff.value)) throw new InvalidOp(nameTooLong);
      const old = people[index][diff.field];
      if (sameValue(diff.field, old, diff.value)) return null;
      people[index] = withFields(people[index], { [diff.field]: diff.value });
      return { diff, inverse: D.set(diff.tag, diff.field, old) };
    }
    case 'facialHair': {
      const index = presentIndex(model, diff.tag);
      const person = people[index];
      if (person.facialHair.includes(diff.style) === diff.present) return null;
      const styles = diff.present
        ? FacialHairStyle.sorted([...person.facialHair, diff.style])
        : person.facialHair.filter((s) => s !== diff.style);
      people[index] = withFields(person, { facialHair: styles });
      return { diff, inverse: D.facialHair(diff.tag, diff.style, !diff.present) };
    }
    case 'preference': {
      const index = presentIndex(model, diff.tag);
      const old = opinion(people[index], diff.topic);
      if (old === diff.value) return null;
      people[index] = withOpinion(people[index], diff.topic, diff.value);
      return { diff, inverse: D.preference(diff.tag, diff.topic, old) };
    }
    case 'text': {
      const index = presentIndex(model, diff.tag);
      const old = people[index].name;
      const name = applyText(diff.edits, old);
      if (name === null) {
        throw new InvalidOp(`text span ${span(diff.edits)} is past the end of the name of ${diff.tag}`);
      }
      if (!NameLimit.allows(name)) throw new InvalidOp(nameTooLong);
      if (sameText(name, old)) return null;
      people[index] = withFields(people[index], { name });
      return { diff, inverse: { op: 'text', tag: diff.tag, edits: invertText(diff.edits, old) } };
    }
    default:
      throw new InvalidOp(`unknown op '${diff.op}'`);
  }
}

/**
 * Applies a batch atomically: every diff in order, each on the state the previous one left.
 *
 * Either all of it applies, or it throws InvalidOp and the model is unchanged (the diffs already
 * applied are rolled back with their exact inverses). Diffs that change nothing are left out of
 * `applied`. `absentTags`: 'reject' (a diff on an absent tag is invalid) or 'skip' (it is a no-op,
 * listed in `absent` with its index in the batch: SEMANTICS §3 rule 2).
 * Returns {applied: [appliedDiff], absent: [{index, diff}]}.
 */
export function applyBatch(model, batch, absentTags = 'reject') {
  const result = { applied: [], absent: [] };
  for (let index = 0; index < batch.length; index++) {
    const diff = batch[index];
    try {
      if (absentTags === 'skip' && diff.op !== 'insert' && !model.contains(D.diffTag(diff))) {
        result.absent.push({ index, diff });
        continue;
      }
      const applied = applyDiff(model, diff);
      if (applied) result.applied.push(applied);
    } catch (error) {
      rollBack(model, result.applied);
      throw error;
    }
  }
  return result;
}

/** Undoes applied diffs, newest first, with their exact inverses. */
export function rollBack(model, applied) {
  for (let i = applied.length - 1; i >= 0; i--) {
    try {
      applyDiff(model, applied[i].inverse);
    } catch (error) {
      throw new Error(`exact inverse failed to apply: ${error.message}`);
    }
  }
}
