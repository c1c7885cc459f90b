// The model, names, text operations and wire parsing on their own.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NameLimit, PeopleModel, parsePerson, sameText, samePerson, sameValue, makePerson } from '../../Web/js/core/model.js';
import { parseDiff, text, set, sameDiff } from '../../Web/js/core/diff.js';
import { applyText, invertText, transformText, textOp } from '../../Web/js/core/text.js';
import { applyBatch, applyDiff } from '../../Web/js/core/apply.js';
import { Fixtures } from './harness.mjs';

test('the name limit is 200 UTF-8 bytes of the NFC form', () => {
  assert.equal(NameLimit.allows('x'.repeat(200)), true);
  assert.equal(NameLimit.allows('x'.repeat(201)), false);
  // "é" decomposed is 3 bytes (e + U+0301), composed 2: 100 of them are 300 bytes as sent, 200 in NFC.
  assert.equal(NameLimit.allows('e\u0301'.repeat(100)), true);
  assert.equal(NameLimit.allows('é'.repeat(101)), false);
  assert.equal(NameLimit.nfcByteCount('😀'), 4);
});

test('text positions count Unicode scalars, not UTF-16 units', () => {
  const op = textOp([{ retain: 2 }, { insert: '!' }]);
  assert.equal(applyText(op, '😀a'), '😀a!');
  assert.equal(applyText(op, '😀'), null); // span 2 > 1 scalar
  assert.deepEqual(invertText(textOp([{ retain: 1 }, { delete: 1 }]), 'a😀b'), [{ retain: 1 }, { insert: '😀' }]);
});

test('text operations are canonical: merged, insert before delete, no trailing retain', () => {
  assert.deepEqual(textOp([{ retain: 1 }, { retain: 2 }, { delete: 1 }, { insert: 'a' }, { insert: 'b' }, { retain: 4 }]),
    [{ retain: 3 }, { insert: 'ab' }, { delete: 1 }]);
  assert.deepEqual(parseDiff({ op: 'text', tag: 1, edits: [{ retain: 3 }, { retain: 1 }] }), { op: 'text', tag: 1, edits: [] });
});

test('text TP1 at equal positions: the applied one goes first', () => {
  const a = textOp([{ retain: 1 }, { insert: 'A' }]);
  const b = textOp([{ retain: 1 }, { insert: 'B' }]);
  const left = applyText(transformText(b, a, false), applyText(a, 'xy'));
  const right = applyText(transformText(a, b, true), applyText(b, 'xy'));
  assert.equal(left, 'xABy');
  assert.equal(right, left);
});

test('names compare by code points, never by canonical equivalence (SEMANTICS §7 reading 7)', () => {
  assert.equal(sameText('é', 'e\u0301'), false);
  assert.equal(sameText('é', '\u00e9'), true);
  assert.equal(samePerson(makePerson({ tag: 1, name: '\u00e9' }), makePerson({ tag: 1, name: 'e\u0301' })), false);
  assert.equal(samePerson(makePerson({ tag: 1, name: '\u00e9' }), makePerson({ tag: 1, name: '\u00e9' })), true);
  assert.equal(sameValue('name', '\u00e9', 'e\u0301'), false);
  assert.equal(sameDiff(text(1, [{ insert: '\u00e9' }]), text(1, [{ insert: 'e\u0301' }])), false);
  assert.equal(sameDiff(set(1, 'name', '\u00e9'), set(1, 'name', 'e\u0301')), false);
  const model = new PeopleModel([parsePerson({ ...Fixtures.p1, name: 'Ren\u00e9' })]);
  // Writing the decomposed form over the composed one is a change, with an exact inverse.
  const done = applyDiff(model, set(1, 'name', 'Rene\u0301'));
  assert.deepEqual(done.inverse, set(1, 'name', 'Ren\u00e9'));
  assert.equal(model.get(1).name, 'Rene\u0301');
  assert.ok(!model.equals(new PeopleModel([parsePerson({ ...Fixtures.p1, name: 'Ren\u00e9' })])));
  applyDiff(model, done.inverse);
  assert.equal(model.get(1).name, 'Ren\u00e9');
  // Writing the same scalars changes nothing.
  assert.equal(applyDiff(model, set(1, 'name', 'Ren\u00e9')), null);
  // The limit is still measured on the NFC form: 100 × (e + U+0301) is 300 bytes as sent, 200 in NFC.
  assert.ok(applyDiff(model, set(1, 'name', 'e\u0301'.repeat(100))));
  assert.throws(() => applyDiff(model, set(1, 'name', 'e\u0301'.repeat(100) + 'x')), (e) => e.code === 'invalid-op');
});

test('a text edit that reaches nothing is valid and changes nothing (SEMANTICS §7 reading 6)', () => {
  for (const edits of [[], [{ retain: 3 }], [{ retain: 1 }, { retain: 2 }]]) {
    const diff = parseDiff({ op: 'text', tag: 1, edits });
    assert.deepEqual(diff, { op: 'text', tag: 1, edits: [] });
    const model = new PeopleModel(Fixtures.start);
    assert.equal(applyDiff(model, diff), null);
    assert.ok(model.equals(new PeopleModel(Fixtures.start)));
  }
  // Still a diff on a person: on an absent tag it is invalid. A trailing retain is dropped from the
  // canonical form (as in Swift), so a retain-only edit reads nothing; no count may reach past any name.
  assert.throws(() => applyDiff(new PeopleModel(Fixtures.start), parseDiff({ op: 'text', tag: 9, edits: [] })),
    (e) => e.code === 'invalid-op');
  assert.deepEqual(parseDiff({ op: 'text', tag: 1, edits: [{ retain: 4 }] }).edits, []);
  assert.throws(() => parseDiff({ op: 'text', tag: 1, edits: [{ retain: 401 }] }), (e) => e.code === 'invalid-op');
  // Transforms of and over the empty edit.
  assert.deepEqual(transformText([], textOp([{ retain: 1 }, { insert: 'x' }]), false), []);
  assert.deepEqual(transformText(textOp([{ retain: 1 }, { insert: 'x' }]), [], false), [{ retain: 1 }, { insert: 'x' }]);
});

test('a batch is atomic: an invalid diff rolls the earlier ones back', () => {
  const model = new PeopleModel(Fixtures.start);
  const before = model.clone();
  assert.throws(() => applyBatch(model, [set(1, 'hairColor', 'red'), text(2, [{ retain: 10 }, { insert: 'x' }])]),
    (e) => e.code === 'invalid-op');
  assert.ok(model.equals(before));
});

test('parsing rejects what the wire contract rejects, as invalid-op', () => {
  const bad = [
    { op: 'nope', tag: 1 },
    { op: 'set', tag: 1, field: 'hairColor', value: 'green' },
    { op: 'set', tag: 0, field: 'glasses', value: true },
    { op: 'set', tag: 1, field: 'name', value: 'a\ud800' },
    { op: 'text', tag: 1, edits: [{ retain: 0 }] },
    { op: 'text', tag: 1, edits: [{ insert: '' }] },
    { op: 'text', tag: 1, edits: [{ retain: 1, insert: 'x' }] },
    { op: 'text', tag: 1, edits: [{ retain: 350 }, { delete: 51 }] },
    { op: 'insert', at: 0, person: { ...Fixtures.p1, likes: ['art'], dislikes: ['art'] } },
    { op: 'insert', at: 0, person: { ...Fixtures.p1, facialHair: ['beard', 'beard'] } },
    { op: 'insert', at: 0, person: { tag: 9, name: 'x' } },
    { op: 'move', tag: 1, to: 1.5 },
  ];
  for (const json of bad) assert.throws(() => parseDiff(json), (e) => e.code === 'invalid-op', JSON.stringify(json));
});
