// Per-user undo: skip reports, entries, stacks and policy (port of Sources/PeopleCore/Undo/).

import { ErrorCode } from './errors.js';
import { WireFields } from './fields.js';
import { FacialHairStyle, Topic } from './model.js';
import { diffTag } from './diff.js';

/** Why part of an edit, undo or redo was not applied (PROTOCOL.md "skip report"). */
export const Reason = Object.freeze({
  /** Someone (`by`, possibly the user themself) wrote the same field, element or position later. */
  overwritten: 'overwritten',
  /** The person is absent; `by` removed them. */
  targetRemoved: 'targetRemoved',
  /** Undo of an insert under `skip`: another user (`by`) edited the person since. */
  editedByOthers: 'editedByOthers',
  /** The rebased part would break the model (a name over the limit). */
  invariant: 'invariant',
  /** The hub no longer keeps the history needed to rebase the entry. */
  expired: 'expired',
});
const reasons = new Set(Object.values(Reason));

/**
 * A skip report as on the wire: {reason, tag, field?, style?, topic?, by?}, absent members left out.
 * `field` is "position" for a move, the field name for a set or text, "facialHair" / "preference" for
 * elements (with `style` / `topic`).
 */
export function makeReport({ reason, tag, field, style, topic, by }) {
  const report = { reason, tag };
  if (field != null) report.field = field;
  if (style != null) report.style = style;
  if (topic != null) report.topic = topic;
  if (by != null) report.by = by;
  return report;
}

/** A report about one target of a diff (a target from `diffTarget`). */
export function reportFor(reason, target, by) {
  switch (target.kind) {
    case 'person': return makeReport({ reason, tag: target.tag, by });
    case 'position': return makeReport({ reason, tag: target.tag, field: 'position', by });
    case 'field': return makeReport({ reason, tag: target.tag, field: target.field, by });
    case 'facialHair': return makeReport({ reason, tag: target.tag, field: 'facialHair', style: target.style, by });
    case 'preference': return makeReport({ reason, tag: target.tag, field: 'preference', topic: target.topic, by });
    default: throw new TypeError(`unknown target ${target.kind}`);
  }
}

/** Reads a report from its wire form (Swift `SkipReport(json:)`); errors are `bad-message`. */
export function parseReport(json) {
  const f = new WireFields(json, 'report', ErrorCode.badMessage);
  const reason = f.string('reason');
  if (!reasons.has(reason)) throw f.fail(`unknown reason '${reason}'`);
  const style = f.optionalString('style');
  if (style !== undefined) WireFields.word(style, FacialHairStyle, (m) => f.fail(m));
  const topic = f.optionalString('topic');
  if (topic !== undefined) WireFields.word(topic, Topic, (m) => f.fail(m));
  return makeReport({
    reason, tag: f.int('tag'), field: f.optionalString('field'), style, topic, by: f.optionalString('by'),
  });
}

/** A report as text, for logs. */
export function describeReport(r) {
  const parts = [`${r.reason} tag ${r.tag}`];
  if (r.field != null) parts.push(`field ${r.field}`);
  if (r.style != null) parts.push(`style ${r.style}`);
  if (r.topic != null) parts.push(`topic ${r.topic}`);
  if (r.by != null) parts.push(`by ${r.by}`);
  return parts.join(' ');
}

/** How undo and redo behave in a room (the hub's `undo` config). */
export function undoPolicy({ depth = 100, conflicts = 'skip', cascade = true, coalesceMillis = 500 } = {}) {
  return { depth, conflicts, cascade, coalesceMillis };
}

/**
 * One step on a user's undo or redo stack: a batch the user made, or a coalesced run of them.
 * `parts`: [{revision, applied: [appliedDiff]}], oldest first, undone newest first.
 * `tags`: the tags its applied diffs touch.
 */
export class UndoEntry {
  constructor(label, parts) {
    this.label = label;
    this.parts = [...parts];
    this.tags = new Set(this.parts.flatMap((p) => p.applied.map((a) => diffTag(a.diff))));
  }

  append(part) {
    this.parts.push(part);
    for (const a of part.applied) this.tags.add(diffTag(a.diff));
  }

  /** The oldest revision the entry needs history after. */
  get oldestRevision() { return this.parts.length ? this.parts[0].revision : 0; }

  /**
   * The entry's id (HISTORY §1): the revision of the first batch it recorded (for an entry pushed by an
   * undo or a redo, that revision). Unique in a room, and the same after a restart.
   */
  get id() { return this.oldestRevision; }
}

/** A user's history summary as on the wire (`history` message without `type`). */
export function historySummary({ canUndo = false, canRedo = false, undoLabel, redoLabel } = {}) {
  const h = { canUndo, canRedo };
  if (undoLabel != null) h.undoLabel = undoLabel;
  if (redoLabel != null) h.redoLabel = redoLabel;
  return h;
}

export function sameSummary(a, b) {
  return a.canUndo === b.canUndo && a.canRedo === b.canRedo && a.undoLabel === b.undoLabel
    && a.redoLabel === b.redoLabel;
}

/** A user's undo and redo stacks in one room, and the coalescing run in progress ({key, time} or null). */
export class UndoStacks {
  constructor() {
    this.undo = [];
    this.redo = [];
    this.run = null;
  }

  get summary() {
    const u = this.undo[this.undo.length - 1];
    const r = this.redo[this.redo.length - 1];
    return historySummary({ canUndo: this.undo.length > 0, canRedo: this.redo.length > 0,
      undoLabel: u?.label, redoLabel: r?.label });
  }

  /** Index of the newest entry (touching `scope`, if given), or -1. */
  static newest(stack, scope) {
    if (scope == null) return stack.length - 1;
    for (let i = stack.length - 1; i >= 0; i--) if (stack[i].tags.has(scope)) return i;
    return -1;
  }

  /** Pushes `entry`, dropping the oldest beyond `depth` (0 = unlimited). */
  static push(entry, stack, depth) {
    stack.push(entry);
    if (depth > 0 && stack.length > depth) stack.splice(0, stack.length - depth);
  }
}
