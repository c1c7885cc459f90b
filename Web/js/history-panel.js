// The history panel (HISTORY.md §6): the room's timeline, newest first, one row per revision (a run
// of revisions that are one action, a name typed a letter a revision, is one row: history-runs.js): when
// (relative, the exact time on hover; a tap or click on it shows the exact time in its place, for
// touch screens, which have no hover), who, what ("Change Hair Color", "Undo Change Name", "Restore
// to revision 4"), the people it touched by their names now; "Undo this" on this user's rows that are
// still on their undo stack, "Restore to here" on every row (the page asks first), the last one the
// room as it started (revision 0, which the hub does not list: timeline.js adds it). Reaching the end of
// the list (by scrolling, or "Show older changes") loads the next older page; a list too short to
// scroll loads on until it scrolls or the room's first change is shown.
//
// While the user reads below the top of the list, no row comes or goes (timeline.js holds the live
// revisions): a button over the list's top says how many newer changes wait ("3 newer changes"), and
// takes the list back to its top, where they come. Scrolling to the top does the same.
//
// "Only <name>" (a toggle in the panel's head) lists the selected person's changes instead: the
// revisions that named them (person-history.js), without the room's revision 0.
//
// State lives in the Timeline (timeline.js) or the PersonHistory; this view only draws it. Rows are
// kept by key (their oldest revision) and changed in place, so a render after every message leaves
// focus and the scroll position alone. A
// viewer (`editable` false) gets no buttons. No word here is a wire name (history-text.js words it).

import { canFocus, h, setAttr, setText } from './dom.js';
import { actionText, relativeTime, exactTime, touchedText, historyStatusText } from './history-text.js';
import { overlaps, rowKey } from './history-runs.js';

/** The focusable controls of a row, by class: the one that had the focus gets it back (`keepRowFocus`). */
const ROW_CONTROLS = ['undo-entry', 'restore-here'];
/** Pixels from the bottom of the list at which the next older page is asked for. */
const NEAR_END = 120;
/** Pixels below the top of the list past which the user is reading there (live rows wait). */
const READING = 4;

export class HistoryPanel {
  /**
   * @param {HTMLElement} section  `#history`
   * @param {{undoEntry(id), restore(entry), older(), onlyPerson(only), reading(below)}} actions
   */
  constructor(section, actions) {
    this.section = section;
    // Focusable from script only: it holds the focus while a row that had it is read again.
    this.section.tabIndex = -1;
    /** {rev, control, lost} of the row whose button had the focus when the row went, until it is back
     * (`lost`: it went in the render under way, the focus with it). */
    this.refocus = null;
    this.actions = actions;
    /** Key (a row's oldest revision, `rowKey`) → {li, who, what, touched, when, rev, undo, restore, entry} */
    this.rows = new Map();
    /** Keys of the rows that show their exact time instead of "2 min ago" (tapped). */
    this.exact = new Set();
    this.state = null;
    /** Whether the list is scrolled below its top (as last told to `actions.reading`). */
    this.reading = false;
    this.build();
  }

  build() {
    this.status = h('p', { id: 'history-status', class: 'help' });
    this.list = h('ol', { id: 'history-list', class: 'history-list', 'aria-labelledby': 'history-title',
      tabindex: '0' });
    this.newer = h('button', { id: 'history-newer', type: 'button', class: 'newer', hidden: '' });
    this.newer.addEventListener('click', () => this.toTop());
    this.more = h('button', { id: 'history-more', type: 'button', class: 'quiet more' }, 'Show older changes');
    this.end = h('p', { id: 'history-end', class: 'help end' }, 'Nothing older: this is where the room began.');
    this.title = h('h2', { id: 'history-title' }, 'History');
    this.only = h('button', { id: 'history-only', type: 'button', class: 'quiet', 'aria-pressed': 'false',
      title: "Lists only the changes to the person selected" }, 'Only this person');
    this.only.addEventListener('click', () => this.actions.onlyPerson(this.only.getAttribute('aria-pressed') !== 'true'));
    this.list.addEventListener('scroll', () => this.scrolled());
    this.more.addEventListener('click', () => this.actions.older());
    this.list.addEventListener('click', (e) => {
      const when = e.target.closest('time.when');
      if (when) return this.toggleExact(Number(when.closest('li[data-key]').dataset.key));
      const button = e.target.closest('button');
      const li = e.target.closest('li[data-key]');
      if (!button || !li) return;
      const row = this.rows.get(Number(li.dataset.key));
      if (!row) return;
      if (button === row.undo && row.entry.entry != null) this.actions.undoEntry(row.entry.entry);
      if (button === row.restore) this.actions.restore(row.entry);
    });
    this.section.append(
      h('div', { class: 'pane-head' }, this.title, this.only),
      this.status, h('div', { class: 'history-scroll' }, this.newer, this.list), this.more, this.end);
  }

  /**
   * Draws the timeline. `view`: {entries, loaded, more, loadingOlder, editable, undoable(entry),
   * touched(entry) → [{tag, name, gone}], head (the room's revision), now (ms), unreachable (the
   * hub is down: rows not loaded yet come when it is back), closedBy (it closed the connection
   * itself: {code, reason}, or null), refused (it is running but does not let this page connect),
   * person (the selected person's name, or
   * null), only (the list is that person's changes), newer (revisions waiting while the user reads
   * below the top)}.
   */
  render(view) {
    this.state = view;
    const { entries, loaded, more, loadingOlder, editable, person, only } = view;
    setText(this.title, only ? `History of ${person}` : 'History');
    setAttr(this.title, 'dir', only ? 'auto' : null);
    this.only.hidden = person == null;
    setAttr(this.only, 'aria-pressed', only ? 'true' : 'false');
    setText(this.only, person == null ? 'Only this person' : `Only ${person}`);
    // A long name is cut with … in the button (half the panel's head): the tooltip says it whole.
    setAttr(this.only, 'title', person == null ? 'Lists only the changes to the person selected'
      : `Lists only the changes to ${person}`);
    setText(this.end, only ? `Nothing older: that is every change to ${person}.` : 'Nothing older: this is where the room began.');
    const keys = new Set(entries.map(rowKey));
    this.keepGrownRuns(entries, keys);
    const had = document.activeElement;
    for (const [key, row] of this.rows) {
      if (!keys.has(key)) {
        // The row with the focus goes (the timeline is read again after a reconnect): the panel keeps
        // the focus, and gives it back to the same button of that revision's row once it is back.
        const control = row.li.contains(had) ? [...had.classList].find((c) => ROW_CONTROLS.includes(c)) : null;
        if (control) this.refocus = { key, control, lost: true };
        row.li.remove();
        this.rows.delete(key);
      }
    }
    for (const entry of entries) {
      const row = this.rows.get(rowKey(entry)) ?? this.makeRow(rowKey(entry));
      this.fill(row, entry, view);
    }
    const focused = document.activeElement;
    let cursor = this.list.firstElementChild;
    for (const entry of entries) {
      const li = this.rows.get(rowKey(entry)).li;
      if (li === cursor) cursor = cursor.nextElementSibling;
      else this.list.insertBefore(li, cursor);
    }
    if (focused && focused !== document.activeElement && this.list.contains(focused)) {
      focused.focus({ preventScroll: true });
    }
    setText(this.status, historyStatusText({ loaded, count: entries.length, unreachable: view.unreachable,
      closedBy: view.closedBy ?? null, refused: view.refused ?? false, person: only ? person : null }));
    this.status.hidden = loaded && entries.length > 0;
    this.list.hidden = entries.length === 0;
    if (this.list.hidden) this.reading = false;  // a hidden list's scroll position is gone, without an event
    this.more.hidden = !more;
    this.more.disabled = loadingOlder;
    setText(this.more, loadingOlder ? 'Loading older changes…' : 'Show older changes');
    const newer = view.newer ?? 0;
    if (newer === 0 && this.newer.contains(document.activeElement)) this.list.focus({ preventScroll: true });
    this.newer.hidden = newer === 0;
    setText(this.newer, `↑ ${newer.toLocaleString()} newer ${newer === 1 ? 'change' : 'changes'}`);
    setAttr(this.newer, 'title', 'Back to the top of the list, where they are');
    this.end.hidden = !(loaded && !more && entries.length > 0);
    setAttr(this.section, 'data-editable', editable ? null : 'false');
    setAttr(this.list, 'aria-busy', loaded && !loadingOlder ? null : 'true');
    this.keepRowFocus(loaded && !loadingOlder);
    // A list too short to scroll cannot be scrolled to its end: load on. Asking the list's height
    // lays the page out, so once it scrolls with N rows it is not asked again while it has as many
    // (in a big room that layout was most of every render).
    if (more && !loadingOlder && entries.length > 0 && !(this.scrollsWith != null && entries.length >= this.scrollsWith)) {
      if (this.list.scrollHeight <= this.list.clientHeight + 1) queueMicrotask(() => this.actions.older());
      else this.scrollsWith = entries.length;
    }
  }

  /**
   * A run that grew (a letter typed live at the top; an older page that reaches further down) has a
   * new key: its row moves to it, with its element, focus and tapped time (a review: the row was
   * made anew, and the focus on it fell to the list).
   */
  keepGrownRuns(entries, keys) {
    for (const entry of entries) {
      const key = rowKey(entry);
      if (this.rows.has(key)) continue;
      for (const [old, row] of this.rows) {
        if (keys.has(old) || !row.entry || !overlaps(row.entry, entry)) continue;
        this.rows.delete(old);
        this.rows.set(key, row);
        row.li.dataset.key = String(key);
        if (this.exact.delete(old)) this.exact.add(key);
        break;
      }
    }
  }

  /**
   * After the row with the focus went (`refocus`): while the user has not moved on, the focus waits on
   * the panel and goes back to the same button of that revision's row when it is there again (a
   * keyboard user was sent to the people list by a reconnect before). `settled`: every row that will
   * come has come; the row is not among them (older than the pages read), so the list keeps it.
   */
  keepRowFocus(settled) {
    const want = this.refocus;
    if (!want) return;
    const now = document.activeElement;
    // Waiting: the focus went with the row in this render (to the page), or is where the panel put
    // it. Anywhere else (a click on the page, a Tab to the list) the user has moved on.
    const waiting = now === this.section || (want.lost && (now == null || now === document.body));
    want.lost = false;
    if (!waiting) {
      this.refocus = null;
      return;
    }
    const target = this.rows.get(want.key)?.li.querySelector(`.${want.control}`);
    if (canFocus(target)) {
      target.focus();
      this.refocus = null;
    } else if (settled) {  // every row that will come is here, and not that one: the list, or stay
      if (canFocus(this.list)) this.list.focus();
      else if (now !== this.section) this.section.focus({ preventScroll: true });
      this.refocus = null;
    } else if (now !== this.section) {
      this.section.focus({ preventScroll: true });
    }
  }

  /** A tap on a row's time: its exact time in place of the relative one, or back. */
  toggleExact(key) {
    const row = this.rows.get(key);
    if (!row || row.entry?.time == null) return;
    if (!this.exact.delete(key)) this.exact.add(key);
    row.key = null;
    this.fill(row, row.entry, this.state);
  }

  /**
   * The list was scrolled: below its top the user is reading there (said when it changes); near its
   * end, the next older page is asked for.
   */
  scrolled() {
    const l = this.list;
    const reading = l.scrollTop > READING;
    if (reading !== this.reading) {
      this.reading = reading;
      this.actions.reading(reading);
    }
    const v = this.state;
    if (!v || !v.more || v.loadingOlder) return;
    if (l.scrollTop + l.clientHeight >= l.scrollHeight - NEAR_END) this.actions.older();
  }

  /**
   * Back to the top of the list, with the focus on it, where the newer rows come: the "↑ N newer
   * changes" button, and the user's own restore made from a row further down (its row waited below
   * that button, out of view; a black-box pass).
   */
  toTop() {
    this.list.scrollTop = 0;
    this.list.focus({ preventScroll: true });
    this.scrolled();
  }

  /** The list shows other rows (the room's, or one person's): it starts at its top. */
  restart() {
    this.list.scrollTop = 0;
    this.reading = false;
  }

  makeRow(key) {
    const row = { entry: null };
    row.who = h('span', { class: 'who', dir: 'auto' });
    row.what = h('span', { class: 'what' });
    row.touched = h('span', { class: 'touched' });
    row.when = h('time', { class: 'when' });
    row.rev = h('span', { class: 'rev' });
    row.undo = h('button', { type: 'button', class: 'undo-entry' }, 'Undo this');
    row.restore = h('button', { type: 'button', class: 'restore-here' }, 'Restore to here');
    row.actions = h('span', { class: 'entry-actions' }, row.undo, row.restore);
    row.li = h('li', { 'data-key': key },
      h('div', { class: 'entry-head' }, row.who, row.what),
      row.touched,
      h('div', { class: 'entry-foot' }, row.when, row.rev, row.actions));
    this.rows.set(key, row);
    return row;
  }

  fill(row, entry, { editable, undoable, touched, head, now, stepOf = () => null }) {
    const whom = touchedText(touched(entry));
    const exact = this.exact.has(rowKey(entry)) && entry.time != null;
    const ago = exact ? exactTime(entry.time) : relativeTime(entry.time, now);
    const isHead = entry.rev >= head;
    const canUndo = editable && entry.entry != null;
    const mayUndo = canUndo && undoable(entry);
    // The undo step this row is part of, when it holds more than the row: "Undo #1–#21".
    const whole = canUndo ? stepOf(entry) : null;
    const step = whole && (whole.first < rowKey(entry) || whole.last > entry.rev) ? whole : null;
    // A render comes after every message: a row whose words are the same is left as it is.
    const key = `${whom}\n${ago}\n${editable}\n${mayUndo}\n${isHead}\n${step?.first}-${step?.last}`;
    if (row.entry === entry && row.key === key) return;
    row.entry = entry;
    row.key = key;
    // A run (history-runs.js): "Change Name (6 changes)", revisions "#3–#8".
    const count = entry.revs?.length ?? 1;
    const action = actionText(entry) + (count > 1 ? ` (${count.toLocaleString()} changes)` : '');
    const start = entry.kind === 'start';
    setAttr(row.li, 'data-rev', entry.rev);
    setAttr(row.li, 'data-first', count > 1 ? entry.first : null);
    setAttr(row.li, 'data-author', entry.author);
    setAttr(row.li, 'data-kind', entry.kind);
    setAttr(row.li, 'data-entry', entry.entry != null ? entry.entry : null);
    row.li.classList.toggle('undoable', entry.entry != null);
    setText(row.who, entry.author ?? '');
    row.who.hidden = start;
    setText(row.what, action);
    setText(row.touched, whom);
    row.touched.hidden = !whom;
    setText(row.when, ago || 'earlier');
    row.when.hidden = start;
    setAttr(row.when, 'datetime', entry.time != null ? new Date(entry.time).toISOString() : null);
    setAttr(row.when, 'title', entry.time == null ? 'No time was kept for this change'
      : exact ? 'Tap for how long ago' : `${exactTime(entry.time)} (tap to show it here)`);
    setAttr(row.when, 'data-exact', exact ? 'true' : null);
    setText(row.rev, count > 1 ? `#${entry.first}–#${entry.rev}` : `#${entry.rev}`);
    setAttr(row.rev, 'title', count > 1 ? `Revisions ${entry.first} to ${entry.rev}: ${count} changes of one action, as one row`
      : `Revision ${entry.rev}`);

    row.undo.hidden = !canUndo;
    row.undo.disabled = !mayUndo;
    setText(row.undo, step ? `Undo #${step.first}–#${step.last}` : 'Undo this');
    const what = `${action}${whom ? ` on ${whom}` : ''}`;
    // When and which revision too: two rows of the same action on the same person read alike (a pass
    // with a screen reader), and the row's time is no tab stop of its own.
    const which = `${entry.time != null ? `, ${ago}` : ''} (${count > 1 ? `revisions ${entry.first} to ${entry.rev}` : `revision ${entry.rev}`})`;
    // The accessible name starts with the words shown (a voice-control user says what they see).
    setAttr(row.undo, 'aria-label', step
      ? `Undo #${step.first}–#${step.last}: this step of yours on its own, all of it (rows of it are elsewhere in the list): ${what}${which}`
      : `Undo this change of yours on its own: ${what}${which}`);
    setAttr(row.undo, 'title', step
      ? `Takes back this step of yours, all of it (revisions ${step.first} to ${step.last}: a teammate's change came in the middle, or it goes on below), and nothing done after it`
      : 'Takes back this change of yours, and nothing done after it');
    row.restore.hidden = !editable;
    row.restore.disabled = !editable || isHead;
    setAttr(row.restore, 'aria-label', start ? 'Restore to here: the room as it was when it started'
      : `Restore to here: the room as it was right after ${entry.author}'s ${what}${which}`);
    setAttr(row.restore, 'title', isHead ? 'This is how the room is now'
      : 'Makes the room as it was right after this change (asks first; you can undo it)');
    row.actions.hidden = !editable;
  }
}
