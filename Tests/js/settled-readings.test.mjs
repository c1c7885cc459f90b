// SEMANTICS §7 readings 4–7 (settled 2026-11-25), beyond the shared vectors ("§7.4 …" to "§7.7 …" in
// Tests/Vectors/undo.json): validity at the batch's base, undo of a move (or remove) whose old
// neighbours are both gone, text edits that reach nothing, names compared by code points.
// The Swift side is Tests/PeopleFuzzingTests/SettledReadingTests.swift and the vectors.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Harness, Fixtures as F } from './harness.mjs';
import { PeopleModel, makePerson, scalars } from '../../Web/js/core/model.js';
import { set, remove, move, insert, text, facialHair, diffJSON, diffTag, isPositional } from '../../Web/js/core/diff.js';
import { applyBatch, applyDiff } from '../../Web/js/core/apply.js';
import { transformBatch } from '../../Web/js/core/transform.js';
import { applyText, transformText, textOp } from '../../Web/js/core/text.js';
import { decodeClientMessage, decodeServerMessage, encode } from '../../Web/js/core/wire.js';
import * as R from './random.mjs';

const tags = (h) => h.people.map((p) => p.tag);
const names = (h) => h.people.map((p) => p.name);
const codePoints = (s) => scalars(s).map((c) => c.codePointAt(0).toString(16));

/** Sends a submit made on `base` and returns the reply (ack or error) under its seq. */
function submitAt(h, user, ops, base) {
  const message = { type: 'submit', seq: h.nextSeq(user), base, ops };
  const reply = h.send(message, user);
  assert.equal(reply?.seq, message.seq, `the reply names seq ${message.seq}: ${JSON.stringify(reply)}`);
  return reply;
}

/** Asserts that a submit made on `base` is refused with invalid-op and changes nothing. */
function refused(h, user, ops, base, message) {
  const before = h.room.model.clone();
  const revision = h.revision;
  const sent = h.log.length;
  const reply = submitAt(h, user, ops, base);
  assert.equal(reply.type, 'error', `${message}: expected invalid-op, got ${JSON.stringify(reply)}`);
  assert.equal(reply.code, 'invalid-op', message);
  assert.equal(h.revision, revision, `${message}: revision`);
  assert.ok(h.room.model.equals(before), `${message}: people`);
  assert.ok(h.log.slice(sent).every((a) => a.send.type !== 'ops'), `${message}: nothing is broadcast`);
  return reply;
}

describe('§7 reading 4: validity is decided at the batch\'s base', () => {
  test('text past the end of the 3-letter name at the base: invalid-op after a teammate removed the person', () => {
    const h = new Harness();
    h.submit('B', [remove(1)]);
    refused(h, 'A', [text(1, [{ retain: 50 }, { insert: 'x' }])], 0, 'retain 50 on "Ann"');
    // Valid at the base: a reported no-op, as before (§3 rule 2).
    const ack = h.submit('A', [text(1, [{ retain: 3 }, { insert: 'x' }])], { base: 0 });
    assert.equal(ack.rev, 1);
    assert.deepEqual(ack.ops, []);
    assert.deepEqual(ack.noop, [{ reason: 'targetRemoved', tag: 1, by: 'B' }]);
  });

  test('text past the end at the base: invalid-op after a teammate set a name long enough for it', () => {
    const h = new Harness();
    h.submit('B', [set(1, 'name', 'N'.repeat(60))]); // at the head, retain 50 would fit
    refused(h, 'A', [text(1, [{ retain: 50 }, { insert: 'x' }])], 0, 'retain 50 on "Ann"');
    const ack = h.submit('A', [text(1, [{ retain: 3 }, { insert: 'x' }])], { base: 0 });
    assert.deepEqual(ack.noop, [{ reason: 'overwritten', tag: 1, field: 'name', by: 'B' }]);
    assert.equal(h.person(1).name, 'N'.repeat(60));
  });

  test('a 300-byte set is invalid-op even after a teammate removed the person', () => {
    const h = new Harness();
    h.submit('B', [remove(1)]);
    refused(h, 'A', [set(1, 'name', 'x'.repeat(300))], 0, '300-byte name');
    refused(h, 'A', [set(1, 'name', 'e\u0301'.repeat(100) + 'xx')], 0, '202 bytes in NFC');
    // The limit is measured on the NFC form: 100 × (e + U+0301) is 300 bytes as sent, 200 in NFC.
    const ack = h.submit('A', [set(1, 'name', 'e\u0301'.repeat(100))], { base: 0 });
    assert.deepEqual(ack.noop, [{ reason: 'targetRemoved', tag: 1, by: 'B' }]);
  });

  test('two deletes in one batch, the second past the end the first left, are invalid-op', () => {
    const twoDeletes = [text(1, [{ delete: 2 }]), text(1, [{ delete: 2 }])]; // "Ann" → "n" → past the end
    refused(new Harness(), 'A', twoDeletes, 0, 'on the head');
    const h = new Harness();
    h.submit('B', [remove(1)]);
    refused(h, 'A', twoDeletes, 0, 'behind the head, person removed since');
    const g = new Harness();
    g.submit('B', [text(1, [{ retain: 3 }, { insert: 'abel' }])]); // "Annabel": both would fit at the head
    refused(g, 'A', twoDeletes, 0, 'behind the head, name lengthened since');
  });

  test('a diff on a person the batch itself removed earlier is invalid-op, on the head or behind it', () => {
    refused(new Harness(), 'A', [remove(3), set(3, 'glasses', false)], 0, 'on the head');
    const h = new Harness();
    h.submit('B', [set(2, 'glasses', true)]);
    refused(h, 'A', [remove(2), facialHair(2, 'beard', true)], 0, 'behind the head');
    const g = new Harness();
    g.submit('B', [remove(2)]); // rebased, both would be reported no-ops
    refused(g, 'A', [remove(2), set(2, 'hairColor', 'white')], 0, 'behind the head, removed by a teammate too');
    // A diff on a person inserted earlier in the batch is fine.
    const k = new Harness();
    k.submit('B', [remove(1)]);
    const ack = k.submit('A', [insert(F.person(4), 0), set(4, 'glasses', true), text(4, [{ retain: 3 }, { insert: '!' }])],
      { base: 0 });
    assert.equal(k.person(4).name, 'New!');
    assert.equal(ack.rev, 2);
  });

  test('a tag absent at the base is invalid-op though present now; one present at the base is valid though restored since', () => {
    const h = new Harness();
    const tag = h.room.users.get('B').tagBlocks[0].from;
    h.submit('B', [insert(F.person(tag, 'Bea'), 0)]);
    refused(h, 'A', [set(tag, 'glasses', true)], 0, 'inserted after the base');
    const g = new Harness();
    g.submit('B', [remove(2)]);
    g.undo('B'); // Joan is back, as she was at base 0
    const ack = g.submit('A', [set(2, 'glasses', true), text(2, [{ retain: 4 }, { insert: 'na' }])], { base: 0 });
    assert.equal(ack.rev, 3);
    assert.equal(g.person(2).name, 'Joanna');
    assert.equal(g.person(2).glasses, true);
  });

  test('the same batch on the same base gets the same verdict whatever teammates did meanwhile', () => {
    const invalid = [
      [text(1, [{ retain: 50 }, { insert: 'x' }])],
      [text(1, [{ delete: 2 }]), text(1, [{ delete: 2 }])],
      [set(1, 'name', 'y'.repeat(201))],
      [text(1, [{ retain: 3 }, { insert: 'y'.repeat(198) }])],
      [remove(1), set(1, 'glasses', true)],
      [remove(1), text(1, [])],
      [set(1, 'glasses', true), remove(3), move(3, 0)],
      [set(9, 'glasses', true)],
    ];
    const valid = [
      [text(1, [{ retain: 3 }, { insert: 'y'.repeat(197) }])],
      [text(1, [{ delete: 2 }]), text(1, [{ delete: 1 }])],
      [set(1, 'name', 'é'.repeat(100)), text(1, [{ retain: 100 }])],
      [remove(1), set(2, 'glasses', true)],
      [text(1, [])],
    ];
    const meanwhile = {
      nothing: [],
      removed: [[remove(1)]],
      renamed: [[set(1, 'name', 'Q'.repeat(150))]],
      typed: [[text(1, [{ delete: 3 }])], [text(1, [{ insert: 'Zed' }])]],
      shortened: [[set(1, 'name', 'A')]],
      moved: [[move(1, 2), remove(3)]],
      restored: [[remove(1)], 'undo'],
    };
    for (const [what, steps] of Object.entries(meanwhile)) {
      for (const batch of [...invalid, ...valid]) {
        const h = new Harness();
        for (const step of steps) {
          if (step === 'undo') h.undo('B');
          else h.submit('B', step);
        }
        const context = `${what}: ${JSON.stringify(batch.map(diffJSON))}`;
        if (invalid.includes(batch)) refused(h, 'A', batch, 0, context);
        else {
          const reply = submitAt(h, 'A', batch, 0);
          // None of these meets the one refusal left behind the head (a rebased name over the limit).
          assert.equal(reply.type, 'ack', `${context}: ${JSON.stringify(reply)}`);
          assert.equal(h.room.model.invariantViolation(), null);
        }
      }
    }
  });

  test('behind the head, a name pushed over the limit by concurrent typing is still invalid-op (§3 rule 6)', () => {
    const h = new Harness({ people: [makePerson({ tag: 1, name: 'x'.repeat(190) })] });
    h.submit('B', [text(1, [{ retain: 190 }, { insert: 'z'.repeat(8) }])]); // 198 bytes
    // Valid at the base (198 bytes there), over the limit rebased (206).
    refused(h, 'A', [text(1, [{ retain: 190 }, { insert: 'y'.repeat(8) }])], 0, 'rebased over the limit');
    assert.equal(h.person(1).name, 'x'.repeat(190) + 'z'.repeat(8));
  });

  test('validity is decided at the base, several revisions back (as RoomProtocolTests.swift)', () => {
    const h = new Harness();
    h.submit('B', [text(2, [{ retain: 4 }, { insert: 'ne' }])], { base: 0 }); // Joan → Joanne
    h.submit('B', [set(2, 'hairColor', 'gray')], { base: 1 });
    h.submit('B', [remove(2)], { base: 2 });
    // At base 0 Joan has 4 letters: a span of 6 is past the end there, whatever happened since.
    refused(h, 'A', [text(2, [{ retain: 6 }, { insert: '!' }])], 0, 'span 6 on "Joan"');
    // At base 1 it is Joanne: the same span is valid there, and a no-op now (she was removed).
    const ack = h.submit('A', [text(2, [{ retain: 6 }, { insert: '!' }])], { base: 1 });
    assert.equal(ack.rev, 3);
    assert.deepEqual(ack.ops, []);
    assert.deepEqual(ack.noop, [{ reason: 'targetRemoved', tag: 2, by: 'B' }]);
    // A diff on a person the batch itself removed earlier, on the head.
    refused(h, 'A', [remove(1), set(1, 'glasses', true)], h.revision, 'on the head');
    assert.ok(h.person(1) !== undefined);
    assert.equal(h.revision, 3);
  });

  test('concurrent typing that would push a name over the limit refuses the later batch only', () => {
    const long = makePerson({ tag: 1, name: 'x'.repeat(150) });
    const typeA = [text(1, [{ insert: 'a'.repeat(40) }])];
    const typeB = [text(1, [{ retain: 150 }, { insert: 'b'.repeat(40) }])];
    const h = new Harness({ people: [long] });
    assert.equal(h.submit('A', typeA, { base: 0 }).rev, 1);
    refused(h, 'B', typeB, 0, 'rebased over the limit');
    assert.equal(scalars(h.person(1).name).length, 190);
    const alone = new Harness({ people: [long] });
    assert.equal(alone.submit('B', typeB, { base: 0 }).rev, 1);
  });
});

describe('§7 reading 5: undo of a move (or remove) whose old neighbours are both gone', () => {
  test('the case from the issue: the move goes back to its rebased gap, never a silent no-op', () => {
    const seed = PeopleModel.tutorialSeed(); // Bob 1, Joan 2, Sam 3
    const h = new Harness({ people: seed.people, users: ['ann', 'bob'] });
    h.submit('ann', [move(2, 2)], { label: 'Move Person' });
    assert.deepEqual(names(h), ['Bob', 'Sam', 'Joan']);
    h.submit('bob', [remove(1), remove(3)]);
    const x = makePerson({ tag: 104, name: 'X' });
    const y = makePerson({ tag: 105, name: 'Y' });
    h.submit('bob', [insert(x, 0)]);
    h.submit('bob', [insert(y, 2)]);
    assert.deepEqual(names(h), ['X', 'Joan', 'Y']);
    const undone = h.undo('ann');
    assert.equal(undone.rev, 5);
    assert.deepEqual(undone.skipped, []);
    assert.deepEqual(undone.ops, [move(2, 2)]);
    assert.deepEqual(names(h), ['X', 'Y', 'Joan']);
    // Its redo puts Joan back where the undo found her.
    h.redo('ann');
    assert.deepEqual(names(h), ['X', 'Joan', 'Y']);
  });

  test('an older move (before the neighbours went) is rebased over everything positional since', () => {
    const h = new Harness({ people: [...F.start, F.person(4, 'Dee')] });
    h.submit('A', [move(2, 3)]); // [1,3,4,2]: 2 was between 1 and 3
    h.submit('B', [remove(1), remove(3)]); // [4,2]
    h.undo('A');
    assert.deepEqual(tags(h), [2, 4]);
  });

  test('undo of a remove, neighbours gone: the gap rebased like a submit\'s insert (applied inserts first at a tie)', () => {
    const people = [1, 2, 3, 4].map((t) => F.person(t, `P${t}`));
    const h = new Harness({ people });
    h.submit('A', [remove(2)]); // [1,3,4]; 2 was at gap 1, between 1 and 3
    h.submit('B', [remove(1), remove(3)]); // [4]
    const x = h.room.users.get('B').tagBlocks[0].from;
    const y = x + 1;
    h.submit('B', [insert(F.person(x, 'X'), 0)]); // [X,4]: X lands at the gap 2 had
    h.submit('B', [insert(F.person(y, 'Y'), 2), move(4, 2)]); // [X,4,Y] then [X,Y,4]
    const undone = h.undo('A');
    assert.deepEqual(undone.skipped, []);
    assert.deepEqual(tags(h), [x, 2, y, 4]);
  });

  test('a part skipped in the same undo shifts nothing; an applied one shifts the parts after it', () => {
    const people = [1, 2, 3, 4, 5].map((t) => F.person(t, `P${t}`));
    const h = new Harness({ people });
    h.submit('A', [move(3, 4), move(1, 4)]); // [1,2,4,5,3] then [2,4,5,3,1]
    h.submit('B', [move(1, 0)]); // [1,2,4,5,3]: the move of 1 is B's now
    h.submit('B', [remove(2), remove(4)]); // [1,5,3]: 3's old neighbours (2 and 4) are gone
    const undone = h.undo('A');
    assert.deepEqual(undone.skipped, [{ reason: 'overwritten', tag: 1, field: 'position', by: 'B' }]);
    assert.deepEqual(tags(h), [1, 3, 5]);
    // With both parts applied (nobody moved 1), 1 goes back first and 3 lands after it.
    const g = new Harness({ people });
    g.submit('A', [move(3, 4), move(1, 4)]); // [2,4,5,3,1]
    g.submit('B', [remove(2), remove(4)]); // [5,3,1]
    const both = g.undo('A');
    assert.deepEqual(both.skipped, []);
    assert.deepEqual(tags(g), [1, 3, 5]);
  });

  test('property: the undo lands exactly where a concurrent submit of the inverse move would', () => {
    let compared = 0;
    let moved = 0;
    for (let seed = 1; seed <= 400; seed++) {
      const rng = new R.SeededRandom(seed);
      const start = R.model(rng, 4, 8).people;
      const undoing = new Harness({ people: start });
      const submitting = new Harness({ people: start });
      const both = (f) => [undoing, submitting].map(f);
      // A moves a person who has both neighbours.
      const count = start.length;
      const from = rng.int(1, count - 2);
      const p = start[from].tag;
      const old = { before: start[from - 1].tag, after: start[from + 1].tag };
      let to = rng.int(0, count - 2);
      if (to >= from) to += 1;
      both((h) => h.submit('A', [move(p, to)]));
      const r = undoing.revision;
      // B edits at random, never moving or removing p, and removes both old neighbours.
      const next = { tag: undoing.room.users.get('B').tagBlocks[0].from };
      const neighboursGo = rng.int(0, 3);
      for (let n = 0; n < 4; n++) {
        if (n === neighboursGo) {
          both((h) => h.submit('B', [old.before, old.after].filter((t) => h.room.model.contains(t)).map(remove)));
          continue;
        }
        const ops = R.batch(undoing.room.model, next, rng, 1, 4)
          .filter((d) => !(diffTag(d) === p && isPositional(d))
            && diffTag(d) !== old.before && diffTag(d) !== old.after);
        both((h) => h.send({ type: 'submit', seq: h.nextSeq('B'), base: h.revision, ops }, 'B'));
      }
      assert.ok(undoing.room.model.equals(submitting.room.model));
      // Undo on one side; on the other, A sends the inverse move as made on revision r.
      const undone = undoing.undo('A');
      const reply = submittingInverse(submitting, p, from, r);
      assert.deepEqual(undone.skipped, [], `seed ${seed}`);
      assert.equal(reply.type, 'ack', `seed ${seed}`);
      assert.deepEqual(tags(undoing), tags(submitting), `seed ${seed}`);
      compared += 1;
      if (undone.rev !== undefined) moved += 1;
    }
    assert.equal(compared, 400);
    assert.ok(moved > 200, `only ${moved} undos moved someone`);
  });
});

function submittingInverse(h, tag, from, base) {
  return submitAt(h, 'A', [move(tag, from)], base);
}

describe('§7 reading 6: text edits that reach nothing', () => {
  test('an empty text edit round-trips through the wire codec, both ways', () => {
    const submit = { type: 'submit', seq: 1, base: 0, ops: [text(1, [])] };
    const frame = encode(submit);
    assert.equal(frame, '{"type":"submit","seq":1,"base":0,"ops":[{"op":"text","tag":1,"edits":[]}]}');
    assert.deepEqual(decodeClientMessage(frame), submit);
    // A retain-only edit decodes to the empty canonical form, which comes back from its own encoding.
    const retained = decodeClientMessage('{"type":"submit","seq":1,"base":0,"ops":[{"op":"text","tag":1,"edits":[{"retain":3}]}]}');
    assert.ok(encode(retained).includes('"edits":[]'));
    assert.deepEqual(decodeClientMessage(encode(retained)), retained);
    // Hub frames too.
    const ops = { type: 'ops', rev: 2, author: 'A', kind: 'edit', ops: [text(1, []), set(1, 'glasses', true)] };
    assert.deepEqual(decodeServerMessage(encode(ops)), ops);
    const ack = { type: 'ack', seq: 1, rev: 1, ops: [text(2, [])], noop: [] };
    assert.deepEqual(decodeServerMessage(encode(ack)), ack);
  });

  test('the room acks an empty text edit as changing nothing; with a change beside it, only the change is a revision', () => {
    const h = new Harness();
    for (const edits of [[], [{ retain: 3 }], [{ retain: 1 }, { retain: 1 }]]) {
      const ack = h.submit('A', [text(1, edits)]);
      assert.deepEqual(ack, { type: 'ack', seq: ack.seq, rev: 0, ops: [] });
    }
    assert.equal(h.room.stacks('A').undo.length, 0);
    assert.ok(h.log.every((a) => a.send.type !== 'ops'));
    const ack = h.submit('A', [text(1, []), set(1, 'glasses', true)]);
    assert.deepEqual(ack.ops, [set(1, 'glasses', true)]);
    h.undo('A');
    assert.equal(h.person(1).glasses, false);
    assert.equal(h.person(1).name, 'Ann');
  });

  test('an empty text edit rebased over a teammate\'s typing stays empty; over a set it is a reported no-op', () => {
    assert.deepEqual(transformBatch([text(1, [])], [text(1, [{ insert: 'x' }])], [1]).diffs, [text(1, [])]);
    const h = new Harness();
    h.submit('B', [set(1, 'name', 'Bea')]);
    const ack = h.submit('A', [text(1, [])], { base: 0 });
    assert.deepEqual(ack.noop, [{ reason: 'overwritten', tag: 1, field: 'name', by: 'B' }]);
  });
});

describe('§7 reading 7: names compare by code points', () => {
  test('a normalization-only text edit (e + U+0301 → é) is applied, broadcast and undoable', () => {
    const h = new Harness({ people: [makePerson({ tag: 1, name: 'Rene\u0301' })] });
    const edit = text(1, [{ retain: 3 }, { insert: '\u00e9' }, { delete: 2 }]);
    const ack = h.submit('A', [edit], { label: 'Typing' });
    assert.equal(ack.rev, 1);
    assert.deepEqual(ack.ops, [edit]);
    assert.deepEqual(codePoints(h.person(1).name), ['52', '65', '6e', 'e9']);
    const broadcast = h.log.find((a) => a.send.type === 'ops' && a.to.includes(h.sessions.get('B')));
    assert.deepEqual(broadcast.send.ops, [edit]);
    const undone = h.undo('A');
    assert.equal(undone.rev, 2);
    assert.deepEqual(codePoints(h.person(1).name), ['52', '65', '6e', '65', '301']);
    const redone = h.redo('A');
    assert.equal(redone.rev, 3);
    assert.equal(h.person(1).name, 'Ren\u00e9');
    // And a whole-name set to the other form is a change too.
    const set1 = h.submit('A', [set(1, 'name', 'Rene\u0301')]);
    assert.equal(set1.rev, 4);
    assert.equal(h.submit('A', [set(1, 'name', 'Rene\u0301')]).rev, 4); // the same scalars: nothing
  });

  test('TP1 holds for a normalization-only edit against a concurrent edit of the same name', () => {
    const start = new PeopleModel([makePerson({ tag: 1, name: 'e\u0301' })]);
    const a = [text(1, [{ delete: 2 }, { insert: '\u00e9' }])]; // same name, other scalars
    const b = [text(1, [{ retain: 2 }, { insert: 'a' }])]; // typed at the end
    const left = start.clone();
    assert.equal(applyBatch(left, a).applied.length, 1, 'a is a change');
    assert.ok(!left.equals(start), 'the models differ by code points');
    applyBatch(left, transformBatch(b, a, start.tags).diffs, 'skip');
    const right = start.clone();
    applyBatch(right, b);
    applyBatch(right, transformBatch(a, b, start.tags, true).diffs, 'skip');
    assert.ok(left.equals(right), `${codePoints(left.get(1).name)} vs ${codePoints(right.get(1).name)}`);
    assert.deepEqual(codePoints(left.get(1).name), ['e9', '61']);
    // The inverse restores the exact scalars.
    const back = start.clone();
    const done = applyDiff(back, a[0]);
    applyDiff(back, done.inverse);
    assert.deepEqual(codePoints(back.get(1).name), ['65', '301']);
    // Through the room: A's edit and B's typing, both made on revision 0.
    const h = new Harness({ people: start.people });
    h.submit('A', a);
    h.submit('B', b, { base: 0 });
    assert.deepEqual(codePoints(h.person(1).name), ['e9', '61']);
    const g = new Harness({ people: start.people });
    g.submit('B', b);
    g.submit('A', a, { base: 0 });
    assert.deepEqual(codePoints(g.person(1).name), ['e9', '61']);
  });

  test('property: TP1 for text edits over names built of e, U+0301, é and a', () => {
    const pool = ['e', '\u0301', '\u00e9', 'a'];
    const word = (rng, low) => {
      let s = '';
      for (let n = rng.int(low, 4); n > 0; n--) s += rng.pick(pool);
      return s;
    };
    const edits = (name, rng) => {
      const length = scalars(name).length;
      const out = [];
      let position = 0;
      for (let n = rng.int(1, 3); n > 0; n--) {
        const skip = rng.int(0, length - position);
        out.push({ retain: skip });
        position += skip;
        if (rng.chance(0.5) || position === length) out.push({ insert: word(rng, 1) });
        else {
          const count = rng.int(1, length - position);
          out.push({ delete: count });
          position += count;
        }
      }
      return textOp(out);
    };
    for (let seed = 1; seed <= 3000; seed++) {
      const rng = new R.SeededRandom(seed);
      const name = word(rng, 0);
      const a = edits(name, rng);
      const b = edits(name, rng);
      const left = applyText(transformText(b, a, false), applyText(a, name));
      const right = applyText(transformText(a, b, true), applyText(b, name));
      assert.equal(left, right, `seed ${seed}: ${codePoints(name)} a=${JSON.stringify(a)} b=${JSON.stringify(b)}`);
      // Applied as diffs, with the model's no-change rule (code points): still convergent.
      const start = new PeopleModel([makePerson({ tag: 1, name })]);
      const l = start.clone();
      applyBatch(l, [text(1, a)]);
      applyBatch(l, transformBatch([text(1, b)], [text(1, a)], [1]).diffs, 'skip');
      const r = start.clone();
      applyBatch(r, [text(1, b)]);
      applyBatch(r, transformBatch([text(1, a)], [text(1, b)], [1], true).diffs, 'skip');
      assert.ok(l.equals(r), `seed ${seed}`);
    }
  });
});
