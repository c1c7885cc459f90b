// "Find a person" (Web/js/people-list.js `fold`): case and accents ignored, and the letters whose mark
// no decomposition takes off found by the letters people type for them (an international-names pass:
// "oyvind" did not find Øyvind, nor "strasse" Straße). The terminal client folds the same way
// (Tests/PeopleClientTests/SearchFoldTests.swift has the same cases).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fold } from '../../Web/js/people-list.js';

const finds = (search, name) => fold(name).includes(fold(search));

test('case and accents are ignored, composed or not', () => {
  assert.ok(finds('jose', 'José'));
  assert.ok(finds('jose', 'Jose\u0301'));
  assert.ok(finds('JOSÉ', 'jose'));
  assert.ok(finds('nguyen thi', 'Nguyễn Thị Minh'));
});

test('letters that carry their mark inside them', () => {
  for (const [search, name] of [['oyvind', 'Øyvind'], ['lukasz', 'ŁUKASZ'], ['strasse', 'Straße'],
    ['aesa', 'Æsa'], ['thor', 'Þór'], ['dorde', 'Đorđe'], ['boeuf', 'Bœuf'], ['øyvind', 'OYVIND']]) {
    assert.ok(finds(search, name), `${search} finds ${name}`);
  }
});

test('what is not in the name is not found', () => {
  assert.ok(!finds('oyv', 'Olav'));
  assert.ok(!finds('李', '山田 太郎'));
  assert.ok(finds('李', '李小龙'));
});
