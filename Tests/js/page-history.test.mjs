// The page's history (issue 18, item 3; HISTORY.md §6): the timeline the panel shows (Web/js/timeline.js),
// who last wrote each field (attribution.js), their words (history-text.js), the skip notices of a
// selective undo and of a restore (report-text.js), and what LiveRoom tells the page about revisions,
// reads and selective undos (live-room.js over a fake socket). No DOM.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Timeline, START } from '../../Web/js/timeline.js';
import { runsOf, runRows, rowKey, overlaps, stepsOf } from '../../Web/js/history-runs.js';
import { Attribution } from '../../Web/js/attribution.js';
import {
  relativeTime, opsLabel, actionText, historyStatusText, touchedPeople, touchedText, writerText, restoreQuestion, changesSince,
  alreadyRestoredText, restoreOfflineText, lastNames, KnownNames,
} from '../../Web/js/history-text.js';
import { RestoreCheck, readRoomAt } from '../../Web/js/restore-check.js';
import { PeopleModel } from '../../Web/js/core/model.js';
import { reportsText, errorText, hasWireWords } from '../../Web/js/report-text.js';
import { LiveRoom } from '../../Web/js/live-room.js';
import { set, remove, insert, move, facialHair, preference } from '../../Web/js/core/diff.js';

const person = (tag, name, more = {}) => ({ tag, name, hairColor: 'brown', hairLength: 'short', eyeColor: 'brown',
  glasses: false, facialHair: [], likes: [], dislikes: [], ...more });
const PEOPLE = [person(1, 'Ann'), person(2, 'Joan'), person(3, 'Sam', { glasses: true })];
const names = new Map(PEOPLE.map((p) => [p.tag, p.name]));
const nameOf = (tag) => names.get(tag);
const IDENTIFIER = /hairColor|hairLength|eyeColor|facialHair|preference|targetRemoved|editedByOthers|colour/;

/** A log entry of revision `rev` by `author` (an edit of Ann's hair unless told). */
const entry = (rev, author = 'bob', more = {}) => ({ rev, time: 1_000_000 + rev, author, kind: 'edit',
  label: 'Change Hair Color', ops: [set(1, 'hairColor', 'red')], ...more });
/** A log page of revisions `from` down to `to` (newest first). */
const page = (from, to, more, mark = () => ({})) => ({
  entries: Array.from({ length: from - to + 1 }, (_, i) => entry(from - i, 'bob', mark(from - i))), more });

// MARK: Timeline

test('the timeline reads the newest page first, then older pages as the user reaches the end', () => {
  const t = new Timeline({ pageSize: 3 });
  assert.equal(t.more, false, 'nothing is known before the first page');
  const first = t.nextRequest();
  assert.deepEqual(first, { kind: 'head', limit: 3 });
  t.sent(7, first);
  assert.equal(t.nextRequest(), null, 'one request at a time');
  assert.equal(t.answered(8, page(8, 6, true)), false, 'an answer to another seq is not ours');
  assert.equal(t.answered(7, page(8, 6, true)), true);
  assert.deepEqual(t.entries.map((e) => e.rev), [8, 7, 6]);
  assert.equal(t.more, true);
  assert.equal(t.nextRequest(), null, 'no older page until the user reaches the end');

  t.loadOlder();
  const older = t.nextRequest();
  assert.deepEqual(older, { kind: 'older', before: 6, limit: 3 });
  t.sent(9, older);
  assert.equal(t.loadingOlder, true);
  t.answered(9, page(5, 3, true));
  t.loadOlder();
  t.sent(10, t.nextRequest());
  t.answered(10, page(2, 1, false));
  assert.deepEqual(t.entries.map((e) => e.rev), [8, 7, 6, 5, 4, 3, 2, 1]);
  assert.equal(t.more, false, "the room's first revision is shown: nothing older");
  t.loadOlder();
  assert.equal(t.nextRequest(), null);
});

test('live revisions do not pile up: past maxRows the oldest rows go, and come back when the user scrolls to them', () => {
  const t = new Timeline({ pageSize: 3, maxRows: 4 });
  t.sent(1, t.nextRequest());
  t.answered(1, page(3, 1, false));
  assert.deepEqual(t.rows.map((e) => e.rev), [3, 2, 1, 0], 'the whole room, and how it started');
  for (let rev = 4; rev <= 9; rev += 1) t.revision(entry(rev));
  assert.deepEqual(t.entries.map((e) => e.rev), [9, 8, 7, 6], 'four rows kept, newest first');
  assert.equal(t.more, true, 'the dropped rows can be loaded again');
  t.loadOlder();
  const older = t.nextRequest();
  assert.deepEqual(older, { kind: 'older', before: 6, limit: 3 });
  t.sent(2, older);
  t.answered(2, page(5, 3, true));
  assert.deepEqual(t.entries.map((e) => e.rev), [9, 8, 7, 6, 5, 4, 3]);
  t.revision(entry(10));
  assert.deepEqual(t.entries.map((e) => e.rev), [10, 9, 8, 7, 6, 5, 4],
    'as many rows as the user scrolled down to are kept');
  t.reset();
  assert.equal(t.keep, 4, 'a new connection starts from maxRows again');
});

test('while the user reads below the top no row comes or goes; back at the top the waiting revisions are read', () => {
  // The web pass of session 32: at 60 edits/s a user who scrolled down to read saw the rows they read
  // dropped at the bottom as new ones came at the top, several a second.
  const t = new Timeline({ pageSize: 3, maxRows: 4 });
  t.sent(1, t.nextRequest());
  t.answered(1, page(6, 4, true));
  t.loadOlder();
  t.sent(2, t.nextRequest());
  t.answered(2, page(3, 2, true));
  assert.deepEqual(t.entries.map((e) => e.rev), [6, 5, 4, 3, 2]);
  t.hold(true);
  for (let rev = 7; rev <= 9; rev += 1) t.revision(entry(rev));
  assert.deepEqual(t.entries.map((e) => e.rev), [6, 5, 4, 3, 2], 'the rows being read stay');
  assert.equal(t.newer, 3, 'three newer revisions wait');
  assert.equal(t.nextRequest(), null, 'nothing is read while the user reads');

  t.stacksChanged();
  assert.deepEqual(t.nextRequest(), { kind: 'refresh', before: 7, limit: 5 }, 'held, the marks of the rows shown only');
  t.sent(3, t.nextRequest());
  t.answered(3, page(6, 2, true, (rev) => (rev === 4 ? { entry: 4 } : {})));
  assert.deepEqual(t.entries.map((e) => e.rev), [6, 5, 4, 3, 2]);
  assert.equal(t.entries[2].entry, 4);
  assert.equal(t.nextRequest(), null);

  t.hold(false);
  assert.equal(t.newer, 0, 'at the top nothing is said to wait');
  const catchUp = t.nextRequest();
  assert.deepEqual(catchUp, { kind: 'refresh', limit: 8 }, 'the waiting ones and the rows below, in one page');
  t.sent(4, catchUp);
  t.answered(4, page(9, 2, true));
  assert.deepEqual(t.entries.map((e) => e.rev), [9, 8, 7, 6, 5, 4, 3, 2]);
  assert.equal(t.nextRequest(), null);
  t.revision(entry(10));
  assert.equal(t.entries[0].rev, 10, 'live revisions join again');
});

/** A timeline of revisions 5 and 4 (pages of 2, refreshes of 3, 4 rows kept), held while 6 to 20 came. */
function heldWithFifteenWaiting() {
  const t = new Timeline({ pageSize: 2, refreshSize: 3, maxRows: 4 });
  t.sent(1, t.nextRequest());
  t.answered(1, page(5, 4, true));
  t.hold(true);
  for (let rev = 6; rev <= 20; rev += 1) t.revision(entry(rev));
  return t;
}

test('back at the top after more revisions than a page holds, the newest page replaces the rows', () => {
  const t = heldWithFifteenWaiting();
  assert.equal(t.newer, 15);
  t.hold(false);
  const catchUp = t.nextRequest();
  assert.deepEqual(catchUp, { kind: 'refresh', limit: 3 });
  t.sent(2, catchUp);
  t.answered(2, page(20, 18, true));
  assert.deepEqual(t.entries.map((e) => e.rev), [20, 19, 18], 'the newest page; older ones load on scroll');
  assert.equal(t.more, true);
  assert.equal(t.nextRequest(), null, 'the gap is not read down to the old rows, page after page');
  t.hold(true);
  t.hold(false);
  assert.equal(t.nextRequest(), null, 'nothing waited: nothing to read');
});

test('a catch-up answered after the user scrolled down again brings nothing above the rows, and waits', () => {
  const t = heldWithFifteenWaiting();
  t.hold(false);
  t.sent(2, t.nextRequest());
  t.hold(true);
  t.answered(2, page(20, 18, true));
  assert.deepEqual(t.entries.map((e) => e.rev), [5, 4], 'the rows being read stay');
  assert.equal(t.newer, 15, 'what waited still waits');
  assert.equal(t.nextRequest(), null);
  t.hold(false);
  assert.deepEqual(t.nextRequest(), { kind: 'refresh', limit: 3 }, 'back at the top: the catch-up again');
});

test('a catch-up keeps as many rows as before it, the oldest going as the waiting ones come', () => {
  const t = new Timeline({ pageSize: 2, refreshSize: 3, maxRows: 4 });
  t.sent(1, t.nextRequest());
  t.answered(1, page(6, 5, true));
  t.loadOlder();
  t.sent(2, t.nextRequest());
  t.answered(2, page(4, 3, true));
  t.hold(true);
  t.revision(entry(7));
  t.revision(entry(8));
  t.hold(false);
  const catchUp = t.nextRequest();
  assert.deepEqual(catchUp, { kind: 'refresh', limit: 3 });
  t.sent(3, catchUp);
  t.answered(3, page(8, 6, true));
  assert.deepEqual(t.entries.map((e) => e.rev), [8, 7, 6, 5], 'four rows, as before it');
  assert.equal(t.more, true);
  assert.deepEqual(t.nextRequest(), { kind: 'refresh', before: 6, limit: 2 }, 'the marks of the rows kept read on down');
});

test('a reconnect while held reads the newest page; a revision before the next render waits for it', () => {
  const t = new Timeline({ pageSize: 2 });
  t.sent(1, t.nextRequest());
  t.answered(1, page(5, 4, true));
  t.hold(true);
  t.reset();
  t.sent(2, t.nextRequest());
  t.answered(2, page(9, 8, true));
  assert.deepEqual(t.entries.map((e) => e.rev), [9, 8]);
  t.revision(entry(10));
  assert.equal(t.newer, 1, 'still held until the page says the list is at its top');
  t.hold(false);
  t.sent(3, t.nextRequest());
  t.answered(3, page(10, 8, true));
  assert.deepEqual(t.entries.map((e) => e.rev), [10, 9, 8]);
});

test('live revisions join at the top; a gap reads the timeline again', () => {
  const t = new Timeline({ pageSize: 3 });
  t.revision(entry(1));
  assert.deepEqual(t.entries, [], 'before the first page, the page will have it');
  t.sent(1, t.nextRequest());
  t.answered(1, page(4, 2, true));
  t.revision(entry(5, 'ann'));
  t.revision(entry(5, 'ann'));
  assert.deepEqual(t.entries.map((e) => e.rev), [5, 4, 3, 2], 'the next revision at the top, once');
  assert.equal(t.nextRequest(), null);
  t.revision(entry(7));
  assert.deepEqual(t.entries.map((e) => e.rev), [5, 4, 3, 2], 'revision 6 never came: 7 is not shown alone');
  const refresh = t.nextRequest();
  assert.deepEqual(refresh, { kind: 'refresh', limit: 4 });
  t.sent(2, refresh);
  t.answered(2, page(7, 4, true));
  assert.deepEqual(t.entries.map((e) => e.rev), [7, 6, 5, 4, 3, 2]);
});

test('an empty room shows its first revision as it happens, and knows there is nothing older', () => {
  const t = new Timeline();
  t.sent(1, t.nextRequest());
  t.answered(1, { entries: [], more: false });
  assert.equal(t.loaded, true);
  t.revision(entry(1, 'ann'));
  assert.deepEqual(t.entries.map((e) => e.rev), [1]);
  assert.equal(t.more, false);
});

test('once the rows reach revision 1, the last row is revision 0, the room as it started, which the hub never lists', () => {
  const t = new Timeline({ pageSize: 3 });
  t.sent(1, t.nextRequest());
  t.answered(1, { entries: [], more: false });
  assert.deepEqual(t.rows, [], 'no changes yet: nothing to restore to');
  t.revision(entry(1, 'ann'));
  assert.deepEqual(t.rows.map((e) => e.rev), [1, 0]);
  assert.equal(t.rows[1], START);
  assert.deepEqual(START, { rev: 0, kind: 'start', author: null, ops: [] });

  const later = new Timeline({ pageSize: 3 });
  later.sent(1, later.nextRequest());
  later.answered(1, page(5, 3, true));
  assert.deepEqual(later.rows.map((e) => e.rev), [5, 4, 3], 'older pages first');
  later.loadOlder();
  later.sent(2, later.nextRequest());
  later.answered(2, page(2, 1, false));
  assert.deepEqual(later.rows.map((e) => e.rev), [5, 4, 3, 2, 1, 0]);
  assert.equal(actionText(START), 'The room as it started');
  assert.equal(restoreQuestion(START, 5, 0).text, 'Restore the room to how it was when it started? '
    + 'This takes back the 5 changes made since, by everyone. You can undo the restore.');
});

test("a change to the user's undo stack reads every loaded row again, so each 'Undo this' is the hub's", () => {
  const t = new Timeline({ pageSize: 2, refreshSize: 3 });
  t.sent(1, t.nextRequest());
  t.answered(1, page(10, 9, true, (rev) => (rev === 9 ? { entry: 9 } : {})));
  for (const before of [9, 7]) {
    t.loadOlder();
    const r = t.nextRequest();
    assert.equal(r.before, before);
    t.sent(before, r);
    t.answered(before, page(before - 1, before - 2, true, (rev) => (rev === 5 ? { entry: 5 } : {})));
  }
  assert.deepEqual(t.entries.map((e) => e.rev), [10, 9, 8, 7, 6, 5]);
  assert.deepEqual(t.entries.filter((e) => e.entry != null).map((e) => e.rev), [9, 5]);

  // The user undid entry 9 elsewhere (another tab): the hub says so in the refreshed pages.
  t.stacksChanged();
  const first = t.nextRequest();
  assert.deepEqual(first, { kind: 'refresh', limit: 3 }, 'pages of at most the largest size');
  t.sent(20, first);
  assert.equal(t.nextRequest(), null);
  t.answered(20, page(11, 9, true));
  const second = t.nextRequest();
  assert.deepEqual(second, { kind: 'refresh', before: 9, limit: 3 }, 'on down to the oldest row loaded');
  t.sent(21, second);
  t.answered(21, page(8, 6, true));
  const third = t.nextRequest();
  assert.equal(third.before, 6);
  t.sent(22, third);
  t.answered(22, page(5, 3, true, (rev) => (rev === 5 ? { entry: 5 } : {})));
  assert.equal(t.nextRequest(), null, 'the refresh is done');
  assert.deepEqual(t.entries.filter((e) => e.entry != null).map((e) => e.rev), [5]);
  assert.equal(t.entries[0].rev, 11);
  assert.equal(t.more, true);
});

test('a selective undo waits, then takes the mark off every row of that entry; no-entry reads the marks again', () => {
  const t = new Timeline();
  t.sent(1, t.nextRequest());
  t.answered(1, page(3, 1, false, (rev) => (rev <= 2 ? { entry: 1 } : { entry: 3 })));
  const [third, second, first] = t.entries;
  assert.ok(t.undoable(first) && t.undoable(second) && t.undoable(third));
  t.undoSent(1);
  assert.equal(t.undoable(first), false, "its 'Undo this' waits for the answer");
  assert.equal(t.undoable(second), false, 'a coalesced entry: every row of it');
  assert.equal(t.undoable(third), true);
  t.entryGone(1);
  assert.deepEqual(t.entries.map((e) => e.entry ?? null), [3, null, null]);
  t.undoSent(3);
  t.undoRefused();
  assert.equal(t.undoable(t.entries[0]), true);
  assert.deepEqual(t.nextRequest(), { kind: 'refresh', limit: 50 });
});

test('after a reconnect the timeline is read again from the top, and answers to the old connection are dropped', () => {
  const t = new Timeline();
  t.sent(4, t.nextRequest());
  t.reset();
  assert.equal(t.answered(4, page(3, 1, false)), false);
  assert.deepEqual(t.nextRequest(), { kind: 'head', limit: 50 });
  t.sent(1, t.nextRequest());
  assert.equal(t.failed(1), true);
  assert.equal(t.nextRequest(), null, 'a refused read is not asked again at once (no loop with the hub)');
  t.revision(entry(1));
  assert.deepEqual(t.nextRequest(), { kind: 'head', limit: 50 }, 'but after the next revision');
  t.sent(2, t.nextRequest());
  t.failed(2);
  t.reset();
  assert.deepEqual(t.nextRequest(), { kind: 'head', limit: 50 }, 'or a reconnect');
});

// MARK: Attribution

const blame = (tag, fields, created = { user: null, rev: 0 }) => ({ tag, created,
  fields: { name: { user: null, rev: 0 }, hairColor: { user: null, rev: 0 }, hairLength: { user: null, rev: 0 },
    eyeColor: { user: null, rev: 0 }, glasses: { user: null, rev: 0 }, position: { user: null, rev: 0 },
    facialHair: {}, preference: {}, ...fields } });

test("the writers follow the selected person: asked when chosen, updated live by a revision, then asked again", () => {
  const a = new Attribution();
  assert.equal(a.nextRequest(), null);
  a.select(1);
  assert.equal(a.nextRequest(() => false), null, 'a person the hub does not have yet is not asked about');
  assert.equal(a.nextRequest(), 1);
  a.sent(5);
  assert.equal(a.nextRequest(), null, 'one at a time');
  assert.equal(a.answered(5, blame(1, { hairColor: { user: 'ann', rev: 1, time: 100 } })), true);
  assert.deepEqual(a.writer('hairColor'), { user: 'ann', rev: 1, time: 100 });
  assert.deepEqual(a.writer('name'), { user: null, rev: 0 });
  assert.equal(a.writer('facialHair-beard'), null, 'never written: nothing to say');

  assert.equal(a.revision({ rev: 2, time: 200, author: 'bob', ops: [set(2, 'hairColor', 'red')] }), false,
    'a change to someone else asks nothing');
  assert.equal(a.nextRequest(), null);
  assert.equal(a.revision({ rev: 3, time: 300, author: 'bob',
    ops: [set(1, 'hairColor', 'red'), facialHair(1, 'beard', true), preference(1, 'music', 'like'), move(1, 2)] }), true);
  assert.deepEqual(a.writer('hairColor'), { user: 'bob', rev: 3, time: 300 }, 'live, before the hub answers');
  assert.deepEqual(a.writer('facialHair-beard'), { user: 'bob', rev: 3, time: 300 });
  assert.deepEqual(a.writer('topic-music'), { user: 'bob', rev: 3, time: 300 });
  assert.deepEqual(a.writer('position'), { user: 'bob', rev: 3, time: 300 });
  assert.equal(a.nextRequest(), 1, 'and asked again');
  a.sent(6);
  // An answer older than a revision seen since does not take its writer back.
  a.revision({ rev: 4, time: 400, author: 'carl', ops: [set(1, 'eyeColor', 'green')] });
  a.answered(6, blame(1, { hairColor: { user: 'bob', rev: 3, time: 300 } }));
  assert.deepEqual(a.writer('eyeColor'), { user: 'carl', rev: 4, time: 400 });
  assert.equal(a.nextRequest(), 1);
});

test('a re-insert starts the writers over; a removal forgets them; another selection drops a late answer', () => {
  const a = new Attribution();
  a.select(4);
  a.sent(1);
  a.answered(1, blame(4, { hairColor: { user: 'ann', rev: 2 } }, { user: 'ann', rev: 1 }));
  a.revision({ rev: 5, author: 'dana', ops: [remove(4)] });
  assert.equal(a.writer('hairColor'), null);
  a.revision({ rev: 6, time: 600, author: 'dana', ops: [insert(person(4, 'Kim', { facialHair: ['beard'], likes: ['art'] }), 1)] });
  // Nothing was known (removed): the hub is asked; then a known person's re-insert:
  a.sent(2);
  a.answered(2, blame(4, {}, { user: 'dana', rev: 6, time: 600 }));
  a.revision({ rev: 7, time: 700, author: 'ann', ops: [remove(4), insert(person(4, 'Kim', { facialHair: ['beard'] }), 0)] });
  assert.equal(a.writer('created'), null, 'removed, then put back in the same batch: read again');
  assert.equal(a.nextRequest(), 4);
  a.sent(3);
  a.select(2);
  assert.equal(a.answered(3, blame(4, {})), false, 'the answer about Kim comes after Joan was chosen');
  assert.equal(a.writer('name'), null);
  assert.equal(a.nextRequest(), 2);
});

test('a re-insert of the person shown writes every field, each listed element and the place', () => {
  const a = new Attribution();
  a.select(4);
  a.sent(1);
  a.answered(1, blame(4, { facialHair: { mustache: { user: 'ann', rev: 2 } } }, { user: 'ann', rev: 1 }));
  a.revision({ rev: 8, time: 800, author: 'dana', ops: [insert(person(4, 'Kim', { facialHair: ['beard'], likes: ['art'] }), 1)] });
  const w = { user: 'dana', rev: 8, time: 800 };
  for (const key of ['created', 'name', 'hairColor', 'glasses', 'position', 'facialHair-beard', 'topic-art']) {
    assert.deepEqual(a.writer(key), w, key);
  }
  assert.equal(a.writer('facialHair-mustache'), null, 'attribution starts over at a re-insert');
});

test('a read the hub refused is not asked again until something changes', () => {
  const a = new Attribution();
  a.select(3);
  a.sent(9);
  assert.equal(a.failed(8), false);
  assert.equal(a.failed(9), true);
  assert.equal(a.nextRequest(), null);
  a.reset();
  assert.equal(a.nextRequest(), 3, 'a reconnect asks again');
});

// MARK: Words

test('relative times, with the exact time left to the tooltip', () => {
  const now = Date.UTC(2026, 10, 25, 14, 0, 0);
  assert.equal(relativeTime(undefined, now), '');
  assert.equal(relativeTime(now - 3_000, now), 'just now');
  assert.equal(relativeTime(now + 5_000, now), 'just now', "a clock a little ahead of this one's");
  assert.equal(relativeTime(now - 60_000, now), '1 min ago');
  assert.equal(relativeTime(now - 125_000, now), '2 min ago');
  assert.equal(relativeTime(now - 3 * 3_600_000, now), '3 h ago');
  assert.equal(relativeTime(now - 26 * 3_600_000, now), 'yesterday');
  assert.equal(relativeTime(now - 4 * 86_400_000, now), '4 days ago');
  assert.match(relativeTime(now - 40 * 86_400_000, now, 'en-US'), /^Oct 16$/);
  assert.match(relativeTime(Date.UTC(2024, 2, 3, 12), now, 'en-US'), /^Mar 3, 2024$/);
});

test('a row says what was done, in the words of the labels the page sends', () => {
  assert.equal(actionText(entry(1)), 'Change Hair Color');
  assert.equal(actionText({ kind: 'undo', label: 'Change Hair Color', ops: [] }), 'Undo Change Hair Color');
  assert.equal(actionText({ kind: 'redo', ops: [move(1, 2)] }), 'Redo Move Person');
  assert.equal(actionText({ kind: 'restore', label: 'Restore to revision 4', ops: [] }), 'Restore to revision 4');
  assert.equal(actionText({ kind: 'restore', ops: [] }), 'Restore an Earlier Version');
  assert.equal(opsLabel([set(1, 'eyeColor', 'green'), set(2, 'eyeColor', 'blue')]), 'Change Eye Color');
  assert.equal(opsLabel([{ op: 'text', tag: 1, edits: [{ insert: 'x' }] }]), 'Change Name');
  assert.equal(opsLabel([set(1, 'glasses', true), remove(2)]), 'Several Changes');
  assert.equal(opsLabel([]), 'No Change');
  for (const ops of [[set(1, 'hairLength', 'bald')], [facialHair(1, 'beard', true)], [preference(1, 'art', 'like')],
    [insert(person(9, 'Kim'), 0)], [remove(1)]]) {
    assert.doesNotMatch(opsLabel(ops), IDENTIFIER);
  }
});

test('the people a row touched, by their names now; someone deleted since says so', () => {
  const now = (tag) => ({ 1: 'Annie', 2: 'Joan' })[tag] ?? null;
  const known = (tag) => (tag === 3 ? 'Sam' : null);
  const ops = [set(1, 'hairColor', 'red'), set(1, 'glasses', true), remove(3), insert(person(9, 'Kim'), 0), remove(8)];
  const people = touchedPeople(ops, now, known);
  assert.deepEqual(people.map((p) => p.name), ['Annie', 'Sam', 'Kim', null]);
  assert.equal(touchedText(people), 'Annie, Sam (deleted), Kim (deleted), a deleted person');
  const many = [1, 2, 3, 4, 5].map((tag) => ({ tag, name: `P${tag}`, gone: false }));
  assert.equal(touchedText(many), 'P1, P2, P3 and 2 more');
  assert.equal(touchedText([]), '');
});

const NAMES = JSON.parse(readFileSync(new URL('../Vectors/names.json', import.meta.url), 'utf8')).cases;

for (const c of NAMES) {
  // The shared vectors (the terminal's TimelineNamesTests run the same file): both clients name people alike.
  test(`shared vector ${c.name}`, () => {
    const expected = Object.entries(c.expect).map(([tag, name]) => [Number(tag), name]).sort();
    if (c.kind === 'lastNames') {
      assert.deepEqual([...lastNames(c.entries)].sort(), expected);
    } else {
      const known = new KnownNames();
      for (const sight of c.saw) known.saw(sight.people, sight.rev);
      const present = new Set(c.present.map((p) => p.tag));
      known.read(c.entries, (tag) => present.has(tag));
      assert.deepEqual([...known.names].sort(), expected);
    }
  });
}

const RUNS = JSON.parse(readFileSync(new URL('../Vectors/runs.json', import.meta.url), 'utf8')).cases;

for (const c of RUNS) {
  // The shared vectors (the terminal's TimelineRunsTests run the same file): both clients show runs alike.
  test(`shared vector ${c.name}`, () => {
    assert.deepEqual(runsOf(c.entries).map((run) => run.map((e) => e.rev)), c.expect);
  });
}

test('a run is one row: the newest revision with its oldest as the key; a revision alone is its own entry', () => {
  const typed = [
    entry(7, 'bob', { label: 'Change Name', ops: [{ op: 'text', tag: 1, edits: [{ retain: 2 }, { insert: 'm' }] }] }),
    entry(6, 'bob', { label: 'Change Name', ops: [{ op: 'text', tag: 1, edits: [{ retain: 1 }, { insert: 'i' }] }] }),
    entry(5, 'bob', { label: 'Change Name', ops: [{ op: 'text', tag: 1, edits: [{ insert: 'K' }] }] }),
    entry(4, 'ann'),
  ];
  const rows = runRows(typed);
  assert.equal(rows.length, 2);
  assert.deepEqual({ rev: rows[0].rev, first: rows[0].first, revs: rows[0].revs, time: rows[0].time },
    { rev: 7, first: 5, revs: [7, 6, 5], time: typed[0].time });
  assert.equal(rowKey(rows[0]), 5);
  assert.equal(rows[1], typed[3]);
  assert.equal(rowKey(rows[1]), 4);
  // Another letter at the top: the same row (its key), now to revision 8.
  const more = [entry(8, 'bob', { label: 'Change Name', ops: [{ op: 'text', tag: 1, edits: [{ retain: 3 }, { insert: 'y' }] }] }), ...typed];
  assert.deepEqual(runRows(more).map(rowKey), [5, 4]);
  assert.equal(runRows(more)[0].rev, 8);
  assert.deepEqual(runRows([START]), [START]);
});

test("this user's letters that came live (marks unread) join the run the hub marked, by their times", () => {
  const typed = (rev, more = {}) => entry(rev, 'ann', { label: 'Change Name', ops: [{ op: 'text', tag: 1, edits: [{ insert: 'x' }] }], ...more });
  const read = [typed(6, { entry: 5 }), typed(5, { entry: 5 })];
  const live = [typed(8, { entryUnknown: true }), typed(7, { entryUnknown: true })];
  assert.deepEqual(runsOf([...live, ...read]).map((r) => r.map((e) => e.rev)), [[8, 7, 6, 5]]);
  assert.equal(runRows([...live, ...read])[0].entry, 5, "the row keeps the run's mark: its Undo stays");
  // Read again, the hub's marks decide: a new undo step is a row of its own.
  assert.deepEqual(runsOf([typed(8, { entry: 7 }), typed(7, { entry: 7 }), ...read]).map((r) => r.map((e) => e.rev)),
    [[8, 7], [6, 5]]);
  // A run that grew at either end holds a revision of the row it was.
  const row = runRows(read)[0];
  assert.ok(overlaps(row, runRows([...live, ...read])[0]) && overlaps(row, runRows([typed(6, { entry: 5 }), typed(5, { entry: 5 }), typed(4, { entry: 5 })])[0]));
  assert.ok(!overlaps(row, typed(7)) && !overlaps(row, typed(4)));
});

test("a step of the user's that holds more than its row says so: its first revision and the newest loaded", () => {
  const typed = (rev, more = {}) => entry(rev, 'ann', { label: 'Change Name', ops: [{ op: 'text', tag: 1, edits: [{ insert: 'x' }] }], ...more });
  // ann types; bob's change comes in the middle; one undo step (entry 1) on both sides of it.
  const rows = [typed(5, { entry: 1 }), typed(4, { entry: 1 }), entry(3, 'bob'), typed(2, { entry: 1 }), typed(1, { entry: 1 })];
  const shown = runRows(rows);
  assert.deepEqual(shown.map(rowKey), [4, 3, 1]);
  assert.deepEqual(stepsOf(rows).get(1), { first: 1, last: 5 });
  // Its first revisions on a page not read: the id still says where it starts.
  assert.deepEqual(stepsOf(rows.slice(0, 2)).get(1), { first: 1, last: 5 });
  // The restore question names a run's revisions.
  const q = restoreQuestion(shown[0], 9, shown[0].time);
  assert.match(q.text, /right after ann's Change Name \(2 changes, revisions 4 to 5, just now\)\?/);
  assert.equal(q.count, 4);
});

test('people deleted since are named as they last were in the rows, marked deleted (session 26)', () => {
  // A history pass: people added as "New person" and renamed by typing read "New person (deleted)".
  const entries = [  // newest first, as the panel holds them
    { rev: 6, ops: [remove(104), remove(4)] },
    { rev: 4, ops: [set(4, 'name', 'Zed')] },
    { rev: 2, ops: [insert(person(104, 'Kim'), 0), insert(person(4, 'New person'), 1)] },
  ];
  const known = lastNames(entries);
  const gone = touchedPeople(entries[0].ops, () => null, (tag) => known.get(tag) ?? null);
  assert.equal(touchedText(gone), 'Kim (deleted), Zed (deleted)');
});

test('empty names seen are not kept', () => {
  const known = new KnownNames();
  known.saw([person(9, '')], 5);
  assert.equal(known.has(9), false);
});

test('who last changed a field: "bob · 2 min ago", the seed "from the start", the exact time as the tooltip', () => {
  const now = 10_000_000;
  const bob = writerText({ user: 'bob', rev: 12, time: now - 125_000 }, now, 'en-US');
  assert.equal(bob.text, 'bob · 2 min ago');
  assert.equal(bob.user, 'bob');
  assert.match(bob.title, /^Last changed by bob on .+ \(revision 12\)$/);
  assert.deepEqual(writerText({ user: null, rev: 0 }, now),
    { text: 'from the start', title: 'Unchanged since the room began', user: null });
  assert.equal(writerText({ user: 'ann', rev: 3 }, now).text, 'ann', 'no time kept: just who');
  assert.equal(writerText(null, now).text, '');
});

test('the restore question names the row and how many changes it takes back', () => {
  const now = 1_000_000 + 7;
  assert.equal(changesSince(4, 7), 3);
  const q = restoreQuestion(entry(4, 'bob'), 7, now);
  assert.equal(q.count, 3);
  assert.equal(q.text, "Restore the room to how it was right after bob's Change Hair Color (just now)? "
    + 'This takes back the 3 changes made since, by everyone. You can undo the restore.');
  assert.match(restoreQuestion(entry(6), 7, now).text, /takes back the 1 change made since/);
  assert.doesNotMatch(q.text, IDENTIFIER);
});

test('a restore to how the room already is is no question: the past state is read and compared with the room now', async () => {
  const asked = [];
  const hub = { 0: PEOPLE, 3: PEOPLE.map((p) => (p.tag === 1 ? { ...p, hairColor: 'red' } : p)) };
  const fetch = async (url, { headers }) => {
    asked.push([url, headers]);
    const rev = Number(/at=(\d+)/.exec(url)[1]);
    if (!(rev in hub)) return { ok: false, status: 400, json: async () => ({}) };
    return { ok: true, status: 200, json: async () => ({ rev, people: hub[rev] }) };
  };
  const check = new RestoreCheck(readRoomAt({ room: 'team a', token: 'tok', fetch }));
  const now = PeopleModel.fromJSON(hub[3]);
  let done = 0;
  check.start(3, () => { done += 1; });
  assert.equal(check.verdict(3, now), 'unknown', 'not read yet: ask as always');
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(asked, [['/v1/rooms/team%20a?at=3', { Authorization: 'Bearer tok' }]]);
  assert.equal(done, 1);
  assert.equal(check.verdict(3, now), 'same');
  assert.equal(check.verdict(3, PeopleModel.fromJSON(PEOPLE)), 'differs', 'the room changed since: ask');
  assert.equal(check.verdict(2, now), 'unknown', 'another row\'s question is not this one');

  check.start(0);
  check.start(9, () => { done += 1; });                      // the hub refuses: ask as always
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(check.verdict(0, PeopleModel.fromJSON(PEOPLE)), 'unknown', 'a question closed for another: dropped');
  assert.equal(check.verdict(9, now), 'unknown');
  assert.equal(done, 2);
  check.stop();
  assert.equal(check.verdict(9, now), 'unknown');

  const open = readRoomAt({ room: 'r', fetch });
  await open(0);
  assert.deepEqual(asked.at(-1), ['/v1/rooms/r?at=0', {}], 'no token: no Authorization header');

  // In a cluster the room is read where the page's WebSocket was sent (another node would answer with
  // a 307, which a browser follows without the token), at the node's address as the page knows it then.
  let node = 'ws://10.1.1.1:8080/v1/rooms/team%20a';
  const clustered = readRoomAt({ room: 'team a', token: 'tok', node: () => node, fetch });
  await clustered(3);
  assert.deepEqual(asked.at(-1), ['http://10.1.1.1:8080/v1/rooms/team%20a?at=3', { Authorization: 'Bearer tok' }]);
  node = 'wss://b.example/people/v1/rooms/team a';
  await clustered(0);
  assert.equal(asked.at(-1)[0], 'https://b.example/people/v1/rooms/team%20a?at=0', 'TLS, and a path in front');
  assert.equal(alreadyRestoredText(entry(4, 'bob'), 1_000_000 + 7),
    "The room already looks like it did right after bob's Change Hair Color (just now): restoring it would change nothing.");
  assert.equal(alreadyRestoredText(START, 0),
    'The room already looks like it did when it started: restoring it would change nothing.');
  assert.equal(restoreOfflineText(entry(4, 'bob'), 1_000_000 + 7),
    "The hub can't be reached right now, so the room can't be restored to how it was right after bob's Change Hair "
    + 'Color (just now): what that would take back can only be counted once the hub is back. Try again then.');
  assert.ok(!hasWireWords(restoreOfflineText(START, 0)));
  assert.equal(restoreOfflineText(START, 0, { refused: true }), "The hub won't let this page connect right now, so the room "
    + "can't be restored to how it was when it started: what that would take back can only be counted once the hub lets "
    + 'this page in. Try again then.');
  // A hub that closed the connection itself (a drain, a commit it could not make) is up: not "can't be reached".
  assert.equal(restoreOfflineText(entry(4, 'bob'), 1_000_000 + 7, { closed: true }),
    "The hub closed the connection, so the room can't be restored to how it was right after bob's Change Hair "
    + 'Color (just now): what that would take back can only be counted once the hub is back. Try again then.');
});

test('skip notices of a selective undo and of a restore read like the others', () => {
  const me = 'ann';
  // H2: a teammate came after.
  assert.equal(reportsText([{ reason: 'overwritten', tag: 1, field: 'hairColor', by: 'bob' }], nameOf,
    { kind: 'undo', changed: false, me }),
  "Nothing was undone: your change to Ann's hair color was overwritten by bob.");
  // H3: so did I (a selective undo never undoes the user's own later change either).
  assert.equal(reportsText([{ reason: 'overwritten', tag: 1, field: 'hairColor', by: 'ann' }], nameOf,
    { kind: 'undo', changed: false, me }),
  "Nothing was undone: you changed Ann's hair color again since.");
  assert.equal(reportsText([{ reason: 'editedByOthers', tag: 2, by: 'ann' }], nameOf, { kind: 'undo', changed: true, me }),
    'Undone, except: you edited Joan since adding them.');
  // An undo of a deletion whose person a teammate had already put back (session 26: "back by dave").
  assert.equal(reportsText([{ reason: 'overwritten', tag: 2, by: 'dave' }], nameOf, { kind: 'undo', changed: false, me }),
    'Nothing was undone: Joan was already back (dave put them back).');
  // H6: an edit racing a teammate's restore.
  const byRestore = (r) => r.by === 'dana';
  assert.equal(reportsText([{ reason: 'targetRemoved', tag: 3, by: 'dana' }], nameOf,
    { kind: 'edit', changed: false, me, byRestore }),
  "Your change was not made: Sam was deleted by dana's restore.");
  assert.equal(reportsText([{ reason: 'overwritten', tag: 2, field: 'eyeColor', by: 'dana' }], nameOf,
    { kind: 'undo', changed: false, me, byRestore }),
  "Nothing was undone: your change to Joan's eye color was overwritten by dana's restore.");
  assert.equal(reportsText([{ reason: 'overwritten', tag: 2, field: 'eyeColor', by: 'ann' }], nameOf,
    { kind: 'undo', changed: false, me, byRestore: () => true }),
  "Nothing was undone: your restore changed Joan's eye color again since.");
  const refused = errorText({ code: 'no-entry', message: "entry 1 is not on ann's undo stack" });
  assert.equal(refused, 'Nothing was undone: that change of yours was already undone.');
  assert.equal(hasWireWords(refused), false);
});

// MARK: LiveRoom

class FakeSocket {
  static made = [];
  constructor(url) { this.url = url; this.sent = []; FakeSocket.made.push(this); }
  send(data) { this.sent.push(JSON.parse(data)); }
  close() { this.closed = true; }
  hear(message) { this.onmessage?.({ data: JSON.stringify(message) }); }
}

function online() {
  FakeSocket.made = [];
  const notices = [];
  const timers = { setTimeout: () => 0, clearTimeout: () => {}, now: () => 0 };
  const room = new LiveRoom({ url: 'ws://hub/v1/rooms/r', user: 'ann', WebSocket: FakeSocket, timers });
  room.onUpdate = (n) => notices.push(...n);
  assert.equal(room.log(), null, 'nothing is read before the welcome');
  room.start();
  const socket = FakeSocket.made[0];
  socket.onopen();
  socket.hear({ type: 'welcome', session: 's1', user: 'ann', role: 'editor', rev: 0, people: PEOPLE,
    tags: { from: 4, to: 103 }, history: { canUndo: false, canRedo: false }, presence: [] });
  return { room, notices, socket };
}

test("every revision reaches the page in a log entry's shape: a teammate's, and this user's own answers", () => {
  const { room, notices, socket } = online();
  assert.deepEqual(notices.map((n) => n.type), ['welcomed']);
  socket.hear({ type: 'ops', rev: 1, time: 111, author: 'bob', kind: 'edit', label: 'Change Eye Color',
    ops: [set(2, 'eyeColor', 'green')] });
  room.edit([set(1, 'hairColor', 'red')], { label: 'Change Hair Color' });
  const submit = socket.sent.find((m) => m.type === 'submit');
  socket.hear({ type: 'ack', seq: submit.seq, rev: 2, time: 222, ops: submit.ops });
  socket.hear({ type: 'ack', seq: submit.seq, rev: 2, time: 222, ops: submit.ops }); // a replay: nothing new
  room.restore(0);
  const restore = socket.sent.find((m) => m.type === 'restore');
  assert.deepEqual(restore, { type: 'restore', seq: restore.seq, rev: 0 });
  socket.hear({ type: 'restored', seq: restore.seq, rev: 3, time: 333, ops: [set(1, 'hairColor', 'brown'),
    set(2, 'eyeColor', 'blue')], label: 'Restore to revision 0' });
  const revisions = notices.filter((n) => n.type === 'revision').map(({ type, ...r }) => r);
  assert.deepEqual(revisions, [
    { rev: 1, time: 111, author: 'bob', kind: 'edit', label: 'Change Eye Color', ops: [set(2, 'eyeColor', 'green')], mine: false },
    { rev: 2, time: 222, author: 'ann', kind: 'edit', label: 'Change Hair Color', ops: [set(1, 'hairColor', 'red')], mine: true },
    { rev: 3, time: 333, author: 'ann', kind: 'restore', label: 'Restore to revision 0',
      ops: [set(1, 'hairColor', 'brown'), set(2, 'eyeColor', 'blue')], mine: true },
  ]);
  assert.ok(notices.some((n) => n.type === 'mine' && n.kind === 'restore'), 'what the restore wrote is no teammate\'s any more');
  room.restore(3);
  const again = socket.sent.filter((m) => m.type === 'restore')[1];
  socket.hear({ type: 'restored', seq: again.seq, ops: [], label: 'Restore to revision 3' });
  assert.deepEqual(notices[notices.length - 1], { type: 'nothing', kind: 'restore' });
});

test('reads go at once and come back as notices; a refused read is no refusal of the user', () => {
  const { room, notices, socket } = online();
  const seq = room.log({ limit: 20 });
  assert.deepEqual(socket.sent[socket.sent.length - 1], { type: 'log', seq, limit: 20 });
  socket.hear({ type: 'log', seq, entries: [entry(1, 'bob', { entry: 1 })], more: false });
  const log = notices.find((n) => n.type === 'log');
  assert.equal(log.seq, seq);
  assert.deepEqual(log.page.entries.map((e) => e.entry), [1]);
  const asked = room.blame(9);
  socket.hear({ type: 'error', seq: asked, code: 'bad-message', message: 'tag 9 is not present' });
  assert.deepEqual(notices[notices.length - 1], { type: 'readFailed', seq: asked, code: 'bad-message' });
  assert.ok(!notices.some((n) => n.type === 'error'));
  const b = room.blame(1);
  socket.hear({ type: 'blame', seq: b, tag: 1, created: { user: null, rev: 0 }, fields: { hairColor: { user: 'bob', rev: 1, time: 5 } } });
  assert.deepEqual(notices[notices.length - 1].blame.fields.hairColor, { user: 'bob', rev: 1, time: 5 });
});

test('a selective undo goes in turn with its entry; its answer names the entry, its skips carry it too', () => {
  const { room, notices, socket } = online();
  room.undoEntry(1);
  const undo = socket.sent.find((m) => m.type === 'undo');
  assert.deepEqual(undo, { type: 'undo', seq: undo.seq, entry: 1 });
  socket.hear({ type: 'undone', seq: undo.seq, ops: [], label: 'Change Hair Color', entry: 1,
    skipped: [{ reason: 'overwritten', tag: 1, field: 'hairColor', by: 'bob' }] });
  const skipped = notices.find((n) => n.type === 'skipped');
  assert.equal(skipped.kind, 'undo');
  assert.equal(skipped.entry, 1);
  assert.equal(skipped.changed, false);
  assert.ok(notices.some((n) => n.type === 'entryUndone' && n.entry === 1));
  room.undoEntry(2);
  const second = socket.sent.filter((m) => m.type === 'undo')[1];
  socket.hear({ type: 'error', seq: second.seq, code: 'no-entry', message: "entry 2 is not on ann's undo stack" });
  assert.deepEqual(notices[notices.length - 1], { type: 'error', code: 'no-entry', message: "entry 2 is not on ann's undo stack" });
  socket.hear({ type: 'history', canUndo: false, canRedo: true, redoLabel: 'Change Hair Color' });
  assert.equal(notices[notices.length - 1].type, 'history');
});

test('the panel says why it has no rows: loading, the hub unreachable before the first page, or no changes yet', () => {
  assert.equal(historyStatusText({ loaded: false, count: 0, unreachable: false }), 'Loading…');
  assert.equal(historyStatusText({ loaded: false, count: 0, unreachable: true }),
    'The hub is unreachable: the history shows when it is back.');
  assert.equal(historyStatusText({ loaded: false, count: 0, unreachable: true, closedBy: { code: 1011, reason: 'store failed' } }),
    'The hub closed the connection: the history shows when it is back.');
  assert.equal(historyStatusText({ loaded: false, count: 0, unreachable: true, refused: true }),
    "The hub won't let this page connect: the history shows once it does.");
  assert.equal(historyStatusText({ loaded: true, count: 0, unreachable: false }), 'No changes yet.');
  // Rows loaded stay while the hub is away: they say it all.
  assert.equal(historyStatusText({ loaded: true, count: 3, unreachable: true }), '');
  assert.equal(historyStatusText({ loaded: true, count: 3, unreachable: false }), '');
});
