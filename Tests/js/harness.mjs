// A room with named users, each on one session, driven by message: what a hub does, minus sockets.
// Port of Tests/PeopleCoreTests/Harness.swift.

import assert from 'node:assert/strict';
import { Room, roomPolicy } from './server/room.mjs';
import { PeopleModel, makePerson } from '../../Web/js/core/model.js';

export class Harness {
  constructor({ people = Fixtures.start, policy = roomPolicy(), users = ['A', 'B'] } = {}) {
    this.room = new Room({ name: 'test', seed: new PeopleModel(people), policy });
    this.sessions = new Map();
    this.seqs = new Map();
    this.now = 0;
    this.log = [];
    for (const user of users) this.join(user);
  }

  join(user, role = 'editor') {
    const { session, actions } = this.room.join({ session: `s-${user}-${this.sessions.size}`, user, role });
    this.sessions.set(user, session);
    this.log.push(...actions);
  }

  get people() { return this.room.model.people; }
  get revision() { return this.room.revision; }

  nextSeq(user) {
    const seq = (this.seqs.get(user) ?? 0) + 1;
    this.seqs.set(user, seq);
    return seq;
  }

  /** Sends `message` from `user` and returns the reply addressed to that session with its seq. */
  send(message, user, time) {
    this.now = time ?? this.now + 1000;
    const id = this.sessions.get(user);
    const actions = this.room.receive(message, id, this.now);
    this.log.push(...actions);
    assert.equal(this.room.model.invariantViolation(), null);
    for (const { send: reply, to } of actions) {
      if (!to || to.length !== 1 || to[0] !== id) continue;
      if (['ack', 'undone', 'redone', 'error', 'restored'].includes(reply?.type) && reply.seq === message.seq) return reply;
    }
    return undefined;
  }

  /** Submits a batch made on `base` (default: the current revision); expects an ack. */
  submit(user, ops, { base, label, coalesce, at } = {}) {
    const message = { type: 'submit', seq: this.nextSeq(user), base: base ?? this.revision, ops };
    if (label != null) message.label = label;
    if (coalesce != null) message.coalesce = coalesce;
    const reply = this.send(message, user, at);
    assert.equal(reply?.type, 'ack', `expected an ack, got ${JSON.stringify(reply)}`);
    return reply;
  }

  /** Submits a batch that must be refused; returns the error. */
  reject(user, ops, { base } = {}) {
    const reply = this.send({ type: 'submit', seq: this.nextSeq(user), base: base ?? this.revision, ops }, user);
    assert.equal(reply?.type, 'error', `expected an error, got ${JSON.stringify(reply)}`);
    return reply;
  }

  undo(user, { scope, at } = {}) { return this.revert('undo', user, scope, at); }
  redo(user, { scope, at } = {}) { return this.revert('redo', user, scope, at); }

  revert(type, user, scope, at) {
    const message = { type, seq: this.nextSeq(user) };
    if (scope != null) message.scope = scope;
    const reply = this.send(message, user, at);
    assert.equal(reply?.type, type === 'undo' ? 'undone' : 'redone', `expected ${type} reply, got ${JSON.stringify(reply)}`);
    return reply;
  }

  /** Undoes the user's entry `entry` (selective undo); returns the reply (an `undone`, or an error). */
  undoEntry(user, entry, { at } = {}) {
    return this.send({ type: 'undo', seq: this.nextSeq(user), entry }, user, at);
  }

  /** Restores the room to revision `rev`; returns the reply (a `restored`, or an error). */
  restore(user, rev, { label, at } = {}) {
    const message = { type: 'restore', seq: this.nextSeq(user), rev };
    if (label != null) message.label = label;
    return this.send(message, user, at);
  }

  person(tag) { return this.room.model.get(tag); }
}

export const Fixtures = {
  p1: makePerson({ tag: 1, name: 'Ann', hairColor: 'brown', hairLength: 'short', eyeColor: 'blue', glasses: false,
    facialHair: [], likes: ['music'], dislikes: ['weather'] }),
  p2: makePerson({ tag: 2, name: 'Joan', hairColor: 'red', hairLength: 'long', eyeColor: 'green', glasses: false,
    facialHair: [], likes: ['books'], dislikes: [] }),
  p3: makePerson({ tag: 3, name: 'Sam', hairColor: 'black', hairLength: 'medium', eyeColor: 'brown', glasses: true,
    facialHair: ['beard'], likes: [], dislikes: ['sports'] }),
  get start() { return [this.p1, this.p2, this.p3]; },
  person(tag, name = 'New') {
    return makePerson({ tag, name, hairColor: 'gray', hairLength: 'short', eyeColor: 'hazel' });
  },
};

/** Asserts that two lists of people are equal (as Swift compares them), showing a diff when not. */
export function assertPeople(actual, expected, message) {
  const a = new PeopleModel(actual);
  const e = new PeopleModel(expected);
  if (a.equals(e)) return;
  assert.deepEqual(a.toJSON(), e.toJSON(), message);
  assert.fail(`${message}: people differ`);
}
