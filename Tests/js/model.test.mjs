// The model, names, text operations and wire parsing on their own.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NameLimit, PeopleModel, parsePerson, sameText } from '../../Web/js/core/model.js';
import { parseDiff, text, set } from '../../Web/js/core/diff.js';
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

test('names compare by canonical equivalence, as Swift strings do', () => {
  assert.equal(sameText('é', 'e\u0301'), true);
  const model = new PeopleModel([parsePerson({ ...Fixtures.p1, name: 'Ren\u00e9' })]);
  // Writing the decomposed form over the composed one changes nothing (Swift compares with ==).
  assert.equal(applyDiff(model, set(1, 'name', 'Rene\u0301')), null);
  assert.equal(model.get(1).name, 'Ren\u00e9');
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
    { op: 'text', tag: 1, edits: [] },
    { op: 'text', tag: 1, edits: [{ retain: 0 }] },
    { op: 'text', tag: 1, edits: [{ insert: '' }] },
    { op: 'text', tag: 1, edits: [{ retain: 1, insert: 'x' }] },
    { op: 'text', tag: 1, edits: [{ retain: 150 }, { delete: 51 }] },
    { op: 'insert', at: 0, person: { ...Fixtures.p1, likes: ['art'], dislikes: ['art'] } },
    { op: 'insert', at: 0, person: { ...Fixtures.p1, facialHair: ['beard', 'beard'] } },
    { op: 'insert', at: 0, person: { tag: 9, name: 'x' } },
    { op: 'move', tag: 1, to: 1.5 },
  ];
  for (const json of bad) assert.throws(() => parseDiff(json), (e) => e.code === 'invalid-op', JSON.stringify(json));
});
