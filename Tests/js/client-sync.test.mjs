// The client state machine on its own: optimistic view, one request in flight, rebasing, resend.
// Port of Tests/PeopleCoreTests/ClientSyncTests.swift.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClientSync } from '../../Web/js/core/client-sync.js';
import { set, remove, text, insert } from '../../Web/js/core/diff.js';
import { decodeClientMessage, decodeServerMessage, encode } from '../../Web/js/core/wire.js';
import { PeopleModel } from '../../Web/js/core/model.js';
import { Room } from './server/room.mjs';
import { Fixtures } from './harness.mjs';
import { Network } from './network.mjs';

const history = { canUndo: false, canRedo: false };

function welcomed(user = 'ann', rev = 0) {
  const client = new ClientSync(user);
  client.connect();
  client.receive({ type: 'welcome', session: 's1', user, role: 'editor', rev, people: Fixtures.start,
    tags: { from: 4, to: 103 }, history, presence: [] });
  return client;
}

test('an edit shows at once; a second waits until the first is acked', () => {
  const client = welcomed();
  const first = client.edit([set(1, 'hairColor', 'red')]);
  assert.equal(client.view.get(1).hairColor, 'red');
  assert.deepEqual(first, [{ type: 'submit', seq: 1, base: 0, ops: [set(1, 'hairColor', 'red')] }]);
  const second = client.edit([set(2, 'glasses', true)]);
  assert.deepEqual(second, []);
  assert.equal(client.view.get(2).glasses, true);
  const { send } = client.receive({ type: 'ack', seq: 1, rev: 1, ops: [set(1, 'hairColor', 'red')] });
  assert.deepEqual(send, [{ type: 'submit', seq: 2, base: 1, ops: [set(2, 'glasses', true)] }]);
  assert.equal(client.confirmed.get(1).hairColor, 'red');
});

test("a teammate's revision is applied under my pending typing, which is rebased", () => {
  const client = welcomed();
  client.edit([text(1, [{ retain: 3 }, { insert: 'e' }])]); // in flight
  client.edit([text(1, [{ retain: 4 }, { insert: '!' }])]); // queued
  client.receive({ type: 'ops', rev: 1, author: 'bob', kind: 'edit', ops: [text(1, [{ insert: 'a' }])] });
  assert.equal(client.confirmed.get(1).name, 'aAnn');
  assert.equal(client.view.get(1).name, 'aAnne!');
  const { send } = client.receive({ type: 'ack', seq: 1, rev: 2, ops: [text(1, [{ retain: 4 }, { insert: 'e' }])] });
  // The queued batch now goes on revision 2, rebased past bob's "a".
  assert.deepEqual(send, [{ type: 'submit', seq: 2, base: 2, ops: [text(1, [{ retain: 5 }, { insert: '!' }])] }]);
});

test('queued diffs on a person a teammate removed are dropped, not sent', () => {
  const client = welcomed();
  client.edit([set(1, 'glasses', true)]); // in flight
  client.edit([set(2, 'hairColor', 'white'), set(3, 'glasses', false)]); // queued
  client.receive({ type: 'ops', rev: 1, author: 'bob', kind: 'edit', ops: [remove(2)] });
  const { send } = client.receive({ type: 'ack', seq: 1, rev: 2, ops: [set(1, 'glasses', true)] });
  assert.deepEqual(send, [{ type: 'submit', seq: 2, base: 2, ops: [set(3, 'glasses', false)] }]);
});

test('after a reconnect the request in flight is resent identically, and its catch-up frame answers it', () => {
  const client = welcomed();
  const sent = client.edit([set(1, 'hairColor', 'red')]);
  client.disconnected();
  const hello = client.connect();
  assert.equal(hello.type, 'hello');
  assert.equal(hello.resume, 's1');
  assert.equal(hello.since, 0);
  const { send: resend } = client.receive({ type: 'welcome', session: 's1', user: 'ann', role: 'editor', rev: 1,
    tags: { from: 4, to: 103 }, history, presence: [] });
  assert.deepEqual(resend, sent);
  // The hub had applied it before the drop: its catch-up frame carries our seq.
  client.receive({ type: 'ops', rev: 1, author: 'ann', kind: 'edit', ops: [set(1, 'hairColor', 'red')], seq: 1 });
  assert.equal(client.pendingCount, 0);
  assert.equal(client.revision, 1);
  client.receive({ type: 'ack', seq: 1, rev: 1, ops: [set(1, 'hairColor', 'red')] }); // the replayed reply
  assert.equal(client.revision, 1);
  assert.equal(client.confirmed.get(1).hairColor, 'red');
});

test('an undo waits behind a queued edit, so it undoes that edit', () => {
  const client = welcomed();
  client.edit([set(1, 'hairColor', 'red')]);
  assert.deepEqual(client.undo(), []);
  const { send } = client.receive({ type: 'ack', seq: 1, rev: 1, ops: [set(1, 'hairColor', 'red')] });
  assert.deepEqual(send, [{ type: 'undo', seq: 2 }]);
});

test('a refused batch leaves the view and the error is reported', () => {
  const client = welcomed();
  client.edit([set(1, 'hairColor', 'red')]);
  const { events } = client.receive({ type: 'error', seq: 1, code: 'forbidden', message: 'viewers cannot edit' });
  assert.equal(client.view.get(1).hairColor, 'brown');
  assert.deepEqual(events, [{ type: 'error', code: 'forbidden', message: 'viewers cannot edit' }]);
});

test('frames round-trip: what the client sends and the hub answers decode to the same messages', () => {
  const client = welcomed();
  const [submit] = client.edit([text(1, [{ retain: 3 }, { insert: '😀' }])], { label: 'Type', coalesce: 'name-1' });
  assert.deepEqual(JSON.parse(encode(submit)), { type: 'submit', seq: 1, base: 0, label: 'Type', coalesce: 'name-1',
    ops: [{ op: 'text', tag: 1, edits: [{ retain: 3 }, { insert: '😀' }] }] });
  const ack = decodeServerMessage('{"type":"ack","seq":1,"rev":1,"ops":[{"op":"text","tag":1,"edits":[{"retain":3},{"insert":"😀"}]}]}');
  client.receive(ack);
  assert.equal(client.confirmed.get(1).name, 'Ann😀');
  assert.equal(client.pendingCount, 0);
});

// The two tests below pin what the Swift ClientSync does not do yet (found by the convergence runs
// with a short kept history, convergence.test.mjs): a queued edit that depends on the request in
// flight (a person it inserts, a name it lengthens) is still sent when that request's effect does
// not reach the confirmed model, and the hub refuses it as invalid-op. The JS is a faithful port, so
// Queued batches are pruned (pruneUnsent) after an error reply and after an answer older than the
// confirmed revision (found by the short-history convergence runs; ClientSyncTests.swift has the same two).

test('a queued edit on a person inserted by a refused batch is dropped, not sent', () => {
  const client = welcomed();
  client.edit([insert(Fixtures.person(4), 0)]); // in flight
  client.edit([set(4, 'glasses', true)]); // queued, depends on the insert
  const { send } = client.receive({ type: 'error', seq: 1, code: 'stale-base', message: 'base 0 is too old' });
  assert.deepEqual(send, []);
});

test('a queued edit on a person whose insert is answered after a full-state welcome without it is dropped', () => {
  const client = welcomed();
  client.edit([insert(Fixtures.person(4), 0)]); // in flight
  client.edit([set(4, 'glasses', true)]); // queued
  client.disconnected();
  client.connect();
  // The hub applied the insert at rev 1, another tab of this user undid it at rev 2, and the history
  // was trimmed: the welcome carries the full state, without person 4.
  const { send: resend } = client.receive({ type: 'welcome', session: 's1', user: 'ann', role: 'editor', rev: 2,
    people: Fixtures.start, tags: { from: 4, to: 103 }, history, presence: [] });
  assert.equal(resend[0].seq, 1);
  const { send } = client.receive({ type: 'ack', seq: 1, rev: 1, ops: [insert(Fixtures.person(4), 0)] }); // replayed
  assert.deepEqual(send, []);
});

// SEMANTICS §7 readings 6 and 7 on the client: what it keeps, sends and prunes follows the hub's
// readings (apply compares names by code points; an empty text edit changes nothing).

test('a normalization-only text edit is a change: shown, sent, and kept when queued and rebased', () => {
  const client = new ClientSync('ann');
  client.connect();
  client.receive({ type: 'welcome', session: 's1', user: 'ann', role: 'editor', rev: 0,
    people: [{ ...Fixtures.p1, name: 'Rene\u0301' }], tags: { from: 4, to: 103 }, history, presence: [] });
  const composed = text(1, [{ retain: 3 }, { insert: '\u00e9' }, { delete: 2 }]);
  const sent = client.edit([composed]);
  assert.deepEqual(sent, [{ type: 'submit', seq: 1, base: 0, ops: [composed] }]);
  assert.equal(client.view.get(1).name, 'Ren\u00e9');
  // Queued behind a request in flight, and rebased over a teammate's typing in the same name: kept.
  client.edit([set(1, 'glasses', true)]); // a second edit; the first is in flight
  const back = text(1, [{ retain: 3 }, { insert: 'e\u0301' }, { delete: 1 }]);
  assert.deepEqual(client.edit([back]), []); // queued too: back to the decomposed form, also a change
  client.receive({ type: 'ops', rev: 1, author: 'bob', kind: 'edit', ops: [text(1, [{ insert: '!' }])] });
  const { send } = client.receive({ type: 'ack', seq: 1, rev: 2,
    ops: [text(1, [{ retain: 4 }, { insert: '\u00e9' }, { delete: 2 }])] });
  assert.equal(client.confirmed.get(1).name, '!Ren\u00e9');
  assert.deepEqual(send, [{ type: 'submit', seq: 2, base: 2, ops: [set(1, 'glasses', true)] }]);
  assert.equal(client.pendingCount, 2);
  assert.equal(client.view.get(1).name, '!Rene\u0301');
  const { send: next } = client.receive({ type: 'ack', seq: 2, rev: 3, ops: [set(1, 'glasses', true)] });
  assert.deepEqual(next, [{ type: 'submit', seq: 3, base: 3, ops: [text(1, [{ retain: 4 }, { insert: 'e\u0301' }, { delete: 1 }])] }]);
});

test('an empty text edit changes nothing on the client, and arrives from the hub as a valid frame', () => {
  const client = welcomed();
  assert.deepEqual(client.edit([text(1, [])]), []);
  assert.deepEqual(client.edit([{ op: 'text', tag: 1, edits: [{ retain: 3 }] }]), []);
  assert.equal(client.pendingCount, 0);
  const frame = '{"type":"ops","rev":1,"author":"bob","kind":"edit","ops":[{"op":"text","tag":1,"edits":[]},{"op":"set","tag":1,"field":"glasses","value":true}]}';
  const { events } = client.receive(decodeServerMessage(frame));
  assert.equal(client.revision, 1);
  assert.equal(client.confirmed.get(1).glasses, true);
  assert.equal(events[0].type, 'remote');
});

// HISTORY.md on the client: `restore` frames from the hub, and restore, selective undo, log and blame
// from this client.

test('an ops frame of kind restore (with a time) is decoded and applied like any revision', () => {
  const client = welcomed();
  const frame = '{"type":"ops","rev":1,"time":1732500000000,"author":"dana","kind":"restore","ops":[{"op":"remove","tag":2},{"op":"set","tag":1,"field":"hairColor","value":"red"}],"label":"Restore to revision 0"}';
  const { events } = client.receive(decodeServerMessage(frame));
  assert.equal(client.revision, 1);
  assert.equal(client.confirmed.contains(2), false);
  assert.equal(client.view.get(1).hairColor, 'red');
  assert.deepEqual(events, [{ type: 'remote', rev: 1, author: 'dana', kind: 'restore', label: 'Restore to revision 0',
    diffs: [remove(2), set(1, 'hairColor', 'red')] }]);
});

test('a restore is queued like an undo; its answer is applied and the edits queued behind it are rebased', () => {
  const client = welcomed();
  client.edit([set(1, 'glasses', true)]); // seq 1, in flight
  assert.deepEqual(client.restore(0, { label: 'Back' }), []);
  client.edit([set(3, 'hairColor', 'red')]); // queued behind the restore
  client.edit([set(2, 'glasses', true)]); // on a person the restore will remove
  const { send } = client.receive({ type: 'ack', seq: 1, rev: 1, time: 10, ops: [set(1, 'glasses', true)] });
  assert.deepEqual(send, [{ type: 'restore', seq: 2, rev: 0, label: 'Back' }]);
  const { send: next, events } = client.receive(decodeServerMessage(encode({ type: 'restored', seq: 2, rev: 2, time: 20,
    ops: [remove(2), set(1, 'glasses', false)], label: 'Back' })));
  assert.deepEqual(events, []);
  assert.equal(client.revision, 2);
  assert.equal(client.confirmed.get(1).glasses, false);
  assert.equal(client.confirmed.contains(2), false);
  // The edit on the removed person is pruned; the other goes out on the restored state.
  assert.deepEqual(next, [{ type: 'submit', seq: 3, base: 2, ops: [set(3, 'hairColor', 'red')] }]);
  assert.equal(client.pendingCount, 1);
});

test('a restore that changes nothing is answered without rev; a restored for someone else\'s seq is ignored', () => {
  const client = welcomed();
  assert.deepEqual(client.restore(0), [{ type: 'restore', seq: 1, rev: 0 }]);
  client.receive({ type: 'restored', seq: 9, rev: 5, ops: [remove(1)], label: 'x' }); // not ours
  assert.equal(client.pendingCount, 1);
  assert.equal(client.confirmed.contains(1), true);
  const { send } = client.receive({ type: 'restored', seq: 1, ops: [], label: 'Restore to revision 0' });
  assert.deepEqual(send, []);
  assert.equal(client.pendingCount, 0);
  assert.equal(client.revision, 0);
});

test('a restore answered by its own ops frame in a catch-up after a reconnect', () => {
  const client = welcomed();
  client.restore(0);
  client.disconnected();
  const hello = client.connect();
  assert.equal(hello.since, 0);
  const { send } = client.receive({ type: 'welcome', session: 's1', user: 'ann', role: 'editor', rev: 1, tags: { from: 4, to: 103 },
    history, presence: [] });
  assert.deepEqual(send, [{ type: 'restore', seq: 1, rev: 0 }], 'resent with its seq');
  client.receive({ type: 'ops', rev: 1, time: 5, author: 'ann', kind: 'restore', ops: [remove(3)], label: 'Restore to revision 0', seq: 1 });
  assert.equal(client.pendingCount, 0);
  assert.equal(client.revision, 1);
  assert.equal(client.confirmed.contains(3), false);
});

test('a selective undo is queued like an undo and sent with its entry; no-entry drops it and is an error event', () => {
  const client = welcomed();
  assert.deepEqual(client.undoEntry(4), [{ type: 'undo', seq: 1, entry: 4 }]);
  assert.deepEqual(client.undoEntry(2), []);
  const { send, events } = client.receive(decodeServerMessage('{"type":"error","seq":1,"code":"no-entry","message":"entry 4 is not on ann\'s undo stack"}'));
  assert.deepEqual(events, [{ type: 'error', code: 'no-entry', message: "entry 4 is not on ann's undo stack" }]);
  assert.deepEqual(send, [{ type: 'undo', seq: 2, entry: 2 }]);
  const answer = client.receive({ type: 'undone', seq: 2, rev: 1, time: 7, ops: [set(1, 'glasses', true)], skipped: [
    { reason: 'overwritten', tag: 2, field: 'hairColor', by: 'bob' }], entry: 2 });
  assert.equal(client.confirmed.get(1).glasses, true);
  assert.deepEqual(answer.events, [{ type: 'skipped', reports: [{ reason: 'overwritten', tag: 2, field: 'hairColor', by: 'bob' }] }]);
});

test('log and blame go at once when connected, with a seq of the same counter; their answers are events', () => {
  const client = new ClientSync('ann');
  assert.deepEqual(client.log(), [], 'not connected: nothing (ask again after the welcome)');
  assert.deepEqual(client.blame(1), []);
  client.connect();
  client.receive({ type: 'welcome', session: 's1', user: 'ann', role: 'editor', rev: 0, people: Fixtures.start,
    tags: { from: 4, to: 103 }, history, presence: [] });
  assert.deepEqual(client.edit([set(1, 'glasses', true)]), [{ type: 'submit', seq: 1, base: 0, ops: [set(1, 'glasses', true)] }]);
  assert.deepEqual(client.log(), [{ type: 'log', seq: 2, limit: 50 }], 'sent while a request is in flight');
  assert.deepEqual(client.log({ before: 9, limit: 10, tag: 2 }), [{ type: 'log', seq: 3, before: 9, limit: 10, tag: 2 }]);
  assert.deepEqual(client.blame(2), [{ type: 'blame', seq: 4, tag: 2 }]);
  client.edit([set(2, 'glasses', true)]);
  // An error answering the blame names its seq, never the request in flight.
  const refused = client.receive({ type: 'error', seq: 4, code: 'bad-message', message: 'tag 2 is not present' });
  assert.equal(client.pendingCount, 2);
  assert.deepEqual(refused.send, []);
  const page = decodeServerMessage('{"type":"log","seq":2,"entries":[{"rev":1,"time":3,"author":"bob","kind":"edit","ops":[],"entry":1}],"more":false}');
  assert.deepEqual(client.receive(page).events, [{ type: 'log', page: { seq: 2, entries: [{ rev: 1, time: 3, author: 'bob',
    kind: 'edit', ops: [], entry: 1 }], more: false } }]);
  const blame = decodeServerMessage('{"type":"blame","seq":4,"tag":1,"created":{"user":null,"rev":0},"fields":{"glasses":{"user":"bob","rev":1,"time":3}}}');
  assert.deepEqual(client.receive(blame).events, [{ type: 'blame', blame: { seq: 4, tag: 1, created: { user: null, rev: 0 },
    fields: { glasses: { user: 'bob', rev: 1, time: 3 }, facialHair: {}, preference: {} } } }]);
  const { send } = client.receive({ type: 'ack', seq: 1, rev: 1, ops: [set(1, 'glasses', true)] });
  assert.deepEqual(send, [{ type: 'submit', seq: 5, base: 1, ops: [set(2, 'glasses', true)] }], 'the next seq is above the queries\'');
});

test('typing in flight on a person a restore re-inserts under another name is overwritten in the view, as the hub does (decision 19)', () => {
  const client = welcomed('dana');
  client.edit([text(2, [{ retain: 4 }, { insert: '!' }])]); // "Joan!", in flight
  // ann shortens the name to "Jo" (dana's typing is rebased: "Jo!"), bob deletes Joan, carl's restore
  // puts her back as she was at revision 0, "Joan".
  client.receive({ type: 'ops', rev: 1, author: 'ann', kind: 'edit', ops: [text(2, [{ retain: 2 }, { delete: 2 }])] });
  assert.equal(client.view.get(2).name, 'Jo!');
  client.receive({ type: 'ops', rev: 2, author: 'bob', kind: 'edit', ops: [remove(2)] });
  client.receive({ type: 'ops', rev: 3, author: 'carl', kind: 'restore', ops: [insert(Fixtures.start[1], 1)] });
  // The re-insert wrote the name whole: the hub answers dana's stale typing as a no-op.
  assert.equal(client.view.get(2).name, 'Joan');
  client.receive({ type: 'ack', seq: 1, rev: 3, ops: [] });
  assert.equal(client.confirmed.get(2).name, 'Joan');
  assert.equal(client.view.get(2).name, 'Joan');
});

test('an undo pressed for a queued edit that then changes nothing is not sent (it would take back an older change)',
  () => {
    const client = welcomed();
    client.edit([set(1, 'eyeColor', 'hazel')]);
    client.receive({ type: 'ack', seq: 1, rev: 1, ops: [set(1, 'eyeColor', 'hazel')] }); // an undo entry
    client.edit([set(1, 'glasses', true)]);                  // in flight (seq 2)
    client.undo();                                          // pressed for the glasses: queued behind them
    // bob made the same change first: the hub acks seq 2 changing nothing (no revision, no undo entry).
    client.receive({ type: 'ops', rev: 2, author: 'bob', kind: 'edit', ops: [set(1, 'glasses', true)] });
    const { send } = client.receive({ type: 'ack', seq: 2, rev: 2, ops: [] });
    assert.deepEqual(send, [], 'the undo was for the edit that changed nothing: sent, it undoes the eye color');
  });

test('an undo pressed for a queued edit that is dropped (its person removed meanwhile) goes with it', () => {
  const client = welcomed();
  client.edit([set(1, 'eyeColor', 'hazel')]);
  client.receive({ type: 'ack', seq: 1, rev: 1, ops: [set(1, 'eyeColor', 'hazel')] }); // an undo entry
  client.edit([set(2, 'glasses', true)]);                    // in flight (seq 2)
  client.edit([set(3, 'hairColor', 'white')]);               // queued
  client.undo();                                            // pressed for the hair color
  client.undo();                                            // and then for the glasses
  client.receive({ type: 'ops', rev: 2, author: 'bob', kind: 'edit', ops: [remove(3)] });
  const { send } = client.receive({ type: 'ack', seq: 2, rev: 3, ops: [set(2, 'glasses', true)] });
  // The hair color edit is gone with its person, and its undo with it; the second undo is for the glasses.
  assert.deepEqual(send, [{ type: 'undo', seq: 3 }]);
  // That one undo takes back the glasses; nothing more goes out (a second would undo the eye color).
  const after = client.receive({ type: 'undone', seq: 3, rev: 4, ops: [set(2, 'glasses', false)], entry: 2 });
  assert.deepEqual(after.send, []);
});

test('an undo pressed for a queued edit that lands is sent as usual, and a second undo too', () => {
  const client = welcomed();
  client.edit([set(1, 'glasses', true)]);                    // in flight
  client.undo();
  client.undo();
  const { send } = client.receive({ type: 'ack', seq: 1, rev: 1, ops: [set(1, 'glasses', true)] });
  assert.deepEqual(send, [{ type: 'undo', seq: 2 }]);
});

test("offline, an undo or redo of a queued edit shows at once; the hub's answers keep the view", () => {
  const client = welcomed();
  client.disconnected();
  client.edit([set(1, 'hairColor', 'red')], { label: 'Change Hair Color' });
  client.edit([text(2, [{ retain: 4 }, { insert: '!' }])], { label: 'Type' });
  assert.equal(client.view.get(2).name, 'Joan!');
  assert.deepEqual(client.undo(), []);
  assert.equal(client.view.get(2).name, 'Joan');
  assert.equal(client.view.get(1).hairColor, 'red');
  client.undo();
  assert.ok(client.view.equals(new PeopleModel(Fixtures.start)), 'both edits taken back');
  client.redo();
  assert.equal(client.view.get(1).hairColor, 'red');
  assert.equal(client.view.get(2).name, 'Joan');
  // Typed after the undo: made on the view without the "!".
  client.edit([text(2, [{ retain: 4 }, { insert: '?' }])], { label: 'Type again' });
  assert.equal(client.view.get(2).name, 'Joan?');
  const shown = client.view;

  // The hub: each request answered as a room would (a second client's Network does this fully).
  const room = new Room({ name: 'r', seed: new PeopleModel(Fixtures.start) });
  const { session } = room.join({ session: 's1', user: 'ann', role: 'editor' });
  client.connect();
  let { send } = client.receive({ type: 'welcome', session, user: 'ann', role: 'editor', rev: 0,
    tags: { from: 4, to: 103 }, history, presence: [] });
  let now = 10000;
  while (send.length > 0) {
    const message = send[0];
    now += 1000; // apart: no coalescing at the hub
    const replies = room.receive(decodeClientMessage(encode(message)), session, now)
      .filter((action) => action.send && action.to.includes(session)).map((action) => action.send);
    send = [];
    for (const reply of replies) send.push(...client.receive(decodeServerMessage(encode(reply))).send);
    assert.ok(client.view.equals(shown), `after ${JSON.stringify(message)}`);
  }
  assert.equal(client.pendingCount, 0);
  assert.ok(client.confirmed.equals(room.model));
  assert.ok(room.model.equals(shown));
});

test("a reset names this user's acknowledged revisions past the hub's head as lost, oldest first", () => {
  const client = welcomed();
  client.edit([set(1, 'hairColor', 'red')], { label: 'Hair' });
  client.receive({ type: 'ack', seq: 1, rev: 1, time: 5000, ops: [set(1, 'hairColor', 'red')] });
  client.receive({ type: 'ops', rev: 2, time: 6000, author: 'bob', kind: 'edit', ops: [set(2, 'glasses', true)] });
  const [third] = client.edit([set(3, 'glasses', false)]);
  client.receive({ type: 'ack', seq: third.seq, rev: 3, time: 7000, ops: [set(3, 'glasses', false)] });
  const [undo] = client.undo();
  client.receive({ type: 'undone', seq: undo.seq, rev: 4, time: 8000, ops: [set(3, 'glasses', true)] });
  client.disconnected();
  client.connect();
  // The hub was restored to a copy from revision 2.
  const { events } = client.receive({ type: 'welcome', session: 's2', user: 'ann', role: 'editor', rev: 2, time: 6000,
    reset: true, people: Fixtures.start, tags: { from: 200, to: 299 }, history, presence: [] });
  const [reset] = events.filter((e) => e.type === 'reset');
  assert.equal(reset.perhapsMore, false);
  assert.deepEqual(reset.lost, [
    { rev: 3, time: 7000, author: 'ann', kind: 'edit', ops: [set(3, 'glasses', false)] },
    { rev: 4, time: 8000, author: 'ann', kind: 'undo', ops: [set(3, 'glasses', true)] },
  ]);
});

test('a hub whose room has another history says reset: queued edits go again as new, inserts with tags of the new block', () => {
  const client = welcomed();
  client.edit([set(1, 'hairColor', 'red')], { label: 'Hair' });
  client.receive({ type: 'ack', seq: 1, rev: 1, time: 5000, ops: [set(1, 'hairColor', 'red')] });
  assert.equal(client.revisionTime, 5000);
  assert.equal(client.edit([set(2, 'eyeColor', 'hazel')], { label: 'Eyes' }).length, 1); // in flight
  client.disconnected();
  client.undo(1); // the hub's step (rev 1): not predicted, it names the old history
  const kim = client.allocateTag();
  assert.equal(kim, 4);
  client.edit([insert(Fixtures.person(kim, 'Kim'), 0)], { label: 'Add Kim' });
  client.edit([set(kim, 'glasses', true)], { label: 'Glasses' });
  const hello = decodeClientMessage(encode(client.connect()));
  assert.equal(hello.since, 1);
  assert.equal(hello.sinceTime, 5000);

  // The hub lost its copy: bob's block is now 4–103, and bob made another revision 1 (Zed, tag 4) and a 2.
  const room = new Room({ name: 'r', seed: new PeopleModel(Fixtures.start) });
  const { session: bob } = room.join({ session: 'b1', user: 'bob', role: 'editor' });
  room.receive({ type: 'submit', seq: 1, base: 0, ops: [insert(Fixtures.person(4, 'Zed'), 3)] }, bob, 9000);
  room.receive({ type: 'submit', seq: 2, base: 1, ops: [set(3, 'glasses', false)] }, bob, 9500);
  const { session: ann, actions } = room.join({ session: 'a1', user: 'ann', role: 'editor', resume: hello.resume,
    since: hello.since, sinceTime: hello.sinceTime });
  let send = [];
  const events = [];
  for (const action of actions.filter((a) => a.send && a.to.includes(ann))) {
    const out = client.receive(decodeServerMessage(encode(action.send)));
    send.push(...out.send);
    events.push(...out.events);
  }
  // The hub's head (2) is past what ann had seen (1): which of her revisions went, it cannot tell.
  assert.deepEqual(events.filter((e) => e.type === 'reset'), [{ type: 'reset', dropped: 1, lost: [], perhapsMore: true }]);
  assert.equal(client.revision, 2);
  assert.equal(client.revisionTime, 9500);
  // The edit that was in flight goes again, as a new request on the hub's revision.
  assert.equal(send[0].type, 'submit');
  assert.equal(send[0].base, 2);
  assert.ok(send[0].seq > 1);
  assert.deepEqual(send[0].ops, [set(2, 'eyeColor', 'hazel')]);
  let now = 10000;
  while (send.length > 0) {
    const message = send[0];
    now += 1000;
    const replies = room.receive(decodeClientMessage(encode(message)), ann, now)
      .filter((action) => action.send && action.to.includes(ann)).map((action) => action.send);
    send = [];
    for (const reply of replies) send.push(...client.receive(decodeServerMessage(encode(reply))).send);
  }
  assert.equal(client.pendingCount, 0);
  assert.ok(client.confirmed.equals(room.model));
  assert.ok(client.view.equals(room.model));
  const added = room.model.people.find((p) => p.name === 'Kim');
  assert.ok(added.tag >= 104 && added.glasses, JSON.stringify(added));
  assert.equal(room.model.get(4).name, 'Zed');
  assert.equal(room.model.get(1).hairColor, Fixtures.start[0].hairColor);
  assert.equal(room.model.get(2).eyeColor, 'hazel');
  assert.equal(room.model.get(3).glasses, false);
});

test("an undo of a queued edit that may join the hub's newest step (same coalesce key) waits for the hub", () => {
  const client = welcomed();
  const room = new Room({ name: 'r', seed: new PeopleModel(Fixtures.start) });
  const { session } = room.join({ session: 's1', user: 'ann', role: 'editor' });
  const deliver = (messages, now) => {
    const send = [];
    for (const message of messages) {
      const replies = room.receive(decodeClientMessage(encode(message)), session, now)
        .filter((action) => action.send && action.to.includes(session)).map((action) => action.send);
      for (const reply of replies) send.push(...client.receive(decodeServerMessage(encode(reply))).send);
    }
    return send;
  };
  const typeA = client.edit([text(2, [{ retain: 4 }, { insert: 'a' }])], { label: 'Rename', coalesce: 'name:2' });
  assert.deepEqual(deliver(typeA, 1000), []);
  const typeB = client.edit([text(2, [{ retain: 5 }, { insert: 'b' }])], { label: 'Rename', coalesce: 'name:2' });
  assert.equal(client.view.get(2).name, 'Joanab');
  // "b" is in flight; the hub will make it one step with "a" (100 ms apart): the undo takes back both.
  client.undo();
  assert.equal(client.view.get(2).name, 'Joanab', "not predicted: the hub's step may be more than the queued edit");
  let send = deliver(typeB, 1100);
  while (send.length > 0) send = deliver(send, 1200);
  assert.equal(client.view.get(2).name, 'Joan');
  assert.equal(room.model.get(2).name, 'Joan');
  // Offline, an edit with another key is predicted as before.
  client.disconnected();
  client.edit([set(1, 'glasses', true)], { label: 'Toggle Glasses', coalesce: 'glasses:1' });
  client.undo();
  assert.equal(client.view.get(1).glasses, false);
});

test('a predicted undo in flight when a full state arrives is not applied over it again', () => {
  const client = welcomed();
  client.edit([text(2, [{ insert: 'X' }])], { label: 'Type' });
  client.undo();
  assert.equal(client.view.get(2).name, 'Joan');
  const { send } = client.receive({ type: 'ack', seq: 1, rev: 1, ops: [text(2, [{ insert: 'X' }])] });
  assert.deepEqual(send, [{ type: 'undo', seq: 2 }]);
  client.disconnected();
  client.connect();
  // The hub had undone it before the drop; the welcome brings the full state (rev 2), then the replayed answer.
  client.receive({ type: 'welcome', session: 's1', user: 'ann', role: 'editor', rev: 2, people: Fixtures.start,
    tags: { from: 4, to: 103 }, history, presence: [] });
  assert.equal(client.view.get(2).name, 'Joan');
  client.receive({ type: 'undone', seq: 2, rev: 2, ops: [text(2, [{ delete: 1 }])] });
  assert.equal(client.view.get(2).name, 'Joan');
  assert.equal(client.pendingCount, 0);
});

test('alone, what the view shows of offline undos and redos is what the hub then makes (200 seeded sessions)', () => {
  for (let seed = 0; seed < 200; seed++) {
    const net = new Network(seed * 6700417 + 1, 1);
    net.settle();
    net.disconnect(0);
    const client = net.peers[0].client;
    const people = client.view.tags;
    for (let n = 0, count = net.rng.int(1, 12); n < count; n++) {
      const r = net.rng.int(0, 9);
      if (r < 5) {
        const tag = people[net.rng.int(0, people.length - 1)];
        const op = net.rng.chance(0.5) ? text(tag, [{ insert: `x${n}` }]) : set(tag, 'glasses', net.rng.chance(0.5));
        try { client.edit([op], { label: `Edit ${n}` }); } catch { /* invalid on the view: not made */ }
      } else if (r < 8) {
        client.undo();
      } else {
        client.redo();
      }
    }
    const shown = client.view;
    net.settle();
    assert.deepEqual(net.errors, [], `seed ${seed}`);
    assert.ok(net.room.model.equals(shown), `seed ${seed}: the room is not what the view showed`);
    assert.ok(client.view.equals(shown), `seed ${seed}: the view moved`);
  }
});

test('an undo that goes with its queued edit is told as an undoDropped event naming that edit, on both paths', () => {
  const client = welcomed();
  client.edit([set(1, 'glasses', true)], { label: 'Toggle Glasses' }); // in flight (seq 1)
  client.edit([set(3, 'hairColor', 'white')], { label: 'Change Hair Color' }); // queued
  client.undo();                                                               // for the hair color
  const pruned = client.receive({ type: 'ops', rev: 1, author: 'bob', kind: 'edit', ops: [remove(3)] });
  assert.deepEqual(pruned.events.filter((e) => e.type === 'undoDropped'),
    [{ type: 'undoDropped', ops: [set(3, 'hairColor', 'white')], label: 'Change Hair Color' }]);
  client.undo();                                                               // for the glasses, in flight
  const acked = client.receive({ type: 'ack', seq: 1, rev: 1, ops: [] });
  assert.deepEqual(acked.events.filter((e) => e.type === 'undoDropped'),
    [{ type: 'undoDropped', ops: [set(1, 'glasses', true)], label: 'Toggle Glasses' }]);
  assert.deepEqual(acked.send, []);
  assert.equal(client.pendingCount, 0);
});
