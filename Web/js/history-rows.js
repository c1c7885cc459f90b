// What the room's timeline (timeline.js) and one person's history (person-history.js) share: rows of
// `log` entries, newest first, read a page at a time, one request in flight, and this user's "Undo
// this" marks (the `entry` the hub puts on their rows still on their undo stack), which every change
// to that stack reads again. Each subclass says what to ask next and how an answer joins its rows; its
// constructor calls `reset()` once its own settings are in place. No DOM, no socket, no clock.

export class HistoryRows {
  constructor({ pageSize, refreshSize }) {
    this.pageSize = pageSize;
    this.refreshSize = refreshSize;
  }

  /** Forgets the rows: the next request reads the newest page again. */
  reset() {
    /** Log entries {rev, time?, author, kind, label?, ops, entry?}, newest first. */
    this.entries = [];
    /** Whether the first page has come. */
    this.loaded = false;
    /** Whether the oldest loaded entry is the oldest there is (no older page to load). */
    this.exhausted = false;
    /** The request in flight: {seq, kind: 'head' | 'older' | 'refresh', before?, limit, …}, or null. */
    this.inFlight = null;
    /** The user scrolled to the end: load the next older page. */
    this.wantOlder = false;
    /** This user's undo stack changed: read the loaded rows again. */
    this.wantRefresh = false;
    /** Entry ids with a selective undo on its way (their "Undo this" waits). */
    this.undoing = new Set();
    /** A read was refused: nothing is asked until something changes (a revision, a reconnect). */
    this.paused = false;
  }

  /** The newest revision loaded, or null. */
  get newest() { return this.entries.length ? this.entries[0].rev : null; }
  /** The oldest revision loaded, or null. */
  get oldest() { return this.entries.length ? this.entries[this.entries.length - 1].rev : null; }
  /** Whether older rows than those loaded exist (unknown, so false, before the first page). */
  get more() { return this.loaded && !this.exhausted; }
  /** Whether a page of older entries is being read. */
  get loadingOlder() { return this.inFlight?.kind === 'older'; }

  /** Whether this user may undo `entry` on its own now: it carries an id, and no undo of it is on its way. */
  undoable(entry) { return entry.entry != null && !this.undoing.has(entry.entry); }

  /** A page of at least `pageSize` rows and at most `refreshSize`, to read `rows` again. */
  clamp(rows) { return Math.min(this.refreshSize, Math.max(this.pageSize, rows)); }

  /** The user reached the end of the list: load the next older page (when there is one). */
  loadOlder() { if (this.more) this.wantOlder = true; }

  /** This user's undo stack changed (their own revision, a `history` frame): read the marks again. */
  stacksChanged() {
    if (this.loaded) this.wantRefresh = true;
  }

  /** A selective undo of entry `id` was sent: its "Undo this" waits for the answer. */
  undoSent(id) { this.undoing.add(id); }

  /** Entry `id` left this user's undo stack (a selective undo of it was answered). */
  entryGone(id) {
    this.undoing.delete(id);
    this.entries = this.entries.map((e) => {
      if (e.entry !== id) return e;
      const { entry, ...rest } = e;
      return rest;
    });
  }

  /** A selective undo was refused (`no-entry`): nothing waits any more, and the marks are read again. */
  undoRefused() {
    this.undoing.clear();
    this.stacksChanged();
  }

  /** Forgets the undos on their way whose rows are no longer loaded. */
  forgetUndoingGone() {
    for (const id of [...this.undoing]) {
      if (!this.entries.some((e) => e.entry === id)) this.undoing.delete(id);
    }
  }
}
