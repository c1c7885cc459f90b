// The frames of HISTORY.md on the wire (ClientMessage+JSON.swift, ServerMessage+JSON.swift): new client
// messages (`undo` with `entry`, `restore`, `log`, `blame`), new server messages (`restored`, `log`,
// `blame`) and fields (`time`, `entry`, the revision kind `restore`), and the new error code `no-entry`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeClientMessage, decodeServerMessage, encode } from '../../Web/js/core/wire.js';
import { PeopleModel, makePerson } from '../../Web/js/core/model.js';
import { set, remove, insert, move, text } from '../../Web/js/core/diff.js';
import { Harness } from './harness.mjs';

const bad = (e) => e.code === 'bad-message';

/**
 * A decoded message as Swift encodes it: a decoded `ack` always has `noop` (an array, as Swift's
 * `Ack.noop`), which the encoder leaves out when empty.
 */
function swiftFrame(m) {
  if (m.type === 'ack' && m.noop?.length === 0) {
    const { noop, ...rest } = m;
    return encode(rest);
  }
  return encode(m);
}
/** A message as the decoder gives it back (an ack's empty `noop` present). */
const decoded = (m) => (m.type === 'ack' && m.noop === undefined ? { ...m, noop: [] } : m);

test('client messages of the history round-trip', () => {
  const messages = [
    { type: 'undo', seq: 3, entry: 12 },
    { type: 'undo', seq: 4, scope: 2 },
    { type: 'redo', seq: 5 },
    { type: 'restore', seq: 6, rev: 0 },
    { type: 'restore', seq: 7, rev: 41, label: 'Back to Monday' },
    { type: 'log', limit: 50 },
    { type: 'log', seq: 9, before: 120, limit: 20, tag: 3 },
    { type: 'blame', tag: 2 },
    { type: 'blame', seq: 10, tag: 2 },
  ];
  for (const m of messages) assert.deepEqual(decodeClientMessage(encode(m)), m, encode(m));
});

test('client messages: defaults and refusals as Swift decodes them', () => {
  assert.deepEqual(decodeClientMessage('{"type":"log"}'), { type: 'log', limit: 50 }, 'the default limit');
  // The limit's bounds are the room's check (an error answer), not the decoder's.
  assert.deepEqual(decodeClientMessage('{"type":"log","limit":500}'), { type: 'log', limit: 500 });
  assert.deepEqual(decodeClientMessage('{"type":"undo","seq":1,"entry":null}'), { type: 'undo', seq: 1 });
  for (const frame of [
    '{"type":"undo","seq":1,"entry":1,"scope":2}', // entry with scope
    '{"type":"redo","seq":1,"entry":1}', // redo with entry
    '{"type":"undo","seq":1,"entry":"1"}',
    '{"type":"restore","seq":1}', // no rev
    '{"type":"restore","rev":1}', // no seq
    '{"type":"restore","seq":1,"rev":1.5}',
    '{"type":"log","before":"9"}',
    '{"type":"log","limit":2.5}',
    '{"type":"blame","seq":1}', // no tag
  ]) assert.throws(() => decodeClientMessage(frame), bad, frame);
});

const bob = PeopleModel.tutorialSeed().people[0];

test('server messages of the history round-trip, in Swift\'s member order', () => {
  const frames = [
    '{"type":"ack","seq":1,"rev":4,"time":1732500000123,"ops":[{"op":"set","tag":1,"field":"glasses","value":true}]}',
    '{"type":"ack","seq":2,"rev":0,"ops":[]}',
    '{"type":"ops","rev":5,"time":1732500000456,"author":"dana","kind":"restore","ops":[{"op":"remove","tag":204}],"label":"Restore to revision 0"}',
    '{"type":"ops","rev":6,"author":"ann","kind":"undo","ops":[],"seq":3}',
    '{"type":"undone","seq":4,"rev":7,"time":1732500000789,"ops":[{"op":"set","tag":1,"field":"hairColor","value":"brown"}],"label":"Hair color","skipped":[],"entry":1}',
    '{"type":"undone","seq":5,"ops":[],"label":"Hair color","skipped":[{"reason":"overwritten","tag":1,"field":"hairColor","by":"bob"}],"entry":1}',
    '{"type":"redone","seq":6,"rev":8,"time":1,"ops":[],"skipped":[]}',
    '{"type":"restored","seq":7,"rev":9,"time":1732500001000,"ops":[{"op":"move","tag":3,"to":0}],"label":"Restore to revision 2"}',
    '{"type":"restored","seq":8,"ops":[],"label":"Restore to revision 0"}',
    '{"type":"log","seq":9,"entries":[{"rev":2,"time":2000,"author":"ann","kind":"edit","label":"Eye color","ops":[{"op":"set","tag":1,"field":"eyeColor","value":"green"}],"entry":2},{"rev":1,"author":"bob","kind":"restore","ops":[]}],"more":true}',
    '{"type":"log","entries":[],"more":false}',
    `{"type":"blame","seq":3,"tag":1,"created":{"user":null,"rev":0},"fields":{"name":{"user":null,"rev":0},"hairColor":{"user":"bob","rev":2,"time":2000},"hairLength":{"user":null,"rev":0},"eyeColor":{"user":null,"rev":0},"glasses":{"user":null,"rev":0},"position":{"user":"ann","rev":4,"time":4000},"facialHair":{"mustache":{"user":"ann","rev":3,"time":3000},"beard":{"user":null,"rev":0}},"preference":{"sports":{"user":null,"rev":0},"politics":{"user":"carl","rev":5,"time":5000}}}}`,
    '{"type":"blame","tag":7,"created":{"user":"ann","rev":1,"time":10},"fields":{"facialHair":{},"preference":{}}}',
    '{"type":"error","seq":4,"code":"no-entry","message":"entry 1 is not on bob\'s undo stack"}',
  ];
  for (const frame of frames) {
    const m = decodeServerMessage(frame);
    assert.equal(swiftFrame(m), frame, 'decoded, the frame encodes back byte for byte');
    assert.deepEqual(decodeServerMessage(encode(m)), m);
  }
  const insertFrame = JSON.stringify({ type: 'restored', seq: 1, rev: 2, time: 3, ops: [insert(bob, 1), move(2, 0), remove(3),
    text(1, [{ retain: 1 }, { insert: 'x' }])], label: 'L' });
  assert.equal(encode(decodeServerMessage(insertFrame)), insertFrame);
});

test('server messages: a blame is made canonical; what Swift refuses, the client refuses', () => {
  // Members in any order come back in Swift's: fields, then facialHair and preference in vocabulary order.
  const shuffled = decodeServerMessage('{"fields":{"preference":{"food":{"rev":1,"user":"a"},"sports":{"user":"b","rev":2}},"position":{"user":null,"rev":0}},"created":{"rev":0},"tag":1,"type":"blame"}');
  assert.equal(encode(shuffled), '{"type":"blame","tag":1,"created":{"user":null,"rev":0},"fields":{"position":{"user":null,"rev":0},"facialHair":{},"preference":{"sports":{"user":"b","rev":2},"food":{"user":"a","rev":1}}}}');
  // facialHair / preference that are not objects read as none (as Swift); unknown fields are ignored.
  assert.deepEqual(decodeServerMessage('{"type":"blame","tag":1,"created":{"rev":0},"fields":{"facialHair":[],"nose":1}}').fields,
    { facialHair: {}, preference: {} });
  for (const frame of [
    '{"type":"ops","rev":1,"author":"a","kind":"rewind","ops":[]}', // unknown kind
    '{"type":"ack","seq":1,"rev":1,"time":"now","ops":[]}',
    '{"type":"undone","seq":1,"ops":[],"skipped":[],"entry":"1"}',
    '{"type":"restored","seq":1,"ops":[]}', // no label
    '{"type":"restored","seq":1,"label":"x"}', // no ops
    '{"type":"log","entries":[]}', // no more
    '{"type":"log","entries":[{"rev":1,"author":"a","kind":"edit"}],"more":false}', // an entry without ops
    '{"type":"log","entries":[{"rev":1,"author":"a","kind":"undo!","ops":[]}],"more":false}',
    '{"type":"blame","tag":1,"fields":{}}', // no created
    '{"type":"blame","tag":1,"created":{"rev":0}}', // no fields
    '{"type":"blame","tag":1,"created":{"user":null},"fields":{}}', // a writer without rev
    '{"type":"blame","tag":1,"created":{"rev":0},"fields":{"facialHair":{"moustache":{"rev":1}}}}', // unknown style
    '{"type":"blame","tag":1,"created":{"rev":0},"fields":{"preference":{"cats":{"rev":1}}}}', // unknown topic
    '{"type":"blame","tag":1,"created":{"rev":0},"fields":{"name":null,"glasses":{"user":3,"rev":1}}}',
  ]) assert.throws(() => decodeServerMessage(frame), bad, frame);
});

test('every frame a room sends through selective undo, restore, log and blame decodes to itself', () => {
  const h = new Harness({ people: PeopleModel.tutorialSeed().people, users: ['ann', 'bob'] });
  const kim = makePerson({ tag: h.room.users.get('ann').tagBlocks[0].from, name: 'Kim', facialHair: ['goatee'], likes: ['art'] });
  h.submit('ann', [set(1, 'hairColor', 'red')], { label: 'Hair' });
  h.submit('ann', [insert(kim, 1), move(3, 0)], { label: 'Add' });
  h.submit('bob', [remove(2)]);
  h.undoEntry('ann', 1);
  h.undoEntry('ann', 99);
  h.restore('bob', 1);
  h.restore('bob', 1);
  h.undo('bob');
  h.redo('bob');
  const ann = h.sessions.get('ann');
  h.log.push(...h.room.receive({ type: 'log', seq: 40, limit: 3 }, ann, 0));
  h.log.push(...h.room.receive({ type: 'log', tag: kim.tag, limit: 50 }, ann, 0));
  h.log.push(...h.room.receive({ type: 'blame', seq: 41, tag: kim.tag }, ann, 0));
  h.log.push(...h.room.receive({ type: 'blame', tag: 1 }, ann, 0));
  h.log.push(...h.room.receive({ type: 'blame', tag: 2 }, ann, 0));
  const types = new Set();
  for (const { send: m } of h.log) {
    if (!m) continue;
    types.add(m.type === 'ops' ? `ops/${m.kind}` : m.type);
    assert.deepEqual(decodeServerMessage(encode(m)), decoded(m), encode(m));
    assert.equal(swiftFrame(decodeServerMessage(encode(m))), encode(m));
  }
  for (const t of ['ack', 'undone', 'redone', 'restored', 'log', 'blame', 'error', 'ops/restore', 'ops/undo', 'history']) {
    assert.ok(types.has(t), `no ${t} was sent`);
  }
});
