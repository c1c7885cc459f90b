// The page: joins a room, then renders it after every change and turns clicks and keys into edits.
//
// State lives in the LiveRoom (the hub's model, the optimistic view, the outbox, history, presence,
// the connection and the role); this module keeps only what is the page's own: the selection (by
// tag, with its place in the list for when that person goes), the focused field, highlights and
// notices. Every render reads the room's view and changes the DOM in place (people-list.js,
// person-editor.js).
//
// The connection has one source of truth, the room's `connection` state: every word about it
// (#connection, #connection-detail, the join screen's status) is derived from it on each render
// (connection.js), never kept by a timer. A notice (notices.js) belongs to the user's action that
// caused it and goes with their next action or a click on its ×. A viewer's page offers no control
// that edits. The access token is kept for the tab (token-store.js), never in the address.
//
// History (HISTORY.md §6): the timeline (timeline.js, drawn by history-panel.js) and who last wrote
// each field of the selected person (attribution.js, drawn by person-editor.js) are read from the hub
// with `log` / `blame` and kept live by the revisions the room reports; after every update the page
// sends whatever read they still need (`askReads`). A reconnect reads both again. "Undo this" is a
// selective undo of the row's entry; "Restore to here" asks first, naming how many changes it takes
// back, then sends `restore`; when the room already looks as it did then (restore-check.js reads that
// state over HTTP), it says so and sends nothing. Relative times ("2 min ago") are redrawn every 15 s.
//
// Test hooks (docs/WEB.md) are kept here and in the views: `window.peoplekeeper` = {revision,
// pending, link, role} is read-only state for browser tests.

import { LiveRoom, roomURL, hubRunning } from './live-room.js';
import { JoinScreen } from './join.js';
import { PeopleList } from './people-list.js';
import { PersonEditor } from './person-editor.js';
import { Highlights } from './highlights.js';
import { NoticeBoard } from './notices.js';
import { TokenStore } from './token-store.js';
import { connectionStatus, awayText } from './connection.js';
import { reportsText, remoteText, errorText, refusalText, droppedUndoText, resetText } from './report-text.js';
import { actionLabels, presenceWords, roleWords } from './words.js';
import { Timeline } from './timeline.js';
import { runRows, stepsOf } from './history-runs.js';
import { PersonHistory } from './person-history.js';
import { Attribution } from './attribution.js';
import { HistoryPanel } from './history-panel.js';
import { KnownNames, touchedPeople, writerText, restoreQuestion, alreadyRestoredText, restoreOfflineText } from './history-text.js';
import { RestoreCheck, readRoomAt } from './restore-check.js';
import { undoOffer } from './core/undo-offer.js';
import { insert, remove, move, diffTag } from './core/diff.js';
import { canFocus, setAttr, setText } from './dom.js';

/** How long a teammate's latest change stays in the activity line (it is not a notice of yours). */
const ACTIVITY_MS = 8000;
/** At most one announcement of teammates' changes to screen readers per this many ms. */
const ANNOUNCE_MS = 3000;
/** A teammate's typing in a name is said once it pauses this long (one rename, not one per pause). */
const TYPING_PAUSE_MS = 1500;
/** How often relative times ("2 min ago") are redrawn. */
const CLOCK_MS = 15000;
/** Rows asked for per person gone by `nameGone`: the newest is their deletion, which says their name. */
const NAMING_ROWS = 20;
/** People gone asked about per notice at most (a frame each, counted against the hub's rate limit). */
const NAMING_MOST = 5;
const $ = (id) => document.getElementById(id);


/** The value of one part of a person (a writer's key: a field, `facialHair-STYLE`, `topic-TOPIC`), to
 * compare two copies of them; undefined for someone absent. */
function partOf(person, key) {
  if (!person) return undefined;
  if (key.startsWith('facialHair-')) return (person.facialHair ?? []).includes(key.slice('facialHair-'.length));
  if (key.startsWith('topic-')) {
    const topic = key.slice('topic-'.length);
    return (person.likes ?? []).includes(topic) ? 'like' : (person.dislikes ?? []).includes(topic) ? 'dislike' : 'none';
  }
  return person[key];
}

/** The layout of one column (app.css: under 43.75em, 700 px at the usual text size), where the editor
 * is under the list. */
const ONE_COLUMN = window.matchMedia('(max-width: 43.75em)');

class App {
  constructor() {
    this.live = null;
    /** The room the hub ended for its token, waiting for a new one (the join screen asks). */
    this.renewing = null;
    this.selectedTag = null;
    this.lastIndex = 0;
    this.focusedField = null;
    this.highlights = new Highlights();
    /** Names of everyone seen, to name people in reports after they are gone. */
    this.knownNames = new KnownNames();
    /** `log` questions out for the names of people gone whom a notice could not name (`nameGone`): seq → tag. */
    this.namings = new Map();
    /** The newest notice that named someone gone by tag: {id, said, text} (its id, what it said, and its words again with the names known), or null. */
    this.unnamed = null;
    /** Tags a teammate removed since the last render, and by whom: {author, restore} (to say so when it was the selected person). */
    this.removedBy = new Map();
    /** Live region → the words said to it in this task, said together once it is done (`say`). */
    this.saying = new Map();
    // Teammates' text edits of the selected person's name since the last render, in order (null: the
    // name was set whole, the edits are not known), for the caret; and the render asked for the next
    // frame, if any (`scheduleRender`).
    this.nameSteps = [];
    this.frame = null;
    /** Teammates' changes not yet said to screen readers: {text, count}, or null. */
    this.unannounced = null;
    /** A teammate's typing not said yet: {author, tag, from and to (the names before and after it), notice, timer}. */
    this.typingRun = null;
    this.timers = {};
    this.pendingDelete = null;
    this.lastDown = false;
    /** Whether the header last said the hub refuses the page (said once to screen readers). */
    this.lastRefused = false;
    this.lastCatchingUp = false;
    this.presenceKey = '';
    this.logKey = '';
    this.notices = new NoticeBoard();
    /** The newest notice that a render has seen (one shown since is about what this render shows). */
    this.noticeRendered = 0;
    this.timeline = new Timeline();
    this.personHistory = new PersonHistory();
    this.attribution = new Attribution();
    /** `${author}\n${tag}` → the kind of that author's latest revision touching that person (a skip
     *  report's `by` then reads "bob's restore" when it was one). */
    this.lastKinds = new Map();
    this.pendingRestore = null;
    /** Whether the open restore question's revision is how the room already is (restore-check.js). */
    this.restoreCheck = new RestoreCheck(() => Promise.reject(new Error('no room')));
    this.tokens = new TokenStore();
    /** What the page joined with: {room, user, token}; the token is kept once the hub welcomed it. */
    this.request = null;
    this.tokenKept = false;

    this.join = new JoinScreen((request) => this.enter(request), this.tokens);
    this.list = new PeopleList($('people'), {
      select: (tag, { focus, tapped }) => {
        this.select(tag, focus);
        // One column (a phone): the editor is under the list, out of sight; a person tapped or clicked
        // is shown there (arrow keys through the list stay in the list).
        if (tapped && ONE_COLUMN.matches) $('detail').scrollIntoView({ block: 'start' });
      },
      move: (tag, to) => this.movePerson(tag, to),
      remove: (tag) => this.askDelete(tag),
    });
    this.editor = new PersonEditor($('detail'), {
      edit: (diffs, options) => this.edit(diffs, options),
      move: (tag, to) => this.movePerson(tag, to),
      notice: (text) => this.notice(text),
      undoHere: (tag) => this.undo(tag),
      redoHere: (tag) => this.redo(tag),
      fieldFocused: (field) => {
        this.focusedField = field;
        this.tellPresence();
      },
    });
    /** The history panel lists the selected person's changes only (PersonHistory), not the room's. */
    this.onlyPerson = false;
    this.history = new HistoryPanel($('history'), {
      undoEntry: (id) => this.undoEntry(id),
      restore: (entry) => this.askRestore(entry),
      older: () => {
        const shown = this.shownHistory();
        if (shown.wantOlder || !shown.more) return; // asked already: it comes
        shown.loadOlder();
        this.askReads();
        this.renderHistory();
      },
      onlyPerson: (only) => {
        this.onlyPerson = only;
        this.history.restart();
        this.render();
      },
      reading: () => {
        this.renderHistory();
        this.askReads();
      },
    });
    this.wire();
    // The sticky top bar's height, for scrolling a focused control clear of it (app.css).
    new ResizeObserver(([entry]) => {
      document.documentElement.style.setProperty('--topbar-height', `${Math.ceil(entry.borderBoxSize[0].blockSize)}px`);
    }).observe(document.querySelector('.topbar'));
    const self = this;
    Object.defineProperty(window, 'peoplekeeper', {
      configurable: true,
      value: Object.freeze({
        get revision() { return self.live?.sync.revision ?? 0; },
        get pending() { return self.live?.pending ?? 0; },
        get link() { return self.live?.link ?? 'offline'; },
        get role() { return self.live?.role ?? null; },
      }),
    });
  }

  wire() {
    // A render waiting for its frame is done before the user acts, so that what they act on is what
    // the room has: the name they type into (a typed key is an edit of the name drawn), the row they
    // click. Before the key changes anything (`beforeinput` comes after `keydown`, before the value);
    // `click` and `focusin` for what comes without a key or a pointer (a screen reader's click).
    for (const type of ['keydown', 'beforeinput', 'compositionstart', 'pointerdown', 'click', 'focusin']) {
      document.addEventListener(type, () => { if (this.frame) this.render(); }, true);
    }
    // A page hidden with a frame booked gets no frame until it is shown: the render goes to a task.
    document.addEventListener('visibilitychange', () => {
      if (document.hidden && this.frame?.animation != null) {
        this.cancelRender();
        this.scheduleRender();
      }
    });
    $('add-person').addEventListener('click', () => this.addPerson());
    // "Find a person": the list narrows as you type; ↓ or Enter goes to the first match, Esc clears.
    $('people-filter').addEventListener('input', () => this.render());
    $('people-filter').addEventListener('keydown', (e) => {
      if (e.key === 'ArrowDown' || e.key === 'Enter') {
        const first = this.list.shownTags()[0];
        if (first != null) this.select(first, true);
        e.preventDefault();
      } else if (e.key === 'Escape' && $('people-filter').value) {
        $('people-filter').value = '';
        this.render();
        e.preventDefault();
      }
    });
    $('undo').addEventListener('click', () => this.undo());
    $('redo').addEventListener('click', () => this.redo());
    $('leave').addEventListener('click', () => this.leave());
    $('notice-dismiss').addEventListener('click', () => {
      this.notices.dismiss();
      this.renderNotices();
      this.list.focusSelected();
    });
    $('confirm-delete').addEventListener('click', () => this.confirmDelete());
    $('cancel-delete').addEventListener('click', () => $('confirm-dialog').close());
    for (const dialog of document.querySelectorAll('dialog')) {
      // What a dialog's region said is not met again, read in browse mode, in the next dialog.
      dialog.addEventListener('close', () => setText(dialog.querySelector('.dialog-live'), ''));
    }
    $('confirm-dialog').addEventListener('close', () => {
      this.pendingDelete = null;
      if (!$('room').hidden) this.list.focusSelected();
    });
    $('confirm-restore').addEventListener('click', () => this.confirmRestore());
    $('cancel-restore').addEventListener('click', () => $('restore-dialog').close());
    $('restore-dialog').addEventListener('close', () => {
      this.pendingRestore = null;
      this.restoreCheck.stop();
    });
    document.addEventListener('keydown', (e) => this.shortcut(e));
    window.addEventListener('online', () => this.live?.retryNow());
    // Changes not yet taken by the hub are lost with the page: ask first.
    window.addEventListener('beforeunload', (e) => {
      if ((this.live?.pending ?? 0) > 0) e.preventDefault();
    });
  }

  // MARK: Joining and leaving

  enter({ room, user, token }) {
    if (this.renewing && this.renewing === this.live && room === this.request.room && user === this.request.user) {
      // The same room and user after the hub ended the session for its token: the room, its unsent
      // changes and its session carry on with the new token.
      this.renewing = null;
      this.request = { room, user, token };
      this.tokenKept = false;
      const live = this.live;
      this.restoreCheck = new RestoreCheck(readRoomAt({ room, token, node: () => live.url }));
      live.renew(token);
      return;
    }
    this.renewing = null;
    this.live?.stop();
    this.forgetTeammateWords();
    this.selectedTag = null;
    this.nameSteps = [];
    this.lastIndex = 0;
    this.highlights = new Highlights();
    this.notices = new NoticeBoard();
    this.noticeRendered = 0;
    this.renderNotices();
    this.knownNames.clear();
    this.namings.clear();
    this.unnamed = null;
    this.timeline = new Timeline();
    this.personHistory = new PersonHistory();
    this.history.restart();
    this.attribution = new Attribution();
    this.lastKinds.clear();
    this.request = { room, user, token };
    this.tokenKept = false;
    this.lastDown = false;
    this.lastRefused = false;
    this.lastCatchingUp = false;
    const live = new LiveRoom({ url: roomURL(location, room), user, token, probe: hubRunning });
    this.live = live;
    this.restoreCheck = new RestoreCheck(readRoomAt({ room, token: live.token, node: () => live.url }));
    this.roomName = room;
    setText($('room-name'), room);
    setText($('me-name'), user);
    live.onUpdate = (notices) => { if (this.live === live && this.renewing !== live) this.update(notices); };
    live.start();
    this.tick();
  }

  leave() {
    this.live?.stop();
    this.forgetTeammateWords();
    this.live = null;
    this.renewing = null;
    $('people-filter').value = '';
    $('room').hidden = true;
    this.closeQuestions();
    this.join.show();
  }

  /**
   * Closes the delete or restore question if one is open: the room is gone from view (left, deleted by
   * an admin, its token refused), and a modal dialog left open over the join screen took every click
   * and kept the focus from it (a black-box pass: only Esc got the user out). Before the join screen
   * takes the focus, so the dialog's close gives it back to nothing of the room's.
   */
  closeQuestions() {
    for (const id of ['confirm-dialog', 'restore-dialog']) if ($(id).open) $(id).close();
  }

  // MARK: Actions

  /** Whether this user may change the room (a viewer may not: the page offers nothing that edits). */
  get editable() { return this.live?.role !== 'viewer'; }

  /** The user acts: the notice of their previous action goes (it stays in the log). */
  acting() {
    if (!this.live) return false;
    this.notices.actionTaken();
    this.renderNotices();
    if (!this.editable) {
      this.notice(errorText({ code: 'forbidden' }));
      return false;
    }
    return true;
  }

  edit(diffs, options) {
    if (!this.acting()) return;
    try {
      this.live.edit(diffs, options);
    } catch {
      this.notice(errorText({ code: 'invalid-op' }));
      this.render();
    }
  }

  select(tag, focus) {
    this.selectedTag = tag;
    this.render();
    if (focus) this.list.focusSelected();
  }

  addPerson() {
    if (!this.live || !this.editable) return;
    const tag = this.live.allocateTag();
    if (tag == null) {
      this.notice("A new person can't be added until the hub can be reached again.");
      return;
    }
    const view = this.live.sync.view;
    const index = view.indexOf(this.selectedTag);
    const person = { tag, name: 'New person', hairColor: 'brown', hairLength: 'short', eyeColor: 'brown',
      glasses: false, facialHair: [], likes: [], dislikes: [] };
    this.selectedTag = tag;
    this.edit([insert(person, index >= 0 ? index + 1 : view.count)], { label: actionLabels.add });
    if (this.live.sync.view.contains(tag)) this.editor.focusName();
  }

  movePerson(tag, to) {
    this.selectedTag = tag;
    this.edit([move(tag, to)], { label: actionLabels.move, coalesce: `move:${tag}` });
  }

  askDelete(tag) {
    const person = this.live?.sync.view.get(tag);
    if (!person || !this.acting()) return;  // a viewer is told they can only view the room
    this.pendingDelete = tag;
    this.renderDeleteQuestion();
    $('confirm-dialog').showModal();
  }

  /**
   * The delete question as the room is now: a teammate may rename the person while it is open, or
   * delete them (then it says so, offers no Delete, and Close has the focus if Delete had it; before,
   * it went on asking, and Delete did nothing and said nothing), in the dialog's live region.
   */
  renderDeleteQuestion() {
    const tag = this.pendingDelete;
    if (tag == null || !this.live) return;
    const person = this.live.sync.view.get(tag);
    const hadFocus = document.activeElement === $('confirm-delete');
    if (person) {
      setText($('confirm-text'), `Delete ${person.name}? You can undo it.`);
    } else if (!$('confirm-delete').hidden) {  // said once, with who did it (known in this render only)
      const name = this.knownNames.get(tag) ?? 'This person';
      const by = this.removedBy.get(tag);
      const who = by == null ? null : this.removerWords(by, { elsewhere: true });
      const words = who ? `${who} deleted ${name} meanwhile: there is nothing to delete.`
        : `${name} was deleted meanwhile: there is nothing to delete.`;
      setText($('confirm-text'), words);
      this.say('announcer', words);  // in the dialog's region, with the teammate's change it explains
    }
    $('confirm-delete').hidden = !person;
    setText($('cancel-delete'), person ? 'Keep' : 'Close');
    if (hadFocus && !person) $('cancel-delete').focus();
  }

  confirmDelete() {
    const tag = this.pendingDelete;
    $('confirm-dialog').close();
    if (tag != null && this.live?.sync.view.contains(tag)) {
      this.edit([remove(tag)], { label: actionLabels.delete });
    }
    this.list.focusSelected();
  }

  /** Undo (of this user's newest change, or, with `scope`, of their newest change to that person). */
  undo(scope) {
    if (!this.acting()) return;
    if (scope == null && !undoOffer(this.live.sync).undo.can) this.notice('Nothing of yours to undo.');
    else this.live.undo(scope);
  }

  /** "Undo this" on a row of the timeline: a selective undo of that entry of this user's (HISTORY §2). */
  undoEntry(id) {
    if (!this.acting()) return;
    this.timeline.undoSent(id);
    this.personHistory.undoSent(id);
    this.live.undoEntry(id);
  }

  /**
   * "Restore to here": asks first, saying how many changes it takes back; or, once the room as it was
   * then is read and equals the room now, says so and offers no restore (it would change nothing).
   */
  askRestore(entry) {
    if (!this.live || !this.editable) return;
    this.pendingRestore = entry;
    this.restoreCheck.start(entry.rev, () => this.renderRestoreQuestion());
    this.renderRestoreQuestion();
    $('restore-dialog').showModal();
  }

  /**
   * The question, with the count as it is now (revisions that come while it is open are counted).
   * While the hub is unreachable no restore is offered: the hub works a restore out when it gets
   * there, so one queued now would take back teammates' changes sent meanwhile, uncounted.
   */
  renderRestoreQuestion() {
    const entry = this.pendingRestore;
    if (!entry || !this.live) return;
    const now = this.live.hubNow();
    const offline = this.live.link !== 'online';
    const already = !offline && this.restoreCheck.verdict(entry.rev, this.live.sync.view) === 'same';
    const closed = offline && this.live.closedBy != null;
    const refused = offline && !closed && this.live.refused;
    const q = offline ? { count: 0, text: restoreOfflineText(entry, now, { closed, refused }) }
      : already ? { count: 0, text: alreadyRestoredText(entry, now) }
        : restoreQuestion(entry, this.live.sync.revision, now);
    setText($('restore-title'), closed ? 'The hub closed the connection' : refused ? "The hub won't let this page connect"
      : offline ? 'The hub is unreachable'
      : already ? 'Nothing to restore' : 'Restore an earlier version?');
    setText($('restore-text'), q.text);
    setAttr($('restore-dialog'), 'data-count', q.count);
    setAttr($('restore-dialog'), 'data-rev', entry.rev);
    setAttr($('restore-dialog'), 'data-already', already ? 'true' : null);
    setAttr($('restore-dialog'), 'data-offline', offline ? 'true' : null);
    const hadFocus = document.activeElement === $('confirm-restore');
    $('confirm-restore').hidden = already || offline;
    setText($('cancel-restore'), already || offline ? 'Close' : 'Keep as it is');
    // The question changed under the user (a teammate's change, the connection): focus stays in the
    // dialog, and the new words are read out (#restore-text is a live region).
    if (hadFocus && $('confirm-restore').hidden) $('cancel-restore').focus();
  }

  confirmRestore() {
    const entry = this.pendingRestore;
    const changes = entry != null && this.live != null && this.live.link === 'online'
      && this.restoreCheck.verdict(entry.rev, this.live.sync.view) !== 'same';
    $('restore-dialog').close();
    if (changes && this.acting()) {
      this.live.restore(entry.rev);
      // Read further down, the list would hold the restore's row back: the user goes to see it.
      if (this.history.reading) this.history.toTop();
    }
  }

  /** Redo; after an edit of this user's still queued there is none (it will clear the redo stack). */
  redo(scope) {
    if (!this.acting()) return;
    if (scope == null && !undoOffer(this.live.sync).redo.can) this.notice('Nothing of yours to redo.');
    else this.live.redo(scope);
  }

  /**
   * Ctrl/Cmd+Z, Shift+Ctrl/Cmd+Z, Ctrl+Y. A field of typed text (the name, Find a person) keeps the
   * browser's own text undo: there the keys undid a change to the room instead of the typing, unsaid.
   * The place field's number is the room's (its undo keys undo the move, and it shows where that took
   * the person).
   */
  shortcut(e) {
    if (!this.live || $('room').hidden || $('confirm-dialog').open || $('restore-dialog').open) return;
    if (!(e.ctrlKey || e.metaKey) || e.altKey) return;
    if (isTypedText(e.target)) return;
    const key = e.key.toLowerCase();
    if (key === 'z') {
      e.preventDefault();
      if (e.shiftKey) this.redo(); else this.undo();
    } else if (key === 'y' && !e.shiftKey) {
      e.preventDefault();
      this.redo();
    }
  }

  tellPresence() {
    this.live?.view(this.selectedTag, this.focusedField);
  }

  // MARK: Messages

  /** Shows a notice about this user's last action (until their next one, or its ×) and logs it. */
  notice(text) {
    this.notices.show(text);
    this.renderNotices();
    // #notice is behind an open dialog, where it is not read.
    if (text && document.querySelector('dialog[open]')) this.say('notice', text);
  }

  /**
   * Who removed a person ({author, restore} from `removedBy`): "bob", "bob's restore"; this user in
   * another tab "You (elsewhere)" / "Your restore (elsewhere)" with `elsewhere`, else as any author.
   */
  removerWords({ author, restore }, { elsewhere = false } = {}) {
    if (elsewhere && author === this.live?.sync.user) return restore ? 'Your restore (elsewhere)' : 'You (elsewhere)';
    return restore ? `${author}'s restore` : author;
  }

  /**
   * The notice just shown names people gone by tag (`tags`: someone deleted before this page came,
   * never shown nor named by the timeline's rows read): the hub is asked for the newest rows that
   * named each (their deletion says the name they had), and the notice, while still shown as it was,
   * is said again by `text()` with the names ("Zed was deleted by bob", not "tag 8104 …").
   */
  nameGone(tags, text) {
    const current = this.notices.current;
    if (!current || !this.live || tags.length === 0) return;
    this.unnamed = { id: current.id, said: current.text, text };
    const asked = new Set(this.namings.values());
    for (const tag of [...new Set(tags)].slice(0, NAMING_MOST)) {
      if (asked.has(tag)) continue;  // its answer names it for this notice too
      const seq = this.live.log({ tag, limit: NAMING_ROWS });
      if (seq != null) this.namings.set(seq, tag);
    }
  }

  /**
   * The answer to a `nameGone` question: the names it gives are kept, and the newest notice that
   * waited for names is said again, if it is still shown as it was said (one added to since, by a
   * deletion of the selected person, stays as it is).
   */
  named(seq, entries) {
    this.namings.delete(seq);
    const view = this.live.sync.view;
    this.knownNames.read(entries, (tag) => view.get(tag) != null);
    const waiting = this.unnamed;
    const current = this.notices.current;
    if (!waiting || current?.id !== waiting.id || current.text !== waiting.said) return;
    const fresh = waiting.text();
    if (fresh === waiting.said) return;
    waiting.said = fresh;
    this.amendNotice(fresh);
  }

  /** The notice shown now, said again with more (`text`): one notice, logged once. */
  amendNotice(text) {
    this.notices.amend(text);
    this.renderNotices();
    if (text && document.querySelector('dialog[open]')) this.say('notice', text);
  }

  renderNotices() {
    const text = this.notices.text;
    setText($('notice'), text);
    $('notice-dismiss').hidden = !text;
    const log = this.notices.log;
    const key = log.map((n) => `${n.id}.${n.amended ?? 0}`).join(',');  // an amended notice is drawn again
    if (key === this.logKey) return;
    this.logKey = key;
    $('notice-log').replaceChildren(...log.map((n) => {
      const li = document.createElement('li');
      li.textContent = n.text;
      li.title = `at ${new Date(n.at).toLocaleTimeString()}`;
      return li;
    }));
    $('notice-log-box').hidden = log.length === 0;
  }

  /**
   * Says `text` to screen readers through the live region `region` (#announcer, #teammates). While a
   * dialog is open the page behind it is inert, and an inert live region is not read: the dialog's
   * own region (`.dialog-live`) says it instead.
   */
  say(region, text) {
    const dialog = document.querySelector('dialog[open]');
    const el = dialog?.querySelector('.dialog-live') ?? $(region);
    // What is said to one region in one task is said together (a dialog's one region gets what three
    // would: the last words alone were read), once the task is done.
    if (!this.saying.has(el)) {
      this.saying.set(el, []);
      queueMicrotask(() => {
        const words = this.saying.get(el).join(' ');
        this.saying.delete(el);
        // The same words again (a second undo of the same kind) are a change too, or nothing is read.
        el.textContent = el.textContent === words ? `${words}\u00a0` : words;
      });
    }
    this.saying.get(el).push(text);
  }

  /** A teammate's change in words, shown; said too unless `quiet` (something else will say it). */
  activity(text, { quiet = false } = {}) {
    setText($('activity'), text);
    setAttr($('activity'), 'title', text || null);
    clearTimeout(this.timers.activity);
    this.timers.activity = setTimeout(() => setText($('activity'), ''), ACTIVITY_MS);
    if (!quiet) this.announceActivity(text);
  }

  /**
   * Teammates' changes, said to screen readers (#teammates, a polite live region) without flooding
   * them: the first at once, then at most one every ANNOUNCE_MS, naming how many came meanwhile.
   */
  announceActivity(text) {
    if (!text) return;
    if (this.timers.announce) {
      this.unannounced = { text, count: (this.unannounced?.count ?? 0) + 1 };
      return;
    }
    this.say('teammates', text);
    this.timers.announce = setTimeout(() => {
      this.timers.announce = null;
      const left = this.unannounced;
      this.unannounced = null;
      if (left) this.announceActivity(left.count > 1 ? `${left.count} changes by teammates; the last: ${left.text}` : left.text);
    }, ANNOUNCE_MS);
  }

  /**
   * A teammate typing a name sends a revision at each pause in their typing: said as they came (at
   * most one every ANNOUNCE_MS), a run read as several renames ("Joan is now called Joa", then "3
   * changes by teammates; the last: …"). A step of such a run is held, and the run said once it pauses
   * (TYPING_PAUSE_MS) or another change comes: from the name before it to the name after. Returns
   * whether `notice` was such a step.
   */
  holdTyping(notice) {
    const tags = new Set(notice.diffs.map(diffTag));
    if (notice.kind !== 'edit' || tags.size !== 1 || !notice.diffs.every((d) => d.op === 'text')) return false;
    const [tag] = tags;
    if (this.typingRun && (this.typingRun.author !== notice.author || this.typingRun.tag !== tag)) this.sayTyping();
    const from = this.typingRun?.from ?? this.namesBefore(notice)(tag);
    // The name this step left (the view has it applied): what is said, whatever comes after it.
    const to = this.live.sync.view.get(tag)?.name ?? null;
    clearTimeout(this.typingRun?.timer);
    this.typingRun = { author: notice.author, tag, from, to, notice, timer: setTimeout(() => this.sayTyping(), TYPING_PAUSE_MS) };
    return true;
  }

  /** Says the teammate's typing that holdTyping holds, if any. */
  sayTyping() {
    const run = this.typingRun;
    if (!run || !this.live) return;
    this.dropTyping();
    const only = (name) => (tag) => (tag === run.tag ? name : null);
    this.announceActivity(remoteText(run.notice, only(run.from), only(run.to), this.live.sync.user));
  }

  /** Forgets the teammate's typing that holdTyping holds, unsaid. */
  dropTyping() {
    clearTimeout(this.typingRun?.timer);
    this.typingRun = null;
  }

  /** Forgets what is waiting to be said of teammates' changes: the room it was about is gone from view. */
  forgetTeammateWords() {
    this.dropTyping();
    clearTimeout(this.timers.announce);
    this.timers.announce = null;
    this.unannounced = null;
  }

  /** What the room said, then a render in the next frame (one for all the messages of a frame). */
  update(notices) {
    // A notice about this user's own request is said already (#notice): no second sentence for it.
    const told = notices.some((n) => ['skipped', 'nothing', 'undoDropped', 'error'].includes(n.type));
    const after = (tag) => this.live.sync.view.get(tag)?.name ?? null;  // a person's name after these
    for (const n of notices) {
      switch (n.type) {
        case 'remote': {
          this.highlights.add(n.diffs, n.author);
          for (const d of n.diffs) {
            if (d.op === 'remove') this.removedBy.set(d.tag, { author: n.author, restore: n.kind === 'restore' });
          }
          // The person the open delete question asks about, deleted: the question says so (not twice).
          const answersQuestion = $('confirm-dialog').open
            && n.diffs.some((d) => d.op === 'remove' && d.tag === this.pendingDelete);
          // Shown at once; a teammate's typing is said when it pauses, anything else now (after it).
          // The open delete question says its person was deleted: typing in that name goes unsaid.
          if (answersQuestion && this.typingRun?.tag === this.pendingDelete) this.dropTyping();
          const typing = !answersQuestion && this.holdTyping(n);
          if (!typing) this.sayTyping();
          this.activity(remoteText(n, this.namesBefore(n), after, this.live.sync.user), { quiet: answersQuestion || typing });
          for (const d of n.diffs) {
            if (d.tag !== this.selectedTag) continue;
            if (d.op === 'text') this.nameSteps?.push(d.edits);
            if (d.op === 'set' && d.field === 'name') this.nameSteps = null;
          }
          break;
        }
        case 'mine':
          // This user wrote these values last: no teammate's highlight stays on them.
          this.highlights.clear(n.diffs);
          // An undo, redo or restore changes what the user is not looking at: screen readers hear what
          // it did ("You undid a change: Joan's hair color is now black"), as a teammate's change is
          // said. An edit is not: its control says its new value itself.
          if (n.kind !== 'edit' && !told) {
            this.say('announcer', remoteText({ ...n, author: 'You' }, this.namesBefore(n), after));
          }
          break;
        case 'skipped': {
          const nameOf = this.namesBefore(n);  // reads the names known when called
          const text = () => reportsText(n.reports, nameOf,
            { kind: n.kind, changed: n.changed, label: n.label, ...this.reportOptions() });
          this.notice(text());
          this.nameGone(n.reports.map((r) => r.tag).filter((tag) => nameOf(tag) == null), text);
          break;
        }
        case 'reset':
          this.notice(resetText(n.kept, n.notSent, n.lost, n.perhapsMore));
          break;
        case 'undoDropped':
          this.notice(droppedUndoText(n.label, n.reports, this.namesBefore(n), this.reportOptions()));
          break;
        case 'nothing':
          if (n.kind === 'restore') this.notice('Nothing to restore: the room is already as it was then.');
          else if (n.entry != null) this.notice('Nothing was undone: that change of yours had nothing left to take back.');
          else this.notice(n.kind === 'undo' ? 'Nothing of yours to undo here.' : 'Nothing of yours to redo here.');
          break;
        case 'error':
          if (n.code === 'no-entry') {
            this.timeline.undoRefused();
            this.personHistory.undoRefused();
          }
          if (n.code !== 'stale-base') this.notice(errorText(n));
          break;
        case 'welcomed':
          // What was read before may be out of date (and answers to it will not come): read again.
          this.namings.clear();
          this.timeline.reset();
          this.personHistory.reset();
          this.attribution.reset();
          break;
        case 'revision':
          for (const d of n.ops) this.lastKinds.set(`${n.author}\n${diffTag(d)}`, n.kind);
          this.timeline.revision(entryOf(n, n.mine));
          this.personHistory.revision(entryOf(n, n.mine));
          if (n.mine) {
            this.timeline.stacksChanged();
            this.personHistory.stacksChanged();
          }
          this.attribution.revision(n);
          break;
        case 'history':
          this.timeline.stacksChanged();
          this.personHistory.stacksChanged();
          break;
        case 'entryUndone':
          this.timeline.entryGone(n.entry);
          this.personHistory.entryGone(n.entry);
          break;
        case 'log':
          if (this.namings.has(n.seq)) this.named(n.seq, n.page.entries);
          else if (!this.timeline.answered(n.seq, n.page)) this.personHistory.answered(n.seq, n.page);
          break;
        case 'blame': this.attribution.answered(n.seq, n.blame); break;
        case 'readFailed':
          if (this.namings.delete(n.seq)) break;
          if (!this.timeline.failed(n.seq) && !this.personHistory.failed(n.seq)) this.attribution.failed(n.seq);
          break;
        case 'fatal': {
          const { room, user, token } = this.request;
          this.cancelRender();
          this.forgetTeammateWords();
          $('room').hidden = true;
          this.closeQuestions();
          if (n.code === 'unauthorized') this.tokens.forget(user, room, token);
          if (n.code === 'unauthorized' && this.live.everWelcomed) {
            // The session ended for its token (it expired): the room waits, with what it has not
            // sent, for a new token (enter), and is drawn again once it has one.
            this.renewing = this.live;
            this.join.refused(refusalText(n, { kept: this.live.pending }), { askForToken: true });
            return;
          }
          this.live = null;
          this.join.refused(refusalText(n), { askForToken: n.code === 'unauthorized' });
          return;
        }
        default: break;
      }
    }
    this.scheduleRender();
  }

  /**
   * A render before the next frame is painted, once however many messages come before it: in a big
   * room each render costs milliseconds, and a burst of teammates' revisions drew the page once per
   * message. A hidden page (no frames) renders from a task instead. The user's own edits, undos and
   * redos come back through `update` and are drawn in the same frame; a render called directly
   * (selecting someone, the filter, a refused edit) takes the scheduled one's place.
   */
  scheduleRender() {
    if (this.frame) return;
    const run = () => { this.frame = null; this.render(); };
    this.frame = document.hidden ? { task: setTimeout(run, 0) } : { animation: requestAnimationFrame(run) };
  }

  cancelRender() {
    if (!this.frame) return;
    if (this.frame.task != null) clearTimeout(this.frame.task);
    else cancelAnimationFrame(this.frame.animation);
    this.frame = null;
  }

  /** Names of the people as a notice's `people` (the view before it) had them, else as last seen. */
  namesBefore(notice) {
    return (tag) => notice.people.get(tag)?.name ?? this.knownNames.get(tag);
  }

  /** Who "you" is in a report, and whether its `by` wrote that person last with a restore ("bob's restore"). */
  reportOptions() {
    return { me: this.live.sync.user, byRestore: (r) => this.lastKinds.get(`${r.by}\n${r.tag}`) === 'restore' };
  }

  // MARK: Rendering

  render() {
    this.cancelRender();
    const nameSteps = this.nameSteps;
    this.nameSteps = [];
    const live = this.live;
    // While the hub's session waits for a new token the room stays hidden behind the question.
    if (!live || this.renewing === live) return;
    if (live.everWelcomed && !this.tokenKept) {
      this.tokens.keep(this.request.user, this.request.room, this.request.token);
      this.tokenKept = true;
    }
    const focused = document.activeElement;
    let focusList = false;
    if (live.everWelcomed && $('room').hidden) {
      this.join.hide();
      $('room').hidden = false;
      document.title = `${this.roomName} — PeopleKeeper`;
      focusList = true;  // once the rows are drawn
    }
    const view = live.sync.view;
    if (this.selectedTag == null || !view.contains(this.selectedTag)) {
      // The selected person is gone: stay at the same place in the list.
      const gone = this.selectedTag;
      this.selectedTag = view.count ? view.people[Math.min(this.lastIndex, view.count - 1)].tag : null;
      // Removed while the user was on them (typing in the editor, on their row): what they type next
      // must not land on the next person, so focus goes to the list, and the page says why.
      if (gone != null && ($('detail').contains(focused) || $('people').contains(focused))) {
        focusList = true;
        const by = this.removedBy.get(gone);
        if (by != null) {
          const next = this.selectedTag != null ? view.get(this.selectedTag).name : null;
          const name = this.knownNames.get(gone) ?? 'the person you were on';
          const selected = next != null ? ` ${next} is selected now.` : '';
          // A notice of this user's own request that came with the removal (their change to that
          // person, skipped: the teammate's restore or delete came first) is not replaced, it is
          // added to: it was said only under Recent notices (a black-box pass, session 40).
          const fresh = this.notices.current != null && this.notices.current.id > this.noticeRendered
            ? this.notices.current.text : null;
          const removal = `${this.removerWords(by)} deleted ${name}.`;
          if (fresh == null) this.notice(removal + selected);
          else this.amendNotice(fresh + (names(fresh, name) ? '' : ` ${removal}`) + selected);
        }
      }
    }
    if ($('confirm-dialog').open) this.renderDeleteQuestion();
    this.removedBy.clear();
    this.noticeRendered = this.notices.lastId;
    if (this.selectedTag != null) this.lastIndex = view.indexOf(this.selectedTag);
    this.knownNames.saw(view.people, live.sync.revision);

    const me = live.sync.user;
    const viewing = new Map();  // tag → the other users looking at it, each once
    for (const e of live.sync.presence) {
      if (e.viewing == null || e.user === me) continue;
      if (!viewing.has(e.viewing)) viewing.set(e.viewing, []);
      if (!viewing.get(e.viewing).includes(e.user)) viewing.get(e.viewing).push(e.user);
    }
    const viewersOf = (tag) => viewing.get(tag) ?? [];
    const editable = this.editable;
    const filter = $('people-filter').value;
    this.list.render(view.people, this.selectedTag, viewersOf, (tag) => this.highlights.mark(`row:${tag}`), editable,
      filter);
    setText($('people-found'), !filter.trim() ? ''
      : this.list.shown === 0 ? `Nobody's name has “${filter.trim()}”`
        : `${this.list.shown} of ${view.count}`);
    const person = this.selectedTag != null ? view.get(this.selectedTag) : null;
    this.editor.render(person, (key) => this.highlights.mark(`${person.tag}:${key}`), nameSteps?.length ? nameSteps : null, editable,
      person ? { index: view.indexOf(person.tag), count: view.count } : null);
    this.attribution.select(person ? person.tag : null);
    this.personHistory.show(this.onlyPerson && person ? person.tag : null);
    this.renderWriters();
    this.renderHeader();
    this.renderPresence();
    this.renderHistory();
    this.askReads();
    this.focusedField = this.editor.focusedField;
    this.tellPresence();
    // Nobody to focus (the last person was deleted, the room is empty, or Find a person leaves the
    // one selected out): the way to add someone, or Find a person (a viewer's page, or a search on);
    // not the page, where the next key would go nowhere.
    if (focusList && !this.list.focusSelected()) {
      ($('add-person').hidden || $('people-filter').value.trim() ? $('people-filter') : $('add-person')).focus();
    }
    else this.keepFocus(focused);

    clearTimeout(this.timers.highlight);
    const next = this.highlights.nextExpiry();
    if (next != null) this.timers.highlight = setTimeout(() => this.render(), next + 20);
  }

  /**
   * A control that had focus before a render and lost it in the render (disabled, hidden or removed:
   * Undo at the end of the stack, "move up" at the top, "Undo this" once used) hands it to its
   * neighbour, so the keyboard user is not sent back to the top of the page.
   */
  keepFocus(was) {
    const now = document.activeElement;
    if (!was || was === document.body) return;
    if (now && now !== document.body && now !== was) return;  // the focus is elsewhere on purpose
    // (A button disabled while focused keeps `activeElement` until the browser's next focus fix-up.)
    if (canFocus(was)) {
      if (now !== was) was.focus({ preventScroll: true });
      return;
    }
    const candidates = was.id === 'undo' ? ['redo'] : was.id === 'redo' ? ['undo'] : [];
    for (const id of candidates) if (canFocus($(id))) { $(id).focus(); return; }
    const entry = was.closest?.('#history li');
    if (entry && canFocus(entry.querySelector('.restore-here'))) { entry.querySelector('.restore-here').focus(); return; }
    if ($('history').contains(was) && canFocus($('history-list'))) { $('history-list').focus(); return; }
    this.list.focusSelected();
  }

  renderHeader() {
    const live = this.live;
    // The restore question changes with the connection (none is offered while it is down).
    if ($('restore-dialog').open) this.renderRestoreQuestion();
    const status = connectionStatus(live.connection, Date.now());
    const connection = $('connection');
    setAttr(connection, 'data-state', status.state);
    setAttr($('room'), 'data-link', status.state);
    setText(connection, status.words);
    setAttr(connection, 'title', status.title);
    setText($('connection-detail'), status.detail);
    // Said once to screen readers when it starts being true, and again when it stops.
    if (status.down !== this.lastDown && live.everWelcomed) {
      this.say('announcer', status.down
        ? 'Connection lost. Your changes are kept and sent when the hub is back.' : 'Back online.');
    } else if (this.lastCatchingUp && !live.catchingUp && status.state === 'online') {
      this.say('announcer', 'The changes you made while offline were sent.');
    }
    // A hub found to refuse the page while it is down is said once too (#connection-detail is not live).
    if (status.down && live.refused && !this.lastRefused && live.everWelcomed && !live.closedBy) {
      this.say('announcer', awayText(null, true));
    }
    this.lastRefused = status.down && live.refused;
    this.lastDown = status.down;
    this.lastCatchingUp = live.catchingUp;
    if (!live.everWelcomed) {
      // A live region: said again at every change, so no countdown in it (it changed every second).
      const away = live.refused && !live.closedBy ? awayText(null, true) : "Can't reach the hub.";
      this.join.status(status.down ? `${away} Retrying…` : `Connecting to room ${this.roomName}…`);
    }

    const role = live.role;
    const words = roleWords(role);
    setText($('role'), words.short);
    setAttr($('role'), 'data-role', role);
    setAttr($('role'), 'title', words.long);
    const editable = role !== 'viewer';
    $('add-person').hidden = !editable;
    $('undo').hidden = !editable;
    $('redo').hidden = !editable;
    setText($('people-keys'), editable
      ? '↑ ↓ to choose, ← → to its buttons, Alt+↑ ↓ to move, Delete to remove. Drag to reorder.'
      : '↑ ↓ to choose. You can only view this room.');

    const pending = live.pending;
    setText($('waiting'), pending > 0 ? String(pending) : '');
    setText($('waiting-words'), pending === 1 ? 'change waiting' : 'changes waiting');
    // While the hub is out of reach, #connection-detail says how many are kept.
    $('waiting-box').hidden = pending === 0 || status.down;

    // What the next press takes back, queued requests included (core/undo-offer.js).
    const offer = undoOffer(live.sync);
    const undo = $('undo');
    const redo = $('redo');
    setText(undo, offer.undo.can && offer.undo.label ? `Undo ${offer.undo.label}` : 'Undo');
    setText(redo, offer.redo.can && offer.redo.label ? `Redo ${offer.redo.label}` : 'Redo');
    undo.disabled = !editable || !offer.undo.can;
    redo.disabled = !editable || !offer.redo.can;
  }

  /** Sends the `log` and `blame` the timeline and the writers still need (nothing while offline). */
  askReads() {
    const live = this.live;
    if (!live || live.link !== 'online') return;
    for (const history of [this.timeline, this.personHistory]) {
      const request = history.nextRequest();
      if (!request) continue;
      const seq = live.log({ before: request.before, limit: request.limit, tag: request.tag });
      if (seq != null) history.sent(seq, request);
    }
    const tag = this.attribution.nextRequest((t) => live.sync.confirmed.contains(t));
    if (tag != null) {
      const seq = live.blame(tag);
      if (seq != null) this.attribution.sent(seq);
    }
  }

  /** What the history panel lists: the selected person's changes ("Only …" pressed), or the room's. */
  shownHistory() {
    return this.onlyPerson && this.personHistory.tag != null ? this.personHistory : this.timeline;
  }

  /** The history panel, from the timeline (names as they are now), and the restore question if open. */
  renderHistory() {
    const live = this.live;
    if (!live) return;
    const t = this.shownHistory();
    // Only the room's timeline holds its rows while the user reads below the top (one person's
    // history is short and grows at the top); the panel says where its list is scrolled.
    this.timeline.hold(this.history.reading && t === this.timeline);
    const view = live.sync.view;
    const current = new Map(view.people.map((p) => [p.tag, p.name]));  // by tag: one lookup per row
    // Names of people gone: the newer of what this page saw and what the timeline's rows gave them
    // (the rows are read once a render, and only if someone gone is named).
    let read = false;
    const nameKnown = (tag) => {
      if (!read) {
        this.knownNames.read(t.entries, (t2) => current.has(t2));
        read = true;
      }
      return this.knownNames.get(tag) ?? null;
    };
    const steps = stepsOf(t.rows);
    this.history.render({
      entries: runRows(t.rows),
      stepOf: (entry) => (entry.entry != null ? steps.get(entry.entry) ?? null : null),
      loaded: t.loaded,
      more: t.more,
      loadingOlder: t.loadingOlder,
      editable: this.editable,
      undoable: (entry) => t.undoable(entry),
      touched: (entry) => touchedPeople(entry.ops, (tag) => current.get(tag) ?? null, nameKnown),
      head: live.sync.revision,
      now: live.hubNow(),
      unreachable: connectionStatus(live.connection, Date.now()).down,
      closedBy: live.closedBy,
      refused: live.refused,
      person: this.selectedTag != null ? (view.get(this.selectedTag)?.name ?? null) : null,
      only: t === this.personHistory,
      newer: t === this.timeline ? t.newer : 0,
    });
    if ($('restore-dialog').open) this.renderRestoreQuestion();
  }

  /** Beside each field of the person shown: who last changed it and when. */
  renderWriters() {
    const a = this.attribution;
    const now = this.live?.hubNow() ?? Date.now();
    const shown = this.live?.sync.view.get(this.selectedTag);
    const confirmed = this.live?.sync.confirmed.get(this.selectedTag);
    this.editor.renderWriters((key) => {
      const w = a.writer(key);
      if (!w) return null;
      // A value of this user's the hub has not confirmed yet (made offline, or on its way): the hub's
      // last writer of it is not who the page shows.
      if (shown && key !== 'created' && key !== 'position' && partOf(shown, key) !== partOf(confirmed, key)) {
        return { text: 'you · waiting', title: 'Your change, not yet confirmed by the hub', user: this.live.sync.user };
      }
      const words = writerText(w, now);
      if (key === 'position') words.moved = w.rev !== a.writer('created')?.rev;
      return words;
    });
  }

  /** One line per user: "ann — Bob · Hair color" (what each of their tabs is looking at, in words). */
  renderPresence() {
    const live = this.live;
    const byUser = new Map();
    for (const e of live.sync.presence) {
      if (!byUser.has(e.user)) byUser.set(e.user, []);
      if (e.viewing == null) continue;
      const name = live.sync.view.get(e.viewing)?.name ?? `tag ${e.viewing}`;
      const what = e.field ? `${name} · ${presenceWords(e.field)}` : name;
      if (!byUser.get(e.user).includes(what)) byUser.get(e.user).push(what);
    }
    const key = JSON.stringify([...byUser]);
    if (key === this.presenceKey) return;
    this.presenceKey = key;
    const ul = $('presence');
    ul.replaceChildren(...[...byUser].map(([user, views]) => {
      const li = document.createElement('li');
      li.dataset.user = user;
      if (user === live.sync.user) li.classList.add('me');
      li.textContent = views.length ? `${user} — ${views.join(', ')}` : user;
      return li;
    }));
  }

  /** While offline, the retry countdown in the header ticks; relative times are redrawn now and then. */
  tick() {
    clearInterval(this.timers.tick);
    this.timers.tick = setInterval(() => {
      if (this.live && this.live.link !== 'online') this.renderHeader();
    }, 500);
    clearInterval(this.timers.clock);
    this.timers.clock = setInterval(() => {
      if (!this.live || $('room').hidden) return;
      this.renderHistory();
      this.renderWriters();
    }, CLOCK_MS);
  }
}

const app = new App();
app.join.start();

/** Whether `el` is a field of typed text, whose Ctrl+Z is the browser's text undo. */
function isTypedText(el) {
  if (el instanceof HTMLTextAreaElement || el?.isContentEditable) return true;
  return el instanceof HTMLInputElement && ['text', 'search', 'password', 'email', 'url', 'tel'].includes(el.type);
}

/** Whether `text` names `name` as a word of its own ("Joan", not inside "Joanna"). */
function names(text, name) {
  const at = (i) => i < 0 || i >= text.length || !/[\p{L}\p{N}]/u.test(text[i]);
  for (let i = text.indexOf(name); i >= 0; i = text.indexOf(name, i + 1)) {
    if (at(i - 1) && at(i + name.length)) return true;
  }
  return false;
}

/** A revision notice as a timeline entry (the shape of a `log` entry, without `entry`: it is read). */
function entryOf({ rev, time, author, kind, label, ops }, mine = false) {
  const e = { rev };
  if (time != null) e.time = time;
  e.author = author;
  e.kind = kind;
  if (label != null) e.label = label;
  e.ops = ops;
  if (mine) e.entryUnknown = true;  // this user's: its undo mark is read with the rows again (history-runs.js)
  return e;
}
