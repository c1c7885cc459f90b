// Runs the shared JSON vectors of Tests/Vectors/ through the JS core, exactly as
// Tests/PeopleCoreTests/VectorTests.swift runs them through the Swift core.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Harness, assertPeople } from './harness.mjs';
import { roomPolicy } from './server/room.mjs';
import { parsePerson } from '../../Web/js/core/model.js';
import { parseDiff } from '../../Web/js/core/diff.js';
import { parseReport } from '../../Web/js/core/undo.js';
import { BlameFields } from '../../Web/js/core/wire.js';

function load(name) {
  const json = JSON.parse(readFileSync(new URL(`../Vectors/${name}`, import.meta.url), 'utf8'));
  assert.ok(Array.isArray(json.cases), `${name} has no cases`);
  return json.cases;
}

const undoCases = load('undo.json');
const historyCases = load('history.json');
const transformCases = load('transform.json');

const people = (json) => (Array.isArray(json) ? json.map((p) => parsePerson(p)) : []);
const diffs = (json) => (Array.isArray(json) ? json.map(parseDiff) : []);
const reports = (json) => (Array.isArray(json) ? json.map(parseReport) : []);
const int = (json) => (Number.isInteger(json) ? json : undefined);
const string = (json) => (typeof json === 'string' ? json : undefined);

function policy(json) {
  const undo = {};
  if (string(json?.conflicts) === 'force') undo.conflicts = 'force';
  if (typeof json?.cascade === 'boolean') undo.cascade = json.cascade;
  if (int(json?.coalesceMillis) !== undefined) undo.coalesceMillis = int(json.coalesceMillis);
  return roomPolicy({ undo });
}

describe('transform vectors', () => {
  for (const vector of transformCases) {
    test(vector.name, () => {
      const h = new Harness({ people: people(vector.start), users: ['X', 'Y'] });
      h.submit('X', diffs(vector.applied), { base: 0 });
      const ack = h.submit('Y', diffs(vector.incoming), { base: 0 });
      assertPeople(h.people, people(vector.people), vector.name);
      assert.deepEqual(ack.noop ?? [], reports(vector.noop), `${vector.name}: noop`);
    });
  }
});

describe('undo vectors', () => {
  for (const vector of undoCases) test(vector.name, () => play(vector));
});

describe('history vectors (HISTORY.md: selective undo, restore, log, blame)', () => {
  for (const vector of historyCases) test(vector.name, () => play(vector));
});

/**
 * Plays a vector's steps, each a `submit`, `undo` (maybe with `entry` or `scope`), `redo`, `restore`,
 * `log` or `blame`, checking each reply and the people after it (VectorTests.swift `play`).
 */
function play(vector) {
  assert.ok(Array.isArray(vector.users) && Array.isArray(vector.steps), `${vector.name}: malformed`);
  const h = new Harness({ people: people(vector.start), policy: policy(vector.policy),
    users: vector.users.filter((u) => typeof u === 'string') });
  let time = 0;
  vector.steps.forEach((step, index) => {
    const user = string(step.user) ?? '?';
    time = int(step.at) ?? time + 1000;
    const expect = step.expect;
    const context = `${vector.name} step ${index}`;
    const seq = h.nextSeq(user);
    let message;
    if (step.submit !== undefined) {
      message = { type: 'submit', seq, base: int(step.base) ?? h.revision, ops: diffs(step.submit) };
      if (string(step.label) !== undefined) message.label = string(step.label);
      if (string(step.coalesce) !== undefined) message.coalesce = string(step.coalesce);
    } else if (step.undo !== undefined) {
      message = { type: 'undo', seq };
      if (int(step.undo?.scope) !== undefined) message.scope = int(step.undo.scope);
      if (int(step.undo?.entry) !== undefined) message.entry = int(step.undo.entry);
    } else if (step.redo !== undefined) {
      message = { type: 'redo', seq };
      if (int(step.redo?.scope) !== undefined) message.scope = int(step.redo.scope);
    } else if (step.restore !== undefined) {
      message = { type: 'restore', seq, rev: int(step.restore?.rev) ?? 0 };
      if (string(step.restore?.label) !== undefined) message.label = string(step.restore.label);
    } else if (step.log !== undefined) {
      message = { type: 'log', seq, limit: int(step.log?.limit) ?? 50 };
      if (int(step.log?.before) !== undefined) message.before = int(step.log.before);
      if (int(step.log?.tag) !== undefined) message.tag = int(step.log.tag);
    } else if (step.blame !== undefined) {
      message = { type: 'blame', seq, tag: int(step.blame?.tag) ?? 0 };
    } else {
      assert.fail(`${context}: unknown step`);
    }
    const before = h.revision;
    const reply = replyTo(message, user, h, time);
    check(reply, expect, before, h.revision, context);
    if (expect?.people !== undefined) assertPeople(h.people, people(expect.people), context);
  });
  assertPeople(h.people, people(vector.people), vector.name);
}

/** The reply addressed to the sender: the one with its seq (log and blame echo it too). */
function replyTo(message, user, h, time) {
  const id = h.sessions.get(user);
  h.now = time;
  const actions = h.room.receive(message, id, time);
  h.log.push(...actions);
  assert.equal(h.room.model.invariantViolation(), null);
  const types = ['ack', 'undone', 'redone', 'restored', 'error', 'log', 'blame'];
  for (const { send: reply, to } of actions) {
    if (!to || to.length !== 1 || to[0] !== id) continue;
    if (types.includes(reply.type) && reply.seq === message.seq) return reply;
  }
  return undefined;
}

/** Checks a reply against a step's `expect` (only the members it names), as VectorTests.swift `check`. */
function check(reply, expect, revisionBefore, revisionAfter, context) {
  const has = (key) => expect != null && Object.prototype.hasOwnProperty.call(expect, key);
  const nullable = (value) => value ?? null;
  if (string(expect?.error) !== undefined) {
    const code = string(expect.error);
    assert.equal(reply?.type, 'error', `${context}: expected error ${code}, got ${JSON.stringify(reply)}`);
    assert.equal(reply.code, code, `${context}: code`);
    assert.equal(revisionAfter, revisionBefore, `${context}: revision`);
    return;
  }
  switch (reply?.type) {
    case 'ack':
      if (has('rev')) assert.equal(reply.rev, nullable(int(expect.rev)), `${context}: rev`);
      if (has('noop')) assert.deepEqual(reply.noop ?? [], reports(expect.noop), `${context}: noop`);
      break;
    case 'undone': case 'redone':
      if (has('rev')) assert.equal(nullable(reply.rev), nullable(int(expect.rev)), `${context}: rev`);
      if (has('skipped')) assert.deepEqual(reply.skipped, reports(expect.skipped), `${context}: skipped`);
      if (has('entry')) assert.equal(nullable(reply.entry), nullable(int(expect.entry)), `${context}: entry`);
      break;
    case 'restored':
      if (has('rev')) assert.equal(nullable(reply.rev), nullable(int(expect.rev)), `${context}: rev`);
      if (has('label')) assert.equal(reply.label, nullable(string(expect.label)), `${context}: label`);
      break;
    case 'log': {
      const list = (key) => (Array.isArray(expect?.[key]) ? expect[key] : undefined);
      const entries = reply.entries;
      if (list('revs')) assert.deepEqual(entries.map((e) => e.rev), list('revs').map((r) => int(r) ?? -1), `${context}: revs`);
      if (list('entries')) {
        assert.deepEqual(entries.map((e) => nullable(e.entry)), list('entries').map((r) => nullable(int(r))), `${context}: entries`);
      }
      if (list('authors')) {
        assert.deepEqual(entries.map((e) => e.author), list('authors').map((a) => string(a) ?? '?'), `${context}: authors`);
      }
      if (list('kinds')) assert.deepEqual(entries.map((e) => e.kind), list('kinds').map((k) => string(k) ?? '?'), `${context}: kinds`);
      if (typeof expect?.more === 'boolean') assert.equal(reply.more, expect.more, `${context}: more`);
      break;
    }
    case 'blame': {
      // Same writer: user and rev (VectorTests.swift `same`); a missing writer matches nothing named.
      const same = (writer, json, what) => {
        assert.equal(nullable(writer?.user), nullable(string(json?.user)), `${context} ${what}: user`);
        assert.equal(nullable(writer?.rev), nullable(int(json?.rev)), `${context} ${what}: rev`);
      };
      if (has('created')) same(reply.created, expect.created, 'created');
      if (isObject(expect?.fields)) {
        for (const [key, json] of Object.entries(expect.fields)) {
          same(BlameFields.includes(key) ? reply.fields[key] : undefined, json, key);
        }
      }
      if (isObject(expect?.facialHair)) {
        for (const [key, json] of Object.entries(expect.facialHair)) same(reply.fields.facialHair[key], json, key);
      }
      break;
    }
    default:
      assert.fail(`${context}: no reply to the step (${JSON.stringify(reply)})`);
  }
}

const isObject = (json) => json !== null && typeof json === 'object' && !Array.isArray(json);

test('the vector files hold the cases the suites expect', () => {
  const names = undoCases.map((c) => c.name ?? '?');
  for (let n = 1; n <= 12; n++) assert.ok(names.some((s) => s.startsWith(`§5.${n} `)), `§5.${n} missing`);
  assert.ok(transformCases.length >= 60);
  assert.equal(transformCases.length, 101);
  assert.equal(undoCases.length, 40);
  const history = historyCases.map((c) => c.name ?? '?');
  for (let n = 1; n <= 8; n++) assert.ok(history.some((s) => s.includes(`H${n} `)), `H${n} missing`);
  assert.equal(historyCases.length, 17);
});
