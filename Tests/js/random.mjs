// Seeded random people, diffs and batches, valid where they are made (port of
// Tests/PeopleCoreTests/RandomEdits.swift; the generator is mulberry32, not Swift's SplitMix64, so
// seeds do not give the same runs as the Swift tests).

import { makePerson, HairColor, HairLength, EyeColor, FacialHairStyle, Topic, Opinion, PeopleModel, scalarCount } from '../../Web/js/core/model.js';
import * as D from '../../Web/js/core/diff.js';
import { applyDiff } from '../../Web/js/core/apply.js';

export class SeededRandom {
  constructor(seed) { this.state = seed >>> 0; }
  next() {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  chance(p) { return this.next() < p; }
  /** An integer in low…high, both inclusive. */
  int(low, high) { return low + Math.floor(this.next() * (high - low + 1)); }
  pick(items) { return items[this.int(0, items.length - 1)]; }
}

export const letters = ['a', 'b', 'c', 'x', 'é', '😀', 'Z'];

export function name(rng) {
  let s = '';
  for (let n = rng.int(0, 4); n > 0; n--) s += rng.pick(letters);
  return s;
}

export function person(tag, rng) {
  const likes = [];
  const dislikes = [];
  for (const topic of Topic.words) {
    const r = rng.int(0, 3);
    if (r === 0) likes.push(topic);
    else if (r === 1) dislikes.push(topic);
  }
  return makePerson({ tag, name: name(rng), hairColor: rng.pick(HairColor.words), hairLength: rng.pick(HairLength.words),
    eyeColor: rng.pick(EyeColor.words), glasses: rng.chance(0.5),
    facialHair: FacialHairStyle.words.filter(() => rng.chance(0.3)), likes, dislikes });
}

export function model(rng, low = 2, high = 6) {
  const people = [];
  for (let tag = 1, n = rng.int(low, high); tag <= n; tag++) people.push(person(tag, rng));
  return new PeopleModel(people);
}

export function textEdits(name, rng) {
  const length = scalarCount(name);
  const components = [];
  let position = 0;
  for (let n = rng.int(1, 3); n > 0; n--) {
    const skip = rng.int(0, length - position);
    components.push({ retain: skip });
    position += skip;
    if (rng.chance(0.5) || position === length) {
      components.push({ insert: rng.pick(letters) + (rng.chance(0.3) ? rng.pick(letters) : '') });
    } else {
      const count = rng.int(1, length - position);
      components.push({ delete: count });
      position += count;
    }
  }
  return components;
}

/** One diff valid on `m`; inserts take tags from `next.tag` (incremented). */
export function diff(m, next, rng) {
  if (m.count === 0) return D.insert(person(next.tag++, rng), 0);
  const tag = rng.pick(m.tags);
  const p = m.get(tag);
  switch (rng.int(0, 9)) {
    case 0: return D.insert(person(next.tag++, rng), rng.int(0, m.count));
    case 1: return D.remove(tag);
    case 2: return D.move(tag, rng.int(0, m.count - 1));
    case 3:
      switch (rng.int(0, 4)) {
        case 0: return D.set(tag, 'name', name(rng));
        case 1: return D.set(tag, 'hairColor', rng.pick(HairColor.words));
        case 2: return D.set(tag, 'hairLength', rng.pick(HairLength.words));
        case 3: return D.set(tag, 'eyeColor', rng.pick(EyeColor.words));
        default: return D.set(tag, 'glasses', rng.chance(0.5));
      }
    case 4: return D.facialHair(tag, rng.pick(FacialHairStyle.words), rng.chance(0.5));
    case 5: return D.preference(tag, rng.pick(Topic.words), rng.pick(Opinion.words));
    case 6: case 7: return D.text(tag, textEdits(p.name, rng));
    default: return D.set(tag, 'hairColor', rng.pick(HairColor.words));
  }
}

/** A batch of low…high diffs, each valid on the state the previous one left (invalid ones dropped). */
export function batch(m, next, rng, low = 1, high = 3) {
  const scratch = m.clone();
  const diffs = [];
  for (let n = rng.int(low, high); n > 0; n--) {
    const d = diff(scratch, next, rng);
    let ok = false;
    try { ok = applyDiff(scratch, d) !== null; } catch { ok = false; }
    if (ok) diffs.push(d);
  }
  return diffs;
}
