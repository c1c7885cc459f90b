// Runs: revisions that are one action to the people who made them, shown as one row of the history
// panel. A name is typed a letter a revision and a person moved a place a revision (HISTORY.md §1: a
// coalesced run is one undo entry), so a typed "Kimberly" was eight rows, each "Change Name".
//
// Rows next to each other in the list (newest first) are one row when both are edits by the same
// author with the same label, every diff of each a `text` diff of one and the same person's name, or
// every diff a `move` of one and the same person; and when either is on this user's undo stack (it
// carries `entry`), both carry the same entry (one undo step: "Undo this" takes back the whole row),
// else they are revisions one after the other with times at most `RUN_GAP_MILLIS` apart (a
// teammate's typing; or the user's own, off their stack, or come live, its mark not read yet). The row is the newest revision's ("Restore to here" restores to after the whole run)
// with `first`, its oldest revision (the row's key; a run that grows keeps its row: history-panel.js
// moves it to the new key), and `revs`. The shared vectors `Tests/Vectors/runs.json` pin the rule for both clients (the terminal's
// `LogEntry+Runs.swift`). No DOM: node tests it as it is.

/** The longest pause between two revisions of a run that no undo entry ties together (as the terminal's rename notices). */
export const RUN_GAP_MILLIS = 5000;

/** What a revision does to one person, if it is one kind of change to one person: `text:4`, `move:4`. */
function runShape(entry) {
  if (entry.kind !== 'edit' || !entry.ops?.length) return null;
  const { op, tag } = entry.ops[0];
  if (op !== 'text' && op !== 'move') return null;
  return entry.ops.every((d) => d.op === op && d.tag === tag) ? `${op}:${tag}` : null;
}

/** Whether `older`, the row right below `newer` in the list, belongs to the same run. */
export function sameRun(newer, older) {
  if (newer.author !== older.author || (newer.label ?? null) !== (older.label ?? null)) return false;
  const shape = runShape(newer);
  if (shape == null || shape !== runShape(older)) return false;
  // A revision of this user's that came live has its mark unread (`entryUnknown`) until the rows are
  // read again: then the time decides, as for a teammate's (it stood apart from the rows the marks
  // tie together for a moment, at every letter: a review).
  if ((newer.entry != null || older.entry != null) && !newer.entryUnknown && !older.entryUnknown) {
    return newer.entry === older.entry;
  }
  // Without an undo step to tie them, only revisions one after the other (a person's history skips
  // others' revisions: typing in Joan, then Sam, then Joan again is three rows of the room, two of
  // Joan's; a black-box pass).
  return older.rev === newer.rev - 1 && newer.time != null && older.time != null
    && Math.abs(newer.time - older.time) <= RUN_GAP_MILLIS;
}

/** `entries` (newest first) cut into runs: arrays of entries, newest first. */
export function runsOf(entries) {
  const runs = [];
  for (const entry of entries) {
    const last = runs[runs.length - 1];
    if (last && sameRun(last[last.length - 1], entry)) last.push(entry);
    else runs.push([entry]);
  }
  return runs;
}

/**
 * The rows the panel shows: an entry alone as it is; a run as its newest entry with `first` (its
 * oldest revision) and `revs` (every revision, newest first).
 */
export function runRows(entries) {
  return runsOf(entries).map((run) => {
    if (run.length === 1) return run[0];
    const row = { ...run[0], first: run[run.length - 1].rev, revs: run.map((e) => e.rev) };
    // A letter come live (its mark unread) at the top of a marked run: the row keeps the run's mark,
    // so its "Undo" does not go and come back at every letter (a review).
    const marked = run.find((e) => !e.entryUnknown);
    if (row.entryUnknown && marked?.entry != null) row.entry = marked.entry;
    return row;
  });
}

/**
 * This user's undo steps among `entries`: entry id → {first, last}, the step's first revision (its
 * id) and the newest loaded that carries it. A step can hold more than one row (a teammate's change
 * came in the middle of the typing; its first revisions are on a page not read): "Undo this" takes
 * back all of it, and says so.
 */
export function stepsOf(entries) {
  const steps = new Map();
  for (const e of entries) {
    if (e.entry == null) continue;
    const step = steps.get(e.entry);
    if (!step) steps.set(e.entry, { first: e.entry, last: e.rev });
    else step.last = Math.max(step.last, e.rev);
  }
  return steps;
}

/** A row's key in the panel: its oldest revision. */
export const rowKey = (row) => row.first ?? row.rev;

/** Whether two rows hold a revision in common (a run grown at either end is still its row). */
export const overlaps = (a, b) => rowKey(a) <= b.rev && rowKey(b) <= a.rev;
