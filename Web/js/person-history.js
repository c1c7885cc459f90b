// One person's history, as the history panel shows it with "Only this person" on (HISTORY.md §4:
// `log` with `tag`): the revisions whose changes named them, newest first, a page at a time. The same
// interface as the room's Timeline (timeline.js), so the panel draws either: the page sends what
// `nextRequest()` returns, says so with `sent(seq, request)`, and hands each answer to `answered`.
//
// Unlike the room's timeline its rows are not consecutive revisions (others' changes fall between), so
// there is no gap to find: a live revision that names the person goes on top, any other leaves the
// rows alone. Its "Undo this" marks come as the room's do: a change of this user's stacks reads the
// loaded rows again (the newest as many as are loaded, up to the protocol's 200 a page; older rows
// loaded before stay below them). `show(tag)` picks the person; rows read for someone else go, and an
// answer to a request about them is not used. No revision 0 row: the room as it began is the room's.
// One `log` request at a time; `reset()` after a reconnect reads again from the top. No DOM, no
// socket, no clock (Tests/js/person-history.test.mjs).

import { diffTag } from './core/diff.js';
import { HistoryRows } from './history-rows.js';
import { PAGE_SIZE, REFRESH_SIZE } from './timeline.js';

export class PersonHistory extends HistoryRows {
  constructor({ pageSize = PAGE_SIZE, refreshSize = REFRESH_SIZE } = {}) {
    super({ pageSize, refreshSize });
    /** The person whose history this is, or null (nothing is asked). */
    this.tag = null;
    this.reset();
  }

  /** Shows person `tag`'s history (null: nobody's); rows read for someone else go. */
  show(tag) {
    if (tag === this.tag) return;
    this.tag = tag;
    this.reset();
  }

  /** What the panel lists: the entries (the room's revision 0 is not one of a person's). */
  get rows() { return this.entries; }

  /** The next `log` request ({kind, before?, limit, tag}), or null. Changes nothing: call `sent`. */
  nextRequest() {
    if (this.tag == null || this.inFlight || this.paused) return null;
    const tag = this.tag;
    if (!this.loaded) return { kind: 'head', limit: this.pageSize, tag };
    if (this.wantRefresh) return { kind: 'refresh', limit: this.clamp(this.entries.length), tag };
    if (this.wantOlder && this.more) return { kind: 'older', before: this.oldest, limit: this.pageSize, tag };
    return null;
  }

  sent(seq, request) {
    this.inFlight = { seq, ...request };
    if (request.kind === 'refresh') this.wantRefresh = false;
  }

  /** A revision as it happened: on top when it names the person (and is newer than the rows). */
  revision(entry) {
    this.paused = false;
    if (!this.loaded || this.tag == null) return;
    if (!entry.ops.some((d) => diffTag(d) === this.tag)) return;
    if (this.newest == null || entry.rev > this.newest) this.entries = [entry, ...this.entries];
  }

  /** A `log` answer to the request sent with `seq`; false when it answers no request of this one's. */
  answered(seq, page) {
    const request = this.inFlight;
    if (!request || request.seq !== seq) return false;
    this.inFlight = null;
    const got = page.entries ?? [];
    switch (request.kind) {
      case 'head':
        this.entries = got;
        this.loaded = true;
        this.exhausted = !page.more;
        break;
      case 'refresh': {
        // The newest rows again; the older ones loaded before continue them (every revision naming
        // the person since was put on top as it came, so the page reaches them unless it is full).
        const lowest = got.length ? got[got.length - 1].rev : null;
        const older = page.more && lowest != null ? this.entries.filter((e) => e.rev < lowest) : [];
        this.entries = [...got, ...older];
        if (older.length === 0) this.exhausted = !page.more;
        break;
      }
      case 'older':
        this.wantOlder = false;
        if (this.oldest === request.before) {
          this.entries = [...this.entries, ...got.filter((e) => e.rev < request.before)];
          this.exhausted = !page.more;
        }
        break;
      default: break;
    }
    this.forgetUndoingGone();
    return true;
  }

  /** The request `seq` was refused: asked again after the next revision or reconnect, not at once. */
  failed(seq) {
    if (this.inFlight?.seq !== seq) return false;
    if (this.inFlight.kind === 'older') this.wantOlder = false;
    if (this.inFlight.kind === 'refresh') this.wantRefresh = true;
    this.inFlight = null;
    this.paused = true;
    return true;
  }
}
