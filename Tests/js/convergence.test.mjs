// Convergence of clients and a room over a seeded random network (port of
// Tests/PeopleCoreTests/ConvergenceTests.swift, without the journal restarts; see network.mjs).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { roomPolicy } from './server/room.mjs';
import { run } from './network.mjs';

test('3–5 clients with random edits, undos, redos, selective undos, restores and reconnects converge', () => {
  let revisions = 0;
  let restores = 0;
  let selective = 0;
  for (let seed = 0; seed < 30; seed++) {
    const net = run(seed * 7919 + 17, 3 + (seed % 3), 1000);
    revisions += net.room.revision;
    restores += net.restores;
    selective += net.selectiveUndos;
    assert.equal(net.reads, 0, 'a room that keeps every revision asks the store for none');
  }
  assert.ok(revisions > 1000, `only ${revisions} revisions were made`);
  assert.ok(restores > 50, `only ${restores} restores changed something`);
  assert.ok(selective > 10, `only ${selective} selective undos changed something`);
});

test('with a short kept history, reconnects past it resync from the full state and converge', () => {
  // A resent request whose base fell out of the kept history is refused as stale-base (and the
  // client resyncs); undo entries past it expire. Nothing else is allowed (as in the Swift test).
  // Restores below the memory window read the store's revisions.
  let reads = 0;
  for (let seed = 0; seed < 10; seed++) {
    reads += run(seed + 50000, 4, 1000, roomPolicy({ keptRevisions: 8 }), ['stale-base']).reads;
  }
  assert.ok(reads > 10, `only ${reads} reads from the store`);
});

test('the same under the force policy', () => {
  for (let seed = 0; seed < 10; seed++) run(seed + 90001, 4, 600, roomPolicy({ undo: { conflicts: 'force' } }));
});
