// Properties over random models and batches (a port of part of Tests/PeopleCoreTests/PropertyTests.swift).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyBatch, rollBack } from '../../Web/js/core/apply.js';
import { transformBatch } from '../../Web/js/core/transform.js';
import { parseDiff, insert, remove, move } from '../../Web/js/core/diff.js';
import { PeopleModel } from '../../Web/js/core/model.js';
import { Harness } from './harness.mjs';
import * as R from './random.mjs';

function lenient(model, ops) { try { applyBatch(model, ops, 'skip'); } catch { /* unchanged */ } }

test('TP1: both orders of two concurrent batches converge', () => {
  for (let seed = 1; seed <= 2000; seed++) {
    const rng = new R.SeededRandom(seed);
    const start = R.model(rng);
    const a = R.batch(start, { tag: 100 }, rng);
    const b = R.batch(start, { tag: 200 }, rng);
    const order = start.tags;
    // The hub applied a first: b is rebased over a. The other side rebases a over b, a first.
    const left = start.clone();
    lenient(left, a);
    lenient(left, transformBatch(b, a, order).diffs);
    const right = start.clone();
    lenient(right, b);
    lenient(right, transformBatch(a, b, order, true).diffs);
    assert.ok(left.equals(right), `seed ${seed}: a=${JSON.stringify(a)} b=${JSON.stringify(b)}`);
    assert.equal(left.invariantViolation(), null);
  }
});

test('TP1 with a re-insert: an undo putting a person back, concurrent with a remove or move of that person', () => {
  // A client meets this when the hub's undo re-inserts a person its pending batch removes or moves
  // (made on a state that still had the person, removed and put back meanwhile: issue 15 F2 / F4). On
  // the common state the person is absent, so the remove or move is a no-op there (rule 2). A re-insert
  // comes only from the hub (an undo or a restore, never rebased, never pending at a client), so it is
  // always ordered first: the hub applies it and rebases the batch over it (left), the client rebases
  // the hub's batch over its own with incomingFirst (right).
  let changed = 0;
  for (let seed = 1; seed <= 2000; seed++) {
    const rng = new R.SeededRandom(seed + 880000);
    const full = R.model(rng, 2, 6);
    const person = full.people[rng.int(0, full.count - 1)];
    const start = new PeopleModel(full.people.filter((p) => p.tag !== person.tag));
    const order = start.tags;
    const reinsert = insert(person, rng.int(0, start.count));
    const withPerson = start.clone();
    applyBatch(withPerson, [reinsert]);
    const a = [reinsert, ...R.batch(withPerson, { tag: 100 }, rng, 0, 2)];
    const theirs = rng.chance(0.5) ? remove(person.tag) : move(person.tag, rng.int(0, full.count - 1));
    const b = rng.chance(0.5) ? [theirs] : [theirs, ...R.batch(start, { tag: 200 }, rng, 1, 2)];
    const left = start.clone();
    lenient(left, a);
    lenient(left, transformBatch(b, a, order).diffs);
    const right = start.clone();
    lenient(right, b);
    lenient(right, transformBatch(a, b, order, true).diffs);
    assert.ok(left.equals(right), `seed ${seed}: a=${JSON.stringify(a)} b=${JSON.stringify(b)}`);
    if (!left.equals(start)) changed += 1;
  }
  assert.ok(changed > 1000);
});

test('apply then the exact inverses gives the model back', () => {
  for (let seed = 1; seed <= 1000; seed++) {
    const rng = new R.SeededRandom(seed);
    const start = R.model(rng);
    const batch = R.batch(start, { tag: 100 }, rng, 1, 6);
    const model = start.clone();
    const result = applyBatch(model, batch);
    assert.equal(model.invariantViolation(), null);
    rollBack(model, result.applied);
    assert.ok(model.equals(start), `seed ${seed}`);
  }
});

test('undo n times then redo n times with nothing between gives the same model', () => {
  for (let seed = 1; seed <= 300; seed++) {
    const rng = new R.SeededRandom(seed);
    const h = new Harness({ people: R.model(rng).people, users: ['A', 'B'] });
    const next = { A: { tag: h.room.users.get('A').tagBlocks[0].from }, B: { tag: h.room.users.get('B').tagBlocks[0].from } };
    for (let n = rng.int(1, 8); n > 0; n--) {
      const user = rng.chance(0.6) ? 'A' : 'B';
      const ops = R.batch(h.room.model, next[user], rng);
      h.send({ type: 'submit', seq: h.nextSeq(user), base: h.revision, ops }, user);
    }
    const before = h.room.model.clone();
    for (let n = h.room.stacks('A').undo.length; n > 0; n--) h.undo('A');
    assert.equal(h.room.stacks('A').undo.length, 0);
    for (let n = h.room.stacks('A').redo.length; n > 0; n--) h.redo('A');
    assert.ok(h.room.model.equals(before), `seed ${seed}`);
  }
});

test('random garbage diffs are typed invalid-op errors', () => {
  const keys = ['op', 'tag', 'to', 'at', 'field', 'value', 'person', 'style', 'present', 'topic', 'edits',
    'retain', 'insert', 'delete', 'name'];
  const words = ['insert', 'remove', 'move', 'set', 'text', 'facialHair', 'preference', 'name', 'red', 'beard',
    'like', 1, 2, 0, -3, Number.MAX_VALUE, 1.5, true, null, '\ud800', ''];
  const garbage = (rng, depth = 0) => {
    switch (depth > 3 ? 0 : rng.int(0, 3)) {
      case 0: return rng.pick(words);
      case 1: return Array.from({ length: rng.int(0, 3) }, () => garbage(rng, depth + 1));
      default: return Object.fromEntries(Array.from({ length: rng.int(0, 5) }, () => [rng.pick(keys), garbage(rng, depth + 1)]));
    }
  };
  for (let seed = 1; seed <= 2000; seed++) {
    const rng = new R.SeededRandom(seed);
    const json = garbage(rng);
    try {
      parseDiff(json);
    } catch (error) {
      assert.equal(error.code, 'invalid-op', `seed ${seed}: ${error}`);
    }
  }
});
