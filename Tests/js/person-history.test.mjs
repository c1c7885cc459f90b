// One person's history (Web/js/person-history.js): what the history panel shows with "Only this person"
// on, read with `log` and `tag` (HISTORY.md §4). No DOM.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PersonHistory } from '../../Web/js/person-history.js';
import { set } from '../../Web/js/core/diff.js';

/** A log entry of revision `rev` that changed person `tag`'s hair. */
const entry = (rev, tag = 2, more = {}) => ({ rev, time: 1_000_000 + rev, author: 'bob', kind: 'edit',
  label: 'Change Hair Color', ops: [set(tag, 'hairColor', 'red')], ...more });
const page = (revs, more, mark = () => ({})) => ({ entries: revs.map((r) => entry(r, 2, mark(r))), more });

test('nothing is asked before a person is shown; then their newest page with their tag, and older ones on the way down', () => {
  const h = new PersonHistory({ pageSize: 2 });
  assert.equal(h.nextRequest(), null);
  h.show(2);
  assert.deepEqual(h.nextRequest(), { kind: 'head', limit: 2, tag: 2 });
  h.sent(7, h.nextRequest());
  assert.equal(h.nextRequest(), null, 'one request at a time');
  assert.equal(h.answered(7, page([9, 4], true)), true);
  assert.deepEqual(h.rows.map((e) => e.rev), [9, 4]);
  assert.equal(h.more, true);
  h.loadOlder();
  assert.deepEqual(h.nextRequest(), { kind: 'older', before: 4, limit: 2, tag: 2 });
  h.sent(8, h.nextRequest());
  assert.equal(h.loadingOlder, true);
  h.answered(8, page([1], false));
  assert.deepEqual(h.rows.map((e) => e.rev), [9, 4, 1]);
  assert.equal(h.more, false, 'nothing older named them');
  assert.ok(!h.rows.some((e) => e.rev === 0), 'no row for the room as it began');
});

test('a live revision naming the person goes on top; one about someone else leaves the rows alone', () => {
  const h = new PersonHistory();
  h.show(2);
  h.sent(1, h.nextRequest());
  h.answered(1, page([5, 3], false));
  h.revision(entry(6, 3));
  assert.deepEqual(h.rows.map((e) => e.rev), [5, 3]);
  h.revision(entry(7, 2));
  assert.deepEqual(h.rows.map((e) => e.rev), [7, 5, 3]);
  h.revision({ ...entry(8, 9), ops: [set(3, 'glasses', true), set(2, 'glasses', true)] });
  assert.deepEqual(h.rows.map((e) => e.rev), [8, 7, 5, 3], 'a batch that named them among others');
  assert.equal(h.nextRequest(), null, 'nothing to read for it');
});

test("this user's stack changing reads the loaded rows again, with their marks", () => {
  const h = new PersonHistory({ pageSize: 2 });
  h.show(2);
  h.sent(1, h.nextRequest());
  h.answered(1, page([9, 6], true));
  h.loadOlder();
  h.sent(2, h.nextRequest());
  h.answered(2, page([4, 2], true));
  h.stacksChanged();
  assert.deepEqual(h.nextRequest(), { kind: 'refresh', limit: 4, tag: 2 });
  h.sent(3, h.nextRequest());
  h.answered(3, page([9, 6, 4, 2], true, (r) => (r === 6 ? { entry: 3 } : {})));
  assert.deepEqual(h.rows.map((e) => [e.rev, e.entry ?? null]), [[9, null], [6, 3], [4, null], [2, null]]);
  assert.equal(h.more, true);
  h.undoSent(3);
  assert.equal(h.undoable(h.rows[1]), false, 'its Undo this waits');
  h.entryGone(3);
  assert.equal(h.rows[1].entry, undefined);
});

test('shown for someone else, the rows go and the answer about the one before is not used', () => {
  const h = new PersonHistory();
  h.show(2);
  h.sent(1, h.nextRequest());
  h.show(3);
  assert.deepEqual(h.rows, []);
  assert.equal(h.loaded, false);
  assert.equal(h.answered(1, page([5], false)), false, 'no request of this person is out');
  assert.deepEqual(h.rows, []);
  assert.deepEqual(h.nextRequest(), { kind: 'head', limit: 50, tag: 3 });
});

test('a refused read is not asked again until something changes', () => {
  const h = new PersonHistory();
  h.show(2);
  h.sent(1, h.nextRequest());
  assert.equal(h.failed(1), true);
  assert.equal(h.nextRequest(), null);
  h.revision(entry(3, 4));
  assert.deepEqual(h.nextRequest(), { kind: 'head', limit: 50, tag: 2 });
});
