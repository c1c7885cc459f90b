// The page's connection: one source of truth (LiveRoom's state), every word about it derived from
// that state (Web/js/connection.js), so a message lasts exactly as long as it is true (issue 17,
// item 1). LiveRoom runs here over a fake socket and a fake clock.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connectionStatus } from '../../Web/js/connection.js';
import { LiveRoom, CONNECT_SECONDS, HEARTBEAT_SECONDS, hubRunning } from '../../Web/js/live-room.js';
import { reportsText, droppedUndoText, refusalText, hasWireWords } from '../../Web/js/report-text.js';
import { set } from '../../Web/js/core/diff.js';

const person = (tag, name, more = {}) => ({ tag, name, hairColor: 'brown', hairLength: 'short', eyeColor: 'brown',
  glasses: false, facialHair: [], likes: [], dislikes: [], ...more });
const PEOPLE = [person(1, 'Ann'), person(2, 'Joan'), person(3, 'Sam', { glasses: true })];
const welcome = (rev = 0, people = PEOPLE) => ({ type: 'welcome', session: 's1', user: 'ann', role: 'editor', rev, people,
  tags: { from: 4, to: 103 }, history: { canUndo: false, canRedo: false }, presence: [] });

class FakeSocket {
  static made = [];
  constructor(url) { this.url = url; this.sent = []; FakeSocket.made.push(this); }
  send(data) { this.sent.push(JSON.parse(data)); }
  close() { this.closed = true; }
  hear(message) { this.onmessage?.({ data: JSON.stringify(message) }); }
}

function fakeTimers() {
  const t = { now: 0, queue: [], id: 0 };
  t.setTimeout = (f, ms) => { t.queue.push({ id: ++t.id, at: t.now + ms, f }); return t.id; };
  t.clearTimeout = (id) => { t.queue = t.queue.filter((e) => e.id !== id); };
  t.advance = (ms) => {
    t.now += ms;
    for (;;) {
      const due = t.queue.filter((e) => e.at <= t.now).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      t.queue = t.queue.filter((e) => e !== due);
      due.f();
    }
  };
  return t;
}

/** A LiveRoom of ann's at `url`, started over a fake socket (not yet open) and a fake clock. */
function started(url = 'ws://hub/v1/rooms/r', timers = fakeTimers()) {
  FakeSocket.made = [];
  const notices = [];
  const room = new LiveRoom({ url, user: 'ann', WebSocket: FakeSocket,
    timers: { setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout, now: () => timers.now } });
  room.onUpdate = (n) => notices.push(...n);
  room.start();
  return { room, timers, notices };
}

function online() {
  const { room, timers, notices } = started();
  const socket = FakeSocket.made[0];
  socket.onopen();
  socket.hear(welcome());
  return { room, timers, notices, socket, status: () => connectionStatus(room.connection, timers.now) };
}

test('the words follow the state: down, kept, sending, then nothing', () => {
  assert.deepEqual(connectionStatus({ link: 'online', pending: 0 }, 0),
    { state: 'online', down: false, words: 'Online', detail: '', title: null });
  const down = connectionStatus({ link: 'offline', outage: true, why: 'the hub cannot be reached', retryAt: 2500, pending: 2 }, 0);
  assert.equal(down.words, 'Offline, retrying in 3 s');
  assert.equal(down.detail, "The hub can't be reached. Your 2 changes are kept and sent when it is back.");
  assert.equal(down.title, 'the hub cannot be reached');
  const retrying = connectionStatus({ link: 'connecting', outage: true, pending: 0 }, 0);
  assert.ok(retrying.down, 'a retry is still part of the outage');
  assert.match(retrying.detail, /can't be reached\. Changes you make are kept/);
  assert.equal(connectionStatus({ link: 'connecting', outage: false }, 0).detail, '', 'a first connection says nothing alarming');
  assert.equal(connectionStatus({ link: 'online', pending: 2, catchingUp: true }, 0).detail,
    'Back online: sending 2 changes made while offline…');
  assert.equal(connectionStatus({ link: 'online', pending: 1, catchingUp: false }, 0).detail, '',
    'an edit in flight while online is not news');
});

test('an outage with edits: the room says it is down until welcomed, then catching up until the edits are acked', () => {
  const { room, timers, status } = online();
  assert.equal(status().detail, '');

  FakeSocket.made[0].onclose({ code: 1006 });
  assert.equal(room.link, 'offline');
  assert.ok(status().down);
  room.edit([set(1, 'hairColor', 'red')], { label: 'Change Hair Color' });
  room.edit([set(3, 'glasses', false)], { label: 'Toggle Glasses' });
  assert.equal(room.pending, 2);
  assert.match(status().detail, /Your 2 changes are kept/);

  timers.advance(250); // the retry
  const second = FakeSocket.made[1];
  assert.equal(room.link, 'connecting');
  assert.ok(status().down, 'still out of reach while the retry connects');
  second.onopen();
  second.hear(welcome());
  assert.equal(room.link, 'online');
  assert.equal(status().down, false);
  assert.equal(status().detail, 'Back online: sending 2 changes made while offline…');
  const submit = second.sent.find((m) => m.type === 'submit');
  second.hear({ type: 'ack', seq: submit.seq, rev: 1, ops: submit.ops });
  assert.equal(status().detail, 'Back online: sending the change made while offline…');
  const next = second.sent.filter((m) => m.type === 'submit')[1];
  second.hear({ type: 'ack', seq: next.seq, rev: 2, ops: next.ops });
  assert.equal(room.pending, 0);
  assert.equal(room.catchingUp, false);
  assert.equal(status().detail, '', 'nothing is said once the edits are sent');

  room.edit([set(2, 'glasses', true)], { label: 'Toggle Glasses' });
  assert.equal(status().detail, '', 'an edit made online is no catching up');
});

test('"kept" and "sending" count the same requests, the ones kept through the outage, and name an undo as one', () => {
  const { room, timers, status } = online();
  FakeSocket.made[0].onclose({ code: 1006 });
  room.edit([set(1, 'hairColor', 'red')], { label: 'Change Hair Color' });
  assert.equal(status().detail, "The hub can't be reached. Your change is kept and sent when it is back.");
  room.edit([set(3, 'glasses', false)], { label: 'Toggle Glasses' });
  room.undo();
  assert.equal(status().detail, "The hub can't be reached. Your 2 changes and 1 undo are kept and sent when it is back.");

  timers.advance(250);
  const second = FakeSocket.made[1];
  second.onopen();
  second.hear(welcome());
  assert.equal(status().detail, 'Back online: sending 2 changes and 1 undo made while offline…');
  room.edit([set(2, 'glasses', true)], { label: 'Toggle Glasses' }); // made online: not one of them
  assert.equal(status().detail, 'Back online: sending 2 changes and 1 undo made while offline…');
  const answer = () => {
    const m = second.sent.findLast((sent) => sent.type !== 'ping'); // the request in flight (a ping follows the welcome)
    if (m.type === 'submit') second.hear({ type: 'ack', seq: m.seq, rev: room.sync.revision + 1, ops: m.ops });
    else second.hear({ type: 'undone', seq: m.seq, rev: room.sync.revision + 1, ops: [set(3, 'glasses', true)], skipped: [] });
  };
  answer();
  assert.equal(status().detail, 'Back online: sending 1 change and 1 undo made while offline…');
  answer();
  assert.equal(status().detail, 'Back online: sending the undo made while offline…');
  answer();
  assert.equal(room.pending, 1, "the edit made online is still on its way");
  assert.equal(status().detail, '', 'what was kept is sent: nothing more to say');
  assert.equal(room.catchingUp, false);
  assert.equal(connectionStatus({ link: 'offline', kept: { changes: 0, undos: 0, redos: 1 } }, 0).detail,
    "The hub can't be reached. Your redo is kept and sent when it is back.");
});

test('a skipped undo tells what it was and that nothing changed', () => {
  const { room, notices, socket } = online();
  room.undo();
  const undo = socket.sent.find((m) => m.type === 'undo');
  socket.hear({ type: 'undone', seq: undo.seq, ops: [], skipped: [{ reason: 'overwritten', tag: 1, field: 'hairColor', by: 'bob' }] });
  const skipped = notices.find((n) => n.type === 'skipped');
  assert.equal(skipped.kind, 'undo');
  assert.equal(skipped.changed, false);
  assert.equal(reportsText(skipped.reports, (t) => skipped.people.get(t)?.name, skipped),
    "Nothing was undone: your change to Ann's hair color was overwritten by bob.");
});

test("this user's own changes come as 'mine' notices: an edit at once, an undo as the hub applied it", () => {
  const { room, notices, socket } = online();
  room.edit([set(1, 'hairColor', 'red')], { label: 'Change Hair Color' });
  assert.deepEqual(notices.filter((n) => n.type === 'mine').map((n) => n.kind), ['edit']);
  const submit = socket.sent.find((m) => m.type === 'submit');
  socket.hear({ type: 'ack', seq: submit.seq, rev: 1, ops: submit.ops });
  room.undo();
  const undo = socket.sent.find((m) => m.type === 'undo');
  socket.hear({ type: 'undone', seq: undo.seq, rev: 2, ops: [set(1, 'hairColor', 'brown')], skipped: [] });
  const mine = notices.filter((n) => n.type === 'mine');
  assert.equal(mine.length, 2);
  assert.equal(mine[1].kind, 'undo');
  assert.deepEqual(mine[1].diffs, [set(1, 'hairColor', 'brown')]);
});

test("a teammate's revision carries the people before it, to name whom it touched", () => {
  const { notices, socket } = online();
  socket.hear({ type: 'ops', rev: 1, author: 'bob', kind: 'edit', ops: [{ op: 'remove', tag: 3 }], label: 'Delete Person' });
  const remote = notices.find((n) => n.type === 'remote');
  assert.equal(remote.people.get(3).name, 'Sam');
});

test('an undo that goes with its queued edit says so: a teammate had made the same change first', () => {
  const { room, notices, socket } = online();
  room.edit([set(1, 'glasses', true)], { label: 'Toggle Glasses' }); // in flight
  room.undo();                                                      // pressed for it: queued behind it
  const submit = socket.sent.find((m) => m.type === 'submit');
  socket.hear({ type: 'ops', rev: 1, author: 'bob', kind: 'edit', ops: [set(1, 'glasses', true)], label: 'Toggle Glasses' });
  socket.hear({ type: 'ack', seq: submit.seq, rev: 1, ops: [] });
  assert.equal(socket.sent.filter((m) => m.type === 'undo').length, 0, 'the undo is not sent');
  const dropped = notices.filter((n) => n.type === 'undoDropped');
  assert.equal(dropped.length, 1);
  assert.equal(droppedUndoText(dropped[0].label, dropped[0].reports, (t) => dropped[0].people.get(t)?.name, { me: 'ann' }),
    "Your undo of Toggle Glasses had nothing to take back: bob had already made the same change to Ann's glasses.");
});

test('an undo that goes with a queued edit whose person was deleted names who deleted them, once', () => {
  const { room, notices, socket } = online();
  room.edit([set(1, 'glasses', true)], { label: 'Toggle Glasses' }); // in flight
  room.edit([set(3, 'hairColor', 'red')], { label: 'Change Hair Color' });
  room.undo();                                                      // pressed for the hair color
  const submit = socket.sent.find((m) => m.type === 'submit');
  socket.hear({ type: 'ops', rev: 1, author: 'bob', kind: 'edit', ops: [{ op: 'remove', tag: 3 }], label: 'Delete Person' });
  socket.hear({ type: 'ack', seq: submit.seq, rev: 2, ops: submit.ops });
  const [dropped] = notices.filter((n) => n.type === 'undoDropped');
  assert.equal(droppedUndoText(dropped.label, dropped.reports, (t) => dropped.people.get(t)?.name, { me: 'ann' }),
    'Your undo of Change Hair Color had nothing to take back: Sam was deleted by bob.');
  assert.deepEqual(socket.sent.filter((m) => m.type === 'undo'), [], 'no undo went out for it');

  // In flight when the hub learns of the removal: the hub's own report says it, in the one notice.
  room.edit([set(2, 'hairColor', 'red')], { label: 'Change Hair Color' });
  room.undo();
  const second = socket.sent.filter((m) => m.type === 'submit').at(-1);
  socket.hear({ type: 'ops', rev: 3, author: 'carl', kind: 'edit', ops: [{ op: 'remove', tag: 2 }] });
  socket.hear({ type: 'ack', seq: second.seq, rev: 3, ops: [], noop: [{ reason: 'targetRemoved', tag: 2, by: 'carl' }] });
  const last = notices.filter((n) => n.type === 'undoDropped' || n.type === 'skipped').at(-1);
  assert.equal(last.type, 'undoDropped', 'no separate notice of the skipped edit');
  // Joan went before the ack: the page names her as it last saw her.
  const seen = (t) => last.people.get(t)?.name ?? PEOPLE.find((p) => p.tag === t)?.name;
  assert.equal(droppedUndoText(last.label, last.reports, seen, { me: 'ann' }),
    'Your undo of Change Hair Color had nothing to take back: Joan was deleted by carl.');
  assert.equal(room.pending, 0);
});

test('an undo that goes with a queued edit the hub refused says the edit was refused', () => {
  const { room, notices, socket } = online();
  room.edit([set(1, 'glasses', true)], { label: 'Toggle Glasses' }); // in flight
  room.undo();                                                      // pressed for it: shown at once
  assert.equal(room.sync.view.get(1).glasses, false);
  const submit = socket.sent.find((m) => m.type === 'submit');
  socket.hear({ type: 'error', seq: submit.seq, code: 'invalid-op', message: 'tag 1 is not present' });
  assert.deepEqual(socket.sent.filter((m) => m.type === 'undo'), [], 'sent, the undo would take back an older change');
  assert.equal(room.pending, 0);
  const [dropped] = notices.filter((n) => n.type === 'undoDropped');
  assert.equal(droppedUndoText(dropped.label, dropped.reports, (t) => dropped.people.get(t)?.name, { me: 'ann' }),
    'Your undo of Toggle Glasses had nothing to take back: the hub refused that change.');
});

test("after the hub's 1001 the page reconnects with since and sinceTime; a welcome with reset says the room went back", () => {
  const { room, timers, notices, socket } = online();
  socket.hear({ type: 'ops', rev: 1, time: 7000, author: 'bob', kind: 'edit', ops: [set(2, 'glasses', true)] });
  socket.onclose({ code: 1001, reason: 'hub shutting down' });
  room.edit([set(1, 'hairColor', 'red')], { label: 'Change Hair Color' });
  timers.advance(250);
  const second = FakeSocket.made[1];
  second.onopen();
  const hello = second.sent.find((m) => m.type === 'hello');
  assert.equal(hello.since, 1);
  assert.equal(hello.sinceTime, 7000);
  // The hub's room went back (a memory hub restarted): full state, reset; the queued edit still applies.
  second.hear({ ...welcome(0), reset: true });
  // The hub's head (0) is below what the page had seen (1), and none of the page's own were acknowledged.
  assert.deepEqual(notices.filter((n) => n.type === 'reset'),
    [{ type: 'reset', kept: 1, notSent: 0, lost: [], perhapsMore: false }]);
  assert.equal(room.sync.view.get(2).glasses, false, "the hub's state, not the old revision 1");
  assert.equal(room.sync.view.get(1).hairColor, 'red', 'the queued edit is kept');
  const submit = second.sent.find((m) => m.type === 'submit');
  assert.equal(submit.base, 0);
});

test('a reset says how many queued changes still go and how many no longer apply', async () => {
  const { resetText } = await import('../../Web/js/report-text.js');
  assert.match(resetText(0, 0), /you now see the room as the hub has it\.$/);
  assert.match(resetText(2, 0), /with your unsent changes that still apply\.$/);
  assert.match(resetText(0, 1), /has it\. One change you made meanwhile was not sent: it no longer applies/);
  assert.match(resetText(1, 2), /still apply\. 2 changes you made meanwhile were not sent: they no longer apply/);
  // What of this user's the hub had saved and no longer has (session 28: nothing said it).
  const glasses = { rev: 3, author: 'ann', kind: 'edit', ops: [set(1, 'glasses', true)] };
  assert.match(resetText(0, 0, [glasses]), /has it\. Your saved change is gone: Toggle Glasses\.$/);
  assert.match(resetText(0, 1, [glasses, { ...glasses, label: 'Hair', rev: 4 }, { ...glasses, kind: 'undo', rev: 5 },
    { ...glasses, rev: 6 }]), /has it\. Your 4 saved changes are gone: Toggle Glasses, Hair, Undo Toggle Glasses, …\. One change/);
  assert.match(resetText(0, 0, [], true), /has it\. Your changes saved since it went back may be gone\.$/);
  const { room, timers, notices, socket } = online();
  socket.hear({ type: 'ops', rev: 1, time: 7000, author: 'bob', kind: 'edit', ops: [set(2, 'glasses', true)] });
  socket.onclose({ code: 1006 });
  room.edit([set(2, 'glasses', false)], { label: 'Toggle Glasses' });
  timers.advance(250);
  const second = FakeSocket.made[1];
  second.onopen();
  second.hear({ ...welcome(0), reset: true }); // Joan's glasses are off there: the edit changes nothing
  assert.deepEqual(notices.filter((n) => n.type === 'reset'),
    [{ type: 'reset', kept: 0, notSent: 1, lost: [], perhapsMore: false }]);
  assert.equal(second.sent.filter((m) => m.type === 'submit').length, 0);
});

test('an upgrade the hub never answers is given up after CONNECT_SECONDS and tried again (session 21)', () => {
  // A network-failure pass: a link that swallowed the hub's answer left the page "Reconnecting…" for
  // good (the browser's own wait for an upgrade has no end), the change made meanwhile never sent.
  const { room, timers, status } = online();
  FakeSocket.made[0].onclose({ code: 1006 });
  room.edit([set(3, 'glasses', false)], { label: 'Toggle Glasses' });
  timers.advance(250);
  const stuck = FakeSocket.made[1];
  assert.equal(room.link, 'connecting');
  timers.advance(CONNECT_SECONDS * 1000 - 1);
  assert.equal(room.link, 'connecting', 'not before its time');
  timers.advance(1);
  assert.ok(stuck.closed, 'the unanswered socket is closed');
  assert.equal(room.link, 'offline');
  assert.equal(status().title, `the hub did not answer within ${CONNECT_SECONDS} s`);
  assert.match(status().detail, /Your change is kept/);
  timers.advance(500);
  const third = FakeSocket.made[2];
  assert.ok(third && third !== stuck, 'a new attempt follows');
  stuck.onopen?.(); // answered after all, too late: ignored
  third.onopen();
  third.hear(welcome());
  assert.equal(room.link, 'online');
  const submit = third.sent.find((m) => m.type === 'submit');
  assert.deepEqual(submit.ops, [{ op: 'set', tag: 3, field: 'glasses', value: false }]);
  assert.equal(stuck.sent.length, 0, 'nothing went on the socket given up');
});

test('a hub that answers but never lets the socket open is said to refuse the page, not to be unreachable', async () => {
  // A black-box pass over https (session 38): a handshake the hub refused (a full hub, a page address
  // it does not allow) looked like an outage: a browser tells a page nothing of why a WebSocket failed.
  const timers = fakeTimers();
  FakeSocket.made = [];
  let running = true;
  const probed = [];
  const room = new LiveRoom({ url: 'ws://a:8080/v1/rooms/r', user: 'ann', WebSocket: FakeSocket,
    timers: { setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout, now: () => timers.now },
    probe: async (url) => { probed.push(url); return running; } });
  const status = () => connectionStatus(room.connection, timers.now);
  const settle = () => new Promise((r) => setTimeout(r, 0));
  room.start();
  const refuse = async () => { FakeSocket.made.at(-1).onclose({ code: 1006 }); await settle(); };
  await refuse();
  assert.deepEqual(probed, ['ws://a:8080/v1/rooms/r'], 'asked whether the hub runs');
  assert.equal(room.refused, false, 'once could be a hub that was starting');
  assert.match(status().detail, /^The hub can't be reached\./);
  timers.advance(250);
  await refuse();
  assert.equal(room.refused, true);
  assert.equal(status().detail, "The hub is running but won't let this page connect: it may be full, or not set up for "
    + 'pages from this address. Changes you make are kept and sent once it lets this page in.');
  assert.equal(status().title, "the hub answers, but refused this page's connection", 'the tooltip agrees');
  assert.equal(status().down, true, 'still down: changes are kept, retries go on');

  running = false;                                          // the hub stops answering too
  timers.advance(500);
  await refuse();
  assert.equal(room.refused, false);
  assert.match(status().detail, /^The hub can't be reached\./);
  running = true;
  timers.advance(1000);
  await refuse();
  timers.advance(2000);
  await refuse();
  assert.equal(room.refused, true);
  timers.advance(4000);
  const socket = FakeSocket.made.at(-1);
  socket.onopen();
  socket.hear(welcome());
  assert.equal(room.refused, false, 'a welcome ends it');
  assert.equal(status().detail, '');

  // A socket that opened and was closed by the hub, or dropped after its welcome, asks nothing.
  const asked = probed.length;
  socket.onclose({ code: 1006 });
  await settle();
  assert.equal(probed.length, asked + 0, 'an outage after an open socket: no probe');
  timers.advance(250);
  FakeSocket.made.at(-1).onclose({ code: 1001, reason: 'shutting down' });
  await settle();
  assert.equal(probed.length, asked, 'the hub closed it itself: it is up, and says so');
  room.stop();
});

test("the probe asks the node's /healthz: an ok or another origin's opaque answer is a running hub, a proxy's 502 is not", async () => {
  const asked = [];
  const answering = (answer) => async (url, options) => { asked.push([url, options.mode, options.signal instanceof AbortSignal]); return answer; };
  assert.equal(await hubRunning('wss://b.example/pk/v1/rooms/r', answering({ ok: true, type: 'basic' })), true);
  assert.deepEqual(asked, [['https://b.example/pk/healthz', 'no-cors', true]], 'the node named, with a deadline');
  assert.equal(await hubRunning('ws://b:1/v1/rooms/r', answering({ ok: false, status: 0, type: 'opaque' })), true);
  assert.equal(await hubRunning('ws://a:1/v1/rooms/r', answering({ ok: false, status: 502, type: 'basic' })), false);
  assert.equal(await hubRunning('ws://a:1/v1/rooms/r', async () => { throw new TypeError('Failed to fetch'); }), false);
});

test('a room an admin deleted stops the page, which says so, instead of making the room again', () => {
  // A black-box pass (session 39): the page reconnected at once, and its hello made a new room of the
  // name from the seed, undoing the admin's delete unasked ("room reset on the hub").
  const { room, timers, notices } = online();
  room.edit([set(3, 'glasses', false)], { label: 'Toggle Glasses' });
  FakeSocket.made[0].onclose({ code: 1000, reason: 'room deleted' });
  const fatal = notices.find((n) => n.type === 'fatal');
  assert.equal(fatal?.code, 'room-deleted');
  assert.equal(fatal.message, 'An admin deleted this room and all of its history, so your change not sent yet was not '
    + 'made. Join again to start a new room with this name.');
  assert.equal(refusalText(fatal), fatal.message, 'the join screen says it as it is');
  assert.ok(!hasWireWords(fatal.message));
  timers.advance(60_000);
  assert.equal(FakeSocket.made.length, 1, 'no reconnect');
  assert.equal(room.link, 'offline');

  // Another close with 1000 (a redirect's, a drain's) is not a deletion.
  const other = online();
  FakeSocket.made[0].onclose({ code: 1000, reason: 'redirect' });
  assert.ok(!other.notices.some((n) => n.type === 'fatal'));
  other.timers.advance(1000);
  assert.equal(FakeSocket.made.length, 2, 'reconnected');
  other.room.stop();
});

test("only the newest probe's answer counts, and a token's renewal starts afresh", async () => {
  // A review (session 39): answers came in any order, so a slow "running" after a later "not running"
  // said the hub refused the page; and renew() kept the old connection's verdict.
  const timers = fakeTimers();
  FakeSocket.made = [];
  const answers = [];
  const room = new LiveRoom({ url: 'ws://a:8080/v1/rooms/r', user: 'ann', WebSocket: FakeSocket,
    timers: { setTimeout: timers.setTimeout, clearTimeout: timers.clearTimeout, now: () => timers.now },
    probe: () => new Promise((resolve) => answers.push(resolve)) });
  const settle = () => new Promise((r) => setTimeout(r, 0));
  room.start();
  for (const wait of [250, 500, 1000]) {
    FakeSocket.made.at(-1).onclose({ code: 1006 });
    timers.advance(wait);
  }
  FakeSocket.made.at(-1).onclose({ code: 1006 });
  assert.equal(answers.length, 4);
  answers[3](false);                                        // the newest: not running
  await settle();
  answers[0](true); answers[1](true); answers[2](true);     // older ones, late
  await settle();
  assert.equal(room.refused, false, 'late answers to older questions count for nothing');

  timers.advance(2000);
  FakeSocket.made.at(-1).onclose({ code: 1006 });
  answers[4](true);
  await settle();
  timers.advance(4000);
  FakeSocket.made.at(-1).onclose({ code: 1006 });
  answers[5](true);
  await settle();
  assert.equal(room.refused, true);
  room.stop();
  room.renew('new-token');
  assert.equal(room.refused, false, 'a renewal starts afresh');
  assert.equal(room.connection.refused, false);
  room.stop();
});

test('a silent connection gets a ping after HEARTBEAT_SECONDS and is given up after a second silent spell', () => {
  const { room, timers, socket, status } = online();
  timers.advance(HEARTBEAT_SECONDS * 1000);
  assert.deepEqual(socket.sent.at(-1), { type: 'ping' });
  socket.hear({ type: 'pong' });
  timers.advance(HEARTBEAT_SECONDS * 1000);
  assert.equal(room.link, 'online', 'an answered ping keeps it');
  assert.deepEqual(socket.sent.at(-1), { type: 'ping' });
  timers.advance(HEARTBEAT_SECONDS * 1000);
  assert.ok(socket.closed);
  assert.equal(room.link, 'offline');
  assert.equal(status().title, 'no answer from the hub');
});

test('a ping follows each welcome; its pong says how far the hub\'s clock is from the page\'s (hubNow)', () => {
  const { room, timers, socket } = online();
  assert.deepEqual(socket.sent.at(-1), { type: 'ping' }, 'a ping right after the welcome');
  assert.equal(room.hubNow(), timers.now, 'until the pong: the page\'s clock');
  timers.advance(40);
  socket.hear({ type: 'pong', time: 20 + 300_000 });   // the hub's clock is five minutes ahead
  assert.equal(room.hubNow(), timers.now + 300_000);
  socket.onclose({ code: 1006 });
  timers.advance(250);
  const next = FakeSocket.made[1];
  next.onopen();
  next.hear(welcome());
  assert.deepEqual(next.sent.at(-1), { type: 'ping' }, 'again on the new connection');
  assert.equal(room.hubNow(), timers.now + 300_000, 'the offset is kept until a new pong');
  timers.advance(100);
  next.hear({ type: 'pong' });                           // a hub that does not say its time
  assert.equal(room.hubNow(), timers.now + 300_000);
});

test('a session ended for its expired token carries on with a new one: resumed, and what was not acknowledged is sent again', () => {
  const { room, notices, socket } = online();
  room.edit([set(1, 'hairColor', 'red')], { label: 'Change Hair Color' });
  const submit = socket.sent.find((m) => m.type === 'submit');
  socket.hear({ type: 'error', code: 'unauthorized', message: 'the access token has expired; connect again with a new token' });
  socket.onclose?.({ code: 1008, reason: 'unauthorized' });
  assert.deepEqual(notices.filter((n) => n.type === 'fatal').map((n) => n.code), ['unauthorized']);
  assert.equal(room.link, 'offline');
  assert.equal(room.pending, 1, 'the unanswered edit is kept');
  assert.equal(FakeSocket.made.length, 1, 'no retry with the old token');

  room.renew('new-token');
  const again = FakeSocket.made[1];
  again.onopen();
  const hello = again.sent[0];
  assert.equal(hello.token, 'new-token');
  assert.equal(hello.resume, 's1');
  assert.equal(hello.since, 0);
  again.hear(welcome());
  const resent = again.sent.find((m) => m.type === 'submit');
  assert.deepEqual({ seq: resent.seq, ops: resent.ops }, { seq: submit.seq, ops: submit.ops });
  again.hear({ type: 'ack', seq: resent.seq, rev: 1, ops: resent.ops });
  assert.equal(room.pending, 0);
  assert.equal(room.link, 'online');
});

test('renew does nothing while the room is running', () => {
  const { room } = online();
  room.renew('other');
  assert.equal(FakeSocket.made.length, 1);
  assert.notEqual(room.token, 'other');
});

test('a hub that closed the connection itself is not called unreachable; its code and reason are said (session 27)', () => {
  const closed = connectionStatus({ link: 'offline', why: 'closed by the hub: 1011 store failed',
    closedBy: { code: 1011, reason: 'store failed' }, pending: 1 }, 0);
  assert.equal(closed.detail, 'The hub closed the connection (1011 store failed). Your change is kept and sent when it is back.');
  const gone = connectionStatus({ link: 'offline', why: 'the hub cannot be reached', pending: 1 }, 0);
  assert.match(gone.detail, /^The hub can't be reached\./);
});

test('the room keeps how the hub closed the connection as a value, not as words read back (session 29)', () => {
  const { room, timers, socket, status } = online();
  socket.onclose({ code: 1011, reason: 'store failed' });
  assert.deepEqual(room.connection.closedBy, { code: 1011, reason: 'store failed' });
  assert.equal(status().detail,
    'The hub closed the connection (1011 store failed). Changes you make are kept and sent when it is back.');
  // The next attempt fails without a close frame: the hub is unreachable now, whatever came before.
  timers.advance(250);
  FakeSocket.made[1].onclose({ code: 1006 });
  assert.equal(room.connection.closedBy, null);
  assert.match(status().detail, /^The hub can't be reached\./);
  // Back online: nothing is said about the connection.
  timers.advance(500);
  FakeSocket.made[2].onopen();
  FakeSocket.made[2].hear(welcome());
  assert.equal(room.link, 'online');
  assert.equal(room.connection.closedBy, null);
  assert.equal(status().detail, '');
});

test('a room opened over wss:// does not follow a redirect to ws://, and says why (session 38)', () => {
  const { room, timers, notices } = started('wss://a.example/v1/rooms/r');
  const first = FakeSocket.made[0];
  first.onopen();
  first.hear({ type: 'redirect', url: 'ws://b.example/v1/rooms/r' });
  timers.advance(60_000);
  assert.equal(FakeSocket.made.length, 1, `no connection to ${FakeSocket.made.map((s) => s.url)}`);
  assert.ok(first.closed);
  const fatal = notices.find((n) => n.type === 'fatal');
  assert.equal(fatal?.code, 'insecure-redirect');
  assert.match(fatal.message, /ws:\/\/b\.example\/v1\/rooms\/r, which is not encrypted/);
  assert.equal(room.connection.link, 'offline');

  // Over wss:// to another wss:// node, the redirect is followed at once.
  started('wss://a.example/v1/rooms/r', timers);
  FakeSocket.made[0].onopen();
  FakeSocket.made[0].hear({ type: 'redirect', url: 'wss://b.example/v1/rooms/r' });
  timers.advance(10);
  assert.deepEqual(FakeSocket.made.map((s) => s.url), ['wss://a.example/v1/rooms/r', 'wss://b.example/v1/rooms/r']);
});
