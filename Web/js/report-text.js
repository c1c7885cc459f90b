// Skip reports, teammates' changes, refusals and the hub's reasons as sentences for a person reading
// the page (the web twin of Sources/PeopleClient/ReportText.swift). Every word comes from words.js,
// so a notice spells a field as the editor's label does ("Ann's hair color"), names the person a
// change touched, and never shows a wire name (`hello.token`, `hairColor`). Pure: runs in node.

import { fieldWords } from './words.js';
import { diffTag } from './core/diff.js';
import { actionText } from './history-text.js';

const capitalised = (s) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * A skip report ({reason, tag, field?, style?, topic?, by?}) as one sentence. `nameOf(tag)` gives the
 * person's name when it is still known (else the sentence says "tag N"). Options: `me`, this user (a
 * report whose `by` is them says "you": a selective undo is guarded by the user's own later changes
 * too), and `byRestore(report)`, whether the `by` writer's change was a restore ("bob's restore").
 */
export function reportSentence(report, nameOf, options = {}) {
  return capitalised(reportClause(report, nameOf, options));
}

/**
 * What a report is about, in words: `who` the person ("Ann", or "tag 4" when no name is known),
 * `what` the part ("Ann's hair color", "Ann's opinion on weather", or the person), and `actor` its
 * `by` as the subject of a sentence ("bob", "bob's restore", "you", "your restore"; null without one).
 */
function reportWords(report, nameOf, { me = null, byRestore = () => false } = {}) {
  const name = nameOf(report.tag);
  const who = name ? name : `tag ${report.tag}`;
  let what;
  if (report.style != null) what = `${who}'s facial hair (${report.style})`;
  else if (report.topic != null) what = `${who}'s opinion on ${report.topic}`;
  else if (report.field != null) what = `${who}'s ${fieldWords[report.field] ?? 'details'}`;
  else what = who;
  const mine = report.by != null && report.by === me;
  const restore = report.by != null && byRestore(report);
  const actor = report.by == null ? null
    : mine ? (restore ? 'your restore' : 'you') : restore ? `${report.by}'s restore` : report.by;
  return { who, what, actor, mine };
}

/** A skip report as a clause (not capitalised: "your change to Ann's hair color was overwritten by bob"). */
function reportClause(report, nameOf, options = {}) {
  const { who, what, actor, mine } = reportWords(report, nameOf, options);
  const by = report.by != null ? ` by ${actor}` : '';
  let sentence;
  switch (report.reason) {
    case 'overwritten':
      // No field: a person the undo would put back is there already (a teammate restored them).
      if (report.field == null && report.style == null && report.topic == null) {
        sentence = `${who} was already back${report.by == null ? '' : mine ? ' (you put them back)' : ` (${report.by} put them back)`}`;
      } else if (mine) {
        sentence = `${actor} changed ${what} again since`;
      } else {
        sentence = `your change to ${what} was overwritten${by}`;
      }
      break;
    case 'targetRemoved': sentence = mine ? `${actor} deleted ${who} since` : `${who} was deleted${by}`; break;
    case 'editedByOthers':
      // A redo's person to delete was brought back by the user's undo, not added by them.
      if (options.kind === 'redo') {
        sentence = mine ? `${actor} edited ${who} since bringing them back` : `${who} was edited${by} since your undo brought them back`;
      } else {
        sentence = mine ? `${actor} edited ${who} since adding them` : `${who} was edited${by} since you added them`;
      }
      break;
    case 'invariant': sentence = `your change to ${what} no longer fits (the name would be too long)`; break;
    case 'expired': sentence = `your change to ${who} is too old to undo`; break;
    default: sentence = `part of your change to ${who} was skipped`; break;
  }
  return sentence;
}

/**
 * The notice for the parts of one request of this user's that were skipped. `kind` is what the
 * request was ('undo', 'redo' or 'edit'; a selective undo is an 'undo'); `changed` whether any of it
 * was done; `label` the label of the step an undo or redo did (the hub's answer's); `me` and
 * `byRestore` as for reportSentence. When nothing was done, the notice says so first: "Nothing was
 * undone: your change to Ann's hair color was overwritten by bob." When something was, it names what:
 * "Undid Change Hair Length. Skipped: your change to Sam's glasses was overwritten by bob." — an undo
 * whose newest step had nothing left to take back goes on to the one before it (undo.cascade), so the
 * step done need not be the one the Undo button named. An edit that raced a teammate's restore: "Your
 * change was not made: Kim was deleted by dana's restore."
 */
export function reportsText(reports, nameOf, { kind = 'edit', changed = true, label = null, me = null, byRestore } = {}) {
  const clauses = [];
  for (const r of reports) {
    const c = reportClause(r, nameOf, { me, byRestore, kind });
    if (!clauses.includes(c)) clauses.push(c);
  }
  const body = clauses.join('; ');
  if (changed && label && (kind === 'undo' || kind === 'redo')) {
    return `${kind === 'undo' ? 'Undid' : 'Redid'} ${label}. Skipped: ${body}.`;
  }
  const lead = {
    undo: changed ? 'Undone, except' : 'Nothing was undone',
    redo: changed ? 'Redone, except' : 'Nothing was redone',
    edit: changed ? 'Part of your change was not made' : 'Your change was not made',
  }[kind] ?? 'Skipped';
  return `${lead}: ${body}.`;
}

/**
 * The notice for an undo pressed for an edit still queued that went with that edit, unsent: the edit
 * changed nothing, or the hub refused it, so the undo had nothing to take back (live-room.js
 * `undoDropped`). `label` is the edit's; `reports` say why, as skip reports, `sameChange` (the page's
 * own reason) for a value someone had already written: "Your undo of Toggle Glasses had nothing to
 * take back: bob had already made the same change to Ann's glasses.", and `refused` (the page's own
 * too) for an edit the hub refused: "…: the hub refused that change." Options as for reportSentence.
 */
export function droppedUndoText(label, reports, nameOf, options = {}) {
  const clauses = [];
  for (const r of reports) {
    let c;
    if (r.reason === 'refused') {
      c = 'the hub refused that change';
    } else if (r.reason === 'sameChange') {
      const { what, actor } = reportWords(r, nameOf, options);
      c = actor ? `${actor} had already made the same change to ${what}`
        : `the same change to ${what} had already been made`;
    } else {
      c = reportClause(r, nameOf, options);
    }
    if (!clauses.includes(c)) clauses.push(c);
  }
  const lead = `Your undo${label ? ` of ${label}` : ''} had nothing to take back`;
  return clauses.length ? `${lead}: ${clauses.join('; ')}.` : `${lead}: your change changed nothing.`;
}

/**
 * The notice for a room whose history on the hub is not the one this page had (live-room.js `reset`:
 * the hub's data was restored from an older backup, or it restarted without it): what the page shows
 * now, which of this user's saved changes the hub no longer has (`lost`, timeline entries; or, with
 * `perhapsMore` and none certain, that some may be gone), how many of the changes made meanwhile
 * still go (`kept`), and how many do not (`notSent`: edits that no longer apply, undos, redos or
 * restores of changes that are gone).
 */
export function resetText(kept = 0, notSent = 0, lost = [], perhapsMore = false) {
  const lead = "The hub's copy of this room went back (restored from a backup, or restarted without its data): "
    + 'you now see the room as the hub has it';
  const changes = (n) => (n === 1 ? 'One change' : `${n} changes`);
  let saved = '';
  if (lost.length > 0) {
    const names = lost.slice(0, 3).map(actionText).join(', ') + (lost.length > 3 ? ', …' : '');
    saved = lost.length === 1 ? ` Your saved change is gone: ${names}.` : ` Your ${lost.length} saved changes are gone: ${names}.`;
  } else if (perhapsMore) {
    saved = ' Your changes saved since it went back may be gone.';
  }
  if (kept === 0 && notSent === 0) return `${lead}.${saved}`;
  if (notSent === 0) return `${lead}, with your unsent changes that still apply.${saved}`;
  const notApplied = `${changes(notSent)} you made meanwhile ${notSent === 1 ? 'was' : 'were'} not sent: ${notSent === 1 ? 'it no longer applies' : 'they no longer apply'} to the room as it is.`;
  if (kept === 0) return `${lead}.${saved} ${notApplied}`;
  return `${lead}, with your unsent changes that still apply.${saved} ${notApplied}`;
}

/**
 * What one diff did, as a clause naming the person: "Sam's hair color is now red", "Sam no longer
 * wears glasses", "Joan is now called Jo". `before(tag)` / `after(tag)` give names before and after.
 */
export function changeClause(diff, before, after) {
  const tag = diffTag(diff);
  const was = before(tag) ?? after(tag) ?? `tag ${tag}`;
  const now = after(tag) ?? was;
  switch (diff.op) {
    case 'set':
      if (diff.field === 'name') return `${was} is now called ${diff.value}`;
      if (diff.field === 'glasses') return diff.value ? `${now} now wears glasses` : `${now} no longer wears glasses`;
      return `${now}'s ${fieldWords[diff.field] ?? 'details'} is now ${diff.value}`;
    case 'text': return was === now ? `${now}'s name changed` : `${was} is now called ${now}`;
    case 'facialHair': return diff.present ? `${now} now has a ${diff.style}` : `${now} no longer has a ${diff.style}`;
    case 'preference':
      if (diff.value === 'like') return `${now} now likes ${diff.topic}`;
      if (diff.value === 'dislike') return `${now} now dislikes ${diff.topic}`;
      return `${now} is now neutral on ${diff.topic}`;
    case 'insert': return `${diff.person?.name ?? now} was added`;
    case 'remove': return `${was} was deleted`;
    // Where to (a listener cannot see the row go): the place it ends at, as "Place in the list" counts.
    case 'move': return Number.isInteger(diff.to) ? `${now} was moved to place ${diff.to + 1}` : `${now} was moved in the list`;
    default: return `${now} changed`;
  }
}

/**
 * A teammate's revision ({author, kind, label?, diffs}) in a sentence that says whom it touched:
 * "carol: Sam no longer wears glasses", "bob undid a change: Ann's hair color is now brown". Several
 * diffs on one person: "carol changed Sam (Change Likes)"; on several: "carol changed 3 people".
 */
export function remoteText({ author: writer, kind, label, diffs = [] }, before, after, me = null) {
  // This user's own change from elsewhere (another tab, the terminal, a script over HTTP).
  const author = me != null && writer === me ? 'you (elsewhere)' : writer;
  if (kind === 'restore') return `${author} restored an earlier version${label ? ` (${label})` : ''}`;
  const lead = kind === 'undo' ? `${author} undid a change` : kind === 'redo' ? `${author} redid a change` : author;
  // A name typed letter by letter arrives as several text diffs on one person: one clause.
  const tags = [...new Set(diffs.map(diffTag))];
  if (diffs.length === 1 || (tags.length === 1 && diffs.every((d) => d.op === 'text'))) {
    return `${lead}: ${changeClause(diffs[diffs.length - 1], before, after)}`;
  }
  if (tags.length === 1) {
    const name = after(tags[0]) ?? before(tags[0]) ?? `tag ${tags[0]}`;
    const what = label ? ` (${label})` : '';
    return kind === 'edit' || kind == null ? `${author} changed ${name}${what}` : `${lead} on ${name}${what}`;
  }
  if (tags.length === 0) return `${lead}${label ? `: ${label}` : ''}`;
  return kind === 'edit' || kind == null ? `${author} changed ${tags.length} people` : `${lead} on ${tags.length} people`;
}

/** Whether a message from the hub holds a wire name a user should not read. */
export function hasWireWords(message) {
  return /\b(?:hello|limits|auth|web|storage|rooms|undo)\.[A-Za-z]+|`|\bops\[|\bseq\b|\bbase\b/.test(message ?? '');
}

/** A refusal of something this user did in the room ({code, message}) as a sentence. */
export function errorText({ code, message }) {
  switch (code) {
    case 'room-full': {
      const most = /at most (\d+) people/.exec(message ?? '');
      return most ? `Not saved: this room holds at most ${most[1]} people.`
        : 'The hub cannot open another room right now. Try again later.';
    }
    case 'rate-limited': return 'Too many changes at once; the hub dropped one. Try again in a moment.';
    case 'forbidden': return 'You can only view this room: nothing was changed.';
    case 'too-large': return 'Not saved: that change is too large to send.';
    case 'no-entry': return 'Nothing was undone: that change of yours was already undone.';
    case 'invalid-op': return 'Not saved: that change no longer fits the room (a teammate may have changed it first).';
    case 'stale-base': return 'Catching up with the hub…';
    case 'server-error': return 'The hub had a problem and did not save that change. Try again.';
    case 'bad-json': case 'bad-message': case 'not-hello':
      return 'The hub did not understand this page. Reload the page.';
    default:
      return hasWireWords(message) || !message ? 'The hub refused a change.' : `The hub refused a change: ${message}`;
  }
}

/**
 * Why the hub would not let this user in ({code, message} of a fatal error), in words that say what
 * to do; the join screen shows it. `unauthorized` always reads as a question about the access token.
 */
export function refusalText({ code, message = '' }, { kept = null } = {}) {
  if (code === 'unauthorized') {
    if (/needs an access token/.test(message)) {
      return 'This room needs an access token. Paste the token you were given and press Join.';
    }
    if (/expired/.test(message)) {
      // `kept` (a number): the room was open, and waits for the new token with what it has not sent.
      if (kept == null) return 'Your access token has expired. Ask for a new one and paste it here.';
      const changes = kept === 0 ? 'nothing of yours is lost'
        : `your ${kept === 1 ? 'change' : `${kept} changes`} not sent yet ${kept === 1 ? 'is' : 'are'} kept and ${kept === 1 ? 'goes' : 'go'} then`;
      return `Your access token has expired. Ask for a new one, paste it here and press Join to carry on: ${changes}.`;
    }
    const owner = /token is for (.+), not (.+)$/.exec(message);
    if (owner) {
      return `That access token is for ${owner[1]}, not ${owner[2]}. Join as ${owner[1]}, or paste ${owner[2]}'s own token.`;
    }
    const room = /does not give access to room (.+)$/.exec(message);
    if (room) return `Your access token does not open room ${room[1]}. Ask for one that does, and paste it here.`;
    if (/not valid/.test(message)) {
      return 'That access token is not valid. Check that you pasted all of it, or ask for a new one.';
    }
    return 'The hub did not accept your access token. Ask for a new one and paste it here.';
  }
  if (code === 'unsupported-protocol') return 'This page and the hub speak different versions. Reload the page.';
  if (code === 'insecure-redirect' || code === 'room-deleted') return message;  // the page's own words (live-room.js)
  if (!message || hasWireWords(message)) return 'The hub did not let you in. Try again in a moment.';
  return `The hub did not let you in: ${message}`;
}
