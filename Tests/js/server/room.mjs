// The hub side of one room (port of Sources/PeopleCore/Room/: Room.swift, Room+Submit.swift,
// Room+Undo.swift, and the revision filing of Room+Durable.swift). It is also the JavaScript reading
// of what a submit, an undo and a redo mean (SEMANTICS §3–§4, docs/SEMANTICS.md §7). Only the tests use
// it (the shared vectors, convergence with the web's ClientSync), so it lives here, outside the web root
// the hub serves (Web/), and imports the web core's modules from there. The history people can see and
// act on (HISTORY.md: times, selective undo, restore, log, blame; Room+History.swift, Blame.swift) is
// here too.
//
// A pure state machine: `join`, `leave` and `receive` return the actions the hub performs, each
// {send: message, to: [sessionId]} or {readHistory: {message, session, after, through, log}}, in order;
// time is passed in, session ids are chosen by the caller. Messages are wire-shaped objects (PROTOCOL.md)
// whose `ops` hold canonical diffs (see wire.js to decode frames). `readHistory` (a `restore` or `log`
// that needs revisions below the memory window) is answered by calling `receive` again with
// {older, log} as Swift's `receive(_:from:now:older:log:)`; a room that keeps every revision
// (`keptRevisions: 0`, the default) never asks. Not ported: the journal (persist actions), snapshots
// and restarts (so blame is never rebuilt from one), catch-up (`join` with `earlier`) from a store.

import { ErrorCode, ProtocolError, InvalidOp } from '../../../Web/js/core/errors.js';
import { PeopleModel, samePerson, sameValue, opinion, fieldNames, FacialHairStyle, Topic } from '../../../Web/js/core/model.js';
import * as D from '../../../Web/js/core/diff.js';
import { applyDiff, applyBatch, rollBack } from '../../../Web/js/core/apply.js';
import { transform, transformBatch, applyOrder } from '../../../Web/js/core/transform.js';
import { transformText } from '../../../Web/js/core/text.js';
import { RoomHistory, makeRevision, revisionDiffs, refAfter } from './history.mjs';
import { BlameIndex, insertWrites } from './blame.mjs';
import { ReinsertRenames } from './renames.mjs';
import { LogLimit } from '../../../Web/js/core/wire.js';
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
  const m = { type: 'ops', rev: revision.number };
  if (revision.timestamp != null) m.time = revision.timestamp;
  Object.assign(m, { author: revision.author, kind: revision.kind, ops: revisionDiffs(revision) });
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
    /** Who last wrote each part of each person present (HISTORY §5). */
    this.blame = new BlameIndex(this.model);
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
  join({ session, user, role = 'editor', client = null, resume = null, since = null, sinceTime = null }) {
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
    // A since ahead of the head, or whose revision has another time than the client's, names another
    // history: the full state, with reset (revision 0 has no time).
    let reset = since != null && since > this.history.head;
    if (!reset && since != null && sinceTime != null && since >= 0) {
      const revision = this.history.revision(since);
      reset = since === 0 || (revision !== undefined && revision.timestamp !== sinceTime);
    }
    let missed = null;
    if (reset || (since != null && this.history.head - since > this.policy.maxCatchUp)) missed = null;
    else if (since != null && since >= this.history.floor && since <= this.history.head) {
      missed = this.history.revisionsAfter(since);
    }
    const s = this.sessions.get(id);
    const welcome = { type: 'welcome', session: id, user, role, rev: this.history.head };
    const head = this.history.revision(this.history.head);
    if (head) welcome.time = head.timestamp;
    if (reset) welcome.reset = true;
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

  /**
   * A decoded client message from a connected session after its `hello`; returns the actions. After a
   * `readHistory` action, the hub hands the message back with `older` (the revisions the store read,
   * oldest first) and, for a `log`, `log` (the page filled so far, from the action).
   */
  receive(message, id, now, { older = [], log = null } = {}) {
    const session = this.sessions.get(id);
    if (!session || !session.connected) return [];
    switch (message.type) {
      case 'log':
        return this.log(message, session.user, id, older, log);
      case 'blame':
        return this.blameOf(message, id);
      case 'restore':
        if (!session.replies.has(message.seq) && session.role === 'editor' && message.rev >= 0
            && message.rev < this.history.floor && this.modelAt(message.rev, older) === null) {
          return [{ readHistory: { message, session: id, after: message.rev, through: this.history.floor, log: null } }];
        }
        return this.sequenced(message.seq, id, () => this.restore(message, id, now, older));
      case 'hello':
        return [send(errorMessage(null, new ProtocolError(ErrorCode.badMessage, 'hello was already received')), [id])];
      case 'ping': {
        const pong = { type: 'pong' };
        if (message.seq != null) pong.seq = message.seq;
        if (typeof now === 'number') pong.time = now;   // the hub's clock (Room.swift's pong)
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

  /** Files a committed revision in the history window, the blame index and the used tags. */
  record(revision) {
    this.history.append(revision);
    this.history.trim(this.policy.keptRevisions);
    this.blame.record(revision);
    for (const done of revision.applied) if (done.diff.op === 'insert') this.usedTags.add(done.diff.person.tag);
  }

  // MARK: Times (Room+History.swift)

  /** The time of a new revision: the clock, never earlier than the previous revision's. */
  revisionTime(now) {
    const head = this.history.revision(this.history.head);
    return head ? Math.max(now, head.timestamp) : now;
  }

  /** The time of the head revision (undefined at revision 0, or below the memory window). */
  get headTime() { return this.history.revision(this.history.head)?.timestamp; }

  /**
   * Who a report's `by` names (Blame.swift `Room.writer(of:)`): the latest user who wrote that field,
   * position, style or register of a present person, as `blame` says it (an insert, re-inserts by an
   * undo or a restore included: they write every field); for a person, the latest remover or inserter.
   * Null for the seed's values.
   */
  writer(target) {
    // A person removed since keeps their record, so the writer of a field of someone an undo is putting
    // back is still blame's.
    const record = this.blame.get(target.tag) ?? this.blame.departed.get(target.tag);
    if (!record) return this.history.writer(target);
    switch (target.kind) {
      case 'person': return this.history.writer(target);
      case 'position': return record.fields.get('position')?.user;
      case 'field': return record.fields.get(target.field)?.user;
      // An element nobody ever wrote (the insert did not list it) has no writer.
      case 'facialHair': return record.facialHair.get(target.style)?.user;
      case 'preference': return record.preference.get(target.topic)?.user;
      default: return undefined;
    }
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
        `base ${submit.base} is older than the kept history (from ${this.history.floor}); start again from the room's current state`));
    }
    const invalid = this.validateAtBase(submit.ops, submit.base, user);
    if (invalid) return fail(invalid);

    let diffs = submit.ops;
    const overwritten = [];
    if (submit.base < head) {
      const positional = diffs.some(D.isPositional);
      let order = positional ? this.orderAt(submit.base) : [];
      // A re-insert under another name replaces the name whole (decision 19).
      const renames = new ReinsertRenames();
      const typed = new Set(diffs.filter((d) => d.op === 'text').map((d) => d.tag));
      for (const revision of this.history.revisionsAfter(submit.base)) {
        const applied = renames.diffsOf(revision, typed);
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
    const reports = overwritten.map((t) => reportFor(Reason.overwritten, t, this.writer(t)));
    for (const { diff } of result.absent) {
      const tag = D.diffTag(diff);
      reports.push(makeReport({ reason: Reason.targetRemoved, tag, by: this.history.writer({ kind: 'person', tag }) }));
    }

    if (result.applied.length === 0) {
      session.lastAckRevision = this.history.head;
      const reply = ackMessage(submit.seq, this.history.head, this.headTime, [], reports);
      return { reply, revision: null, sends: [send(reply, [id])] };
    }

    const number = this.history.head + 1;
    const revision = makeRevision({ number, author: user, kind: 'edit', label: submit.label ?? null,
      applied: result.applied, timestamp: this.revisionTime(now), session: id, seq: submit.seq });
    const reply = ackMessage(submit.seq, number, revision.timestamp, revisionDiffs(revision), reports);
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
    if (request.entry != null && !redo) return this.undoEntry(request.entry, request, id, now);
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
    const fields = { seq: request.seq, label: firstLabel, skipped };
    let revision = null;
    if (applied.length > 0) {
      const number = this.history.head + 1;
      revision = makeRevision({ number, author: user, kind: redo ? 'redo' : 'undo', label, applied,
        timestamp: this.revisionTime(now), session: id, seq: request.seq, inverts });
      this.pushOpposite(revision, redo, stacks);
      Object.assign(fields, { rev: number, time: revision.timestamp, ops: revisionDiffs(revision), label });
    }
    const result = undoResult(redo ? 'redone' : 'undone', fields);
    const sends = revision ? this.commit(revision, result, id) : [send(result, [id])];
    sends.push(...this.historyActions(user, before));
    return { reply: result, revision, sends, consumed };
  }

  /**
   * Selective undo (HISTORY §2): the user's entry `entryId`, wherever it is on the undo stack, rebased
   * over everything after it (the user's own later revisions included) and guarded against every later
   * write by anyone; no cascade; the entry is consumed even when it changes nothing, and the inverse of
   * what was applied goes on top of the redo stack. An id not on the stack is `no-entry` (the
   * coalescing run stays as it was).
   */
  undoEntry(entryId, request, id, now) {
    const user = this.sessions.get(id).user;
    const index = this.stacks(user).undo.findIndex((e) => e.id === entryId);
    if (index < 0) {
      const reply = errorMessage(request.seq, new ProtocolError(ErrorCode.noEntry,
        `entry ${entryId} is not on ${user}'s undo stack`));
      return { reply, revision: null, sends: [send(reply, [id])] };
    }
    const stacks = this.userState(user).stacks;
    const before = stacks.summary;
    stacks.run = null;
    const [entry] = stacks.undo.splice(index, 1);
    const outcome = this.revertEntry(entry, user, true);
    const fields = { seq: request.seq, label: entry.label, skipped: outcome.skipped, entry: entryId };
    let revision = null;
    if (outcome.applied.length > 0) {
      const number = this.history.head + 1;
      revision = makeRevision({ number, author: user, kind: 'undo', label: entry.label, applied: outcome.applied,
        timestamp: this.revisionTime(now), session: id, seq: request.seq, inverts: outcome.inverts });
      this.pushOpposite(revision, false, stacks);
      Object.assign(fields, { rev: number, time: revision.timestamp, ops: revisionDiffs(revision) });
    }
    const result = undoResult('undone', fields);
    const sends = revision ? this.commit(revision, result, id) : [send(result, [id])];
    sends.push(...this.historyActions(user, before));
    return { reply: result, revision, sends, consumed: [index] };
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
  revertEntry(entry, user, selective = false) {
    const outcome = { applied: [], inverts: [], skipped: [] };
    if (entry.oldestRevision < this.history.floor) {
      outcome.skipped = [...entry.tags].sort((a, b) => a - b).map((tag) => makeReport({ reason: Reason.expired, tag }));
      return outcome;
    }
    const snapshot = [...entry.tags].map((tag) => ({ tag, index: this.model.indexOf(tag), person: this.model.get(tag) }));
    const count = this.model.count;
    const own = selective ? new Set(entry.parts.map((p) => p.revision)) : null;
    for (let p = entry.parts.length - 1; p >= 0; p--) {
      const part = entry.parts[p];
      for (let index = part.applied.length - 1; index >= 0; index--) {
        const done = part.applied[index];
        const step = this.inverseStep(done, part.revision, index, user, outcome, own);
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
   *
   * `own`: the revisions of the entry being undone selectively (HISTORY §2), or null. Then every later
   * write by anyone (the user included) guards, except the entry's own batches: a field, element,
   * register or position last written since by an edit, redo or restore is `overwritten` (by that
   * writer), an inserted person touched since is `editedByOthers` (by the latest toucher).
   */
  inverseStep(done, revision, index, user, inProgress, own = null) {
    const guarded = this.policy.undo.conflicts === 'skip';
    const history = this.history;
    const tag = D.diffTag(done.diff);
    const later = history.eventsOn(tag, revision, index); // newest first
    const person = () => this.model.get(tag);
    // Whether an event wrote `target`: a write to it, or a (re-)insert of its person, which writes every
    // field, the position and the elements it lists (HISTORY §5, decision 17). A remove writes nothing.
    const wrote = (e, target) => {
      if (D.targetKey(e.target) === D.targetKey(target)) return true;
      if (e.target.kind !== 'person' || e.target.tag !== tag) return false;
      const diff = history.revision(e.revision)?.applied[e.index].diff;
      return diff?.op === 'insert' && insertWrites(diff.person, target);
    };
    // The latest write since the entry that guards (selective undo only); `target` null: any write.
    const latestGuarding = (target) => {
      if (own === null) return undefined;
      return later.find((e) => !own.has(e.revision) && (target === null || wrote(e, target)));
    };
    const removed = () => ({ skip: makeReport({ reason: Reason.targetRemoved, tag,
      by: history.writer({ kind: 'person', tag }) }) });
    const overwritten = (target) => ({ skip: reportFor(Reason.overwritten, target, this.writer(target)) });
    // The value there is a teammate's even if it equals ours: their edit or redo was the last write to
    // `target` since this entry (decision 2). An undo only restores an earlier state and claims nothing,
    // so SEMANTICS §5.3 holds: after B undoes over A's value, A's undo still applies.
    const target = D.diffTarget(done.diff);
    const claimed = () => {
      if (own !== null) {
        const last = latestGuarding(target);
        return last !== undefined && last.kind !== 'undo';
      }
      const last = later.find((e) => wrote(e, target));
      return last !== undefined && last.author !== user && last.kind !== 'undo';
    };
    const overwrittenOrClaimed = () => {
      if (own !== null) {
        const last = latestGuarding(target);
        if (last !== undefined && last.kind !== 'undo') return { skip: reportFor(Reason.overwritten, target, last.author) };
      }
      return overwritten(target);
    };
    const { diff, inverse } = done;

    if (diff.op === 'set' && inverse.op === 'set') {
      const p = person();
      if (!p) return removed();
      if (guarded && (!sameValue(diff.field, p[diff.field], diff.value) || claimed())) return overwrittenOrClaimed();
      return { apply: D.set(tag, inverse.field, inverse.value) };
    }
    if (diff.op === 'facialHair' && inverse.op === 'facialHair') {
      const p = person();
      if (!p) return removed();
      if (guarded && (p.facialHair.includes(diff.style) !== diff.present || claimed())) return overwrittenOrClaimed();
      return { apply: D.facialHair(tag, diff.style, inverse.present) };
    }
    if (diff.op === 'preference' && inverse.op === 'preference') {
      const p = person();
      if (!p) return removed();
      if (guarded && (opinion(p, diff.topic) !== diff.value || claimed())) return overwrittenOrClaimed();
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
      // A re-insert under another name replaces the name whole, like a `set(name)` (decision 19).
      const renames = new ReinsertRenames();
      for (let i = later.length - 1; i >= 0; i--) {
        const event = later[i];
        const done = history.revision(event.revision)?.applied[event.index];
        if (!done) continue;
        const ref = { revision: event.revision, index: event.index };
        if (event.target.kind === 'field' && event.target.field === 'name') add(ref, event.inverts, done.diff);
        else if (event.target.kind === 'person') {
          const set = renames.rename(done);
          if (set) add(ref, event.inverts, set);
        }
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
      if (guarded && own !== null) {
        const toucher = latestGuarding(null);
        if (toucher) return { skip: makeReport({ reason: Reason.editedByOthers, tag, by: toucher.author }) };
      }
      if (guarded && own === null) {
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
      const position = { kind: 'position', tag };
      if (guarded && own !== null) {
        const mover = latestGuarding(position);
        if (mover && mover.kind !== 'undo') {
          return { skip: makeReport({ reason: Reason.overwritten, tag, field: 'position', by: mover.author }) };
        }
      }
      if (guarded && own === null
          && later.some((e) => e.author !== user && e.target.kind === 'position' && e.target.tag === tag)) {
        // `by` is the latest writer of the position, who may be the undoer (SEMANTICS §4).
        return { skip: makeReport({ reason: Reason.overwritten, tag, field: 'position', by: this.writer(position) }) };
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

  // MARK: Log (Room+History.swift)

  /**
   * A page of the timeline, newest first, among the revisions below `request.before`. What memory holds
   * is read first; below it, the store's revisions come in chunks (a `readHistory` action carrying the
   * page so far in `log`), until the page is full or revision 1 was read. `older` and `resume` are what
   * the hub hands back after such an action.
   */
  log(request, user, id, older = [], resume = null) {
    const limit = request.limit ?? LogLimit.default;
    if (!(limit >= LogLimit.min && limit <= LogLimit.max)) {
      return [send(errorMessage(request.seq, new ProtocolError(ErrorCode.badMessage,
        `log limit must be ${LogLimit.min} to ${LogLimit.max}`)), [id])];
    }
    const entryOf = new Map();
    for (const entry of this.stacks(user).undo) for (const part of entry.parts) entryOf.set(part.revision, entry.id);
    const top = Math.min(this.history.head, (request.before ?? Infinity) - 1);
    const entries = [...(resume?.entries ?? [])];
    let more = false;
    // Adds a revision if it belongs on the page; false once the page is full and one more matched.
    const consider = (revision) => {
      if (revision.number > top) return true;
      if (request.tag != null && !revision.applied.some((a) => D.diffTag(a.diff) === request.tag)) return true;
      if (entries.length === limit) {
        more = true;
        return false;
      }
      const e = { rev: revision.number };
      if (revision.timestamp != null) e.time = revision.timestamp;
      Object.assign(e, { author: revision.author, kind: revision.kind });
      if (revision.label != null) e.label = revision.label;
      e.ops = revisionDiffs(revision);
      if (entryOf.has(revision.number)) e.entry = entryOf.get(revision.number);
      entries.push(e);
      return true;
    };
    let full = false;
    let below; // every revision above this one was considered
    if (resume) {
      for (let i = older.length - 1; i >= 0 && !full; i--) {
        if (older[i].number <= resume.below) full = !consider(older[i]);
      }
      below = Math.min(resume.below, (older.length > 0 ? older[0].number : 1) - 1);
    } else {
      const kept = this.history.revisionsAfter(this.history.floor);
      for (let i = kept.length - 1; i >= 0 && !full; i--) full = !consider(kept[i]);
      below = this.history.floor;
    }
    const through = Math.min(below, top);
    if (!full && through > 0) {
      // Without a tag every revision matches: read just what fills the page (and one more, for
      // `more`); with one, read chunks of 1,000.
      const chunk = request.tag == null ? limit + 1 - entries.length : 1000;
      return [{ readHistory: { message: request, session: id, after: Math.max(0, through - chunk), through,
        log: { entries, below: through } } }];
    }
    const page = { type: 'log' };
    if (request.seq != null) page.seq = request.seq;
    page.entries = entries;
    page.more = more;
    return [send(page, [id])];
  }

  // MARK: Blame (Room+History.swift)

  /** A `blame`: who last wrote each part of the person `request.tag`; `bad-message` if not present. */
  blameOf(request, id) {
    const record = this.blame.get(request.tag);
    if (!record) {
      return [send(errorMessage(request.seq, new ProtocolError(ErrorCode.badMessage,
        `tag ${request.tag} is not present`)), [id])];
    }
    const m = { type: 'blame' };
    if (request.seq != null) m.seq = request.seq;
    m.tag = request.tag;
    return [send(Object.assign(m, record.json()), [id])];
  }

  // MARK: Restore (Room+History.swift)

  /**
   * The model as it was right after revision `rev`: today's, taken back through the exact inverses of
   * every later revision (from memory, then `older` for what memory no longer holds). Null when `older`
   * does not reach down to `rev`.
   */
  modelAt(rev, older = []) {
    const past = this.model.clone();
    const floor = this.history.floor;
    const inMemory = this.history.revisionsAfter(Math.max(rev, floor));
    for (let i = inMemory.length - 1; i >= 0; i--) rollBack(past, inMemory[i].applied);
    if (!(rev < floor)) return past;
    const needed = older.filter((r) => r.number > rev && r.number <= floor);
    if (needed.length !== floor - rev) return null;
    needed.sort((a, b) => b.number - a.number);
    for (const revision of needed) rollBack(past, revision.applied);
    return past;
  }

  /**
   * A `restore`: one forward revision of kind `restore` that makes the room what it was after revision
   * `request.rev`, one undo entry of its author (HISTORY §3). Computed against the head, never rebased.
   * `older` reaches down to `rev` when it is below the memory window (`receive` asks for it first).
   */
  restore(request, id, now, older = []) {
    const user = this.sessions.get(id).user;
    const label = request.label ?? `Restore to revision ${request.rev}`;
    const fail = (error) => {
      const reply = errorMessage(request.seq, error);
      return { reply, revision: null, sends: [send(reply, [id])] };
    };
    if (!(request.rev >= 0 && request.rev <= this.history.head)) {
      return fail(new ProtocolError(ErrorCode.badMessage,
        `rev ${request.rev} is not a revision of this room (0 to ${this.history.head})`));
    }
    const target = this.modelAt(request.rev, older);
    if (target === null) {
      return fail(new ProtocolError(ErrorCode.serverError, `revisions before ${this.history.floor} could not be read`));
    }
    const batch = restoreBatch(this.model, target);
    let result;
    try {
      result = applyBatch(this.model, batch);
    } catch (error) {
      // Cannot happen (every diff is built against the model it applies to); answer, never crash.
      if (!(error instanceof ProtocolError)) throw error;
      return fail(new ProtocolError(ErrorCode.serverError, `restore failed: ${error.message}`));
    }
    if (result.applied.length === 0) {
      const reply = { type: 'restored', seq: request.seq, ops: [], label };
      return { reply, revision: null, sends: [send(reply, [id])] };
    }
    const number = this.history.head + 1;
    const revision = makeRevision({ number, author: user, kind: 'restore', label, applied: result.applied,
      timestamp: this.revisionTime(now), session: id, seq: request.seq });
    const reply = { type: 'restored', seq: request.seq, rev: number, time: revision.timestamp,
      ops: revisionDiffs(revision), label };
    const before = this.stacks(user).summary;
    this.recordEdit(revision, null, now);
    const sends = this.commit(revision, reply, id);
    sends.push(...this.historyActions(user, before));
    return { reply, revision, sends };
  }
}

/**
 * The one batch that turns `current` into `target` (PeopleModels; HISTORY §3): removes, re-inserts with
 * every field (placed by the neighbour rule in `target`'s order), field / element / register diffs,
 * then the fewest moves (the longest run already in `target`'s order stays; the others move once, in
 * `target`'s order). No diff in it changes nothing. (Swift `Room.restoreBatch(from:to:)`.)
 */
export function restoreBatch(current, target) {
  const batch = [];
  let order = current.tags;
  // Removes: people present now and absent at the target, in today's order.
  for (const tag of current.tags) {
    if (target.contains(tag)) continue;
    batch.push(D.remove(tag));
    order = order.filter((t) => t !== tag);
  }
  // Re-inserts, in the target's order, each after its previous neighbour there if present, else before
  // its next one, else at its index there (clamped).
  const targetTags = target.tags;
  targetTags.forEach((tag, index) => {
    if (current.contains(tag)) return;
    let at;
    const before = index > 0 ? order.indexOf(targetTags[index - 1]) : -1;
    const after = index + 1 < targetTags.length ? order.indexOf(targetTags[index + 1]) : -1;
    if (before >= 0) at = before + 1;
    else if (after >= 0) at = after;
    else at = Math.min(index, order.length);
    batch.push(D.insert(target.get(tag), at));
    order = [...order.slice(0, at), tag, ...order.slice(at)];
  });
  // Fields, elements and registers of the people in both.
  for (const tag of targetTags) {
    const now = current.get(tag);
    const then = target.get(tag);
    if (!now || !then) continue;
    for (const field of fieldNames) {
      if (!sameValue(field, now[field], then[field])) batch.push(D.set(tag, field, then[field]));
    }
    for (const style of FacialHairStyle.words) {
      const present = then.facialHair.includes(style);
      if (now.facialHair.includes(style) !== present) batch.push(D.facialHair(tag, style, present));
    }
    for (const topic of Topic.words) {
      if (opinion(now, topic) !== opinion(then, topic)) batch.push(D.preference(tag, topic, opinion(then, topic)));
    }
  }
  // Moves: keep the longest run already in the target's relative order.
  const rank = new Map(targetTags.map((tag, i) => [tag, i]));
  const keep = new Set(longestIncreasingRun(order.map((t) => rank.get(t))).map((i) => order[i]));
  targetTags.forEach((tag, index) => {
    if (keep.has(tag)) return;
    const from = order.indexOf(tag);
    order = order.filter((t) => t !== tag);
    const to = index === 0 ? 0 : order.indexOf(targetTags[index - 1]) + 1;
    order = [...order.slice(0, to), tag, ...order.slice(to)];
    if (to !== from) batch.push(D.move(tag, to));
  });
  return batch;
}

/**
 * Indices of a longest strictly increasing subsequence of `values`; among the longest, the one that
 * keeps earlier elements (lexicographically smallest indices). O(n²). (Swift `Room.longestIncreasingRun`.)
 */
export function longestIncreasingRun(values) {
  const n = values.length;
  if (n === 0) return [];
  // length[i]: the longest increasing run starting at i; built from the end so that the run can then
  // be taken greedily from the front, earliest index first.
  const length = new Array(n).fill(1);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = i + 1; j < n; j++) if (values[j] > values[i]) length[i] = Math.max(length[i], length[j] + 1);
  }
  let best = Math.max(...length);
  const out = [];
  let last = -Infinity;
  for (let i = 0; i < n && best > 0; i++) {
    if (length[i] === best && values[i] > last) {
      out.push(i);
      last = values[i];
      best -= 1;
    }
  }
  return out;
}

function samePersonOrAbsent(a, b) { return a === undefined || b === undefined ? a === b : samePerson(a, b); }

function ackMessage(seq, rev, time, ops, noop) {
  const m = { type: 'ack', seq, rev };
  if (time != null) m.time = time;
  m.ops = ops;
  if (noop.length > 0) m.noop = noop;
  return m;
}

/** An `undone` / `redone` in Swift's member order: seq, rev?, time?, ops, label?, skipped, entry?. */
function undoResult(type, { seq, rev, time, ops = [], label, skipped = [], entry }) {
  const m = { type, seq };
  if (rev != null) m.rev = rev;
  if (time != null) m.time = time;
  m.ops = ops;
  if (label != null) m.label = label;
  m.skipped = skipped;
  if (entry != null) m.entry = entry;
  return m;
}
