// The page's notices, highlights and kept tokens (Web/js/notices.js, highlights.js, token-store.js):
// a notice goes with the next action and stays in a short log (issue 17, items 5 and 7); a highlight
// names the latest writer (item 6); a token is kept for the session, per user and room (item 3).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NoticeBoard } from '../../Web/js/notices.js';
import { Highlights } from '../../Web/js/highlights.js';
import { TokenStore } from '../../Web/js/token-store.js';
import { set, remove } from '../../Web/js/core/diff.js';

test('a notice stays until the next action or a dismissal, and the log keeps the newest few', () => {
  let now = 1000;
  const board = new NoticeBoard({ now: () => now, size: 3 });
  assert.equal(board.text, '');
  board.show('Nothing was undone: x.');
  assert.equal(board.text, 'Nothing was undone: x.');
  now += 60_000;
  assert.equal(board.text, 'Nothing was undone: x.', 'no timer takes a notice away');
  board.actionTaken();
  assert.equal(board.text, '');
  board.show('second');
  board.dismiss();
  assert.equal(board.text, '');
  board.show('third');
  board.show('fourth');
  assert.deepEqual(board.log.map((n) => n.text), ['fourth', 'third', 'second']);
  board.show('');
  assert.equal(board.text, 'fourth', 'an empty notice shows nothing and replaces nothing');
});

test('a notice said again with more is one notice, logged once; with none shown it is shown', () => {
  const board = new NoticeBoard({ now: () => 5 });
  assert.equal(board.lastId, 0);
  board.show('older');
  board.show('Your change was not made: Joan was deleted by bob.');
  const id = board.lastId;
  board.amend('Your change was not made: Joan was deleted by bob. Sam is selected now.');
  assert.equal(board.text, 'Your change was not made: Joan was deleted by bob. Sam is selected now.');
  assert.equal(board.lastId, id, 'the same notice');
  assert.deepEqual(board.log.map((n) => n.text), [board.text, 'older']);
  board.dismiss();
  board.amend('alone');
  assert.equal(board.text, 'alone');
  assert.deepEqual(board.log.map((n) => n.text), ['alone', board.log[1].text, 'older']);
});

test("a highlight names the latest writer: a teammate's mark is replaced by the next, and taken off by this user's change", () => {
  let now = 0;
  const marks = new Highlights({ now: () => now, duration: 2000 });
  marks.add([set(1, 'hairColor', 'red')], 'ann');
  assert.equal(marks.by('1:hairColor'), 'ann');
  assert.equal(marks.by('row:1'), 'ann');
  now = 500;
  marks.add([set(1, 'hairColor', 'blonde')], 'carol');
  assert.deepEqual(marks.mark('1:hairColor'), { by: 'carol', since: 500, until: 2500 });
  marks.clear([set(1, 'hairColor', 'black')]);
  assert.equal(marks.by('1:hairColor'), null, 'my own value wears no teammate name');
  assert.equal(marks.by('row:1'), null);
  marks.add([set(2, 'eyeColor', 'green')], 'bob');
  marks.clear([remove(3)]);
  assert.equal(marks.by('2:eyeColor'), 'bob', 'a change elsewhere leaves other marks alone');
  now = 2600;
  assert.equal(marks.by('2:eyeColor'), null);
  assert.equal(marks.nextExpiry(), null);
});

class MemoryStorage {
  constructor() { this.items = new Map(); }
  getItem(k) { return this.items.has(k) ? this.items.get(k) : null; }
  setItem(k, v) { this.items.set(k, String(v)); }
  removeItem(k) { this.items.delete(k); }
}

test("a token is kept per user and room, the user's newest serves other rooms, and a refused one is forgotten", () => {
  const storage = new MemoryStorage();
  const tokens = new TokenStore(storage);
  assert.equal(tokens.get('ann', 'team-a'), '');
  tokens.keep('ann', 'team-a', 'T1');
  assert.equal(tokens.get('ann', 'team-a'), 'T1');
  assert.equal(tokens.get('ann', 'team-b'), 'T1', 'tried in another room (a token may name several)');
  assert.equal(tokens.get('bob', 'team-a'), '', "never someone else's");
  tokens.keep('ann', 'team-b', 'T2');
  assert.equal(tokens.get('ann', 'team-a'), 'T1');
  assert.equal(tokens.get('ann', 'team-c'), 'T2', 'the newest serves other rooms');
  tokens.forget('ann', 'team-c', 'T2');
  assert.equal(tokens.get('ann', 'team-c'), '', 'refused there: not tried there again');
  assert.equal(tokens.get('ann', 'team-b'), 'T2', 'still kept where it was welcomed');
  tokens.forget('ann', 'team-a', 'T1');
  assert.equal(tokens.get('ann', 'team-a'), '');
  assert.ok(![...storage.items.values()].some((v) => v.includes('T1')));
});

test('a storage that refuses keeps nothing and breaks nothing', () => {
  const broken = { getItem() { throw new Error('blocked'); }, setItem() { throw new Error('blocked'); }, removeItem() {} };
  const tokens = new TokenStore(broken);
  tokens.keep('ann', 'r', 'T');
  assert.equal(tokens.get('ann', 'r'), '');
});
