// What the Undo and Redo buttons offer: the step the next press takes back (or puts back), by its
// label, also while requests of this user's are still queued (offline, or waiting for the hub). Port of
// Sources/PeopleCore/Client/UndoOffer.swift.
//
// The hub's history summary (`canUndo`, `undoLabel`, `canRedo`, `redoLabel`) is the top of its stacks
// after the requests it has answered; the outbox holds the requests it has not. A press meets the
// hub's stacks with the outbox played over them, in order: an edit or a restore pushes a step and
// clears the redo stack (consecutive edits with one coalesce key are one step, as the hub makes
// them), an undo moves the newest step (touching its person, when scoped) to the redo stack, a redo
// the other way. Queued steps are known with their labels; of the hub's stacks only the top is
// known, so a press that reaches below it, a scoped one that reaches the hub's steps (it may find
// none) or a selective undo (it may take the top) leaves what follows unknown: the button then says
// "Undo" without a name, never another step's.
//
// Invariant: a label offered is the label of the step the next press takes back. Pure (no DOM, no
// socket): node tests it (Tests/js/page-undo-offer.test.mjs). An undo that goes with its edit because
// the edit changed nothing (client-sync.js, `forQueuedEdit`) is counted as taking that edit back, as
// the user meant it. It lives in the core because client-sync.js reads the steps of a play too, to
// show an undo or a redo of a queued edit at once (`play`: `requests`, `movedBy`).

import { diffTag } from './diff.js';

/** The hub's part of one stack: its top as the summary gave it, or `known: false` once passed. */
const hubTop = (can, label) => ({ known: true, can, label: label ?? null });
const unknownTop = () => ({ known: false, can: true, label: null });

/**
 * A step on a stack: its label (null when it came without one), the people it touches (null: not
 * known), and whether it is one of the hub's (taken off its known top), not a queued request's;
 * `requests`, the ids of the queued requests that made it (its edits, several when they coalesce; or a
 * restore, then `restore` is true); `movedBy`, the id of the undo or redo that last moved it from one
 * stack to the other (null: never moved).
 */
const step = (label, tags, { fromHub = false, requests = [], restore = false } = {}) =>
  ({ label: label ?? null, tags, fromHub, requests, restore, movedBy: null });

/**
 * What the next Undo and Redo would take back: {undo: {can, label}, redo: {can, label}}. `label` is
 * null when the step is not known by name (the button then says just "Undo" / "Redo").
 * @param {{history, outbox}} sync  a ClientSync (its `history` summary and its `outbox`)
 */
export function undoOffer({ history, outbox = [] }) {
  return play(history, outbox.map((pending, index) => ({ id: index, request: pending.request }))).offer;
}

/**
 * The stacks after `requests` ({id, request}, oldest first, each with an id of the caller's) are played
 * over the hub's `history`, and the offer they make: {undo: [step], redo: [step], offer}, the known
 * steps of both stacks oldest first (see `step`). client-sync.js reads the steps to show an undo or a
 * redo of a queued edit at once.
 */
export function play(history, requests) {
  const undo = { steps: [], hub: hubTop(history.canUndo, history.undoLabel) };
  const redo = { steps: [], hub: hubTop(history.canRedo, history.redoLabel) };
  /** The coalesce key of the queued edit on top of the undo stack, while the next may join it. */
  let run = null;
  for (const { id, request } of requests) {
    switch (request.type) {
      case 'submit': {
        const tags = request.ops.map(diffTag);
        const top = undo.steps[undo.steps.length - 1];
        if (request.coalesce != null && request.coalesce === run && top) {
          top.tags = [...new Set([...top.tags, ...tags])];
          top.requests.push(id);
        } else {
          undo.steps.push(step(request.label, tags, { requests: [id] }));
        }
        run = request.coalesce ?? null;
        cleared(redo);
        break;
      }
      case 'restore':
        undo.steps.push(step(request.label ?? `Restore to revision ${request.rev}`, null, { requests: [id], restore: true }));
        run = null;
        cleared(redo);
        break;
      case 'undo':
        run = null;
        if (request.entry != null) {
          // One of the hub's steps, perhaps its top, or one an undo and a redo brought back on top of
          // the queued ones: what is on top afterwards is not known. (Queued edits have no entry id
          // yet: a selective undo cannot take them.)
          if (undo.steps.some((s) => s.fromHub)) unknown(undo);
          else undo.hub = unknownTop();
          unknown(redo);
        } else {
          moveNewest(undo, redo, request.scope, id);
        }
        break;
      case 'redo':
        run = null;
        moveNewest(redo, undo, request.scope, id);
        break;
      default:
        break;
    }
  }
  return { undo: undo.steps, redo: redo.steps, offer: { undo: topOf(undo), redo: topOf(redo) } };
}

/** An edit or a restore clears the redo stack: nothing is left to redo, the hub's steps included. */
function cleared(stack) {
  stack.steps = [];
  stack.hub = hubTop(false, null);
}

/**
 * One press: the newest step of `from` (touching `scope`, when given) goes on top of `to`. Of the
 * hub's steps only the top is known, and only an unscoped press surely takes it; any other press
 * that reaches the hub's steps may take one or none, so what `to` holds is then not known at all.
 * A scoped press that meets a step whose people are not known (one of the hub's, a restore) may take
 * it or pass it: neither stack's top is known then. `press` is the id of the undo or redo.
 */
function moveNewest(from, to, scope, press) {
  for (let i = from.steps.length - 1; i >= 0; i -= 1) {
    const s = from.steps[i];
    if (scope != null && s.tags == null) {
      unknown(from);
      unknown(to);
      return;
    }
    if (scope == null || s.tags.includes(scope)) {
      from.steps.splice(i, 1);
      s.movedBy = press;
      to.steps.push(s);
      return;
    }
  }
  if (from.hub.known && !from.hub.can) return; // the hub will answer that there is nothing
  if (from.hub.known && scope == null) to.steps.push(step(from.hub.label, null, { fromHub: true }));
  else unknown(to);
  from.hub = unknownTop();
}

/** A stack that may or may not have gained a step: neither its top nor its depth is known. */
function unknown(stack) {
  stack.steps = [];
  stack.hub = unknownTop();
}

function topOf(stack) {
  const top = stack.steps[stack.steps.length - 1];
  if (top) return { can: true, label: top.label };
  return { can: stack.hub.can, label: stack.hub.label };
}
