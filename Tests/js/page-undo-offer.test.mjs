// What the Undo and Redo buttons offer while requests are queued (Web/js/core/undo-offer.js): the label
// is always that of the step the next press takes back. Checked case by case, and against the room's
// own stacks (Tests/js/server/room.mjs, the hub's twin) over random offline sessions.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { undoOffer } from '../../Web/js/core/undo-offer.js';
import { ClientSync } from '../../Web/js/core/client-sync.js';
import { set, text } from '../../Web/js/core/diff.js';
import { Harness, Fixtures } from './harness.mjs';
import { SeededRandom } from './random.mjs';

const summary = (undoLabel, redoLabel) => ({ canUndo: undoLabel != null, canRedo: redoLabel != null,
  ...(undoLabel != null ? { undoLabel } : {}), ...(redoLabel != null ? { redoLabel } : {}) });

/** ann's ClientSync, welcomed with `history`, then cut off: everything she does waits in the outbox. */
function offline(history = summary('Change Eye Color')) {
  const sync = new ClientSync('ann');
  sync.connect();
  sync.receive({ type: 'welcome', session: 's1', user: 'ann', role: 'editor', rev: 1, people: Fixtures.start,
    tags: { from: 4, to: 103 }, history, presence: [] });
  sync.disconnected();
  return sync;
}

test('after one undo of several queued edits, Undo names the next queued edit, not an acked one', () => {
  const sync = offline();
  sync.edit([set(1, 'hairColor', 'red')], { label: 'Change Hair Color' });
  sync.edit([set(1, 'glasses', true)], { label: 'Toggle Glasses' });
  assert.deepEqual(undoOffer(sync).undo, { can: true, label: 'Toggle Glasses' });
  sync.undo();
  assert.deepEqual(undoOffer(sync).undo, { can: true, label: 'Change Hair Color' },
    'the next press takes back the hair color, still queued');
  assert.deepEqual(undoOffer(sync).redo, { can: true, label: 'Toggle Glasses' }, 'and Redo puts the glasses back');
  sync.undo();
  assert.deepEqual(undoOffer(sync).undo, { can: true, label: 'Change Eye Color' }, 'then the hub\'s own top');
  sync.undo();
  assert.deepEqual(undoOffer(sync).undo, { can: true, label: null },
    'below the hub\'s top the step is not known: no name rather than a wrong one');
});

test('a queued edit clears Redo; a redo queued after an undo offers that step again', () => {
  const sync = offline(summary('Change Eye Color', 'Move Person'));
  assert.deepEqual(undoOffer(sync).redo, { can: true, label: 'Move Person' });
  sync.edit([set(2, 'glasses', true)], { label: 'Toggle Glasses' });
  assert.deepEqual(undoOffer(sync).redo, { can: false, label: null }, 'the edit will clear the redo stack');
  sync.undo();
  sync.redo();
  assert.deepEqual(undoOffer(sync), { undo: { can: true, label: 'Toggle Glasses' }, redo: { can: false, label: null } });
});

test('an undo scoped to a person takes back the newest queued edit of that person', () => {
  const sync = offline();
  sync.edit([set(1, 'hairColor', 'red')], { label: 'Change Hair Color' });
  sync.edit([set(2, 'glasses', true)], { label: 'Toggle Glasses' });
  sync.undo(1);
  assert.deepEqual(undoOffer(sync).undo, { can: true, label: 'Toggle Glasses' });
  sync.undo(1);
  assert.deepEqual(undoOffer(sync).undo, { can: true, label: 'Toggle Glasses' },
    'a scoped undo reaching the hub\'s steps leaves the queued glasses on top');
  sync.undo();
  assert.deepEqual(undoOffer(sync).undo, { can: true, label: null }, 'what the scoped one took is not known');
});

test('a step taken off the hub\'s top is not known to touch anyone: a scoped press or a selective undo leaves the tops unknown', () => {
  let sync = offline(summary('Change Eye Color'));
  sync.undo();
  assert.deepEqual(undoOffer(sync).redo, { can: true, label: 'Change Eye Color' });
  sync.redo(2);
  assert.deepEqual(undoOffer(sync), { undo: { can: true, label: null }, redo: { can: true, label: null } },
    'Joan\'s redo may or may not put back the eye color: neither top is known by name');
  sync = offline(summary('Change Eye Color'));
  sync.edit([set(1, 'hairColor', 'red')], { label: 'Change Hair Color' });
  sync.undo();
  sync.undo();
  sync.redo();
  assert.deepEqual(undoOffer(sync).undo, { can: true, label: 'Change Eye Color' });
  sync.undoEntry(1);
  assert.deepEqual(undoOffer(sync).undo, { can: true, label: null },
    'the selective undo may take the eye color back off the top: its name is not offered');
});

test('typing in flight and typing queued with one coalesce key are one step; a restore is a step', () => {
  const sync = new ClientSync('ann');
  sync.connect();
  sync.receive({ type: 'welcome', session: 's1', user: 'ann', role: 'editor', rev: 0, people: Fixtures.start,
    tags: { from: 4, to: 103 }, history: summary(null), presence: [] });
  sync.edit([set(2, 'glasses', true)], { label: 'Toggle Glasses' });                          // acked below
  sync.receive({ type: 'ack', seq: 1, rev: 1, ops: [set(2, 'glasses', true)] });
  sync.receive({ type: 'history', ...summary('Toggle Glasses') });
  sync.edit([text(1, [{ retain: 3 }, { insert: 'e' }])], { label: 'Change Name', coalesce: 'name:1' }); // in flight
  sync.edit([text(1, [{ retain: 4 }, { insert: '!' }])], { label: 'Change Name', coalesce: 'name:1' }); // queued
  assert.equal(sync.outbox.length, 2);
  sync.undo();
  assert.deepEqual(undoOffer(sync).undo, { can: true, label: 'Toggle Glasses' }, 'the typing is one step');
  sync.restore(0);
  assert.deepEqual(undoOffer(sync).undo, { can: true, label: 'Restore to revision 0' });
  assert.deepEqual(undoOffer(sync).redo, { can: false, label: null });
});

test('with nothing queued the offer is the hub\'s summary; nothing to undo stays nothing', () => {
  assert.deepEqual(undoOffer(offline(summary(null))), { undo: { can: false, label: null }, redo: { can: false, label: null } });
  const sync = offline(summary(null));
  sync.undo();
  assert.deepEqual(undoOffer(sync).undo, { can: false, label: null });
});

test('over random offline sessions, every label offered is the one the room undoes (or redoes) next', () => {
  const SEEDS = 500;
  let named = 0;
  for (let seed = 1; seed <= SEEDS; seed += 1) {
    const rng = new SeededRandom(seed);
    const h = new Harness({ users: ['ann'] });
    for (let i = 0; i < rng.int(0, 3); i += 1) {
      h.submit('ann', [set(rng.int(1, 3), 'name', `Old${i}`)], { label: `Old ${i}` });
    }
    const sync = new ClientSync('ann');
    sync.connect();
    sync.receive({ type: 'welcome', session: 's', user: 'ann', role: 'editor', rev: h.revision,
      people: h.people, tags: { from: 4, to: 103 }, history: h.room.stacks('ann').summary, presence: [] });
    sync.disconnected();
    const steps = rng.int(1, 8);
    for (let i = 0; i < steps; i += 1) {
      const r = rng.int(0, 9);
      const tag = rng.int(1, 3);
      if (r < 4) sync.edit([set(tag, 'name', `N${seed}x${i}`)], { label: `Name ${i}` });
      else if (r < 7) sync.undo();
      else if (r < 8) sync.undo(tag);
      else if (r < 9) sync.redo(tag);
      else sync.redo();
    }
    const offer = undoOffer(sync);
    for (const { request } of sync.outbox) {
      if (request.type === 'submit') h.submit('ann', request.ops, { label: request.label });
      else if (request.type === 'undo') h.undo('ann', { scope: request.scope });
      else h.redo('ann', { scope: request.scope });
    }
    const room = h.room.stacks('ann').summary;
    const context = `seed ${seed}: ${JSON.stringify(sync.outbox.map((p) => p.request))}`;
    for (const [kind, can, label] of [['undo', room.canUndo, room.undoLabel], ['redo', room.canRedo, room.redoLabel]]) {
      const o = offer[kind];
      if (o.label != null) {
        named += 1;
        assert.equal(label, o.label, `${kind} label, ${context}`);
      }
      if (!o.can) assert.equal(can, false, `${kind} offered as impossible, ${context}`);
      if (o.label != null) assert.equal(can, true, `${kind} offered, ${context}`);
    }
  }
  assert.ok(named > SEEDS * 0.4, `half the offers or so are named (${named} of ${2 * SEEDS})`);
});
