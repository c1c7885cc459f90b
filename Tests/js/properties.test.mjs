// Properties over random models and batches (a port of part of Tests/PeopleCoreTests/PropertyTests.swift).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyBatch, rollBack } from '../../Web/js/core/apply.js';
import { transformBatch } from '../../Web/js/core/transform.js';
import { parseDiff } from '../../Web/js/core/diff.js';
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
