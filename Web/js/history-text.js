// The room's history in words (HISTORY.md §6): when a revision was made ("2 min ago", the exact time on
// hover), what it did ("Change Hair Color", "Undo Change Hair Color", "Restore to revision 4"), whom it
// touched (by their names as they are now), who last changed a field ("bob · 2 min ago"), and the
// question a restore asks first. Every word is from words.js's vocabulary (US spelling, no identifier);
// a label another client sent is shown as it came.
//
// Pure: time is a parameter (`now`, milliseconds since the epoch, as the hub's `time`), no DOM, so
// node tests it as it is (Tests/js/page-history.test.mjs).

import { actionLabels, readActionLabels } from './words.js';
import { diffTag } from './core/diff.js';
import { applyText } from './core/text.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * How long ago `time` was, in words: "just now" (under 45 s, or a time ahead of this clock), "1 min ago",
 * "12 min ago", "3 h ago", "yesterday", "4 days ago", then the date ("Mar 3", with the year when it is
 * not this one). `time` null or undefined (revision 0, or made before times were kept): ''.
 */
export function relativeTime(time, now, locale = undefined) {
  if (time == null) return '';
  const ago = now - time;
  if (ago < 45_000) return 'just now';
  if (ago < HOUR - 30_000) return `${Math.max(1, Math.round(ago / MINUTE))} min ago`;
  if (ago < DAY - HOUR / 2) return `${Math.max(1, Math.round(ago / HOUR))} h ago`;
  const days = Math.round(ago / DAY);
  if (days <= 1) return 'yesterday';
  if (days < 7) return `${days} days ago`;
  const then = new Date(time);
  const sameYear = then.getFullYear() === new Date(now).getFullYear();
  return then.toLocaleDateString(locale, sameYear ? { month: 'short', day: 'numeric' }
    : { year: 'numeric', month: 'short', day: 'numeric' });
}

/** The exact time, as a tooltip shows it ("Nov 25, 2026, 2:05:03 PM" in en-US); '' without a time. */
export function exactTime(time, locale = undefined) {
  if (time == null) return '';
  return exactFormat(locale).format(new Date(time));
}

/** One formatter per locale: `toLocaleString` makes a new one per call (most of a render's time, once). */
const exactFormats = new Map();
function exactFormat(locale) {
  const key = locale ?? '';
  if (!exactFormats.has(key)) {
    exactFormats.set(key, new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'medium' }));
  }
  return exactFormats.get(key);
}

/**
 * A label for ops that came without one (another client may send none), in the words of the labels
 * the page sends: one kind of change → its action ("Change Hair Color", "Add Person"); several kinds →
 * "Several Changes"; none → "No Change".
 */
export function opsLabel(ops = []) {
  if (ops.length === 0) return readActionLabels.none;
  const kinds = new Set(ops.map((d) => {
    switch (d.op) {
      case 'set': return d.field === 'name' ? 'name' : d.field;
      case 'text': return 'name';
      case 'facialHair': return 'facialHair';
      case 'preference': return 'preference';
      case 'insert': return 'add';
      case 'remove': return 'delete';
      case 'move': return 'move';
      default: return 'other';
    }
  }));
  if (kinds.size === 1) {
    const [kind] = kinds;
    if (Object.prototype.hasOwnProperty.call(actionLabels, kind)) return actionLabels[kind];
  }
  return readActionLabels.several;
}

/**
 * What a timeline entry ({kind, label?, ops}) did, as its row says: an edit by its label; an undo or
 * redo as the Undo / Redo buttons say it ("Undo Change Hair Color"); a restore by its label ("Restore
 * to revision 4", the hub's, unless the restorer gave one); revision 0's row (kind `start`) as the
 * room as it started.
 */
export function actionText({ kind, label, ops }) {
  const base = label || opsLabel(ops);
  switch (kind) {
    case 'undo': return `Undo ${base}`;
    case 'redo': return `Redo ${base}`;
    case 'restore': return label || readActionLabels.restore;
    case 'start': return readActionLabels.start;
    default: return base;
  }
}

/**
 * The people `ops` touch, once each in the order first touched: {tag, name, gone}. `nameNow(tag)` is a
 * present person's name (null when absent); `nameKnown(tag)` a name last seen for someone gone (from
 * this page's memory, or an insert in the history), or null.
 */
export function touchedPeople(ops = [], nameNow, nameKnown = () => null) {
  const out = [];
  const seen = new Set();
  for (const d of ops) {
    const tag = diffTag(d);
    if (seen.has(tag)) continue;
    seen.add(tag);
    const now = nameNow(tag);
    if (now != null) out.push({ tag, name: now, gone: false });
    else out.push({ tag, name: nameKnown(tag) ?? (d.op === 'insert' ? d.person?.name : null), gone: true });
  }
  return out;
}

/**
 * The last name each person had in these timeline rows (newest first, as the panel holds them), by
 * tag: an insert's, then a name set or typed in a later row (typing into a name no row gave makes it
 * unknown); empty names left out. Someone deleted since keeps the name they had then: a person added
 * as "New person" and renamed by typing is "Kim", not "New person".
 */
export function lastNames(entries = []) {
  return new Map([...lastNamings(entries)].map(([tag, { name }]) => [tag, name]));
}

/**
 * `lastNames`, each as {name, rev}: with the revision of the row that gave it. A row that deleted
 * someone says the name they had then (`removed`, this hub's addition to the `log` entry): one of the
 * room's first people, deleted before this page came, has a name too (it was "a deleted person").
 */
export function lastNamings(entries = []) {
  const names = new Map();
  for (let i = entries.length - 1; i >= 0; i--) {
    const rev = entries[i].rev;
    for (const d of entries[i].ops ?? []) {
      if (d.op === 'insert') names.set(d.person.tag, { name: d.person.name, rev });
      else if (d.op === 'set' && d.field === 'name') names.set(d.tag, { name: d.value, rev });
      else if (d.op === 'text') {
        const base = names.get(d.tag);
        const name = base == null ? null : applyText(d.edits, base.name);
        if (name == null) names.delete(d.tag);
        else names.set(d.tag, { name, rev });
      }
    }
    const removed = entries[i].removed;
    if (removed && typeof removed === 'object') {
      for (const [tag, name] of Object.entries(removed)) {
        if (typeof name === 'string' && /^\d+$/.test(tag)) names.set(Number(tag), { name, rev });
      }
    }
  }
  for (const [tag, { name }] of names) if (!name) names.delete(tag);
  return names;
}

/**
 * The names of the people the page has shown or read about, by tag, kept for naming someone deleted
 * since ("Kim (deleted)", not "a deleted person"). Two sources: the people shown (`saw(people, rev)`:
 * each keeps the name it had at that revision) and the timeline's rows (`read(entries, present)`). The
 * newer one wins: a name the rows gave at a later revision than the one the person was last seen at
 * replaces it (renamed and deleted in one revision, through the HTTP API, or while the page was too far
 * behind to be sent each revision); otherwise the name seen stays. (As the terminal's `KnownNames`.)
 */
export class KnownNames {
  constructor() {
    /** tag → name */
    this.names = new Map();
    /** tag → the revision the name was seen or given at */
    this.at = new Map();
  }

  get(tag) { return this.names.get(tag); }

  has(tag) { return this.names.has(tag); }

  clear() {
    this.names.clear();
    this.at.clear();
  }

  /** The people shown at revision `rev` ({tag, name}…): each keeps the name seen (empty ones are not kept). */
  saw(people, rev) {
    for (const p of people) {
      if (!p.name) continue;
      this.names.set(p.tag, p.name);
      this.at.set(p.tag, rev);
    }
  }

  /** Timeline rows (newest first): a person not `present(tag)` takes the name they gave last, if newer. */
  read(entries, present = () => false) {
    for (const [tag, { name, rev }] of lastNamings(entries)) {
      if (present(tag) || !(rev > (this.at.get(tag) ?? -1))) continue;
      this.names.set(tag, name);
      this.at.set(tag, rev);
    }
  }
}

/**
 * Those people in a line: "Ann, Joan", "Kim (deleted)", "Ann, Joan, Sam and 4 more"; someone gone whose
 * name was never seen is "a deleted person". `max` names at most are spelled out.
 */
export function touchedText(people, max = 3) {
  if (people.length === 0) return '';
  const word = (p) => (p.gone ? `${p.name ?? 'a deleted person'}${p.name ? ' (deleted)' : ''}` : p.name);
  if (people.length <= max + 1) return people.map(word).join(', ');
  return `${people.slice(0, max).map(word).join(', ')} and ${people.length - max} more`;
}

/**
 * Who last wrote a part of a person (a blame writer {user, rev, time?}), beside the field: "bob · 2 min
 * ago"; the seed's writer (user null) is "from the start"; a writer without a time is just the user.
 * Returns {text, title, user}: `title` is the exact time and the revision, for the tooltip.
 */
export function writerText(w, now, locale = undefined) {
  if (!w) return { text: '', title: '', user: null };
  if (w.user == null) {
    return { text: 'from the start', title: 'Unchanged since the room began', user: null };
  }
  const when = relativeTime(w.time, now, locale);
  const exact = exactTime(w.time, locale);
  return {
    text: when ? `${w.user} · ${when}` : w.user,
    title: `Last changed by ${w.user}${exact ? ` on ${exact}` : ''} (revision ${w.rev})`,
    user: w.user,
  };
}

/** How many changes a restore to revision `rev` takes back: every revision after it, by anyone. */
/**
 * What the history panel says above its rows, or '' when the rows say it all: the first page is read
 * from the hub, so while the hub is unreachable and none has come, the panel says when it will.
 */
export function historyStatusText({ loaded, count, unreachable, closedBy = null, refused = false, person = null }) {
  if (!loaded && unreachable) {
    if (refused && !closedBy) return "The hub won't let this page connect: the history shows once it does.";
    return `${closedBy ? 'The hub closed the connection' : 'The hub is unreachable'}: the history shows when it is back.`;
  }
  if (!loaded) return 'Loading…';
  if (count > 0) return '';
  return person == null ? 'No changes yet.' : `No changes to ${person} yet: they were in the room from the start.`;
}

export function changesSince(rev, head) { return Math.max(0, head - rev); }

/**
 * The confirmation a restore asks first, naming the row and how many changes it takes back:
 * "Restore the room to how it was right after bob's Change Hair Color (2 min ago)? This takes back the
 * 3 changes made since, by everyone. You can undo the restore." (revision 0's row: "…how it was when
 * it started?").
 */
export function restoreQuestion(entry, head, now, locale = undefined) {
  const count = changesSince(entry.rev, head);
  const changes = count === 1 ? '1 change' : `${count} changes`;
  return {
    count,
    text: `Restore the room to how it was ${restorePoint(entry, now, locale)}? This takes back the ${changes} `
      + 'made since, by everyone. You can undo the restore.',
  };
}

/**
 * What the restore question says instead while the hub is unreachable: a restore is worked out by the
 * hub when it gets there, so it is neither counted nor sent (queued, it would take back whatever
 * teammates send meanwhile, which nobody was asked about). `closed`: the hub closed the connection
 * itself (it is up, not unreachable); `refused`: it is running but does not let this page connect.
 */
export function restoreOfflineText(entry, now, { closed = false, refused = false, locale = undefined } = {}) {
  const hub = closed ? 'The hub closed the connection' : refused ? "The hub won't let this page connect right now"
    : "The hub can't be reached right now";
  const back = refused && !closed ? 'once the hub lets this page in' : 'once the hub is back';
  return `${hub}, so the room can't be restored to how it was ${restorePoint(entry, now, locale)}: `
    + `what that would take back can only be counted ${back}. Try again then.`;
}

/**
 * What the restore question says instead when the room already is as it was then (a restore would
 * change nothing, so none is offered): "The room already looks like it did right after bob's Change
 * Hair Color (2 min ago): restoring it would change nothing."
 */
export function alreadyRestoredText(entry, now, locale = undefined) {
  return `The room already looks like it did ${restorePoint(entry, now, locale)}: restoring it would change nothing.`;
}

/** A row as the point a restore goes back to: "right after bob's Change Hair Color (2 min ago)". */
function restorePoint(entry, now, locale) {
  if (entry.kind === 'start') return 'when it started';
  const when = relativeTime(entry.time, now, locale);
  // A run (history-runs.js) says which revisions it holds: restoring goes to after its newest, and
  // a run can grow under a focused button (a black-box pass).
  const run = entry.revs?.length > 1 ? `${entry.revs.length} changes, revisions ${entry.first} to ${entry.rev}` : '';
  const about = [run, when].filter(Boolean).join(', ');
  return `right after ${entry.author}'s ${actionText(entry)}${about ? ` (${about})` : ''}`;
}
