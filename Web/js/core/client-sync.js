// The client side of a room (port of Sources/PeopleCore/Client/ClientSync.swift): optimistic local
// edits, at most one request in flight, and rebasing of pending edits over what the hub sends
// (ot.js / Wave style).
//
// `confirmed` is exactly the hub's model at `revision` (the hub's ops are applied as they are);
// `view` is `confirmed` plus the pending edits, rebased, and is what a screen shows. Requests wait in
// an outbox and go one at a time, so an undo pressed after an edit undoes that edit. After a
// reconnect the request in flight is resent with its seq; the hub answers it once.
//
// An undo or redo pressed while the step it takes is still queued here (an edit not yet answered,
// offline or in flight) shows at once: its `predicted` ops (the exact inverse of the step as the view
// applied it, or for a redo the inverse of that undo's) join the view like an edit's, and what is
// queued after it is made on top of them. When the hub answers with other ops (a teammate's change
// was skipped, or the hub's step was not the one foreseen) the later requests are rebased over the
// prediction taken back and the hub's ops. Undos and redos that reach the hub's own steps, scoped
// presses that pass the newest step, selective undos and restores wait for the hub, as before. The
// steps are found by playing the outbox over the hub's stacks, as the Undo button's label is
// (undo-offer.js, `play`).
//
// Messages in and out are wire-shaped objects: feed `receive` with `decodeServerMessage(frame)` and
// send `JSON.stringify(message)` for each message returned. Events (for a screen):
//   {type:'welcomed', session} | {type:'remote', rev, author, kind, label?, diffs}
//   {type:'skipped', reports} | {type:'history', history} | {type:'presence', users}
//   {type:'error', code, message} | {type:'needsResync'} | {type:'redirect', url}
//   {type:'log', page: {seq?, entries, more}}       a page of the timeline (the answer to a `log`)
//   {type:'blame', blame: {seq?, tag, created, fields}}  who wrote what of one person (a `blame`'s answer)
//   {type:'undoDropped', label?, ops}  an undo pressed for a queued edit went with that edit, unsent: the
//                                   edit (`label`, its `ops` as last queued) changed nothing or no longer
//                                   applied, so the undo had nothing to take back (see `forQueuedEdit`,
//                                   and `step` for an undo shown at once)
//   {type:'reset', dropped, lost, perhapsMore}
//                                   the hub's room has another history than this client had (`welcome.reset`:
//                                   restored from an older backup, or a hub restarted without its data): the
//                                   view is the hub's state plus the queued edits that still apply; `dropped`
//                                   undos, redos and restores that named the old history's steps went unsent;
//                                   `lost`: this user's revisions the hub had acknowledged and no longer has
//                                   (numbered past its head now, oldest first, as timeline entries {rev, time,
//                                   author, kind, label?, ops}); `perhapsMore`: the hub's head is at or past
//                                   what this client had seen, so which of them went cannot be told
//
// Requests that make revisions (edits, undo, undo of one entry, redo, restore) wait in the outbox and go
// one at a time with the session's seq; `log` and `blame` only read, so they go at once (when connected).
// Their seq (echoed by the hub, and not checked against the session's counter: HISTORY §4) is taken from
// the same counter, so an `error` answering one never names the request in flight.

import { ErrorCode } from './errors.js';
import { PeopleModel, sameText } from './model.js';
import { applyDiff, applyBatch } from './apply.js';
import { transformBatch, applyOrder } from './transform.js';
import { parseDiff, sameJSON } from './diff.js';
import { historySummary } from './undo.js';
import * as UndoOffer from './undo-offer.js';

function tryApplyBatch(model, ops) {
  try { applyBatch(model, ops, 'skip'); } catch { /* an invalid batch changes nothing */ }
}

/** What takes back `applied` (applied diffs, in order) exactly: their inverses, newest first. */
function exactInverse(applied) { return [...applied].reverse().map((done) => done.inverse); }

const blockKey = (b) => `${b.from}-${b.to}`;

export class ClientSync {
  constructor(user) {
    this.user = user;
    /** The hub's model at `revision`. */
    this.confirmed = new PeopleModel();
    this.revision = 0;
    /**
     * The time of `revision` as the hub gave it (for revision 0, when the room was made; null when none
     * was given): sent back as `hello.sinceTime`, so that a hub with another history says `reset`
     * instead of catching this client up on a state it does not have.
     */
    this.revisionTime = null;
    /** This user's own revisions as the hub acknowledged them (the last 200), for what a `reset` says is gone. */
    this.ownRevisions = [];
    /** tag → the name a person had in `confirmed` when the hub removed it, until re-inserted (`renamed`) */
    this.removedNames = new Map();
    /** `confirmed` plus the pending submits: what a screen shows. */
    this.view = new PeopleModel();
    this.session = null;
    this.role = 'editor';
    this.history = historySummary();
    this.presence = [];
    this.connected = false;
    /**
     * Requests not yet answered: {seq, request, sentBase, id, forQueuedEdit, predicted, step}; request is
     * {type:'submit', ops, label?, coalesce?} | {type:'undo', scope?} | {type:'undo', entry}
     * | {type:'redo', scope?} | {type:'restore', rev, label?}. `sentBase` is the base it was sent with,
     * once sent (null before). `forQueuedEdit`: an undo pressed for the edit queued just before it
     * (unsent or in flight); it goes with that edit when the edit turns out to change nothing, or is
     * dropped, since the hub would otherwise take back the user's entry before it. `id`: this client's
     * id for it (stable while it waits; `UndoOffer.play` names steps by it). `predicted`: for an undo
     * or redo shown at once, the ops it is expected to have (see the header), else null. `step`: for a
     * predicted undo or redo, the ids of the queued edits its step is made of; one that turns out to
     * make no undo step at the hub (it changed nothing, was refused, or no longer applied) leaves the
     * step, and a step left with none means the press has nothing to take: it goes.
     */
    this.outbox = [];
    /** The coalesce key of the hub's newest undo step of ours, while the last answer was an edit's. */
    this.lastAnsweredCoalesce = null;
    /** The next pending request's `id`. */
    this.nextPendingID = 1;
    this.inFlight = false;
    this.nextSeq = 1;
    this.tagBlocks = [];
    /** Every block ever received: a resumed session's welcome repeats its block, which may be used up. */
    this.knownBlocks = new Set();
    this.nextTag = null;
    this.hasState = false;
    /** Local (rebased) copies of batches already sent, by seq, for the view. */
    this.sentLocal = new Map();
    /** The edits whose undo went with them since the last event list ({label?, ops}); see `receive`. */
    this.droppedUndos = [];
  }

  /** Requests not yet answered (the first may be in flight). */
  get pendingCount() { return this.outbox.length; }

  // MARK: Connection

  /** The `hello` to send on a new connection: resumes the session and catches up when it can. */
  connect({ client, token } = {}) {
    this.connected = false;
    this.inFlight = false;
    const hello = { type: 'hello', protocol: 1, user: this.user };
    if (token != null) hello.token = token;
    if (client != null) hello.client = client;
    if (this.session != null) hello.resume = this.session;
    if (this.hasState) hello.since = this.revision;
    if (this.hasState && this.revisionTime != null) hello.sinceTime = this.revisionTime;
    return hello;
  }

  /** The connection dropped: the request in flight will be resent on the next connection. */
  disconnected() {
    this.connected = false;
    this.inFlight = false;
  }

  // MARK: Local actions

  /** A fresh tag for an insert, from this user's blocks; null when none is left (ask with {type:'tags'}). */
  allocateTag() {
    while (this.tagBlocks.length > 0) {
      const block = this.tagBlocks[0];
      const candidate = this.nextTag ?? block.from;
      if (candidate <= block.to) {
        this.nextTag = candidate + 1;
        return candidate;
      }
      this.tagBlocks.shift();
      this.nextTag = null;
    }
    return null;
  }

  /** Tags left in this client's blocks. */
  get tagsLeft() {
    if (this.tagBlocks.length === 0) return 0;
    const [first, ...rest] = this.tagBlocks;
    return (first.to - (this.nextTag ?? first.from) + 1) + rest.reduce((n, b) => n + b.to - b.from + 1, 0);
  }

  /**
   * Applies a local edit to the view at once and queues it. Throws InvalidOp (changing nothing) when
   * the batch is invalid on the view. `diffs` may be wire JSON (they are validated and made canonical).
   * Returns the messages to send now.
   */
  edit(diffs, { label, coalesce } = {}) {
    diffs = diffs.map(parseDiff);
    const probe = this.view.clone();
    const result = applyBatch(probe, diffs);
    if (result.applied.length === 0) return [];
    this.view = probe;
    // Typing into one name while a request is in flight: one batch, as it would be one undo step.
    const last = this.outbox[this.outbox.length - 1];
    if (coalesce != null && last && last.sentBase === null && last.request.type === 'submit'
        && last.request.coalesce === coalesce) {
      last.request = { ...last.request, ops: [...last.request.ops, ...diffs] };
    } else {
      this.enqueue(makePending(submitRequest(diffs, label, coalesce)));
    }
    return this.flush();
  }

  /** Takes back the newest step; shown at once when that step is still queued here. */
  undo(scope) { return this.queue('undo', scope); }
  /** Puts back the newest step undone; shown at once when its undo was. */
  redo(scope) { return this.queue('redo', scope); }

  /**
   * Selective undo (HISTORY §2): takes back this user's undo entry `entry` (its id, as `log` gives it),
   * wherever it is on the stack. Queued like an undo; an id no longer there is answered `no-entry`.
   */
  undoEntry(entry) {
    this.enqueue(makePending({ type: 'undo', entry }));
    return this.flush();
  }

  /**
   * Makes the room what it was right after revision `rev` (0: the seed), as one revision (HISTORY §3).
   * Queued like an undo: the view changes when the hub answers `restored`.
   */
  restore(rev, { label } = {}) {
    const request = { type: 'restore', rev };
    if (label != null) request.label = label;
    this.enqueue(makePending(request));
    return this.flush();
  }

  /**
   * Asks for a page of the timeline (newest first; `before` a revision, `limit` 1–200, `tag` a person).
   * Sent at once when connected (else nothing: ask again after the welcome); the answer comes as a `log`
   * event with the seq of the message returned.
   */
  log({ before, limit = 50, tag } = {}) {
    if (!this.connected) return [];
    const m = { type: 'log', seq: this.nextSeq++ };
    if (before != null) m.before = before;
    m.limit = limit;
    if (tag != null) m.tag = tag;
    return [m];
  }

  /** Asks who last wrote each part of person `tag`; sent at once when connected, answered by a `blame` event. */
  blame(tag) {
    if (!this.connected) return [];
    return [{ type: 'blame', seq: this.nextSeq++, tag }];
  }

  /** An undo or a redo (`type`), scoped to one person when `scope` is given. */
  queue(type, scope) {
    const request = { type };
    if (scope != null) request.scope = scope;
    const pending = makePending(request);
    // An undo pressed for the edit queued just before it goes with that edit when the edit changes
    // nothing or is dropped: sent, the hub would take back the entry before it.
    const last = this.outbox[this.outbox.length - 1];
    if (type === 'undo' && last?.request.type === 'submit') {
      pending.forQueuedEdit = scope == null || last.request.ops.some((d) => d.tag === scope);
    }
    this.predict(pending, type === 'undo', scope);
    this.enqueue(pending);
    this.rebuildView();
    return this.flush();
  }

  enqueue(pending) {
    pending.id = this.nextPendingID;
    this.nextPendingID += 1;
    this.outbox.push(pending);
  }

  /**
   * The ops a pending request adds to the view: an edit's (its local copy once sent), a predicted
   * undo's or redo's; none for the rest.
   */
  viewOps(pending) {
    if (pending.request.type === 'submit') return this.localOps(pending) ?? pending.request.ops;
    return pending.predicted ?? [];
  }

  /**
   * Gives an undo (`undo` true) or redo pressed now its predicted ops, when the step it takes is known
   * and still queued here: the newest step of its stack (touching `scope`, when given), made of queued
   * edits (or last moved by a predicted press). The ops are exact inverses of what the view applied for
   * the step, and apply to the view as it is: everything queued after the step nets to nothing (later
   * steps are undone, LIFO).
   */
  predict(pending, undo, scope) {
    const played = UndoOffer.play(this.history, this.outbox.map((p) => ({ id: p.id, request: p.request })));
    const stack = undo ? played.undo : played.redo;
    const step = stack[stack.length - 1];
    if (!step || step.fromHub || step.restore) return;
    if (scope != null && !(step.tags?.includes(scope) ?? false)) return;
    // The first queued edit may join the hub's newest step of ours at the hub (same coalesce key, within
    // its window): an undo of it may take back more than the queued edit, so it is not predicted.
    const head = this.outbox[0];
    if (undo && step.movedBy == null && head?.id === step.requests[0] && head.request.type === 'submit'
        && head.request.coalesce != null && head.request.coalesce === this.lastAnsweredCoalesce) return;
    // What the view applied for each pending request, in order.
    const model = this.confirmed.clone();
    const applied = new Map();
    for (const queued of this.outbox) {
      try {
        applied.set(queued.id, applyBatch(model, this.viewOps(queued), 'skip').applied);
      } catch {
        return;
      }
    }
    // An undo takes back what last applied the step: its edits, or the redo that put it back; a redo
    // takes back the undo that removed it.
    let by;
    if (undo) {
      by = step.movedBy != null ? [step.movedBy] : step.requests;
    } else {
      if (step.movedBy == null) return;
      by = [step.movedBy];
    }
    const ops = [];
    for (const id of [...by].reverse()) {
      const queued = this.outbox.find((p) => p.id === id);
      const done = applied.get(id);
      if (!queued || !done) return;
      if (queued.request.type !== 'submit' && queued.predicted == null) return;
      ops.push(...exactInverse(done));
    }
    pending.predicted = ops;
    pending.step = [...step.requests];
  }

  /** Sends the first request of the outbox if nothing is in flight. */
  flush() {
    if (!this.connected || this.inFlight || this.outbox.length === 0) return [];
    const pending = this.outbox[0];
    if (pending.sentBase === null) {
      pending.seq = this.nextSeq;
      this.nextSeq += 1;
      pending.sentBase = this.revision;
    }
    this.inFlight = true;
    const r = pending.request;
    if (r.type === 'submit') {
      const m = { type: 'submit', seq: pending.seq, base: pending.sentBase, ops: r.ops };
      if (r.label != null) m.label = r.label;
      if (r.coalesce != null) m.coalesce = r.coalesce;
      return [m];
    }
    if (r.type === 'restore') {
      const m = { type: 'restore', seq: pending.seq, rev: r.rev };
      if (r.label != null) m.label = r.label;
      return [m];
    }
    const m = { type: r.type, seq: pending.seq };
    if (r.scope != null) m.scope = r.scope;
    if (r.entry != null) m.entry = r.entry;
    return [m];
  }

  // MARK: From the hub

  /** Handles one decoded hub message; returns {send: [message], events: [event]}. */
  receive(message) {
    const events = [];
    switch (message.type) {
      case 'welcome': {
        this.session = message.session;
        this.role = message.role;
        this.connected = true;
        this.history = message.history;
        this.presence = message.presence;
        if (message.reset === true) {
          // Before the welcome's state replaces `revision`: what this client had seen.
          const lost = this.ownRevisions.filter((r) => r.rev > message.rev);
          const perhapsMore = message.rev >= this.revision;
          this.ownRevisions = [];
          events.push({ type: 'reset', dropped: this.forgetHistory(message.tags), lost, perhapsMore });
        }
        this.addBlock(message.tags);
        if (message.people != null) {
          this.confirmed = new PeopleModel(message.people);
          this.removedNames.clear();
          this.revision = message.rev;
          this.revisionTime = message.time ?? null;
          this.hasState = true;
          // A predicted undo or redo in flight may be in this state already (its answer then comes
          // replayed) or not (it is resent): the view waits for its answer, and the answer rebases
          // what follows as for an unpredicted one.
          for (const pending of this.outbox) if (pending.sentBase !== null) pending.predicted = null;
          // The queued edits were made on a state that cannot be rebased onto this one: keep what
          // still applies.
          this.pruneUnsent();
        }
        this.rebuildView();
        events.push({ type: 'welcomed', session: message.session });
        events.push({ type: 'history', history: message.history });
        break;
      }
      case 'ops': {
        if (message.seq != null && this.answer(message.seq, message.rev, message.ops, message.time)) break;
        if (!(message.rev > this.revision)) break;
        this.applyConfirmed(message.ops, message.rev, true, [], message.time);
        this.rebuildView();
        const remote = { type: 'remote', rev: message.rev, author: message.author, kind: message.kind,
          diffs: message.ops };
        if (message.label != null) remote.label = message.label;
        events.push(remote);
        break;
      }
      case 'ack':
        this.answer(message.seq, message.rev, message.ops, message.time);
        if (message.noop?.length) events.push({ type: 'skipped', reports: message.noop });
        break;
      case 'undone': case 'redone':
        this.answer(message.seq, message.rev, message.ops, message.time);
        if (message.skipped?.length) events.push({ type: 'skipped', reports: message.skipped });
        break;
      case 'restored':
        this.answer(message.seq, message.rev, message.ops, message.time);
        break;
      case 'log': {
        const { type, ...page } = message;
        events.push({ type: 'log', page });
        break;
      }
      case 'blame': {
        const { type, ...blame } = message;
        events.push({ type: 'blame', blame });
        break;
      }
      case 'history': {
        const { type, ...summary } = message;
        this.history = summary;
        events.push({ type: 'history', history: summary });
        break;
      }
      case 'presence':
        this.presence = message.users;
        events.push({ type: 'presence', users: message.users });
        break;
      case 'error': {
        const first = this.outbox[0];
        if (message.seq != null && first && first.seq === message.seq && first.sentBase !== null) {
          this.outbox.shift();
          this.inFlight = false;
          if (first.request.type === 'submit') this.noUndoStep(first);
          if (first.predicted != null) this.takeBack(first.predicted);
          // Edits queued behind the refused batch may depend on it (a person it inserted).
          this.pruneUnsent();
          this.rebuildView();
        }
        if (message.code === ErrorCode.staleBase) events.push({ type: 'needsResync' });
        events.push({ type: 'error', code: message.code, message: message.message });
        break;
      }
      case 'redirect':
        events.push({ type: 'redirect', url: message.url });
        break;
      case 'tags':
        this.addBlock({ from: message.from, to: message.to });
        break;
      default:
        break;
    }
    for (const edit of this.droppedUndos.splice(0)) {
      const event = { type: 'undoDropped', ops: edit.ops };
      if (edit.label != null) event.label = edit.label;
      events.push(event);
    }
    return { send: this.flush(), events };
  }

  addBlock(block) {
    const key = blockKey(block);
    if (this.knownBlocks.has(key)) return;
    this.knownBlocks.add(key);
    this.tagBlocks.push({ from: block.from, to: block.to });
  }

  /**
   * The hub answered our request `seq` (an ack, an undone / redone, a restored, or its own revision in a
   * catch-up).
   * Returns false when `seq` is not the request in flight.
   */
  answer(seq, rev, ops, time) {
    const first = this.outbox[0];
    if (!first || first.seq !== seq || first.sentBase === null) return false;
    this.outbox.shift();
    this.inFlight = false;
    ops = ops ?? [];
    // An edit that changed nothing left no undo entry: an undo pressed for it has nothing to take back.
    if (first.request.type === 'submit' && ops.length === 0) this.noUndoStep(first);
    // The coalesce key of the hub's newest undo step of ours, while the last answer was an edit's: the
    // next edit with that key may join that step (see `predict`).
    if (first.request.type !== 'submit') this.lastAnsweredCoalesce = null;
    else if (ops.length > 0) this.lastAnsweredCoalesce = first.request.coalesce ?? null;
    if (rev != null) {
      const kinds = { submit: 'edit', undo: 'undo', redo: 'redo', restore: 'restore' };
      const entry = { rev, time: time ?? null, author: this.user, kind: kinds[first.request.type], ops };
      if (first.request.label != null && (first.request.type === 'submit' || first.request.type === 'restore')) {
        entry.label = first.request.label;
      }
      this.ownRevisions.push(entry);
      if (this.ownRevisions.length > 200) this.ownRevisions.shift();
    }
    if (rev != null && rev > this.revision) {
      if (first.predicted != null) {
        // The requests queued after it were made on top of what the view showed for it.
        const shown = first.predicted;
        this.applyConfirmed(ops, rev, !sameJSON(shown, ops), shown, time);
      } else {
        // Edits queued behind an undo / redo / restore were made without its effect: rebase them over
        // it. (Edits queued behind a submit were made on top of it already.)
        this.applyConfirmed(ops, rev, first.request.type !== 'submit', [], time);
      }
    } else {
      // The hub made no revision for a predicted undo or redo (nothing to take back, every part
      // skipped): what was queued after it goes back over its prediction.
      if (first.predicted != null) this.takeBack(first.predicted);
      // Answered at a revision the confirmed state is already past (a replayed reply after a
      // full-state welcome): its effect is in the state or was undone since, and edits queued behind
      // it may no longer apply.
      this.pruneUnsent();
    }
    this.rebuildView();
    return true;
  }

  /**
   * `edit` (just taken off the outbox) made no undo step at the hub: it changed nothing, or was
   * refused. An undo tied to it (`forQueuedEdit`) goes; so does a predicted undo or redo whose step it
   * was alone. Their predictions and the edit's ops net to nothing in the view, so nothing queued after
   * them moves.
   */
  noUndoStep(edit) {
    const next = this.outbox[0];
    if (next?.forQueuedEdit && next.predicted == null && next.sentBase === null) {
      this.outbox.shift();
      this.droppedUndos.push(edit.request);
    }
    const kept = [];
    for (const pending of this.outbox) {
      const index = pending.predicted != null ? pending.step.indexOf(edit.id) : -1;
      if (index >= 0) {
        pending.step = pending.step.filter((_, i) => i !== index);
        if (pending.step.length === 0 && pending.sentBase === null) {
          if (pending.request.type === 'undo') this.droppedUndos.push(edit.request);
          continue;
        }
      }
      kept.push(pending);
    }
    this.outbox = kept;
  }

  /**
   * A prediction the hub did not make come true at all: the requests queued after it were made on top
   * of `shown`, so they are rebased over its exact inverse.
   */
  takeBack(shown) {
    const taken = shown.length > 0 ? this.inverseOf(shown) : null;
    if (taken) this.rebaseOutbox(taken.ops, taken.order);
  }

  /**
   * The exact inverse of a prediction, taken on `confirmed` (where the request it was made for applies:
   * it is the next one), and the order of people it starts from: {ops, order}; null if it does not apply.
   */
  inverseOf(shown) {
    const probe = this.confirmed.clone();
    try {
      return { ops: exactInverse(applyBatch(probe, shown, 'skip').applied), order: probe.tags };
    } catch {
      return null;
    }
  }

  /**
   * A revision of the hub's: applied to `confirmed` as it is (ops as applied are never transformed
   * again), and the queued edits rebased over it when they were made without it. With `shown` (a
   * predicted undo's or redo's ops, which the requests queued after it were made on top of), they are
   * rebased over those taken back, then over `ops`.
   */
  applyConfirmed(ops, rev, rebaseQueued, shown = [], time = null) {
    let order = this.confirmed.tags;
    let seen = this.renamed(ops);
    // Not taken back when it does not apply: rebased over `ops` alone.
    const taken = rebaseQueued && shown.length > 0 ? this.inverseOf(shown) : null;
    if (taken) {
      seen = [...taken.ops, ...seen];
      order = taken.order;
    }
    tryApplyBatch(this.confirmed, ops);
    this.revision = rev;
    this.revisionTime = time ?? null;
    if (rebaseQueued) this.rebaseOutbox(seen, order);
  }

  /**
   * The hub has another history than this client's (`welcome.reset`, before its full state is taken):
   * every request goes again as new (the one in flight was made for the old history, and the hub never
   * applied it); undos, redos and restores that name the old history's steps are dropped (those shown
   * for queued edits stay with them); the tag blocks are the welcome's only, and queued inserts get tags
   * from it (the old blocks may be a teammate's now). Returns how many requests were dropped.
   */
  forgetHistory(block) {
    this.tagBlocks = [];
    this.knownBlocks = new Set();
    this.nextTag = null;
    this.lastAnsweredCoalesce = null;
    const before = this.outbox.length;
    this.outbox = this.outbox.filter((p) => p.request.type === 'submit' || p.predicted != null || p.forQueuedEdit);
    const dropped = before - this.outbox.length;
    this.addBlock(block);
    const retag = new Map();
    for (const pending of this.outbox) {
      if (pending.request.type !== 'submit') continue;
      for (const op of pending.request.ops) {
        if (op.op !== 'insert' || retag.has(op.person.tag)) continue;
        if (op.person.tag >= block.from && op.person.tag <= block.to) continue;
        const fresh = this.allocateTag();
        if (fresh == null) break;
        retag.set(op.person.tag, fresh);
      }
    }
    const renamed = (op) => {
      const tag = op.op === 'insert' ? op.person.tag : op.tag;
      if (!retag.has(tag)) return op;
      return op.op === 'insert' ? { ...op, person: { ...op.person, tag: retag.get(tag) } } : { ...op, tag: retag.get(tag) };
    };
    for (const pending of this.outbox) {
      pending.sentBase = null;
      if (pending.predicted != null) pending.predicted = pending.predicted.map(renamed);
      const r = pending.request;
      if (r.type === 'submit') pending.request = { ...r, ops: r.ops.map(renamed) };
      else if ((r.type === 'undo' || r.type === 'redo') && r.scope != null && retag.has(r.scope)) {
        pending.request = { ...r, scope: retag.get(r.scope) };
      }
    }
    this.sentLocal.clear();
    return dropped;
  }

  /**
   * `ops` as a queued text edit must see them (call before applying them to `confirmed`): each
   * re-insert of a person the hub removed earlier, under another name than it was removed with,
   * followed by the `set(name)` it amounts to, for the people a queued edit types into. A re-insert
   * replaces the name whole (decision 19), so the hub reports such a stale text edit `overwritten` and
   * changes nothing; rebased as if the name had stayed, the view would show the typing in the new name
   * until the ack. The room does the same (`ReinsertRenames`). Records the names of the people `ops`
   * remove.
   */
  renamed(ops) {
    const typed = new Set();
    for (const pending of this.outbox) {
      if (pending.request.type !== 'submit') continue;
      for (const d of this.localOps(pending) ?? pending.request.ops) if (d.op === 'text') typed.add(d.tag);
    }
    const out = [];
    for (const diff of ops) {
      out.push(diff);
      if (diff.op === 'remove') {
        const person = this.confirmed.get(diff.tag);
        if (person) this.removedNames.set(diff.tag, person.name);
      } else if (diff.op === 'insert') {
        const tag = diff.person.tag;
        const old = this.removedNames.get(tag);
        this.removedNames.delete(tag);
        if (old !== undefined && typed.has(tag) && !sameText(old, diff.person.name)) {
          out.push({ op: 'set', tag, field: 'name', value: diff.person.name });
        }
      }
    }
    return out;
  }

  /**
   * Rebases every pending submit over `incoming` (made on `order`, ordered before them by the hub;
   * `confirmed` already includes it). Batches not yet sent are then pruned to what still applies.
   */
  rebaseOutbox(incoming, order) {
    for (const pending of this.outbox) {
      if (pending.predicted != null) {
        // A predicted undo or redo is in the view like an edit (never on the wire).
        const shown = pending.predicted;
        pending.predicted = transformBatch(shown, incoming, order).diffs;
        incoming = transformBatch(incoming, shown, order, true).diffs;
        order = shown.reduce((acc, d) => applyOrder(d, acc), order);
        continue;
      }
      if (pending.request.type !== 'submit') continue;
      const ops = this.localOps(pending) ?? pending.request.ops;
      const mine = transformBatch(ops, incoming, order).diffs;
      incoming = transformBatch(incoming, ops, order, true).diffs;
      order = ops.reduce((acc, d) => applyOrder(d, acc), order);
      if (pending.sentBase === null) {
        pending.request = { ...pending.request, ops: mine };
      } else {
        // A batch already sent keeps its wire form (a resend must be identical); its local copy is
        // only used for the view.
        this.sentLocal.set(pending.seq, mine);
      }
    }
    this.pruneUnsent();
  }

  /**
   * Keeps, in each batch not yet sent, only the diffs that apply on the state it will be sent from
   * (`confirmed` plus the batches before it); drops batches left empty (decision 13).
   */
  pruneUnsent() {
    const model = this.confirmed.clone();
    const kept = [];
    let previousDropped = null;
    // Edits dropped here, by id: a predicted undo or redo whose step was only those goes too.
    const dropped = new Map();
    for (const pending of this.outbox) {
      if (pending.predicted != null) {
        const left = pending.step.filter((id) => !dropped.has(id));
        if (left.length === 0 && pending.step.length > 0 && pending.sentBase === null) {
          const edits = pending.step.filter((id) => dropped.has(id));
          if (pending.request.type === 'undo') this.droppedUndos.push(dropped.get(edits[edits.length - 1]));
          previousDropped = null;
          continue;
        }
        pending.step = left;
        tryApplyBatch(model, pending.predicted);
        previousDropped = null;
        kept.push(pending);
        continue;
      }
      if (pending.request.type !== 'submit') {
        // The undo of an edit dropped here goes with it.
        if (previousDropped && pending.forQueuedEdit && pending.sentBase === null) {
          this.droppedUndos.push(previousDropped);
          previousDropped = null;
          continue;
        }
        previousDropped = null;
        kept.push(pending);
        continue;
      }
      previousDropped = null;
      if (pending.sentBase !== null) {
        tryApplyBatch(model, this.localOps(pending) ?? pending.request.ops);
        kept.push(pending);
        continue;
      }
      const fitting = pending.request.ops.filter((diff) => {
        try { return applyDiff(model, diff) !== null; } catch { return false; }
      });
      if (fitting.length === 0) {
        previousDropped = pending.request;
        dropped.set(pending.id, pending.request);
        continue;
      }
      pending.request = { ...pending.request, ops: fitting };
      kept.push(pending);
    }
    this.outbox = kept;
  }

  localOps(pending) { return pending.sentBase === null ? undefined : this.sentLocal.get(pending.seq); }

  /**
   * `view` = `confirmed` + the pending submits and predicted undos / redos, each applied leniently
   * (absent tags skip).
   */
  rebuildView() {
    for (const seq of [...this.sentLocal.keys()]) {
      if (!this.outbox.some((p) => p.seq === seq)) this.sentLocal.delete(seq);
    }
    const model = this.confirmed.clone();
    for (const pending of this.outbox) tryApplyBatch(model, this.viewOps(pending));
    this.view = model;
  }
}

/** A request as it joins the outbox (`enqueue` gives it its id). */
function makePending(request) {
  return { seq: 0, request, sentBase: null, id: 0, forQueuedEdit: false, predicted: null, step: [] };
}

function submitRequest(ops, label, coalesce) {
  const r = { type: 'submit', ops };
  if (label != null) r.label = label;
  if (coalesce != null) r.coalesce = coalesce;
  return r;
}
