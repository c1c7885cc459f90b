// Undo and redo beyond the vectors (a port of most of Tests/PeopleCoreTests/UndoTests.swift).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Harness, Fixtures as F } from './harness.mjs';
import { roomPolicy } from './server/room.mjs';
import { set, remove, move, text, facialHair, preference } from '../../Web/js/core/diff.js';

const typed = (s, position) => text(1, [{ retain: position }, { insert: s }]);

test('regression: redo of two characters typed at one position keeps their order', () => {
  // Found by the undoⁿ-redoⁿ property: "Ann" + "a" at 3, then "c" at 3 → "Annca".
  const h = new Harness();
  h.submit('A', [typed('a', 3)]);
  h.submit('A', [typed('c', 3)]);
  assert.equal(h.person(1).name, 'Annca');
  h.undo('A');
  h.undo('A');
  assert.equal(h.person(1).name, 'Ann');
  h.redo('A');
  h.redo('A');
  assert.equal(h.person(1).name, 'Annca');
});

test('typing with one coalesce key within the window is one undo step with the first label', () => {
  const h = new Harness();
  h.submit('A', [typed('a', 3)], { label: 'Type Name', coalesce: 'name-1', at: 1000 });
  h.submit('B', [set(2, 'glasses', true)], { at: 1100 }); // another user's batch does not break the run
  h.submit('A', [typed('b', 4)], { label: 'Type Name', coalesce: 'name-1', at: 1300 });
  h.submit('A', [typed('c', 5)], { label: 'Other', coalesce: 'name-1', at: 1700 });
  assert.equal(h.person(1).name, 'Annabc');
  assert.equal(h.room.stacks('A').undo.length, 1);
  const undone = h.undo('A', { at: 2000 });
  assert.equal(undone.label, 'Type Name');
  assert.equal(h.person(1).name, 'Ann');
  assert.equal(h.person(2).glasses, true);
});

test('a pause longer than the window, another key, or an undo request starts a new entry', () => {
  const h = new Harness();
  h.submit('A', [typed('a', 3)], { coalesce: 'name-1', at: 1000 });
  h.submit('A', [typed('b', 4)], { coalesce: 'name-1', at: 1600 }); // 600 ms > 500 ms
  h.submit('A', [typed('c', 5)], { coalesce: 'name-2', at: 1700 }); // another key
  assert.equal(h.room.stacks('A').undo.length, 3);
  h.undo('B', { at: 1750 }); // B's request does not break A's run
  h.submit('A', [typed('d', 6)], { coalesce: 'name-2', at: 1800 });
  assert.equal(h.room.stacks('A').undo.length, 3);
  h.redo('A', { at: 1850 }); // A's request (finding nothing) does
  h.submit('A', [typed('e', 7)], { coalesce: 'name-2', at: 1900 });
  assert.equal(h.room.stacks('A').undo.length, 4);
});

test('a batch that changes nothing does not break a run and makes no revision', () => {
  const h = new Harness();
  h.submit('A', [typed('a', 3)], { coalesce: 'k', at: 1000 });
  const ack = h.submit('A', [set(2, 'glasses', false)], { at: 1200 });
  assert.deepEqual(ack.ops, []);
  assert.equal(ack.rev, 1);
  h.submit('A', [typed('b', 4)], { coalesce: 'k', at: 1400 });
  assert.equal(h.room.stacks('A').undo.length, 1);
  assert.equal(h.revision, 2);
});

test('scoped undo takes the newest entry touching that person', () => {
  const h = new Harness();
  h.submit('A', [set(1, 'hairColor', 'red')]);
  h.submit('A', [set(2, 'hairColor', 'blonde')]);
  h.undo('A', { scope: 1 });
  assert.equal(h.person(1).hairColor, 'brown');
  assert.equal(h.person(2).hairColor, 'blonde');
  assert.equal(h.room.stacks('A').redo.length, 1);
  h.redo('A', { scope: 1 });
  assert.equal(h.person(1).hairColor, 'red');
});

test('cascade off: an entry that changes nothing is consumed and the undo stops', () => {
  const h = new Harness({ policy: roomPolicy({ undo: { cascade: false } }) });
  h.submit('A', [set(1, 'glasses', true)]);
  h.submit('A', [set(3, 'hairLength', 'long')]);
  h.submit('B', [remove(3)]);
  const undone = h.undo('A');
  assert.equal(undone.rev, undefined);
  assert.deepEqual(undone.skipped, [{ reason: 'targetRemoved', tag: 3, by: 'B' }]);
  assert.equal(h.person(1).glasses, true);
  assert.equal(h.room.stacks('A').undo.length, 1);
});

test("my new edit clears my redo stack; a teammate's edit does not", () => {
  const h = new Harness();
  h.submit('A', [set(1, 'hairColor', 'red')]);
  h.undo('A');
  h.submit('B', [set(2, 'hairColor', 'white')]);
  assert.equal(h.room.stacks('A').redo.length, 1);
  h.submit('A', [set(2, 'glasses', true)]);
  assert.equal(h.room.stacks('A').redo.length, 0);
});

test('undo and redo on empty stacks answer with no ops, no revision and no error', () => {
  const h = new Harness();
  const undone = h.undo('A');
  assert.equal(undone.rev, undefined);
  assert.deepEqual(undone.ops, []);
  assert.deepEqual(undone.skipped, []);
  const redone = h.redo('A');
  assert.equal(redone.rev, undefined);
  assert.deepEqual(redone.ops, []);
  assert.equal(h.revision, 0);
});

test('the depth bounds each stack, dropping the oldest entries', () => {
  const h = new Harness({ policy: roomPolicy({ undo: { depth: 2 } }) });
  for (const color of ['red', 'blonde', 'white']) h.submit('A', [set(1, 'hairColor', color)]);
  assert.equal(h.room.stacks('A').undo.length, 2);
  h.undo('A');
  h.undo('A');
  assert.equal(h.person(1).hairColor, 'red');
  assert.equal(h.undo('A').rev, undefined);
});

test('an entry older than the kept history is expired: one report per tag, nothing applied', () => {
  const h = new Harness({ policy: roomPolicy({ keptRevisions: 2 }) });
  h.submit('A', [set(1, 'hairColor', 'red'), set(2, 'glasses', true)]);
  for (let k = 0; k < 4; k++) h.submit('B', [set(3, 'glasses', k % 2 !== 0)]);
  const undone = h.undo('A');
  assert.equal(undone.rev, undefined);
  assert.deepEqual(undone.skipped, [{ reason: 'expired', tag: 1 }, { reason: 'expired', tag: 2 }]);
  assert.equal(h.person(1).hairColor, 'red');
});

test('facial hair and preference registers overwritten by a teammate are reported with style / topic', () => {
  const h = new Harness();
  h.submit('A', [facialHair(1, 'beard', true), preference(1, 'art', 'like')]);
  h.submit('B', [facialHair(1, 'beard', false), preference(1, 'art', 'dislike')]);
  const undone = h.undo('A');
  assert.deepEqual(undone.skipped, [
    { reason: 'overwritten', tag: 1, field: 'preference', topic: 'art', by: 'B' },
    { reason: 'overwritten', tag: 1, field: 'facialHair', style: 'beard', by: 'B' },
  ]);
});

test('undo of a move whose old neighbours are both gone goes to its gap rebased like a submit\'s (§7 reading 5)', () => {
  const h = new Harness({ people: [...F.start, F.person(4, 'Dee')] });
  h.submit('A', [move(2, 3)]); // [1,3,4,2]: 2 was between 1 and 3
  h.submit('B', [remove(1), remove(3)]); // [4,2]
  h.undo('A');
  assert.deepEqual(h.people.map((p) => p.tag), [2, 4]);
});

test('undo of a remove whose person a teammate brought back is reported, not duplicated', () => {
  const h = new Harness();
  h.submit('A', [remove(2)]);
  h.submit('B', [set(1, 'glasses', true)]);
  h.undo('A');
  h.redo('A'); // removed again by A's redo
  assert.equal(h.person(2), undefined);
  h.undo('A'); // back again
  assert.deepEqual(h.people.map((p) => p.tag), [1, 2, 3]);
});

test('undo of text over a later whole-name set is reported overwritten (rule 6)', () => {
  const h = new Harness();
  h.submit('A', [typed('!', 3)]);
  h.submit('B', [set(1, 'name', 'Bea')]);
  const undone = h.undo('A');
  assert.deepEqual(undone.skipped, [{ reason: 'overwritten', tag: 1, field: 'name', by: 'B' }]);
  assert.equal(h.person(1).name, 'Bea');
});

test('undo that would push a rebased name over the limit is skipped as invariant', () => {
  const h = new Harness();
  const long = 'x'.repeat(199);
  h.submit('A', [text(1, [{ delete: 3 }])]); // "Ann" → ""
  h.submit('B', [text(1, [{ insert: long }])]); // 199 bytes
  const undone = h.undo('A'); // "Ann" back would be 202 bytes
  assert.deepEqual(undone.skipped, [{ reason: 'invariant', tag: 1, field: 'name' }]);
  assert.equal(h.person(1).name, long);
});
