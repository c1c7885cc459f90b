// The page's one vocabulary: every word a user reads about people and their fields, in one spelling
// (US: "color", as the wire's own `hairColor` and the terminal client's labels are), so that the
// editor's labels, the notices, presence and the undo labels the page sends never disagree.
//
// Invariant: nothing here is an identifier a user would read. Wire names (`hairColor`, `preference`,
// `facialHair`) are keys of these tables, never values. Pure: no DOM, so node's tests read it as it is.

import { Topic, FacialHairStyle } from './core/model.js';

/** A field as a label heads it ("Hair color"). `position` is a move's field in a skip report. */
export const fieldLabels = Object.freeze({
  name: 'Name',
  hairColor: 'Hair color',
  hairLength: 'Hair length',
  eyeColor: 'Eye color',
  glasses: 'Glasses',
  facialHair: 'Facial hair',
  preference: 'Likes and dislikes',
  position: 'Place in the list',
});

/** A field as a sentence names it ("Ann's hair color"). */
export const fieldWords = Object.freeze(Object.fromEntries(
  Object.entries(fieldLabels).map(([k, v]) => [k, v.toLowerCase()])));

/**
 * The action names the page sends as `label` (what Undo / Redo buttons show, on every client of the
 * same user). Title case, as the terminal client's; "Delete" because the page's button says Delete.
 */
export const actionLabels = Object.freeze({
  name: 'Change Name',
  hairColor: 'Change Hair Color',
  hairLength: 'Change Hair Length',
  eyeColor: 'Change Eye Color',
  glasses: 'Toggle Glasses',
  facialHair: 'Change Facial Hair',
  preference: 'Change Likes',
  add: 'Add Person',
  move: 'Move Person',
  delete: 'Delete Person',
});

/**
 * Action names the page only shows (the history panel names a revision that came without a label from
 * its changes): several kinds of change in one, none at all, a restore; and revision 0's row.
 */
export const readActionLabels = Object.freeze({
  several: 'Several Changes',
  none: 'No Change',
  restore: 'Restore an Earlier Version',
  start: 'The room as it started',
});

/** A word of a vocabulary for people to read: "blonde" → "Blonde". */
export function titleCase(word) {
  return word.charAt(0).toUpperCase() + word.slice(1);
}

/**
 * What a presence `field` is, for a person to read: a field's label, a topic or facial hair style by
 * its own word ("Weather", "Beard"; this page sends those), "Likes and dislikes" for a bare
 * `preference` (what other clients may send). Unknown fields are split into words, never shown raw.
 */
export function presenceWords(field) {
  if (field == null || field === '') return '';
  if (Object.prototype.hasOwnProperty.call(fieldLabels, field)) return fieldLabels[field];
  if (Topic.has(field) || FacialHairStyle.has(field)) return titleCase(field);
  const [kind, word] = field.split(':');
  if (word && (Topic.has(word) || FacialHairStyle.has(word))) return titleCase(word);
  if (kind && Object.prototype.hasOwnProperty.call(fieldLabels, kind)) return fieldLabels[kind];
  const spaced = field.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/[_:.-]+/g, ' ').toLowerCase().trim();
  return titleCase(spaced);
}

/** The role a welcome gives, as the header shows it, and what it lets the user do. */
export function roleWords(role) {
  if (role === 'viewer') {
    return { short: 'viewer · view only', long: 'You can look at this room but not change anything in it.' };
  }
  return { short: 'editor', long: 'You can change this room.' };
}
