// The hub side of one room (port of Sources/PeopleCore/Room/: Room.swift, Room+Submit.swift,
// Room+Undo.swift, and the revision filing of Room+Durable.swift). It is also the JavaScript reading
// of what a submit, an undo and a redo mean (SEMANTICS §3–§4, docs/SEMANTICS.md §7). Only the tests use
// it (the shared vectors, convergence with the web's ClientSync), so it lives here, outside the web root
// the hub serves (Web/), and imports the web core's modules from there.
//
// A pure state machine: `join`, `leave` and `receive` return the actions the hub performs, each
// {send: message, to: [sessionId]}, in order; time is passed in, session ids are chosen by the caller.
// Messages are wire-shaped objects (PROTOCOL.md) whose `ops` hold canonical diffs (see wire.js to
// decode frames). Not ported: the journal (persist actions), snapshots and restore, catch-up from a store.

import { ErrorCode, ProtocolError, InvalidOp } from '../../../Web/js/core/errors.js';
import { PeopleModel, samePerson, sameValue, opinion } from '../../../Web/js/core/model.js';
import * as D from '../../../Web/js/core/diff.js';
import { applyDiff, applyBatch, rollBack } from '../../../Web/js/core/apply.js';
import { transform, transformBatch, applyOrder } from '../../../Web/js/core/transform.js';
import { transformText } from '../../../Web/js/core/text.js';
import { RoomHistory, makeRevision, revisionDiffs, refAfter } from './history.mjs';
import { Reason, makeReport, reportFor, undoPolicy, UndoEntry, UndoStacks, sameSummary } from '../../../Web/js/core/undo.js';

/** Everything a room needs to be told, with defaults (Swift `RoomPolicy`). */
export function roomPolicy({ undo = {}, tagBlockSize = 100, keptRevisions = 0, repliesKept = 64, maxPeople = 0,
  keptSessions = 256, maxCatchUp = 1000 } = {}) {
  return { undo: undoPolicy(undo), tagBlockSize, keptRevisions, repliesKept, maxPeople, keptSessions, maxCatchUp };
}

function errorMessage(seq, error) {
  const m = { type: 'error' };
  if (seq != null) m.seq = seq;
  m.code = error.code;
  m.message = error.reason;
  if (error.code === ErrorCode.unsupportedProtocol || error.code === ErrorCode.unauthorized) m.fatal = true;
  return m;
}

function opsMessage(revision, seq = null) {
  const m = { type: 'ops', rev: revision.number, author: revision.author, kind: revision.kind,
    ops: revisionDiffs(revision) };
  if (revision.label != null) m.label = revision.label;
  if (seq != null) m.seq = seq;
  return m;
}

function presenceEntry(s) {
  const e = { user: s.user };
  if (s.viewing != null) e.viewing = s.viewing;
  if (s.field != null) e.field = s.field;
  return e;
}

const send = (message, to) => ({ send: message, to });

export class Room {
  /** A new room at revision 0 holding `seed` (a PeopleModel or a list of people; nobody's edit). */
  constructor({ name = 'room', seed = PeopleModel.tutorialSeed(), policy = roomPolicy() } = {}) {
    this.name = name;
    this.policy = policy;
    this.model = seed instanceof PeopleModel ? seed.clone() : new PeopleModel(seed);
    this.history = new RoomHistory();
    /** id → {user, role, client, connected, tags, lastSeq, lastAckRevision, replies: Map, replyOrder, viewing, field, joinOrder} */
    this.sessions = new Map();
    /** user → {stacks: UndoStacks, tagBlocks: [{from, to}]} */
    this.users = new Map();
    this.usedTags = new Set(this.model.tags);
    this.nextTag = Math.max(0, ...this.model.tags) + 1;
    this.disconnectedOrder = [];
    this.joins = 0;
  }

  /** The newest revision. */
  get revision() { return this.history.head; }
  /** Revisions up to this one are no longer kept: older bases are `stale-base`. */
  get oldestKeptBase() { return this.history.floor; }

  /** A user's stacks (empty for a user never seen). */
  stacks(user) { return this.users.get(user)?.stacks ?? new UndoStacks(); }

  userState(user) {
    let state = this.users.get(user);
    if (!state) this.users.set(user, (state = { stacks: new UndoStacks(), tagBlocks: [] }));
    return state;
  }

  /** Sessions connected now, in join order. */
  get connectedSessions() {
    return [...this.sessions].filter(([, s]) => s.connected).sort((a, b) => a[1].joinOrder - b[1].joinOrder)
      .map(([id]) => id);
  }

  connectedSessionsOf(user) { return this.connectedSessions.filter((id) => this.sessions.get(id).user === user); }

  /** The presence list: one entry per connection. */
  get presence() { return this.connectedSessions.map((id) => presenceEntry(this.sessions.get(id))); }

  // MARK: Joining and leaving

  /**
   * A connection said `hello` (already authenticated). With `resume` naming a known session of the
   * same user and role, that session continues; otherwise `session` starts a new one with a fresh tag
   * block. Returns {session, actions}: a welcome (full state, or with a servable `since` no people and
   * the missed `ops` frames after it), then a presence to everyone.
   */
  join({ session, user, role = 'editor', client = null, resume = null, since = null }) {
    this.joins += 1;
    let id;
    const actions = [];
    const old = resume != null ? this.sessions.get(resume) : undefined;
    if (old && old.user === user && old.role === role) {
      id = resume;
      old.connected = true;
      old.client = client ?? old.client;
      old.joinOrder = this.joins;
      this.disconnectedOrder = this.disconnectedOrder.filter((s) => s !== id);
    } else {
      id = session;
      const block = this.allocateTagBlock(user);
      this.sessions.set(id, { user, role, client, connected: true, tags: block, lastSeq: 0, lastAckRevision: 0,
        replies: new Map(), replyOrder: [], viewing: null, field: null, joinOrder: this.joins });
    }
    this.userState(user);
    let missed = null;
    if (since != null && this.history.head - since > this.policy.maxCatchUp) missed = null;
    else if (since != null && since >= this.history.floor && since <= this.history.head) {
      missed = this.history.revisionsAfter(since);
    }
    const s = this.sessions.get(id);
    const welcome = { type: 'welcome', session: id, user, role, rev: this.history.head };
    if (missed === null) welcome.people = [...this.model.people];
    welcome.tags = { ...s.tags };
    welcome.history = this.stacks(user).summary;
    welcome.presence = this.presence;
    actions.push(send(welcome, [id]));
    for (const revision of missed ?? []) {
      actions.push(send(opsMessage(revision, revision.session === id ? revision.seq : null), [id]));
    }
    actions.push(send({ type: 'presence', users: this.presence }, this.connectedSessions));
    return { session: id, actions };
  }

  /** The connection of `session` closed; the session is kept for a `resume` (up to `keptSessions`). */
  leave(session) {
    const s = this.sessions.get(session);
    if (!s || !s.connected) return [];
    s.connected = false;
    this.disconnectedOrder.push(session);
    while (this.disconnectedOrder.length > this.policy.keptSessions) {
      this.sessions.delete(this.disconnectedOrder.shift());
    }
    return [send({ type: 'presence', users: this.presence }, this.connectedSessions)];
  }

  allocateTagBlock(user) {
    const block = { from: this.nextTag, to: this.nextTag + this.policy.tagBlockSize - 1 };
    this.nextTag = block.to + 1;
    this.userState(user).tagBlocks.push(block);
    return block;
  }

  // MARK: Messages

  /** A decoded client message from a connected session after its `hello`; returns the actions. */
  receive(message, id, now) {
    const session = this.sessions.get(id);
    if (!session || !session.connected) return [];
    switch (message.type) {
      case 'hello':
        return [send(errorMessage(null, new ProtocolError(ErrorCode.badMessage, 'hello was already received')), [id])];
      case 'ping': {
        const pong = { type: 'pong' };
        if (message.seq != null) pong.seq = message.seq;
        return [send(pong, [id])];
      }
      case 'tags': {
        const block = this.allocateTagBlock(session.user);
        session.tags = block;
        return [send({ type: 'tags', ...block }, [id])];
      }
      case 'presence':
        session.viewing = message.viewing ?? null;
        session.field = message.field ?? null;
        return [send({ type: 'presence', users: this.presence }, this.connectedSessions)];
      case 'submit':
        return this.sequenced(message.seq, id, () => this.submit(message, id, now));
      case 'undo':
      case 'redo':
        return this.sequenced(message.seq, id, () => this.revert(message, message.type === 'redo', id, now));
      default:
        return [send(errorMessage(null, new ProtocolError(ErrorCode.badMessage, `unknown type '${message.type}'`)), [id])];
    }
  }

  /**
   * The seq rules: a known seq gets its reply replayed verbatim before any other check; a seq not
   * above the last one is `bad-message`; a viewer is `forbidden`; otherwise `handle` runs and its
   * reply is kept.
   */
  sequenced(seq, id, handle) {
    const session = this.sessions.get(id);
    if (session.replies.has(seq)) return [send(session.replies.get(seq), [id])];
    const lastSeq = session.lastSeq;
    if (!(seq > lastSeq)) {
      const error = new ProtocolError(ErrorCode.badMessage, `seq ${seq} is not above the last seq ${lastSeq}`);
      return [send(errorMessage(seq, error), [id])];
    }
    session.lastSeq = seq;
    if (session.role === 'viewer') {
      const reply = errorMessage(seq, new ProtocolError(ErrorCode.forbidden, 'viewers cannot edit'));
      this.keep(reply, seq, id);
      return [send(reply, [id])];
    }
    const handled = handle();
    this.keep(handled.reply, seq, id);
    return handled.sends;
  }

  keep(reply, seq, id) {
    const session = this.sessions.get(id);
    session.replies.set(seq, reply);
    session.replyOrder.push(seq);
    if (session.replyOrder.length > this.policy.repliesKept) session.replies.delete(session.replyOrder.shift());
  }

  /** A `history` to all the user's connections when their stacks' summary changed. */
  historyActions(user, before) {
    const after = this.stacks(user).summary;
    if (sameSummary(after, before)) return [];
    return [send({ type: 'history', ...after }, this.connectedSessionsOf(user))];
  }

  /** Commits a new revision (history, used tags) and returns its sends: reply and broadcast. */
  commit(revision, reply, sender) {
    this.record(revision);
    const others = this.connectedSessions.filter((s) => s !== sender);
    return [send(reply, [sender]), send(opsMessage(revision), others)];
  }

  /** Files a committed revision in the history window and the used tags. */
  record(revision) {
    this.history.append(revision);
    this.history.trim(this.policy.keptRevisions);
    for (const done of revision.applied) if (done.diff.op === 'insert') this.usedTags.add(done.diff.person.tag);
  }

  // MARK: Submit (Room+Submit.swift)

  /**
   * A `submit`: validate at its base, rebase over every revision since, apply atomically, and either
   * commit a new revision (ack, broadcast, undo entry) or, when it changes nothing, ack at the current
   * revision with its reports. Returns {reply, revision, sends}.
   */
  submit(submit, id, now) {
    const session = this.sessions.get(id);
    const user = session.user;
    const fail = (error) => {
      const reply = errorMessage(submit.seq, error);
      return { reply, revision: null, sends: [send(reply, [id])] };
    };
    const head = this.history.head;
    if (submit.base > head) {
      return fail(new ProtocolError(ErrorCode.badMessage, `base ${submit.base} is newer than revision ${head}`));
    }
    if (submit.base < session.lastAckRevision) {
      return fail(new ProtocolError(ErrorCode.badMessage,
        `base ${submit.base} is older than this session's last ack at ${session.lastAckRevision}`));
    }
    if (submit.base < this.history.floor) {
      return fail(new ProtocolError(ErrorCode.staleBase,
        `base ${submit.base} is older than the kept history (from ${this.history.floor}); resync with hello`));
    }
    const invalid = this.validateAtBase(submit.ops, submit.base, user);
    if (invalid) return fail(invalid);

    let diffs = submit.ops;
    const overwritten = [];
    if (submit.base < head) {
      const positional = diffs.some(D.isPositional);
      let order = positional ? this.orderAt(submit.base) : [];
      for (const revision of this.history.revisionsAfter(submit.base)) {
        const applied = revisionDiffs(revision);
        const rebased = transformBatch(diffs, applied, order);
        diffs = rebased.diffs;
        for (const o of rebased.overwritten) overwritten.push(o.target);
        if (positional) order = applied.reduce((acc, d) => applyOrder(d, acc), order);
      }
    }

    if (this.policy.maxPeople > 0) {
      const count = this.peopleCountAfter(diffs);
      if (count > this.policy.maxPeople && count > this.model.count) {
        return fail(new ProtocolError(ErrorCode.roomFull,
          `the room holds at most ${this.policy.maxPeople} people; this batch would leave ${count}`));
      }
    }

    let result;
    try {
      // On the head, the batch applies as made: an absent tag is invalid (the check at the base).
      // Rebased, a diff whose person a teammate removed since becomes a reported no-op (§3 rule 2);
      // the only refusal left is a name pushed over the limit by concurrent typing (§3 rule 6).
      result = applyBatch(this.model, diffs, submit.base === this.history.head ? 'reject' : 'skip');
    } catch (error) {
      if (error instanceof ProtocolError) return fail(error);
      throw error;
    }
    const reports = overwritten.map((t) => reportFor(Reason.overwritten, t, this.history.writer(t)));
    for (const { diff } of result.absent) {
      const tag = D.diffTag(diff);
      reports.push(makeReport({ reason: Reason.targetRemoved, tag, by: this.history.writer({ kind: 'person', tag }) }));
    }

    if (result.applied.length === 0) {
      session.lastAckRevision = this.history.head;
      const reply = ackMessage(submit.seq, this.history.head, [], reports);
      return { reply, revision: null, sends: [send(reply, [id])] };
    }

    const number = this.history.head + 1;
    const revision = makeRevision({ number, author: user, kind: 'edit', label: submit.label ?? null,
      applied: result.applied, timestamp: now, session: id, seq: submit.seq });
    const reply = ackMessage(submit.seq, number, revisionDiffs(revision), reports);
    session.lastAckRevision = number;
    const before = this.stacks(user).summary;
    this.recordEdit(revision, submit.coalesce ?? null, now);
    const sends = this.commit(revision, reply, id);
    sends.push(...this.historyActions(user, before));
    return { reply, revision, sends };
  }

  /** How many people the room would hold after `diffs` (removals of absent people are skipped). */
  peopleCountAfter(diffs) {
    const present = new Set(this.model.tags);
    for (const diff of diffs) {
      if (diff.op === 'insert') present.add(diff.person.tag);
      else if (diff.op === 'remove') present.delete(diff.tag);
    }
    return present.size;
  }

  /**
   * Decides the batch's validity at its base (SEMANTICS §7 reading 4), whatever teammates did since:
   * inserted tags are new to the room and in the user's blocks, and the batch applies, diff by diff,
   * to the people it names as they were at `base` (a tag absent there, a diff on a person the batch
   * removed earlier, a text span past the end of the name, a name over the limit are `invalid-op`).
   * On the head the real apply is that check; behind it, the named people are taken back to `base`.
   * Returns an InvalidOp or null.
   */
  validateAtBase(diffs, base, user) {
    const inserted = new Set();
    const named = new Set();
    const blocks = this.users.get(user)?.tagBlocks ?? [];
    for (const diff of diffs) {
      if (diff.op === 'insert') {
        const tag = diff.person.tag;
        if (this.usedTags.has(tag) || inserted.has(tag)) return new InvalidOp(`tag ${tag} was already used in this room`);
        if (!blocks.some((b) => b.from <= tag && tag <= b.to)) {
          return new InvalidOp(`tag ${tag} is outside the tag blocks given to ${user}`);
        }
        inserted.add(tag);
      } else if (!inserted.has(diff.tag)) {
        named.add(diff.tag);
      }
    }
    if (!(base < this.history.head)) return null;
    const view = this.peopleAt(named, base);
    try {
      applyBatch(view, diffs, 'reject');
    } catch (error) {
      if (error instanceof InvalidOp) return error;
      throw error;
    }
    return null;
  }

  /**
   * The people among `tags` that were present at revision `base`, as they were then (their order is
   * not kept): each one now, taken back through the exact inverses of the later diffs on its tag,
   * newest first. Cost: the events on those tags since `base`.
   */
  peopleAt(tags, base) {
    const view = new PeopleModel();
    for (const tag of [...tags].sort((a, b) => a - b)) {
      const now = this.model.get(tag);
      const one = new PeopleModel(now ? [now] : []);
      for (const event of this.history.eventsOn(tag, base, Infinity)) {
        const done = this.history.revision(event.revision)?.applied[event.index];
        if (!done) continue;
        try {
          applyDiff(one, done.inverse);
        } catch (error) {
          throw new Error(`exact inverse failed to apply at revision ${event.revision}: ${error.message}`);
        }
      }
      view.people.push(...one.people);
    }
    return view;
  }

  /** The tag order at revision `base`, rebuilt from the current one with the exact inverses since. */
  orderAt(base) {
    let order = this.model.tags;
    const revisions = this.history.revisionsAfter(base);
    for (let r = revisions.length - 1; r >= 0; r--) {
      const applied = revisions[r].applied;
      for (let i = applied.length - 1; i >= 0; i--) {
        if (D.isPositional(applied[i].diff)) order = applyOrder(applied[i].inverse, order);
      }
    }
    return order;
  }

  /** Files the user's new revision on their undo stack (coalescing runs) and clears their redo stack. */
  recordEdit(revision, key, now) {
    const stacks = this.userState(revision.author).stacks;
    const part = { revision: revision.number, applied: revision.applied };
    const run = stacks.run;
    if (key != null && run && run.key === key && now - run.time <= this.policy.undo.coalesceMillis
        && stacks.undo.length > 0) {
      stacks.undo[stacks.undo.length - 1].append(part);
    } else {
      UndoStacks.push(new UndoEntry(revision.label, [part]), stacks.undo, this.policy.undo.depth);
    }
    stacks.run = key != null ? { key, time: now } : null;
    stacks.redo.length = 0;
  }

  // MARK: Undo and redo (Room+Undo.swift)

  /**
   * An `undo` or `redo` request: take the user's newest entry (touching `scope`), revert it, and (with
   * cascade) go on while entries change nothing. Pushes the inverse of what was applied onto the other
   * stack (redo is computed at undo time). Any request ends the user's coalescing run.
   */
  revert(request, redo, id, now) {
    const user = this.sessions.get(id).user;
    const stacks = this.userState(user).stacks;
    const before = stacks.summary;
    stacks.run = null;
    let applied = [];
    let inverts = [];
    const skipped = [];
    let label = null;
    let firstLabel = null;
    const consumed = [];
    for (;;) {
      const stack = redo ? stacks.redo : stacks.undo;
      const index = UndoStacks.newest(stack, request.scope);
      if (index < 0) break;
      const [entry] = stack.splice(index, 1);
      if (consumed.length === 0) firstLabel = entry.label;
      consumed.push(index);
      const outcome = this.revertEntry(entry, user);
      skipped.push(...outcome.skipped);
      if (outcome.applied.length > 0) {
        applied = outcome.applied;
        inverts = outcome.inverts;
        label = entry.label;
        break;
      }
      if (!this.policy.undo.cascade) break;
    }

    // With nothing applied, the label names the step the user asked for (its reports say why).
    const result = { type: redo ? 'redone' : 'undone', seq: request.seq };
    let revision = null;
    let ops = [];
    let resultLabel = firstLabel;
    if (applied.length > 0) {
      const number = this.history.head + 1;
      revision = makeRevision({ number, author: user, kind: redo ? 'redo' : 'undo', label, applied, timestamp: now,
        session: id, seq: request.seq, inverts });
      this.pushOpposite(revision, redo, stacks);
      result.rev = number;
      ops = revisionDiffs(revision);
      resultLabel = label;
    }
    result.ops = ops;
    if (resultLabel != null) result.label = resultLabel;
    result.skipped = skipped;
    const sends = revision ? this.commit(revision, result, id) : [send(result, [id])];
    sends.push(...this.historyActions(user, before));
    return { reply: result, revision, sends, consumed };
  }

  /** Pushes the inverse of what an undo (redo) applied onto the redo (undo) stack. */
  pushOpposite(revision, redo, stacks) {
    const opposite = new UndoEntry(revision.label, [{ revision: revision.number, applied: revision.applied }]);
    UndoStacks.push(opposite, redo ? stacks.undo : stacks.redo, this.policy.undo.depth);
  }

  /**
   * Reverts an entry on the model: each part's inverse, newest first, rebased over what happened since
   * and guarded by the conflict policy. Returns {applied, inverts, skipped}; `applied` is empty (and the
   * model restored) when the model ended up unchanged (decision 6).
   */
  revertEntry(entry, user) {
    const outcome = { applied: [], inverts: [], skipped: [] };
    if (entry.oldestRevision < this.history.floor) {
      outcome.skipped = [...entry.tags].sort((a, b) => a - b).map((tag) => makeReport({ reason: Reason.expired, tag }));
      return outcome;
    }
    const snapshot = [...entry.tags].map((tag) => ({ tag, index: this.model.indexOf(tag), person: this.model.get(tag) }));
    const count = this.model.count;
    for (let p = entry.parts.length - 1; p >= 0; p--) {
      const part = entry.parts[p];
      for (let index = part.applied.length - 1; index >= 0; index--) {
        const done = part.applied[index];
        const step = this.inverseStep(done, part.revision, index, user, outcome);
        if (step.skip) outcome.skipped.push(step.skip);
        else if (step.apply) {
          try {
            const result = applyDiff(this.model, step.apply);
            if (result) {
              outcome.applied.push(result);
              outcome.inverts.push({ revision: part.revision, index });
            }
          } catch (error) {
            if (!(error instanceof ProtocolError)) throw error;
            outcome.skipped.push(reportFor(Reason.invariant, D.diffTarget(done.diff), null));
          }
        }
      }
    }
    const unchanged = this.model.count === count && snapshot.every((old) =>
      this.model.indexOf(old.tag) === old.index && samePersonOrAbsent(this.model.get(old.tag), old.person));
    if (unchanged && outcome.applied.length > 0) {
      rollBack(this.model, outcome.applied);
      outcome.applied = [];
      outcome.inverts = [];
    }
    return outcome;
  }

  /**
   * The rebased, guarded inverse of one applied diff of an entry (SEMANTICS §2 table and §4):
   * {apply: diff} | {skip: report} | {} (nothing).
   */
  inverseStep(done, revision, index, user, inProgress) {
    const guarded = this.policy.undo.conflicts === 'skip';
    const history = this.history;
    const tag = D.diffTag(done.diff);
    const later = history.eventsOn(tag, revision, index); // newest first
    const person = () => this.model.get(tag);
    const removed = () => ({ skip: makeReport({ reason: Reason.targetRemoved, tag,
      by: history.writer({ kind: 'person', tag }) }) });
    const overwritten = (target) => ({ skip: reportFor(Reason.overwritten, target, history.writer(target)) });
    // The value there is a teammate's even if it equals ours: their edit or redo was the last write to
    // `target` since this entry (decision 2). An undo only restores an earlier state and claims nothing.
    const targetKey = D.targetKey(D.diffTarget(done.diff));
    const claimed = () => {
      const last = later.find((e) => D.targetKey(e.target) === targetKey);
      return last !== undefined && last.author !== user && last.kind !== 'undo';
    };
    const { diff, inverse } = done;

    if (diff.op === 'set' && inverse.op === 'set') {
      const p = person();
      if (!p) return removed();
      if (guarded && (!sameValue(diff.field, p[diff.field], diff.value) || claimed())) {
        return overwritten(D.diffTarget(diff));
      }
      return { apply: D.set(tag, inverse.field, inverse.value) };
    }
    if (diff.op === 'facialHair' && inverse.op === 'facialHair') {
      const p = person();
      if (!p) return removed();
      if (guarded && (p.facialHair.includes(diff.style) !== diff.present || claimed())) {
        return overwritten(D.diffTarget(diff));
      }
      return { apply: D.facialHair(tag, diff.style, inverse.present) };
    }
    if (diff.op === 'preference' && inverse.op === 'preference') {
      const p = person();
      if (!p) return removed();
      if (guarded && (opinion(p, diff.topic) !== diff.value || claimed())) return overwritten(D.diffTarget(diff));
      return { apply: D.preference(tag, diff.topic, inverse.value) };
    }
    if (diff.op === 'text' && inverse.op === 'text') {
      if (!this.model.contains(tag)) return removed();
      // Rebased character-wise over every later edit of the name, ours included, with each
      // edit-and-revert pair that nothing separates taken out (it changed nothing): decision 11.
      const edits = [];
      const add = (ref, inverts, d) => {
        const last = edits[edits.length - 1];
        if (inverts && last && last.ref.revision === inverts.revision && last.ref.index === inverts.index) edits.pop();
        else edits.push({ ref, diff: d });
      };
      for (let i = later.length - 1; i >= 0; i--) {
        const event = later[i];
        if (event.target.kind !== 'field' || event.target.field !== 'name') continue;
        const d = history.revision(event.revision)?.applied[event.index].diff;
        if (!d) continue;
        add({ revision: event.revision, index: event.index }, event.inverts, d);
      }
      const pending = history.head + 1;
      inProgress.applied.forEach((a, k) => {
        const t = D.diffTarget(a.diff);
        if (t.kind === 'field' && t.tag === tag && t.field === 'name') {
          add({ revision: pending, index: k }, inProgress.inverts[k], a.diff);
        }
      });
      let operation = inverse.edits;
      for (const edit of edits) {
        if (edit.diff.op === 'set' && edit.diff.field === 'name') return overwritten({ kind: 'field', tag, field: 'name' });
        if (edit.diff.op === 'text') operation = transformText(operation, edit.diff.edits, false);
      }
      return { apply: { op: 'text', tag, edits: operation } };
    }
    if (diff.op === 'insert' && inverse.op === 'remove') {
      if (!this.model.contains(tag)) return removed();
      if (guarded) {
        const other = later.find((e) => e.author !== user);
        if (other) return { skip: makeReport({ reason: Reason.editedByOthers, tag, by: other.author }) };
      }
      return { apply: D.remove(tag) };
    }
    if (diff.op === 'remove' && inverse.op === 'insert') {
      if (this.model.contains(tag)) return overwritten({ kind: 'person', tag });
      const placed = this.place(null, done.neighbours,
        this.rebasedGap(inverse, revision, index, inProgress.applied) ?? inverse.at);
      return { apply: D.insert(inverse.person, placed) };
    }
    if (diff.op === 'move' && inverse.op === 'move') {
      if (!this.model.contains(tag)) return removed();
      if (guarded) {
        const mover = later.find((e) => e.author !== user && e.target.kind === 'position' && e.target.tag === tag);
        if (mover) return { skip: makeReport({ reason: Reason.overwritten, tag, field: 'position', by: mover.author }) };
      }
      const placed = this.place(tag, done.neighbours,
        this.rebasedGap(inverse, revision, index, inProgress.applied) ?? inverse.to);
      return { apply: D.move(tag, placed) };
    }
    return {};
  }

  /**
   * Where a person goes back (SEMANTICS §4): after its old previous neighbour if present, else before
   * its old next neighbour if present, else at `fallback`. For a move, `tag` is the moved person and
   * indices are in the list without it.
   */
  place(tag, neighbours, fallback) {
    const own = tag != null ? this.model.indexOf(tag) : -1;
    const withoutSelf = (i) => (own >= 0 && i > own ? i - 1 : i);
    if (neighbours?.before != null) {
      const i = this.model.indexOf(neighbours.before);
      if (i >= 0) return withoutSelf(i) + 1;
    }
    if (neighbours?.after != null) {
      const i = this.model.indexOf(neighbours.after);
      if (i >= 0) return withoutSelf(i);
    }
    return fallback;
  }

  /**
   * The gap an inverse insert or move (made right after diff `index` of `revision`) lands at when it is
   * rebased over every positional diff since, as a concurrent submit's would be: positions are gaps in
   * the list without the person, and at an equal gap what the hub applied earlier stays first
   * (SEMANTICS §3 rule 3, §7 reading 5). `inProgress`: the diffs this undo already applied (a skipped
   * part is not among them, so it shifts nothing). Only used when both old neighbours are gone.
   * Returns the gap, or null. Cost: the positional diffs since × people.
   */
  rebasedGap(inverse, revision, index, inProgress) {
    const positional = this.history.positional;
    let first = positional.length;
    while (first > 0 && refAfter(positional[first - 1].revision, positional[first - 1].index, revision, index)) first--;
    const later = []; // oldest first
    const inverses = []; // newest first
    for (let i = first; i < positional.length; i++) {
      const done = this.history.revision(positional[i].revision)?.applied[positional[i].index];
      if (!done) continue;
      later.push(done.diff);
      inverses.unshift(done.inverse);
    }
    for (const done of inProgress) {
      if (!D.isPositional(done.diff)) continue;
      later.push(done.diff);
      inverses.unshift(done.inverse);
    }
    // The tag order the inverse was made on: today's, with the later positional diffs taken back.
    let order = inverses.reduce((acc, d) => applyOrder(d, acc), this.model.tags);
    let rebased = inverse;
    for (const diff of later) {
      const outcome = transform(rebased, diff, order, false);
      if (outcome.diff) rebased = outcome.diff;
      order = applyOrder(diff, order);
    }
    if (rebased.op === 'insert') return rebased.at;
    if (rebased.op === 'move') return rebased.to;
    return null;
  }
}

function samePersonOrAbsent(a, b) { return a === undefined || b === undefined ? a === b : samePerson(a, b); }

function ackMessage(seq, rev, ops, noop) {
  const m = { type: 'ack', seq, rev, ops };
  if (noop.length > 0) m.noop = noop;
  return m;
}
