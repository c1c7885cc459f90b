// A seeded random network of client state machines and one room (port of the `Network` of
// Tests/PeopleCoreTests/ConvergenceTests.swift, without the journal restarts): each direction of each
// connection is FIFO, connections are interleaved at random, clients drop and reconnect (losing what
// was on the wire) and resend; random edits, undos, redos, selective undos (of a random id: many are
// `no-entry`) and restores to a random revision, online or not (queued then; an undo or redo of a
// queued step shows at once). At quiescence every client's model equals the room's.
// Frames go through encode / decode, as on a socket. A `readHistory` (a restore below the room's memory
// window) is served at once from the network's store, which keeps every revision the room made.

import assert from 'node:assert/strict';
import { Room, roomPolicy } from './server/room.mjs';
import { PeopleModel } from '../../Web/js/core/model.js';
import { ClientSync } from '../../Web/js/core/client-sync.js';
import { decodeClientMessage, decodeServerMessage, encode } from '../../Web/js/core/wire.js';
import { Fixtures } from './harness.mjs';
import * as R from './random.mjs';

export class Network {
  constructor(seed, clients, policy) {
    this.rng = new R.SeededRandom(seed);
    this.room = new Room({ name: 'sim', seed: new PeopleModel(Fixtures.start), policy });
    this.peers = Array.from({ length: clients }, (_, i) => ({
      client: new ClientSync(`u${i % 3}`), session: null, up: [], down: [], online: false }));
    this.now = 0;
    this.sessionsMade = 0;
    this.errors = [];
    /** Every revision the room made (the hub's store), oldest first. */
    this.store = [];
    /** How many `readHistory` actions, selective undos and restores that changed something there were. */
    this.reads = 0;
    this.selectiveUndos = 0;
    this.restores = 0;
    this.peers.forEach((_, i) => this.connect(i));
  }

  connect(i) {
    const peer = this.peers[i];
    if (peer.online) return;
    const hello = decodeClientMessage(encode(peer.client.connect()));
    this.sessionsMade += 1;
    const { session, actions } = this.room.join({ session: `s${this.sessionsMade}`, user: hello.user,
      role: 'editor', resume: hello.resume ?? null, since: hello.since ?? null });
    peer.session = session;
    peer.online = true;
    this.route(actions);
  }

  disconnect(i) {
    const peer = this.peers[i];
    if (!peer.online) return;
    peer.online = false;
    peer.up = [];
    peer.down = [];
    peer.client.disconnected();
    this.route(this.room.leave(peer.session));
  }

  route(actions) {
    this.keep();
    for (const action of actions) {
      if (action.readHistory) {
        this.route(this.serve(action.readHistory));
        continue;
      }
      const { send, to } = action;
      if (send.type === 'undone' && send.entry != null && send.rev != null) this.selectiveUndos += 1;
      if (send.type === 'restored' && send.rev != null) this.restores += 1;
      const frame = encode(send);
      for (const peer of this.peers) if (peer.online && to.includes(peer.session)) peer.down.push(frame);
    }
  }

  /** Files the revisions the room made since the last look (at most one per message). */
  keep() {
    for (let n = this.store.length + 1; n <= this.room.revision; n++) {
      const revision = this.room.history.revision(n);
      assert.ok(revision, `revision ${n} left the room's memory before the store kept it`);
      this.store.push(revision);
    }
  }

  /** What the hub does for a `readHistory`: read the store, hand the message back. */
  serve(read) {
    this.reads += 1;
    const older = this.store.filter((r) => r.number > read.after && r.number <= read.through);
    return this.room.receive(read.message, read.session, this.now, { older, log: read.log });
  }

  deliverUp(i) {
    const peer = this.peers[i];
    if (!peer.online || peer.up.length === 0) return;
    const message = decodeClientMessage(encode(peer.up.shift()));
    this.now += this.rng.int(1, 300);
    this.route(this.room.receive(message, peer.session, this.now));
    assert.equal(this.room.model.invariantViolation(), null);
  }

  deliverDown(i) {
    const peer = this.peers[i];
    if (!peer.online || peer.down.length === 0) return;
    const { send, events } = peer.client.receive(decodeServerMessage(peer.down.shift()));
    for (const e of events) if (e.type === 'error') this.errors.push(e);
    peer.up.push(...send);
  }

  edit(i) {
    const peer = this.peers[i];
    if (peer.client.tagsLeft < 4 && peer.online) peer.up.push({ type: 'tags' });
    // Two fresh tags in a row from the client's blocks (a batch inserts at most two people).
    const first = peer.client.allocateTag();
    const second = peer.client.allocateTag();
    if (first === null || second !== first + 1) return;
    const ops = R.batch(peer.client.view, { tag: first }, this.rng, 1, 2);
    const key = this.rng.chance(0.3) ? `k${this.rng.int(0, 1)}` : undefined;
    let send;
    try { send = peer.client.edit(ops, { label: 'Edit', coalesce: key }); } catch { return; }
    if (peer.online) peer.up.push(...send);
  }

  step() {
    const i = this.rng.int(0, this.peers.length - 1);
    const peer = this.peers[i];
    const r = this.rng.int(0, 99);
    if (r < 20) this.edit(i);
    // Undos and redos while offline too: queued, and shown at once when they take a queued step.
    else if (r < 25) {
      const sent = peer.client.undo(this.rng.chance(0.3) ? this.rng.int(1, 3) : undefined);
      if (peer.online) peer.up.push(...sent);
    } else if (r < 27) {
      const sent = peer.client.redo();
      if (peer.online) peer.up.push(...sent);
    } else if (r < 28) {
      const choice = this.rng.int(0, 2);
      if (choice === 0) {
        // A restore to a revision this client has seen.
        const sent = peer.client.restore(this.rng.int(0, peer.client.revision));
        if (peer.online) peer.up.push(...sent);
      } else {
        // A selective undo: mostly of an entry on the user's undo stack (as a client that read
        // the `log` would pick), else of an id picked at random (one not on the stack is `no-entry`).
        const own = this.room.stacks(peer.client.user).undo.map((entry) => entry.id);
        const id = own.length > 0 && this.rng.chance(0.8) ? own[this.rng.int(0, own.length - 1)]
          : this.rng.int(1, Math.max(1, peer.client.revision));
        const sent = peer.client.undoEntry(id);
        if (peer.online) peer.up.push(...sent);
      }
    } else if (r < 60) this.deliverUp(i);
    else if (r < 95) this.deliverDown(i);
    else if (r < 97) this.disconnect(i);
    else this.connect(i);
  }

  /** Reconnects everyone and delivers until nothing is left anywhere. */
  settle() {
    this.peers.forEach((_, i) => this.connect(i));
    for (let rounds = 0; rounds < 100000 && this.peers.some((p) => p.up.length || p.down.length); rounds++) {
      this.peers.forEach((_, i) => { this.deliverUp(i); this.deliverDown(i); });
    }
  }
}

export function run(seed, clients, steps, policy = roomPolicy(), allowed = [], tolerated = () => false) {
  const net = new Network(seed, clients, policy);
  for (let s = 0; s < steps; s++) net.step();
  net.settle();
  const unexpected = net.errors.filter((e) => e.code !== 'no-entry' && !allowed.includes(e.code) && !tolerated(e));
  assert.deepEqual(unexpected, [], `seed ${seed}`);
  for (const peer of net.peers) {
    assert.equal(peer.client.pendingCount, 0, `seed ${seed}`);
    assert.equal(peer.client.revision, net.room.revision, `seed ${seed}`);
    assert.ok(peer.client.confirmed.equals(net.room.model), `seed ${seed}: confirmed`);
    assert.ok(peer.client.view.equals(net.room.model), `seed ${seed}: view`);
  }
  return net;
}

