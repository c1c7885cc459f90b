// A room kept live for the page: the client state machine (core/client-sync.js: optimistic edits, one
// request in flight, rebasing) over a browser WebSocket that comes back by itself. The web twin of
// Sources/PeopleClient/LiveRoom.swift.
//
// While the hub is unreachable, edits, undos and redos are taken and queued; they are sent, rebased,
// when the connection is back (`hello` with `resume` and `since`, so the session and its seq replies
// carry over). Reconnects back off from 0.25 s, doubling to 5 s. A `redirect` is followed; if the
// node it names cannot be reached, the next attempt goes back to the address the page started with.
//
// `onUpdate(notices)` is called after every change (notices may be empty). A notice is one of:
//   {type:'skipped', reports, people, kind, changed, label?}  parts of this user's request skipped;
//                                      `people` is the view before, to name them; `kind` 'edit' |
//                                      'undo' | 'redo'; `changed` whether any of the request was done;
//                                      `label` the step an undo / redo did (the hub's answer's)
//   {type:'remote', rev, author, kind, label?, diffs, people}  a teammate's (or another tab's)
//                                      revision; `people` is the view before it
//   {type:'mine', kind, diffs}         this user's own change: an edit as made, an undo / redo as the
//                                      hub applied it (what it touched is no teammate's any more); an
//                                      undo / redo / restore's also has `people` (the view before) and
//                                      the hub's `label`
//   {type:'nothing', kind}             an undo / redo with nothing to do
//   {type:'undoDropped', label?, reports, people}  an undo pressed for a queued edit went with it,
//                                      unsent: the edit changed nothing, or the hub refused it. `reports`
//                                      say why, as skip reports (the hub's `noop`, or, for a value
//                                      someone had already written, the page's own reason `sameChange`
//                                      with `by` that writer; for a refused edit, the page's own reason
//                                      `refused` with the error's `code`); `people` is the view before,
//                                      to name them
//   {type:'reset', kept, notSent, lost, perhapsMore}
//                                      the hub's room has another history than this page had (restored
//                                      from an older backup, or a hub restarted without its data): the
//                                      page shows the hub's state plus the `kept` queued requests that
//                                      still apply; `notSent` others went unsent (edits that no longer
//                                      apply, undos / redos / restores of the old history's steps);
//                                      `lost`: this user's changes the hub had acknowledged and no
//                                      longer has (timeline entries, oldest first); `perhapsMore`:
//                                      which of them went cannot be told
//   {type:'error', code, message}      the hub refused something
//   {type:'fatal', code, message}      the hub refused the connection for good (no more retries;
//                                      after `unauthorized`, `renew(token)` carries on with a new token)
// and, for the history panel and the person editor's writers (HISTORY.md §6):
//   {type:'welcomed'}                  a welcome came (what was read before may be out of date)
//   {type:'revision', rev, time?, author, kind, label?, ops, mine}  every revision the hub applied, as
//                                      it reaches this page (a teammate's `ops`, or this user's ack,
//                                      undone, redone or restored), in the shape of a log entry
//   {type:'history'}                   this user's undo / redo stacks changed (a `history` frame)
//   {type:'entryUndone', entry}        a selective undo of that entry was answered
//   {type:'log', seq, page} | {type:'blame', seq, blame}  answers to `log()` / `blame()`
//   {type:'readFailed', seq, code}     an error answered one of those (never shown as a refusal)
// `skipped` and `nothing` notices of a selective undo carry its `entry`; a restore that changed
// nothing is {type:'nothing', kind:'restore'}.
//
// The connection is state, not notices: `connection` ({link, outage, why, closedBy, refused, retryAt,
// pending, catchingUp, kept}) says at any moment whether the hub is reachable (or running but refusing
// this page's handshake: `refused`, from the `probe` asked after a socket that never opened) and
// whether the requests kept while it was not (`kept`: those pending when it went, and those made
// until it was back, by kind) are still going out; a page derives every word about the connection
// from it (connection.js).
//
// The hub's clock is not this one: `hubNow()` is the hub's time now, as far as the last ping's `pong`
// tells (hub-clock.js), for every "2 min ago" of a revision's `time`. A ping goes after each welcome,
// and after a quiet spell.
//
// Time is a parameter (`timers`), and so is the socket (`WebSocket`), so the module runs in node
// with fakes; it touches no `document` or `window`.

import { ClientSync } from './core/client-sync.js';
import { decodeServerMessage, encode } from './core/wire.js';
import { ErrorCode, isFatal } from './core/errors.js';
import { diffTag, diffTarget, targetKey } from './core/diff.js';
import { makeReport, reportFor } from './core/undo.js';
import { HubClock } from './hub-clock.js';

/** Ask for another tag block when fewer than this many are left. */
const TAGS_LOW = 10;
/** Seconds of silence after which an application-level ping checks the connection. */
export const HEARTBEAT_SECONDS = 20;
/**
 * Seconds a new socket may wait for the hub to answer its upgrade before it is given up and tried
 * again (a link that swallowed the answer left the page "Reconnecting…" for good: the browser's own
 * wait has no end). The terminal client waits as long (`LiveRoom.connectSeconds`).
 */
export const CONNECT_SECONDS = 10;
const FIRST_BACKOFF = 0.25;
const MAX_BACKOFF = 5;
const MAX_REDIRECTS = 3;

/**
 * A revision the hub applied, from the frame that brought it (`ops`, or this user's `ack`, `undone`,
 * `redone`, `restored`), in the shape of a log entry plus `mine`; null for any other frame.
 * `request` is the request that frame answers (an ack's label is the submit's).
 */
function revisionOf(message, request, user) {
  const kind = message.type === 'ops' ? message.kind
    : { ack: 'edit', undone: 'undo', redone: 'redo', restored: 'restore' }[message.type];
  if (!kind) return null;
  const author = message.type === 'ops' ? message.author : user;
  const label = message.type === 'ack' ? request?.label : message.label;
  const r = { type: 'revision', rev: message.rev };
  if (message.time != null) r.time = message.time;
  r.author = author;
  r.kind = kind;
  if (label != null) r.label = label;
  r.ops = message.ops ?? [];
  r.mine = author === user;
  return r;
}

/**
 * Who wrote each part of the people last, as far as this page has seen revisions (a full state
 * forgets it): target key (core/diff.js `targetKey`) → {author, rev}. A whole person (an insert, a
 * remove) is a write to every part of them. Names the teammate in an undo that went with its edit.
 */
class LastWriters {
  constructor() { this.writes = new Map(); }

  forget() { this.writes.clear(); }

  /** Revision `rev` by `author` wrote `ops`. */
  note(author, rev, ops) {
    for (const d of ops) this.writes.set(targetKey(diffTarget(d)), { author, rev });
  }

  /** The latest writer of what `diff` writes, or undefined. */
  of(diff) {
    const part = this.writes.get(targetKey(diffTarget(diff)));
    const whole = this.writes.get(targetKey({ kind: 'person', tag: diffTag(diff) }));
    if (!part || !whole) return (part ?? whole)?.author;
    return (part.rev >= whole.rev ? part : whole).author;
  }
}

/**
 * The `http(s)://` address of the hub node a room address names (`ws(s)://HOST[/PREFIX]/v1/rooms/ROOM`
 * → `http(s)://HOST[/PREFIX]`): where its HTTP API and `/healthz` answer.
 */
export function nodeAddress(roomAddress) {
  const cut = roomAddress.lastIndexOf('/v1/rooms/');
  return (cut < 0 ? roomAddress : roomAddress.slice(0, cut)).replace(/^ws(s?):/i, 'http$1:');
}

/** The hub's close reason (with 1000) when an admin deletes the room (`DELETE /v1/rooms/NAME`). */
export const ROOM_DELETED = 'room deleted';

/**
 * Whether a hub runs at the node of a room address, for LiveRoom's `probe`: its `/healthz` says ok (a
 * proxy's 502 for a hub that is down does not count), or, from another node's origin, answers at all
 * (an opaque answer, whose status a page cannot read). No answer within CONNECT_SECONDS is none.
 */
export function hubRunning(roomAddress, fetch = (...args) => globalThis.fetch(...args)) {
  return fetch(`${nodeAddress(roomAddress)}/healthz`,
    { mode: 'no-cors', cache: 'no-store', signal: AbortSignal.timeout(CONNECT_SECONDS * 1000) })
    .then((answer) => answer.ok || answer.type === 'opaque', () => false);
}

/** The `ws(s)://host/v1/rooms/ROOM` address of `room` on the hub that served `location`. */
export function roomURL(location, room) {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  return `${scheme}://${location.host}/v1/rooms/${encodeURIComponent(room)}`;
}

export class LiveRoom {
  /**
   * @param {object} options
   * @param {string} options.url     the room's WebSocket address
   * @param {string} options.user
   * @param {string} [options.token] sent as `hello.token` when given
   * @param {string} [options.client]
   * @param {Function} [options.WebSocket] the socket constructor (the browser's by default)
   * @param {{setTimeout, clearTimeout, now}} [options.timers]
   * @param {(url: string) => Promise<boolean>} [options.probe] whether a hub answers plain HTTP at the
   *   node of a room address (`nodeAddress`); asked after a connection that never opened, it must
   *   settle within a bounded time (a question still open counts for nothing)
   */
  constructor({ url, user, token, client = 'web/0.1', WebSocket = globalThis.WebSocket, timers, probe = null } = {}) {
    this.sync = new ClientSync(user);
    this.home = url;
    this.url = url;
    this.token = token || undefined;
    this.client = client;
    this.Socket = WebSocket;
    this.timers = timers ?? {
      setTimeout: (f, ms) => globalThis.setTimeout(f, ms),
      clearTimeout: (id) => globalThis.clearTimeout(id),
      now: () => Date.now(),
    };
    /** 'connecting' | 'online' | 'offline' */
    this.link = 'connecting';
    /** Whether the hub has been out of reach since the last welcome (a retry is still part of it). */
    this.outage = false;
    /** The requests kept through an outage: pending when it began, or made before the next welcome. */
    this.keptRequests = new WeakSet();
    /** While offline: when the next attempt starts (ms, timers.now) and why the last one failed. */
    this.retryAt = null;
    this.why = null;
    /**
     * While offline: {code, reason} when the hub closed the connection itself (a drain: 1001; a
     * commit it could not make: 1011): the hub is up, and is not called unreachable. Null otherwise.
     */
    this.closedBy = null;
    /**
     * Whether the hub is running but does not let this page connect: twice running, a connection to
     * it never opened (its handshake refused: a full hub, a page address it does not allow; a browser
     * tells a page nothing of why). Cleared by a welcome, or when the hub stops answering.
     */
    this.refused = false;
    this.probe = probe;
    /** Connections that never opened since the last welcome whose hub answered the probe. */
    this.unopenedRunning = 0;
    /** Whether the current connection's socket opened. */
    this.openedHere = false;
    /** Welcomes so far (a probe's answer from before the last one is stale). */
    this.welcomeCount = 0;
    /** Probes asked so far (only the newest one's answer counts). */
    this.probesAsked = 0;
    /** Whether a welcome has ever come (the page shows the room from then on). */
    this.everWelcomed = false;
    this.onUpdate = () => {};
    this.socket = null;
    this.generation = 0;
    this.backoff = FIRST_BACKOFF;
    this.stopped = false;
    this.retryTimer = null;
    this.heartbeatTimer = null;
    this.heard = true;
    this.tagsAsked = false;
    /** What this user is looking at: {viewing?, field?} (sent again on every new connection). */
    this.viewing = null;
    /** Whether the current connection has been welcomed (on this URL). */
    this.welcomedHere = false;
    /** Redirects followed since the last welcome. */
    this.redirects = 0;
    /** Seqs of the `log` / `blame` requests sent on this connection and not yet answered. */
    this.reads = new Set();
    this.writers = new LastWriters();
    /** How far the hub's clock is from this one (hub-clock.js). */
    this.clock = new HubClock();
  }

  /** The hub's clock now (ms since the epoch): the time to measure a revision's `time` against. */
  hubNow() { return this.clock.hubTime(this.timers.now()); }

  // MARK: Actions

  /** Starts connecting. */
  start() { this.connect(); }

  /** Closes the connection and stops reconnecting. */
  stop() {
    this.stopped = true;
    this.timers.clearTimeout(this.retryTimer);
    this.timers.clearTimeout(this.heartbeatTimer);
    this.drop(1000);
    this.link = 'offline';
  }

  /**
   * Carries on after the hub ended the session for its token (`fatal` `unauthorized`: the token
   * expired): connects again with `token`, resuming the session, and sends what the hub did not
   * acknowledge. Nothing while the room is still running.
   */
  renew(token) {
    if (!this.stopped) return;
    this.token = token || undefined;
    this.stopped = false;
    this.why = null;
    this.closedBy = null;
    this.refused = false;
    this.unopenedRunning = 0;
    this.backoff = FIRST_BACKOFF;
    this.connect();
  }

  /** Connects now if waiting to retry (the browser says the network is back). */
  retryNow() {
    if (this.stopped || this.link !== 'offline') return;
    this.timers.clearTimeout(this.retryTimer);
    this.connect();
  }

  /** Applies a local edit at once and queues it. Throws InvalidOp (changing nothing) when invalid. */
  edit(diffs, { label, coalesce } = {}) {
    this.send(this.sync.edit(diffs, { label, coalesce }));
    this.queued();
    this.onUpdate([{ type: 'mine', kind: 'edit', diffs }]);
  }

  undo(scope) {
    this.send(this.sync.undo(scope));
    this.queued();
    this.onUpdate([]);
  }

  redo(scope) {
    this.send(this.sync.redo(scope));
    this.queued();
    this.onUpdate([]);
  }

  /** Undoes this user's undo entry `entry` (its id, from the timeline) on its own (HISTORY §2). */
  undoEntry(entry) {
    this.send(this.sync.undoEntry(entry));
    this.queued();
    this.onUpdate([]);
  }

  /** Makes the room what it was right after revision `rev`, as one revision of this user's (HISTORY §3). */
  restore(rev, { label } = {}) {
    this.send(this.sync.restore(rev, { label }));
    this.queued();
    this.onUpdate([]);
  }

  /**
   * Asks for a page of the timeline ({before?, limit?, tag?}); returns the seq its `log` notice will
   * carry, or null when not online (nothing is sent: ask again after the welcome).
   */
  log(request = {}) { return this.read(this.sync.log(request)); }

  /** Asks who last wrote each part of person `tag`; returns the seq of its `blame` notice, or null. */
  blame(tag) { return this.read(this.sync.blame(tag)); }

  read(messages) {
    if (messages.length === 0 || this.link !== 'online' || !this.socket) return null;
    this.send(messages);
    this.reads.add(messages[0].seq);
    return messages[0].seq;
  }

  /** A request was queued: made while the hub is out of reach, it is part of the catching up. */
  queued() {
    if (this.link !== 'online') this.keepPending();
  }

  /** Every request pending now is kept through the outage (and counted until the hub answers it). */
  keepPending() {
    for (const p of this.sync.outbox) this.keptRequests.add(p);
  }

  /** The requests kept through an outage that the hub has not answered yet, by kind. */
  get kept() {
    const kept = { changes: 0, undos: 0, redos: 0 };
    for (const p of this.sync.outbox) {
      if (!this.keptRequests.has(p)) continue;
      if (p.request.type === 'undo') kept.undos += 1;
      else if (p.request.type === 'redo') kept.redos += 1;
      else kept.changes += 1; // an edit or a restore
    }
    return kept;
  }

  /** Whether some of the pending requests were kept through an outage (they are still going out). */
  get catchingUp() { return this.sync.outbox.some((p) => this.keptRequests.has(p)); }

  /** The connection as a page shows it (see the header; connection.js turns it into words). */
  get connection() {
    return { link: this.link, outage: this.outage, why: this.why, closedBy: this.closedBy, refused: this.refused,
      retryAt: this.retryAt, pending: this.pending, catchingUp: this.catchingUp, kept: this.kept };
  }

  /** 'editor' or 'viewer', as the last welcome said. */
  get role() { return this.sync.role; }

  /** A fresh tag for a new person, or null when none is left; asks for more when running low. */
  allocateTag() {
    const tag = this.sync.allocateTag();
    this.askForTagsIfLow();
    return tag;
  }

  /** Tells the others what this user is looking at (sent only when it changes). */
  view(tag, field) {
    const update = { type: 'presence' };
    if (tag != null) update.viewing = tag;
    if (tag != null && field != null) update.field = field;
    if (this.viewing && this.viewing.viewing === update.viewing && this.viewing.field === update.field) return;
    this.viewing = update;
    this.send([update]);
  }

  /** Number of requests not yet answered by the hub. */
  get pending() { return this.sync.pendingCount; }

  // MARK: The connection

  connect() {
    if (this.stopped) return;
    this.generation += 1;
    const generation = this.generation;
    this.link = 'connecting';
    this.retryAt = null;
    this.welcomedHere = false;
    this.openedHere = false;
    this.connectedURL = this.url;
    this.reads = new Set();
    this.clock.connectionLost();
    let socket;
    try {
      socket = new this.Socket(this.url);
    } catch (error) {
      this.socket = null;
      this.lost(generation, error?.message ?? String(error));
      return;
    }
    this.socket = socket;
    this.timers.clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = this.timers.setTimeout(() => {
      if (generation !== this.generation || this.socket !== socket) return;
      this.why = `the hub did not answer within ${CONNECT_SECONDS} s`;
      this.drop(1000);
    }, CONNECT_SECONDS * 1000);
    socket.onopen = () => {
      if (generation !== this.generation) return;
      this.openedHere = true;
      const hello = this.sync.connect({ client: this.client, token: this.token });
      socket.send(encode(hello));
      if (this.viewing) socket.send(encode(this.viewing));
      this.heard = true;
      this.scheduleHeartbeat(generation);
    };
    socket.onmessage = (event) => {
      if (generation !== this.generation) return;
      this.heard = true;
      let message;
      try {
        message = decodeServerMessage(event.data);
      } catch {
        return; // a frame this client cannot read changes nothing
      }
      this.received(message);
    };
    socket.onclose = (event) => {
      if (generation === this.generation && event?.code === 1000 && event.reason === ROOM_DELETED) {
        // An admin deleted the room: a reconnect would make a new room of the name from the seed and
        // undo the deletion unasked (a black-box pass, session 39). The page stops and says so.
        const notices = [];
        const unsent = this.sync.pendingCount;
        this.stopFor('room-deleted', `An admin deleted this room and all of its history${unsent > 0
          ? `, so your ${unsent === 1 ? 'change' : `${unsent} changes`} not sent yet ${unsent === 1 ? 'was' : 'were'} not made` : ''}. `
          + 'Join again to start a new room with this name.', notices);
        this.lost(generation, this.why, null, notices);
        return;
      }
      const closedBy = event?.code && event.code !== 1006 ? { code: event.code, reason: event.reason ?? '' } : null;
      const why = closedBy ? `closed by the hub: ${closedBy.code}${closedBy.reason ? ` ${closedBy.reason}` : ''}`
        : 'the hub cannot be reached';
      // A hub that restarted (1001) with another history says so in its welcome (`reset`, answering
      // `sinceTime`): the page reconnects with `since` as after any drop (PROTOCOL.md "A room that
      // went back").
      this.lost(generation, why, closedBy);
    };
    socket.onerror = () => { /* a close event follows */ };
    this.onUpdate([]);
  }

  /** Sends messages on the open, welcomed connection (anything else waits in the outbox). */
  send(messages) {
    if (messages.length === 0 || this.link !== 'online' || !this.socket) return;
    for (const m of messages) {
      try { this.socket.send(encode(m)); } catch { /* the close event will follow */ }
    }
  }

  received(message) {
    const before = this.sync.view;
    const revisionBefore = this.sync.revision;
    const pendingBefore = this.sync.pendingCount;
    const first = this.sync.outbox[0];
    const inFlight = first && first.sentBase !== null ? first.request : null;
    const { send, events } = this.sync.receive(message);
    const notices = [];
    const entry = message.type === 'undone' && message.entry != null ? { entry: message.entry } : {};
    const revision = this.sync.revision > revisionBefore && message.rev === this.sync.revision
      ? revisionOf(message, inFlight, this.sync.user) : null;
    if (message.type === 'welcome' && message.people != null) this.writers.forget();
    if (revision) this.writers.note(revision.author, revision.rev, revision.ops);
    // An ack whose edit took its undo with it: the reports are told with the undo (one notice).
    const dropped = events.some((e) => e.type === 'undoDropped');
    for (const event of events) {
      switch (event.type) {
        case 'welcomed':
          this.welcomeCount += 1;
          this.link = 'online';
          this.backoff = FIRST_BACKOFF;
          this.everWelcomed = true;
          this.welcomedHere = true;
          this.outage = false;
          this.why = null;
          this.closedBy = null;
          this.refused = false;
          this.unopenedRunning = 0;
          this.tagsAsked = false;
          this.redirects = 0;
          notices.push({ type: 'welcomed' });
          break;
        case 'remote': notices.push({ ...event, people: before }); break;
        case 'reset': {
          const kept = this.sync.pendingCount;
          notices.push({ type: 'reset', kept, notSent: Math.max(0, pendingBefore - kept), lost: event.lost,
            perhapsMore: event.perhapsMore });
          break;
        }
        case 'undoDropped': {
          const noop = message.type === 'ack' ? message.noop ?? [] : [];
          // An edit the hub refused goes with the undo pressed for it (sent, the undo would take back
          // an older change): it was not made, whatever the room holds.
          const reports = message.type === 'error' ? [{ reason: 'refused', code: message.code }]
            : noop.length > 0 ? noop : event.ops.map((d) => this.whyUnchanged(d));
          const notice = { type: 'undoDropped', reports, people: before };
          if (event.label != null) notice.label = event.label;
          notices.push(notice);
          break;
        }
        case 'skipped': {
          if (dropped && message.type === 'ack') break;
          const kind = message.type === 'undone' ? 'undo' : message.type === 'redone' ? 'redo' : 'edit';
          const changed = message.rev != null && (message.ops?.length ?? 0) > 0;
          const label = kind !== 'edit' && message.label != null ? { label: message.label } : {};
          notices.push({ type: 'skipped', reports: event.reports, people: before, kind, changed, ...label, ...entry });
          break;
        }
        case 'history':
          if (message.type === 'history') notices.push({ type: 'history' });
          break;
        case 'log':
          this.reads.delete(message.seq);
          notices.push({ type: 'log', seq: message.seq, page: event.page });
          break;
        case 'blame':
          this.reads.delete(message.seq);
          notices.push({ type: 'blame', seq: message.seq, blame: event.blame });
          break;
        case 'error':
          if (message.seq != null && this.reads.has(message.seq)) {
            // A read (`log`, `blame`) was refused, e.g. the person asked about went meanwhile: no
            // request of the user's failed, so it is no refusal to show.
            this.reads.delete(message.seq);
            notices.push({ type: 'readFailed', seq: message.seq, code: event.code });
          } else if (isFatal(event.code)) {
            this.stopFor(event.code, event.message, notices);
          } else {
            notices.push({ type: 'error', code: event.code, message: event.message });
          }
          break;
        case 'needsResync':
          // The hub no longer keeps our base: start again from a full state.
          this.sync.hasState = false;
          this.why = 'resyncing with the hub';
          this.drop(1000);
          break;
        case 'redirect':
          if (/^wss:/i.test(this.url) && !/^wss:/i.test(event.url)) {
            // A room opened over TLS never goes on without it (the terminal client does the same; a
            // browser would refuse the connection anyway, and the page went round the redirect for ever).
            this.stopFor('insecure-redirect', `The hub sent this room to ${event.url}, which is not encrypted, so this page `
              + 'does not follow it. The operator should give that hub a wss:// address (cluster.advertisedURL).', notices);
            this.drop(1000);
            break;
          }
          this.url = event.url;
          this.redirects += 1;
          // Straight to the node named, unless redirects go round in circles (then back off).
          if (this.redirects <= MAX_REDIRECTS) this.backoff = 0;
          this.why = 'redirected';
          this.drop(1000);
          break;
        default: break;
      }
    }
    if ((message.type === 'undone' || message.type === 'redone') && message.rev == null
        && message.ops.length === 0 && message.skipped.length === 0) {
      notices.push({ type: 'nothing', kind: message.type === 'undone' ? 'undo' : 'redo', ...entry });
    }
    if (message.type === 'restored' && message.rev == null && message.ops.length === 0) {
      notices.push({ type: 'nothing', kind: 'restore' });
    }
    const own = { undone: 'undo', redone: 'redo', restored: 'restore' }[message.type];
    if (own && message.rev != null && message.ops.length > 0) {
      notices.unshift({ type: 'mine', kind: own, diffs: message.ops, people: before,
        ...(message.label != null ? { label: message.label } : {}) });
    }
    if (message.type === 'undone' && message.entry != null) {
      notices.push({ type: 'entryUndone', entry: message.entry });
    }
    if (revision) notices.push(revision);
    if (message.type === 'tags') this.tagsAsked = false;
    if (message.type === 'pong') this.clock.pong(message.time, this.timers.now());
    this.send(send);
    if (message.type === 'welcome') {
      // The presence and the tag question wait for the welcome, like every other frame; a ping
      // tells how far the hub's clock is from this one.
      this.askForTagsIfLow();
      this.ping();
    }
    this.onUpdate(notices);
  }

  /**
   * Why a queued diff that was dropped changed nothing, as a skip report: its person is gone
   * (`targetRemoved`), or what it wrote was there already (`sameChange`, the page's own reason); `by`
   * the latest writer this page saw, when it saw one.
   */
  whyUnchanged(diff) {
    const by = this.writers.of(diff);
    if (diff.op !== 'insert' && !this.sync.confirmed.contains(diffTag(diff))) {
      return makeReport({ reason: 'targetRemoved', tag: diffTag(diff), by });
    }
    return reportFor('sameChange', diffTarget(diff), by);
  }

  askForTagsIfLow() {
    if (this.sync.tagsLeft < TAGS_LOW && this.link === 'online' && !this.tagsAsked) {
      this.tagsAsked = true;
      this.send([{ type: 'tags' }]);
    }
  }

  /** The room stops for good (no reconnecting), and the page hears why as a `fatal` notice. */
  stopFor(code, message, notices) {
    notices.push({ type: 'fatal', code, message });
    this.stopped = true;
    this.link = 'offline';
    this.why = message;
  }

  /** Closes the current socket (its late events are ignored) and counts the connection as lost. */
  drop(code) {
    const socket = this.socket;
    const generation = this.generation;
    this.socket = null;
    if (socket) {
      socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
      try { socket.close(code); } catch { /* already closing */ }
    }
    if (!this.stopped) this.lost(generation, this.why ?? 'reconnecting');
    else this.sync.disconnected();
  }

  /**
   * `closedBy`: {code, reason} when the hub closed the connection itself (see the constructor);
   * `notices`: what the page hears with the update (a stop's `fatal`).
   */
  lost(generation, why, closedBy = null, notices = []) {
    if (generation !== this.generation) return;
    this.generation += 1; // ignore anything more from this connection
    this.timers.clearTimeout(this.heartbeatTimer);
    this.sync.disconnected();
    this.socket = null;
    if (this.stopped) {
      this.link = 'offline';
      this.onUpdate(notices);
      return;
    }
    if (!this.openedHere && !closedBy) this.askWhetherRunning(this.connectedURL);
    if (!this.welcomedHere && this.connectedURL === this.url && this.url !== this.home) {
      // A node we were redirected to cannot be reached: go back to the address we started with.
      this.url = this.home;
    }
    const wait = this.backoff;
    this.backoff = Math.min(Math.max(this.backoff * 2, FIRST_BACKOFF), MAX_BACKOFF);
    if (wait === 0) {
      // Following a redirect: no waiting, and not worth a word.
      this.link = 'connecting';
      const next = this.generation;
      this.retryTimer = this.timers.setTimeout(() => { if (next === this.generation) this.connect(); }, 0);
      this.onUpdate([]);
      return;
    }
    this.link = 'offline';
    this.outage = true;
    this.keepPending();
    this.why = why;
    this.closedBy = closedBy;
    this.retryAt = this.timers.now() + wait * 1000;
    const next = this.generation;
    this.retryTimer = this.timers.setTimeout(() => {
      if (next === this.generation) this.connect();
    }, wait * 1000);
    this.onUpdate([]);
  }

  /**
   * A connection to `url` never opened: is its hub running (it answers plain HTTP)? Twice so, with no
   * welcome between, and the page says the hub does not let it connect instead of calling it
   * unreachable (once could be a hub that was starting).
   */
  askWhetherRunning(url) {
    if (!this.probe) return;
    const welcomes = this.welcomeCount;
    // Only the newest question's answer counts (an older one may come after it).
    const asked = ++this.probesAsked;
    this.probe(url).then((running) => running, () => false).then((running) => {
      if (this.stopped || this.welcomeCount !== welcomes || this.link === 'online' || asked !== this.probesAsked) return;
      this.unopenedRunning = running ? this.unopenedRunning + 1 : 0;
      const refused = this.unopenedRunning >= 2;
      if (refused === this.refused) return;
      this.refused = refused;
      this.onUpdate([]);
    });
  }

  /** A ping after a quiet spell; a connection that stays silent through the next one is dropped. */
  scheduleHeartbeat(generation) {
    this.timers.clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = this.timers.setTimeout(() => {
      if (generation !== this.generation || !this.socket) return;
      if (!this.heard) {
        this.why = 'no answer from the hub';
        this.drop(1000);
        return;
      }
      this.heard = false;
      this.ping();
      this.scheduleHeartbeat(generation);
    }, HEARTBEAT_SECONDS * 1000);
  }

  /** Sends a ping on the current socket, noting when (its pong tells the hub's clock). */
  ping() {
    if (!this.socket) return;
    try {
      this.socket.send(encode({ type: 'ping' }));
      this.clock.pingSent(this.timers.now());
    } catch { /* the close event will follow */ }
  }
}
