// The room's timeline as the history panel shows it (HISTORY.md §4, §6): the revisions loaded so far,
// newest first, which of them this user can still undo on their own, and which `log` request to send
// next. The page sends what `nextRequest()` returns, says so with `sent(seq, request)`, and hands every
// `log` answer to `answered(seq, page)`.
//
// Invariant: `entries` are consecutive revisions, newest first, from the newest this page knows down
// to `oldest` (the hub lists every revision but 0, so a page ends where an older one begins). The
// panel shows `rows`: the entries and, once they reach revision 1, a row for revision 0, the room as
// it started (`START`), which the hub never lists (HISTORY §4) but a restore can go back to (§3). A live
// revision joins at the top only when it is the next one; anything else (a gap) asks for a refresh,
// and a refresh answer that does not meet the rows below it drops them (they are loaded again on
// scroll). `more` says whether revisions older than `oldest` exist.
//
// The "undo this" marks (`entry` on an entry) are the hub's answer about this user's undo stack when it
// was read. They change with every change to that stack (an edit, an undo, a redo, a coalesced run,
// another tab of the same user): `stacksChanged()` asks for a refresh, which reads every loaded row
// again, newest first, in pages of up to 200 (the protocol's largest), so every mark shown is the
// hub's. `entryGone(id)` drops a mark at once when a selective undo of it is answered.
//
// Live revisions do not pile up: past `maxRows` (or as many as the user scrolled down to, when more),
// each new one at the top drops the oldest row, which is loaded again if the user scrolls to it (a
// page left open in a busy room otherwise drew and refreshed every revision it ever saw). While the
// user reads below the top of the list (`hold(true)`), no row comes and none goes: live revisions
// wait, counted in `newer`, and a refresh of the marks reads only the rows shown. Back at the top
// (`hold(false)`) the waiting revisions are read in one page when they fit in one (with the rows
// below them, whose marks are read on down as in any refresh); more than that, and the page of the
// newest replaces the rows (older ones load on scroll, as ever).
//
// One `log` request is in flight at a time (its answer is matched by seq; an answer to an older
// connection's request is ignored). After a reconnect the page calls `reset()`: the timeline is read
// again from the top. What it shares with one person's history (person-history.js) is in HistoryRows
// (history-rows.js). No DOM, no socket, no clock: node tests it as it is (Tests/js/page-history.test.mjs).

import { HistoryRows } from './history-rows.js';

/** The row of revision 0, the room as it started: no author, no time, no changes. */
export const START = Object.freeze({ rev: 0, kind: 'start', author: null, ops: Object.freeze([]) });

/** Rows a page of the timeline asks for (the protocol's default). */
export const PAGE_SIZE = 50;
/** The largest page the protocol allows: a refresh reads the loaded rows in pages of this. */
export const REFRESH_SIZE = 200;
/** Rows kept as live revisions come, unless the user scrolled down to more. */
export const MAX_ROWS = 200;

export class Timeline extends HistoryRows {
  constructor({ pageSize = PAGE_SIZE, refreshSize = REFRESH_SIZE, maxRows = MAX_ROWS } = {}) {
    super({ pageSize, refreshSize });
    this.maxRows = maxRows;
    /** The user reads below the top of the list: live revisions wait (a view's state, kept over a reconnect). */
    this.held = false;
    this.reset();
  }

  /** Forgets everything (a new connection): the next request reads the newest page again. */
  reset() {
    super.reset();
    /** A refresh in progress: the `before` of its next page (the rows below are still to be read). */
    this.refreshBefore = null;
    /** Rows kept when live revisions come: `maxRows`, or as many as the user scrolled down to. */
    this.keep = this.maxRows;
    /** The newest revision this page was told of (live), or null. */
    this.latest = null;
    /** The next refresh reads the revisions that waited while the user read below the top. */
    this.catchingUp = false;
  }

  /** What the panel lists: the entries, then `START` once they reach the room's first revision. */
  get rows() {
    return this.loaded && this.exhausted && this.oldest === 1 ? [...this.entries, START] : this.entries;
  }

  /** How many revisions newer than the top row this page was told of and has not shown. */
  get waiting() {
    return this.latest == null ? 0 : Math.max(0, this.latest - (this.newest ?? 0));
  }

  /** How many revisions newer than the top row wait while the user reads below it (0 when not held). */
  get newer() {
    return this.held && this.loaded ? this.waiting : 0;
  }

  /**
   * The user reads below the top of the list (`reading`), or is back at it: while they read no row
   * comes or goes; back at the top, the revisions that waited are read.
   */
  hold(reading) {
    if (reading === this.held) return;
    this.held = reading;
    if (!reading && this.loaded && this.waiting > 0) {
      this.wantRefresh = true;
      this.catchingUp = true;
    }
  }

  // MARK: What to ask

  /**
   * The next `log` request ({kind, before?, limit}), or null when none is needed or one is in flight.
   * Changes nothing: call `sent` once it has gone.
   */
  nextRequest() {
    if (this.inFlight || this.paused) return null;
    if (!this.loaded) return { kind: 'head', limit: this.pageSize };
    if (this.refreshBefore != null) {
      const left = this.entries.filter((e) => e.rev < this.refreshBefore).length;
      return { kind: 'refresh', before: this.refreshBefore, limit: this.clamp(left) };
    }
    if (this.wantRefresh) {
      // Held, only the rows shown are read again; catching up, the waiting ones with them.
      if (this.held && this.newest != null) return { kind: 'refresh', before: this.newest + 1, limit: this.clamp(this.entries.length) };
      return { kind: 'refresh', limit: this.clamp(this.entries.length + (this.catchingUp ? this.waiting : 0)) };
    }
    if (this.wantOlder && this.more) return { kind: 'older', before: this.oldest, limit: this.pageSize };
    return null;
  }

  /** `request` (from nextRequest) went out with `seq`. */
  sent(seq, request) {
    this.inFlight = { seq, ...request };
    if (request.kind === 'refresh' && this.refreshBefore == null) {
      this.wantRefresh = false;
      if (this.catchingUp && !this.held) this.inFlight.catchUp = true;
      this.catchingUp = false;
    }
  }

  // MARK: What came

  /**
   * A revision as it happened ({rev, time?, author, kind, label?, ops}): at the top when it is the next
   * one. Before the first page it is left to that page; after a gap the rows are read again.
   */
  revision(entry) {
    this.paused = false;
    this.latest = Math.max(this.latest ?? 0, entry.rev);
    if (!this.loaded) return;
    if (this.held && this.entries.length > 0) return;
    if (this.entries.length === 0) {
      this.entries = [entry];
      this.exhausted = entry.rev <= 1;
    } else if (entry.rev === this.newest + 1) {
      this.entries = [entry, ...this.entries];
      if (this.entries.length > this.keep && this.refreshBefore == null) {
        this.entries = this.entries.slice(0, this.keep);
        this.exhausted = false;
      }
    } else if (entry.rev > this.newest) {
      this.wantRefresh = true;
    }
  }

  /**
   * A `log` answer ({entries, more}) to the request sent with `seq`. Returns false when it answers no
   * request of this timeline's (an older connection's).
   */
  answered(seq, page) {
    const request = this.inFlight;
    if (!request || request.seq !== seq) return false;
    this.inFlight = null;
    // Held (the user scrolled down while it was on its way), a refresh brings nothing above the rows.
    const got = (page.entries ?? []).filter((e) => !(request.kind === 'refresh' && this.held && this.newest != null && e.rev > this.newest));
    const lowest = got.length ? got[got.length - 1].rev : null;
    const bottom = this.oldest;
    if (request.catchUp && this.held) this.catchingUp = true;
    this.merge(got);
    switch (request.kind) {
      case 'head':
        this.loaded = true;
        this.exhausted = !page.more;
        break;
      case 'older':
        this.wantOlder = false;
        this.keep = Math.max(this.keep, this.entries.length);
        if (lowest == null || lowest <= (this.oldest ?? lowest)) this.exhausted = !page.more;
        break;
      case 'refresh':
        // Read on down to the bottom of what was loaded before, one page after the other. A catch-up
        // keeps as many rows as before it (the rows it brought push the oldest out, as live ones do),
        // and one whose page did not reach the rows shown starts the list again from it.
        if (request.catchUp && !this.held) {
          if (bottom != null && lowest != null && this.oldest === lowest && lowest > bottom) this.keep = this.maxRows;
          if (this.entries.length > Math.max(this.keep, got.length)) {
            this.entries = this.entries.slice(0, Math.max(this.keep, got.length));
            this.exhausted = false;
          }
          this.refreshBefore = page.more && lowest != null && lowest > this.oldest ? lowest : null;
        } else {
          this.refreshBefore = page.more && lowest != null && bottom != null && lowest > bottom ? lowest : null;
        }
        if (lowest != null && lowest <= (this.oldest ?? lowest)) this.exhausted = !page.more;
        break;
      default: break;
    }
    return true;
  }

  /**
   * The request `seq` was refused (an `error` answering it): it is asked again after the next revision
   * or reconnect, not at once (a refusal that repeats must not become a loop with the hub).
   */
  failed(seq) {
    if (this.inFlight?.seq !== seq) return false;
    if (this.inFlight.kind === 'older') this.wantOlder = false;
    if (this.inFlight.kind === 'refresh') {
      this.refreshBefore = null;
      this.wantRefresh = true;
    }
    this.inFlight = null;
    this.paused = true;
    return true;
  }

  /** Puts `got` in (an entry read again replaces the one shown), then keeps the run that reaches the top. */
  merge(got) {
    const byRev = new Map(this.entries.map((e) => [e.rev, e]));
    for (const e of got) byRev.set(e.rev, e);
    const sorted = [...byRev.values()].sort((a, b) => b.rev - a.rev);
    let end = sorted.length;
    for (let i = 1; i < sorted.length; i += 1) {
      if (sorted[i].rev !== sorted[i - 1].rev - 1) { end = i; break; }
    }
    if (end < sorted.length) this.exhausted = false;
    this.entries = sorted.slice(0, end);
    this.forgetUndoingGone();
  }
}
