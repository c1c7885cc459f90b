// Where the caret in the name field goes when teammates' edits change the name under it
// (Web/js/name-edit.js `caretAfter`): the page draws the messages of one frame at once, so the text
// edits of several revisions are followed one after the other; when they do not make the name shown
// (unknown, or another change came between), the change is one replaced stretch.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { caretAfter } from '../../Web/js/name-edit.js';

const at = (p) => ({ start: p, end: p });

test('the text edits of several revisions are followed in turn', () => {
  // "Jo|an": one revision typed x before and y after, the next did it again.
  const steps = [[{ insert: 'x' }, { retain: 4 }, { insert: 'y' }], [{ insert: 'x' }, { retain: 6 }, { insert: 'y' }]];
  assert.deepEqual(caretAfter('Joan', 'xxJoanyy', at(2), steps), at(4));
  // A selection moves with both ends; a deletion before the caret pulls it back.
  assert.deepEqual(caretAfter('Joan', 'xxJoanyy', { start: 1, end: 3 }, steps), { start: 3, end: 5 });
  assert.deepEqual(caretAfter('Joan Smith', 'an Smith', at(7), [[{ delete: 1 }], [{ delete: 1 }]]), at(5));
});

test('edits that do not give the name shown count as one replaced stretch', () => {
  // Without the steps, "Jo|an" → "xxJoanyy" has no common start or end: the caret goes to the end.
  assert.deepEqual(caretAfter('Joan', 'xxJoanyy', at(2), null), at(8));
  // Steps that make something else (a change came between): the same.
  assert.deepEqual(caretAfter('Joan', 'xxJoanyy', at(2), [[{ insert: 'x' }, { retain: 4 }]]), at(8));
  // Steps that do not fit the name (longer than it): the same, no exception.
  assert.deepEqual(caretAfter('Joan', 'xxJoanyy', at(2), [[{ retain: 9 }, { insert: 'x' }]]), at(8));
});

test('offsets are UTF-16 in the field and scalars in the edits', () => {
  // "😀|Jo": the emoji is two UTF-16 units and one scalar.
  assert.deepEqual(caretAfter('😀Jo', 'x😀Jo', at(2), [[{ insert: 'x' }, { retain: 3 }]]), at(3));
});
