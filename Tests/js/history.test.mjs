// HISTORY.md on the room state machine: selective undo, restore, the timeline and attribution (port of
// Tests/PeopleCoreTests/HistoryTests.swift), beyond the shared vectors of Tests/Vectors/history.json.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Harness } from './harness.mjs';
import { roomPolicy, restoreBatch, longestIncreasingRun } from './server/room.mjs';
import { PeopleModel, makePerson } from '../../Web/js/core/model.js';
import { set, remove, insert, text } from '../../Web/js/core/diff.js';
import { applyBatch } from '../../Web/js/core/apply.js';
import { decodeClientMessage } from '../../Web/js/core/wire.js';
import * as R from './random.mjs';

const seed = PeopleModel.tutorialSeed().people; // Bob 1, Joan 2, Sam 3
const users = ['ann', 'bob', 'carl', 'dana'];
const harness = (policy = roomPolicy()) => new Harness({ people: seed, policy, users });
const hair = (color) => set(1, 'hairColor', color);

/** The reply to a `log` / `blame` (any role, no seq counter), without changing the room. */
function ask(h, user, message) {
  const id = h.sessions.get(user);
  for (const { send: m, to } of h.room.receive(message, id, 0)) {
    if (m && to.length === 1 && to[0] === id) return m;
  }
  return undefined;
}
const log = (h, user, { before, limit = 50, tag } = {}) => {
  const m = { type: 'log', seq: 7, limit };
  if (before != null) m.before = before;
  if (tag != null) m.tag = tag;
  return ask(h, user, m);
};

// MARK: H1–H4: selective undo

test('H1 selective undo: the older step is taken back, the newer one stays', () => {
  const h = harness();
  h.submit('ann', [hair('red')]);
  h.submit('ann', [set(1, 'eyeColor', 'green')]);
  const r = h.undoEntry('ann', 1);
  assert.equal(r.type, 'undone');
  assert.equal(r.entry, 1);
  assert.equal(r.rev, 3);
  assert.deepEqual(r.skipped, []);
  assert.equal(h.person(1).hairColor, 'brown');
  assert.equal(h.person(1).eyeColor, 'green');
  assert.deepEqual(h.room.stacks('ann').undo.map((e) => e.id), [2]);
  assert.deepEqual(h.redo('ann').ops, [hair('red')], 'the top of the redo stack redoes the hair change');
});

test('H2 a teammate came after: skipped overwritten by bob, the entry is gone', () => {
  const h = harness();
  h.submit('ann', [hair('red')]);
  h.submit('bob', [hair('blonde')]);
  const r = h.undoEntry('ann', 1);
  assert.equal(r.rev, undefined);
  assert.deepEqual(r.ops, []);
  assert.equal(r.entry, 1);
  assert.deepEqual(r.skipped, [{ reason: 'overwritten', tag: 1, field: 'hairColor', by: 'bob' }]);
  assert.equal(h.room.stacks('ann').undo.length, 0);
});

test('H3 so did I: my own later write guards too, by ann', () => {
  const h = harness();
  h.submit('ann', [hair('red')]);
  h.submit('ann', [hair('blonde')]);
  const r = h.undoEntry('ann', 1);
  assert.deepEqual(r.ops, []);
  assert.deepEqual(r.skipped, [{ reason: 'overwritten', tag: 1, field: 'hairColor', by: 'ann' }]);
  assert.equal(h.person(1).hairColor, 'blonde');
  assert.deepEqual(h.room.stacks('ann').undo.map((e) => e.id), [2]);
});

test('H4 no-entry: someone else\'s entry, an unknown id; the seq is used and the reply cached', () => {
  const h = harness();
  h.submit('ann', [hair('red')]);
  h.submit('ann', [set(1, 'eyeColor', 'green')]);
  const seq = h.nextSeq('bob');
  const e = h.send({ type: 'undo', seq, entry: 1 }, 'bob');
  assert.equal(e.type, 'error');
  assert.equal(e.code, 'no-entry');
  assert.equal(e.seq, seq);
  assert.deepEqual(h.send({ type: 'undo', seq, entry: 1 }, 'bob'), e, 'replayed');
  assert.equal(h.revision, 2);
  assert.equal(h.room.stacks('ann').undo.length, 2);
});

test('entry with scope, and redo with entry, are bad-message', () => {
  for (const frame of ['{"type":"undo","seq":1,"entry":1,"scope":2}', '{"type":"redo","seq":1,"entry":1}']) {
    assert.throws(() => decodeClientMessage(frame), (e) => e.code === 'bad-message', frame);
  }
});

test('a no-entry error leaves the coalescing run as it was', () => {
  const h = harness();
  h.submit('ann', [text(1, [{ retain: 3 }, { insert: 'b' }])], { coalesce: 'name', at: 1000 });
  h.undoEntry('ann', 99, { at: 1100 });
  h.submit('ann', [text(1, [{ retain: 4 }, { insert: 'y' }])], { coalesce: 'name', at: 1200 });
  assert.equal(h.room.stacks('ann').undo.length, 1, 'still one typing step');
});

test('a selective undo of a re-insert is guarded by the undoer\'s own later write to the person', () => {
  // ann inserts Kim (r1), then sets Kim's glasses (r2); undoing entry 1 would remove a person ann
  // touched since: skipped editedByOthers by ann (HISTORY §2: the user included).
  const h = harness();
  const kim = makePerson({ tag: h.room.users.get('ann').tagBlocks[0].from, name: 'Kim' });
  h.submit('ann', [insert(kim, 1)]);
  h.submit('ann', [set(kim.tag, 'glasses', true)]);
  const r = h.undoEntry('ann', 1);
  assert.deepEqual(r.skipped, [{ reason: 'editedByOthers', tag: kim.tag, by: 'ann' }]);
  assert.ok(h.room.model.contains(kim.tag));
});

// MARK: H5, H6: restore

/** H5's history: ann removes Joan (r1), bob renames Sam (r2), carl inserts Kim (r3). */
function h5History() {
  const h = harness();
  h.submit('ann', [remove(2)]);
  h.submit('bob', [set(3, 'name', 'Samuel')]);
  const kim = makePerson({ tag: h.room.users.get('carl').tagBlocks[0].from, name: 'Kim' });
  h.submit('carl', [insert(kim, 2)]);
  return { h, kim };
}

test('H5 restore and its undo: the seed again, then the room as after r3', () => {
  const { h } = h5History();
  const afterR3 = h.room.model.clone();
  const r = h.restore('dana', 0);
  assert.equal(r.type, 'restored');
  assert.equal(r.rev, 4);
  assert.equal(r.label, 'Restore to revision 0');
  assert.ok(h.room.model.equals(new PeopleModel(seed)));
  assert.equal(h.room.history.revision(4).kind, 'restore');
  assert.equal(h.room.history.revision(4).author, 'dana');
  assert.equal(h.undo('dana').rev, 5);
  assert.ok(h.room.model.equals(afterR3));
});

test('H6 an edit racing a restore: reported targetRemoved by the restorer', () => {
  const { h, kim } = h5History();
  h.restore('dana', 0);
  const ack = h.submit('carl', [set(kim.tag, 'glasses', true)], { base: 3 });
  assert.equal(ack.rev, 4);
  assert.deepEqual(ack.ops, []);
  assert.deepEqual(ack.noop, [{ reason: 'targetRemoved', tag: kim.tag, by: 'dana' }]);
});

test('a restore to what the room already is changes nothing; a viewer is forbidden; a bad rev is bad-message', () => {
  const h = harness();
  const r = h.restore('ann', 0);
  assert.deepEqual(r, { type: 'restored', seq: 1, ops: [], label: 'Restore to revision 0' });
  assert.equal(h.room.stacks('ann').undo.length, 0);
  assert.equal(h.restore('ann', 9).code, 'bad-message');
  assert.equal(h.restore('ann', -1).code, 'bad-message');
  h.join('vic', 'viewer');
  assert.equal(h.restore('vic', 0).code, 'forbidden');
});

test('a restore is one undo entry and clears the redo stack; others get an ops frame of kind restore', () => {
  const h = harness();
  h.submit('ann', [hair('red')], { at: 1000 });
  h.undo('ann', { at: 2000 });
  h.submit('ann', [set(2, 'glasses', true)], { at: 3000 });
  h.submit('bob', [set(3, 'glasses', true)], { at: 4000 });
  assert.equal(h.room.stacks('ann').redo.length, 0);
  h.undo('ann', { at: 5000 });
  assert.equal(h.room.stacks('ann').redo.length, 1);
  const mark = h.log.length;
  const r = h.restore('ann', 1, { label: 'Back', at: 6000 });
  assert.equal(r.label, 'Back');
  assert.equal(r.time, 6000);
  assert.equal(h.room.stacks('ann').redo.length, 0);
  assert.equal(h.room.stacks('ann').undo.at(-1).id, r.rev);
  assert.equal(h.room.stacks('ann').undo.at(-1).label, 'Back');
  const broadcast = h.log.slice(mark).find((a) => a.send?.type === 'ops');
  assert.deepEqual(broadcast.send, { type: 'ops', rev: r.rev, time: 6000, author: 'ann', kind: 'restore', ops: r.ops,
    label: 'Back' });
  assert.ok(!broadcast.to.includes(h.sessions.get('ann')));
  const history = h.log.slice(mark).find((a) => a.send?.type === 'history');
  assert.deepEqual(history.send, { type: 'history', canUndo: true, canRedo: false, undoLabel: 'Back' });
});

/** A random history of 30 batches by A and B; returns the harness and the model after each revision. */
function randomHistory(rng, policy = roomPolicy()) {
  const h = new Harness({ people: seed, policy, users: ['A', 'B'] });
  const next = { A: { tag: h.room.users.get('A').tagBlocks[0].from }, B: { tag: h.room.users.get('B').tagBlocks[0].from } };
  const models = [h.room.model.clone()];
  for (let k = 0; k < 30; k++) {
    const user = rng.chance(0.5) ? 'A' : 'B';
    const ops = R.batch(h.room.model, next[user], rng);
    if (ops.length === 0) continue;
    if (h.submit(user, ops).rev === models.length) models.push(h.room.model.clone());
  }
  return { h, models };
}

test('restore to a random revision of a random history yields exactly the model there, and its undo the model before', () => {
  let restores = 0;
  for (let s = 0; s < 60; s++) {
    const rng = new R.SeededRandom(s * 7717 + 3);
    const { h, models } = randomHistory(rng);
    const target = rng.int(0, models.length - 1);
    const before = h.room.model.clone();
    const r = h.restore('A', target);
    assert.equal(r.type, 'restored', `seed ${s}`);
    assert.ok(h.room.model.equals(models[target]), `seed ${s}: restore to ${target}`);
    if (!before.equals(models[target])) {
      restores += 1;
      assert.equal(h.undo('A').type, 'undone');
      assert.ok(h.room.model.equals(before), `seed ${s}: undo of the restore`);
    } else {
      assert.equal(r.rev, undefined, `seed ${s}: nothing to restore, no revision`);
    }
  }
  assert.ok(restores > 40, `only ${restores} restores changed something`);
});

test('restore\'s batch builder: from any model of a random history to any other, applied, gives the target; no diff in it is a no-op', () => {
  for (let s = 0; s < 40; s++) {
    const rng = new R.SeededRandom(s * 104729 + 11);
    const { models } = randomHistory(rng);
    const from = models[rng.int(0, models.length - 1)];
    const to = models[rng.int(0, models.length - 1)];
    const batch = restoreBatch(from, to);
    const model = from.clone();
    const result = applyBatch(model, batch);
    assert.ok(model.equals(to), `seed ${s}`);
    assert.equal(result.applied.length, batch.length, `seed ${s}: a diff changed nothing`);
    if (from.equals(to)) assert.deepEqual(batch, [], `seed ${s}`);
    // Removes, then inserts, then field diffs, then moves (HISTORY §3's order).
    const rank = { remove: 0, insert: 1, set: 2, facialHair: 2, preference: 2, move: 3 };
    const ranks = batch.map((d) => rank[d.op]);
    assert.deepEqual(ranks, [...ranks].sort((a, b) => a - b), `seed ${s}: order`);
  }
});

test('restore\'s moves: the longest run already in order stays, ties keep earlier people', () => {
  assert.deepEqual(longestIncreasingRun([1, 3, 0, 2]), [0, 1]);
  assert.deepEqual(longestIncreasingRun([2, 0, 1]), [1, 2]);
  assert.deepEqual(longestIncreasingRun([]), []);
  const people = [1, 2, 3, 4].map((tag) => makePerson({ tag, name: `P${tag}` }));
  const current = new PeopleModel([people[1], people[3], people[0], people[2]]); // 2 4 1 3
  const target = new PeopleModel(people);
  const batch = restoreBatch(current, target);
  assert.equal(batch.length, 2, JSON.stringify(batch));
  const model = current.clone();
  applyBatch(model, batch);
  assert.ok(model.equals(target));
});

test('a re-inserted person goes after its previous neighbour at the target, else before its next one', () => {
  const people = [1, 2, 3, 4].map((tag) => makePerson({ tag, name: `P${tag}` }));
  // Target 1 2 3 4, now 3 4 (1 and 2 removed): 1 has no previous neighbour and 2 is absent, so 1 goes
  // at its index; 2 goes after 1.
  assert.deepEqual(restoreBatch(new PeopleModel([people[2], people[3]]), new PeopleModel(people)),
    [insert(people[0], 0), insert(people[1], 1)]);
  // Target 1 2 3 4, now 4 1: 2 after 1, 3 after 2, then 4 moves to the end.
  assert.deepEqual(restoreBatch(new PeopleModel([people[3], people[0]]), new PeopleModel(people)),
    [insert(people[1], 2), insert(people[2], 3), { op: 'move', tag: 4, to: 3 }]);
});

// MARK: H7, H8: timeline and attribution

test('H7 timeline: newest first, entry ids for the asker only; by tag', () => {
  const h = harness();
  h.submit('ann', [hair('red')]);
  h.submit('ann', [set(1, 'eyeColor', 'green')]);
  const page = log(h, 'ann');
  assert.deepEqual(page.entries.map((e) => e.rev), [2, 1]);
  assert.deepEqual(page.entries.map((e) => e.entry), [2, 1]);
  assert.ok(page.entries.every((e) => e.author === 'ann' && e.time != null));
  assert.equal(page.more, false);
  assert.equal(page.seq, 7);
  assert.deepEqual(log(h, 'bob').entries.map((e) => e.entry), [undefined, undefined]);
  assert.equal(log(h, 'ann', { limit: 1 }).more, true);
  assert.deepEqual(log(h, 'ann', { before: 2 }).entries.map((e) => e.rev), [1]);
  assert.equal(log(h, 'ann', { limit: 0 }).code, 'bad-message');
  assert.equal(log(h, 'ann', { limit: 201 }).code, 'bad-message');

  const { h: h5 } = h5History();
  h5.restore('dana', 0);
  h5.undo('dana');
  assert.deepEqual(log(h5, 'ann', { tag: 2 }).entries.map((e) => e.rev), [5, 4, 1]);
});

test('a log entry is the revision: rev, time, author, kind, label, ops as applied', () => {
  const h = harness();
  h.submit('ann', [hair('red')], { label: 'Hair', at: 1234 });
  assert.deepEqual(log(h, 'bob').entries, [{ rev: 1, time: 1234, author: 'ann', kind: 'edit', label: 'Hair',
    ops: [hair('red')] }]);
});

test('H8 attribution: bob wrote the hair at rev 2; the seed wrote the rest at rev 0', () => {
  const h = harness();
  h.submit('ann', [hair('red')], { at: 1000 });
  h.submit('bob', [hair('blonde')], { at: 2000 });
  const b = ask(h, 'ann', { type: 'blame', seq: 3, tag: 1 });
  assert.equal(b.type, 'blame');
  assert.deepEqual(b.fields.hairColor, { user: 'bob', rev: 2, time: 2000 });
  assert.deepEqual(b.fields.eyeColor, { user: null, rev: 0 });
  assert.deepEqual(b.created, { user: null, rev: 0 });
  assert.deepEqual(b.fields.facialHair, { beard: { user: null, rev: 0 } }, 'a listed element of the seed');
  assert.deepEqual(Object.keys(b), ['type', 'seq', 'tag', 'created', 'fields']);
  assert.deepEqual(Object.keys(b.fields), ['name', 'hairColor', 'hairLength', 'eyeColor', 'glasses', 'position',
    'facialHair', 'preference']);
  assert.equal(ask(h, 'ann', { type: 'blame', seq: 4, tag: 99 }).code, 'bad-message');
});

test('blame: a re-insert (an undo of a remove, a restore) writes every field; undo and redo are writes by their author', () => {
  const h = harness();
  h.submit('ann', [set(2, 'glasses', true)]);
  h.submit('bob', [remove(2)]);
  h.undo('bob');
  let b = ask(h, 'ann', { type: 'blame', tag: 2 });
  assert.deepEqual([b.created.user, b.created.rev, b.fields.glasses.user, b.fields.position.user], ['bob', 3, 'bob', 'bob']);
  assert.deepEqual(b.fields.preference, { sports: { user: 'bob', rev: 3, time: 3000 }, books: { user: 'bob', rev: 3, time: 3000 },
    art: { user: 'bob', rev: 3, time: 3000 } });
  h.submit('carl', [set(2, 'name', 'Jo')]);
  h.undo('carl');
  b = ask(h, 'ann', { type: 'blame', tag: 2 });
  assert.deepEqual([b.fields.name.user, b.fields.name.rev], ['carl', 5]);
});

test('times: every revision has one, never earlier than the one before; acks, ops and undone carry it', () => {
  const h = harness();
  const first = h.submit('ann', [hair('red')], { at: 5000 });
  const second = h.submit('bob', [set(2, 'glasses', true)], { at: 4000 }); // the clock went back
  assert.equal(first.time, 5000);
  assert.equal(second.time, 5000);
  const undone = h.undo('ann', { at: 7000 });
  assert.equal(undone.time, 7000);
  const nothing = h.submit('ann', [set(2, 'glasses', true)], { at: 9000 });
  assert.equal(nothing.rev, 3);
  assert.equal(nothing.time, 7000, 'a no-op ack carries the head\'s time');
  const empty = harness().submit('ann', [set(2, 'glasses', false)]);
  assert.equal(empty.time, undefined, 'revision 0 has no time');
  assert.deepEqual(Object.keys(first), ['type', 'seq', 'rev', 'time', 'ops']);
  assert.deepEqual(Object.keys(undone), ['type', 'seq', 'rev', 'time', 'ops', 'skipped']);
});

// MARK: Beyond the memory window

test('restore and log below the memory window ask for the store\'s revisions, and then answer exactly', () => {
  const h = new Harness({ people: seed, policy: roomPolicy({ keptRevisions: 4 }), users: ['A', 'B'] });
  const models = [h.room.model.clone()];
  const revisions = [];
  for (let k = 0; k < 20; k++) {
    h.submit(k % 2 === 0 ? 'A' : 'B', [set(1 + (k % 3), 'name', `n${k}`)]);
    models.push(h.room.model.clone());
    revisions.push(h.room.history.revision(h.revision));
  }
  assert.ok(h.room.oldestKeptBase > 2);
  const id = h.sessions.get('A');
  const restore = { type: 'restore', seq: h.nextSeq('A'), rev: 2 };
  const asked = h.room.receive(restore, id, 1);
  const read = asked[0]?.readHistory;
  assert.ok(read, JSON.stringify(asked));
  assert.equal(read.after, 2);
  assert.equal(read.through, h.room.oldestKeptBase);
  const older = revisions.filter((r) => r.number > read.after && r.number <= read.through);
  const answered = h.room.receive(restore, id, 2, { older, log: null });
  assert.ok(answered.some((a) => a.send?.type === 'restored' && a.send.rev === 21));
  assert.ok(h.room.model.equals(models[2]));
  // Handed back without what it needs, it asks again; a replayed seq is answered from the cache.
  const again = { type: 'restore', seq: h.nextSeq('A'), rev: 1 };
  assert.ok(h.room.receive(again, id, 3, { older: [], log: null })[0].readHistory);
  assert.equal(h.room.receive(restore, id, 3)[0].send.rev, 21, 'replayed');

  // The timeline, 5 at a time, down to revision 1 through chunks read from the store.
  const all = [...revisions, h.room.history.revision(21)];
  let actions = h.room.receive({ type: 'log', seq: 1, before: 10, limit: 5 }, id, 3);
  let rounds = 0;
  while (actions[0]?.readHistory && rounds < 10) {
    rounds += 1;
    const r = actions[0].readHistory;
    const chunk = all.filter((v) => v.number > r.after && v.number <= r.through);
    actions = h.room.receive(r.message, id, 3, { older: chunk, log: r.log });
  }
  const page = actions[0]?.send;
  assert.equal(page?.type, 'log', JSON.stringify(actions));
  assert.deepEqual(page.entries.map((e) => e.rev), [9, 8, 7, 6, 5]);
  assert.equal(page.more, true);
});

test('a log by tag below the memory window reads chunks until revision 1', () => {
  const h = new Harness({ people: seed, policy: roomPolicy({ keptRevisions: 2 }), users: ['A', 'B'] });
  const store = [];
  for (let k = 0; k < 12; k++) {
    h.submit('A', [set(k % 4 === 0 ? 2 : 1, 'name', `n${k}`)]);
    store.push(h.room.history.revision(h.revision));
  }
  assert.ok(h.room.oldestKeptBase > 5, 'the room kept only part of its history');
  const id = h.sessions.get('B');
  let actions = h.room.receive({ type: 'log', limit: 50, tag: 2 }, id, 0);
  let reads = 0;
  while (actions[0]?.readHistory) {
    reads += 1;
    const r = actions[0].readHistory;
    assert.equal(r.after, 0, 'with a tag, chunks of 1,000');
    actions = h.room.receive(r.message, id, 0,
      { older: store.filter((v) => v.number > r.after && v.number <= r.through), log: r.log });
  }
  assert.equal(reads, 1);
  assert.deepEqual(actions[0].send, { type: 'log', entries: [9, 5, 1].map((rev) => ({ rev, time: rev * 1000,
    author: 'A', kind: 'edit', ops: [set(2, 'name', `n${rev - 1}`)] })), more: false }, 'to B: no entry ids');
});

test('undo^n then redo^n is still the identity with selective undos of older entries mixed in', () => {
  for (let s = 0; s < 30; s++) {
    const rng = new R.SeededRandom(s + 4242);
    const h = new Harness({ people: seed, users: ['A', 'B'] });
    const next = { tag: h.room.users.get('A').tagBlocks[0].from };
    for (let k = 0; k < 8; k++) {
      const ops = R.batch(h.room.model, next, rng);
      if (ops.length) h.submit('A', ops);
    }
    // Take back one older entry selectively, then plain undo / redo over the rest.
    const ids = h.room.stacks('A').undo.map((e) => e.id);
    if (ids.length > 1) h.undoEntry('A', ids[rng.int(0, ids.length - 2)]);
    // The selective undo's own redo entry stays under the ones the undos push: redo exactly those.
    const before = h.room.model.clone();
    const kept = h.room.stacks('A').redo.length;
    for (let n = h.room.stacks('A').undo.length; n > 0; n--) h.undo('A');
    for (let n = h.room.stacks('A').redo.length - kept; n > 0; n--) h.redo('A');
    assert.ok(h.room.model.equals(before), `seed ${s}`);
  }
});
