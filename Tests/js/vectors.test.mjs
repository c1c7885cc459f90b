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

function load(name) {
  const json = JSON.parse(readFileSync(new URL(`../Vectors/${name}`, import.meta.url), 'utf8'));
  assert.ok(Array.isArray(json.cases), `${name} has no cases`);
  return json.cases;
}

const undoCases = load('undo.json');
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
  for (const vector of undoCases) {
    test(vector.name, () => {
      assert.ok(Array.isArray(vector.users) && Array.isArray(vector.steps), `${vector.name}: malformed`);
      const h = new Harness({ people: people(vector.start), policy: policy(vector.policy),
        users: vector.users.filter((u) => typeof u === 'string') });
      let time = 0;
      vector.steps.forEach((step, index) => {
        const user = string(step.user) ?? '?';
        time = int(step.at) ?? time + 1000;
        const expect = step.expect;
        const context = `${vector.name} step ${index}`;
        if (step.submit !== undefined && string(expect?.error) !== undefined) {
          // A refused batch: the error names the step's seq, and nothing is applied.
          const code = string(expect.error);
          const before = h.revision;
          const message = { type: 'submit', seq: h.nextSeq(user), base: int(step.base) ?? h.revision,
            ops: diffs(step.submit) };
          if (string(step.label) !== undefined) message.label = string(step.label);
          const reply = h.send(message, user, time);
          assert.equal(reply?.type, 'error', `${context}: expected error ${code}, got ${JSON.stringify(reply)}`);
          assert.equal(reply.seq, message.seq, `${context}: seq`);
          assert.equal(reply.code, code, `${context}: code`);
          assert.equal(h.revision, before, `${context}: revision`);
        } else if (step.submit !== undefined) {
          const ack = h.submit(user, diffs(step.submit), { base: int(step.base), label: string(step.label),
            coalesce: string(step.coalesce), at: time });
          if (expect?.rev !== undefined) assert.equal(ack.rev, int(expect.rev), `${context}: rev`);
          if (expect?.noop !== undefined) assert.deepEqual(ack.noop ?? [], reports(expect.noop), `${context}: noop`);
        } else {
          const redo = step.redo !== undefined;
          const scope = int((step.undo ?? step.redo)?.scope);
          const result = redo ? h.redo(user, { scope, at: time }) : h.undo(user, { scope, at: time });
          if (expect?.rev !== undefined) assert.equal(result.rev, int(expect.rev), `${context}: rev`);
          if (expect?.skipped !== undefined) {
            assert.deepEqual(result.skipped, reports(expect.skipped), `${context}: skipped`);
          }
        }
        if (expect?.people !== undefined) assertPeople(h.people, people(expect.people), context);
      });
      assertPeople(h.people, people(vector.people), vector.name);
    });
  }
});

test('the vector files hold the cases the suites expect', () => {
  const names = undoCases.map((c) => c.name ?? '?');
  for (let n = 1; n <= 12; n++) assert.ok(names.some((s) => s.startsWith(`§5.${n} `)), `§5.${n} missing`);
  assert.ok(transformCases.length >= 60);
  assert.equal(transformCases.length, 101);
  assert.equal(undoCases.length, 35);
});
