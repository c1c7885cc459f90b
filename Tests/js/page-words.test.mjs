// The web page's words (Web/js/words.js, Web/js/report-text.js): one spelling, labels not
// identifiers, notices that name the person, refusals in plain words (issue 17, items 3, 7 and 8).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fieldLabels, fieldWords, actionLabels, presenceWords, roleWords } from '../../Web/js/words.js';
import { reportsText, reportSentence, remoteText, errorText, refusalText, hasWireWords, droppedUndoText }
  from '../../Web/js/report-text.js';
import { Topic, FacialHairStyle } from '../../Web/js/core/model.js';

const names = new Map([[1, 'Ann'], [2, 'Joan'], [3, 'Sam']]);
const nameOf = (tag) => names.get(tag);
const IDENTIFIER = /\b[a-z]+[A-Z][A-Za-z]*\b|\b\w+\.\w+\b/;

test('every word a user reads is spelled one way (US) and is no identifier', () => {
  const everything = [...Object.values(fieldLabels), ...Object.values(fieldWords), ...Object.values(actionLabels)];
  for (const w of everything) {
    assert.doesNotMatch(w, /colour/i, w);
    assert.doesNotMatch(w, IDENTIFIER, w);
  }
  assert.equal(fieldLabels.hairColor, 'Hair color');
  assert.equal(fieldWords.eyeColor, 'eye color');
  assert.equal(actionLabels.hairColor, 'Change Hair Color');
  assert.equal(actionLabels.delete, 'Delete Person', 'the page deletes; its undo label says so');
});

test('presence names a field by its label and a topic or style by its word, never raw', () => {
  assert.equal(presenceWords('hairColor'), 'Hair color');
  assert.equal(presenceWords('weather'), 'Weather');
  assert.equal(presenceWords('beard'), 'Beard');
  assert.equal(presenceWords('preference'), 'Likes and dislikes');
  assert.equal(presenceWords('facialHair'), 'Facial hair');
  assert.equal(presenceWords('preference:music'), 'Music');
  assert.equal(presenceWords('someNewField'), 'Some new field');
  for (const w of [...Topic.words, ...FacialHairStyle.words, ...Object.keys(fieldLabels)]) {
    assert.doesNotMatch(presenceWords(w), IDENTIFIER);
  }
});

test('the role reads as what it lets the user do', () => {
  assert.match(roleWords('viewer').short, /view only/);
  assert.equal(roleWords('editor').short, 'editor');
});

test('a skipped undo with nothing done says so first; a partial one says what was not', () => {
  const report = { reason: 'overwritten', tag: 1, field: 'hairColor', by: 'bob' };
  assert.equal(reportsText([report], nameOf, { kind: 'undo', changed: false }),
    "Nothing was undone: your change to Ann's hair color was overwritten by bob.");
  assert.equal(reportsText([report], nameOf, { kind: 'undo', changed: true }),
    "Undone, except: your change to Ann's hair color was overwritten by bob.");
  // With the label of the step done (the hub's answer's): an undo whose newest step had nothing left
  // goes on to the one before it (undo.cascade), so the notice names what was done.
  assert.equal(reportsText([report], nameOf, { kind: 'undo', changed: true, label: 'Change Eye Color' }),
    "Undid Change Eye Color. Skipped: your change to Ann's hair color was overwritten by bob.");
  assert.equal(reportsText([report], nameOf, { kind: 'redo', changed: true, label: 'Toggle Glasses' }),
    "Redid Toggle Glasses. Skipped: your change to Ann's hair color was overwritten by bob.");
  assert.equal(reportsText([report], nameOf, { kind: 'undo', changed: false, label: 'Change Hair Color' }),
    "Nothing was undone: your change to Ann's hair color was overwritten by bob.");
  assert.equal(reportsText([report], nameOf, { kind: 'edit', changed: true, label: 'Change Hair Color' }),
    "Part of your change was not made: your change to Ann's hair color was overwritten by bob.");
  assert.equal(reportsText([report], nameOf, { kind: 'redo', changed: false }),
    "Nothing was redone: your change to Ann's hair color was overwritten by bob.");
  // A person a redo would delete was brought back by the user's undo, not added by them (a
  // black-box pass, session 43: "since you added them" on a redo of a delete).
  const edited = { reason: 'editedByOthers', tag: 2, by: 'bob' };
  assert.equal(reportsText([edited], nameOf, { kind: 'redo', changed: false }),
    'Nothing was redone: Joan was edited by bob since your undo brought them back.');
  assert.equal(reportsText([edited], nameOf, { kind: 'undo', changed: false }),
    'Nothing was undone: Joan was edited by bob since you added them.');
  const two = [report, { reason: 'targetRemoved', tag: 3, by: 'carol' }, report];
  assert.equal(reportsText(two, nameOf, { kind: 'undo', changed: false }),
    "Nothing was undone: your change to Ann's hair color was overwritten by bob; Sam was deleted by carol.");
});

test('an undo that went with its queued edit says it had nothing to take back, and why, in plain words', () => {
  const same = (by, more = {}) => ({ reason: 'sameChange', tag: 1, field: 'glasses', ...(by ? { by } : {}), ...more });
  assert.equal(droppedUndoText('Toggle Glasses', [same('bob')], nameOf),
    "Your undo of Toggle Glasses had nothing to take back: bob had already made the same change to Ann's glasses.");
  assert.equal(droppedUndoText('Toggle Glasses', [same('ann')], nameOf, { me: 'ann' }),
    "Your undo of Toggle Glasses had nothing to take back: you had already made the same change to Ann's glasses.");
  assert.equal(droppedUndoText('Toggle Glasses', [same('dana')], nameOf, { byRestore: () => true }),
    "Your undo of Toggle Glasses had nothing to take back: dana's restore had already made the same change to Ann's glasses.");
  assert.equal(droppedUndoText(undefined, [same(null, { field: 'preference', topic: 'weather' })], nameOf),
    "Your undo had nothing to take back: the same change to Ann's opinion on weather had already been made.");
  assert.equal(droppedUndoText('Change Hair Color', [{ reason: 'targetRemoved', tag: 3, by: 'bob' }], nameOf),
    'Your undo of Change Hair Color had nothing to take back: Sam was deleted by bob.');
  assert.equal(droppedUndoText('Change Name', [{ reason: 'overwritten', tag: 2, field: 'name', by: 'bob' }], nameOf),
    "Your undo of Change Name had nothing to take back: your change to Joan's name was overwritten by bob.");
  for (const text of [droppedUndoText('Move Person', [same('bob', { field: 'position' })], nameOf),
    droppedUndoText('Add Person', [], nameOf)]) {
    assert.doesNotMatch(text, IDENTIFIER, text);
    assert.equal(hasWireWords(text), false, text);
  }
});

test('report sentences use the page words and name a person gone by tag', () => {
  assert.equal(reportSentence({ reason: 'overwritten', tag: 2, field: 'eyeColor', by: 'bob' }, nameOf),
    "Your change to Joan's eye color was overwritten by bob");
  assert.equal(reportSentence({ reason: 'overwritten', tag: 9, field: 'position' }, nameOf),
    "Your change to tag 9's place in the list was overwritten");
  assert.equal(reportSentence({ reason: 'overwritten', tag: 1, topic: 'weather', field: 'preference' }, nameOf),
    "Your change to Ann's opinion on weather was overwritten");
});

test("a teammate's change names the person it touched", () => {
  const same = (tag) => names.get(tag);
  const edit = (diffs, extra = {}) => remoteText({ author: 'carol', kind: 'edit', diffs, ...extra }, same, same);
  assert.equal(edit([{ op: 'set', tag: 3, field: 'glasses', value: false }], { label: 'Toggle Glasses' }),
    'carol: Sam no longer wears glasses');
  assert.equal(edit([{ op: 'set', tag: 2, field: 'hairColor', value: 'white' }]), "carol: Joan's hair color is now white");
  assert.equal(edit([{ op: 'facialHair', tag: 3, style: 'beard', present: true }]), 'carol: Sam now has a beard');
  assert.equal(edit([{ op: 'preference', tag: 1, topic: 'weather', value: 'like' }]), 'carol: Ann now likes weather');
  assert.equal(edit([{ op: 'preference', tag: 1, topic: 'art', value: 'none' }]), 'carol: Ann is now neutral on art');
  assert.equal(remoteText({ author: 'bob', kind: 'undo', diffs: [{ op: 'set', tag: 1, field: 'hairColor', value: 'brown' }] },
    same, same), "bob undid a change: Ann's hair color is now brown");
  const renamed = remoteText({ author: 'bob', kind: 'edit', diffs: [{ op: 'text', tag: 2, edits: [{ retain: 4 }, { insert: 'x' }] },
    { op: 'text', tag: 2, edits: [{ retain: 5 }, { insert: 'y' }] }] }, same, (tag) => (tag === 2 ? 'Joanxy' : same(tag)));
  assert.equal(renamed, 'bob: Joan is now called Joanxy');
  assert.equal(remoteText({ author: 'bob', kind: 'edit', label: 'Change Likes', diffs: [
    { op: 'preference', tag: 1, topic: 'art', value: 'like' }, { op: 'set', tag: 1, field: 'glasses', value: true }] },
  same, same), 'bob changed Ann (Change Likes)');
  // This user's own change made elsewhere (another tab, a script over HTTP) is not a teammate's.
  assert.equal(remoteText({ author: 'bob', kind: 'edit', label: 'Sync from CRM', diffs: [
    { op: 'set', tag: 3, field: 'eyeColor', value: 'blue' }, { op: 'set', tag: 3, field: 'glasses', value: true }] },
  same, same, 'bob'), 'you (elsewhere) changed Sam (Sync from CRM)');
  assert.equal(remoteText({ author: 'bob', kind: 'edit', label: 'Sync from CRM', diffs: [
    { op: 'set', tag: 3, field: 'eyeColor', value: 'blue' }, { op: 'set', tag: 3, field: 'glasses', value: true }] },
  same, same, 'ann'), 'bob changed Sam (Sync from CRM)');
  assert.equal(remoteText({ author: 'bob', kind: 'edit', diffs: [{ op: 'remove', tag: 3 }] }, same, () => null),
    'bob: Sam was deleted');
  // A move says where to (a listener cannot see the row go), counted from 1 as "Place in the list" is.
  assert.equal(edit([{ op: 'move', tag: 2, to: 0 }]), 'carol: Joan was moved to place 1');
  // This user's own undo, said to a screen reader the same way.
  assert.equal(remoteText({ author: 'You', kind: 'undo', diffs: [{ op: 'move', tag: 3, to: 2 }] }, same, same),
    'You undid a change: Sam was moved to place 3');
});

test('refusals to let a user in are plain words that say what to do, never wire names', () => {
  const cases = [
    ['this hub needs an access token: give hello.token', /needs an access token/],
    ['the token has expired', /expired/],
    ['the token is not valid (bad signature or format)', /not valid/],
    ['the token is for ann, not bob', /for ann, not bob/],
    ['the token does not give access to room team-a', /does not open room team-a/],
    ['something new: see auth.mode', /access token/],
  ];
  for (const [message, expected] of cases) {
    const text = refusalText({ code: 'unauthorized', message });
    assert.match(text, expected);
    assert.ok(!hasWireWords(text), text);
    assert.doesNotMatch(text, /hello\./);
  }
  assert.ok(!hasWireWords(refusalText({ code: 'room-full', message: 'the hub holds at most 1 rooms (limits.maxRooms)' })));
});

test('a token that expired in the room says the changes not sent yet wait for the new one', () => {
  const expired = { code: 'unauthorized', message: 'the access token has expired; connect again with a new token' };
  assert.match(refusalText(expired, { kept: 0 }), /^Your access token has expired\. .*carry on: nothing of yours is lost\.$/);
  assert.match(refusalText(expired, { kept: 1 }), /your change not sent yet is kept and goes then\.$/);
  assert.match(refusalText(expired, { kept: 3 }), /your 3 changes not sent yet are kept and go then\.$/);
  assert.equal(refusalText(expired), 'Your access token has expired. Ask for a new one and paste it here.');
  for (const kept of [0, 1, 3]) assert.ok(!hasWireWords(refusalText(expired, { kept })));
});

test('refusals of a change are plain words', () => {
  const messages = [
    ['room-full', 'the room holds at most 3 people; this batch would leave 4', 'Not saved: this room holds at most 3 people.'],
    ['forbidden', 'viewers cannot edit', 'You can only view this room: nothing was changed.'],
    ['too-large', 'frame of 2000000 bytes is over limits.maxMessageBytes (1048576)', 'Not saved: that change is too large to send.'],
  ];
  for (const [code, message, expected] of messages) assert.equal(errorText({ code, message }), expected);
  assert.ok(!hasWireWords(errorText({ code: 'bad-message', message: 'seq 3 is not above the last seq 4' })));
  assert.ok(!hasWireWords(errorText({ code: 'invalid-op', message: 'ops[0]: `tag` is missing' })));
});

test('a teammate\'s restore reads as a restore, not as a plain edit', async () => {
  const { remoteText } = await import('../../Web/js/report-text.js');
  const name = () => 'Ann';
  const text = remoteText({ author: 'dana', kind: 'restore', label: 'Restore to revision 3',
    diffs: [{ op: 'remove', tag: 1 }, { op: 'remove', tag: 2 }] }, name, name);
  assert.equal(text, 'dana restored an earlier version (Restore to revision 3)');
});
