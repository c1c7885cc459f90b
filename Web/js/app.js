// The page: joins a room, then renders it after every change and turns clicks and keys into edits.
//
// State lives in the LiveRoom (the hub's model, the optimistic view, the outbox, history, presence);
// this module keeps only what is the page's own: the selection (by tag, with its place in the list
// for when that person goes), the focused field, highlights and notices. Every render reads the
// room's view and changes the DOM in place (people-list.js, person-editor.js).
//
// Test hooks (docs/WEB.md) are kept here and in the views: `window.peoplekeeper` = {revision,
// pending, link} is read-only state for browser tests.

import { LiveRoom, roomURL } from './live-room.js';
import { JoinScreen } from './join.js';
import { PeopleList } from './people-list.js';
import { PersonEditor } from './person-editor.js';
import { Highlights } from './highlights.js';
import { reportsText, remoteText, errorText } from './report-text.js';
import { insert, remove, move } from './core/diff.js';
import { setAttr, setText } from './dom.js';

const NOTICE_MS = 6000;
const ACTIVITY_MS = 8000;
const $ = (id) => document.getElementById(id);

class App {
  constructor() {
    this.live = null;
    this.selectedTag = null;
    this.lastIndex = 0;
    this.focusedField = null;
    this.highlights = new Highlights();
    /** Names of everyone seen, to name people in reports after they are gone. */
    this.knownNames = new Map();
    this.timers = {};
    this.pendingDelete = null;
    this.lastLink = null;
    this.presenceKey = '';

    this.join = new JoinScreen((request) => this.enter(request));
    this.list = new PeopleList($('people'), {
      select: (tag, { focus }) => this.select(tag, focus),
      move: (tag, to) => this.movePerson(tag, to),
      remove: (tag) => this.askDelete(tag),
    });
    this.editor = new PersonEditor($('detail'), {
      edit: (diffs, options) => this.edit(diffs, options),
      notice: (text) => this.notice(text),
      undoHere: (tag) => this.live?.undo(tag),
      redoHere: (tag) => this.live?.redo(tag),
      fieldFocused: (field) => {
        this.focusedField = field;
        this.tellPresence();
      },
    });
    this.wire();
    const self = this;
    Object.defineProperty(window, 'peoplekeeper', {
      configurable: true,
      value: Object.freeze({
        get revision() { return self.live?.sync.revision ?? 0; },
        get pending() { return self.live?.pending ?? 0; },
        get link() { return self.live?.link ?? 'offline'; },
      }),
    });
  }

  wire() {
    $('add-person').addEventListener('click', () => this.addPerson());
    $('undo').addEventListener('click', () => this.undo());
    $('redo').addEventListener('click', () => this.redo());
    $('leave').addEventListener('click', () => this.leave());
    $('confirm-delete').addEventListener('click', () => this.confirmDelete());
    $('cancel-delete').addEventListener('click', () => $('confirm-dialog').close());
    $('confirm-dialog').addEventListener('close', () => {
      this.pendingDelete = null;
      if (!$('room').hidden) this.list.focusSelected();
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
    this.live?.stop();
    this.selectedTag = null;
    this.lastIndex = 0;
    this.highlights = new Highlights();
    this.knownNames.clear();
    const live = new LiveRoom({ url: roomURL(location, room), user, token });
    this.live = live;
    this.roomName = room;
    setText($('room-name'), room);
    setText($('me-name'), user);
    live.onUpdate = (notices) => { if (this.live === live) this.update(notices); };
    live.start();
    this.tick();
  }

  leave() {
    this.live?.stop();
    this.live = null;
    $('room').hidden = true;
    this.join.show();
  }

  // MARK: Actions

  edit(diffs, options) {
    if (!this.live) return;
    try {
      this.live.edit(diffs, options);
    } catch (error) {
      this.notice(`Not applied: ${error.reason ?? error.message}`);
      this.render();
    }
  }

  select(tag, focus) {
    this.selectedTag = tag;
    this.render();
    if (focus) this.list.focusSelected();
  }

  addPerson() {
    if (!this.live) return;
    const tag = this.live.allocateTag();
    if (tag == null) {
      this.notice('No tags left for new people until the hub is reachable again.');
      return;
    }
    const view = this.live.sync.view;
    const index = view.indexOf(this.selectedTag);
    const person = { tag, name: 'New person', hairColor: 'brown', hairLength: 'short', eyeColor: 'brown',
      glasses: false, facialHair: [], likes: [], dislikes: [] };
    this.selectedTag = tag;
    this.edit([insert(person, index >= 0 ? index + 1 : view.count)], { label: 'Add Person' });
    if (this.live.sync.view.contains(tag)) this.editor.focusName();
  }

  movePerson(tag, to) {
    this.selectedTag = tag;
    this.edit([move(tag, to)], { label: 'Move Person', coalesce: `move:${tag}` });
  }

  askDelete(tag) {
    const person = this.live?.sync.view.get(tag);
    if (!person) return;
    this.pendingDelete = tag;
    setText($('confirm-text'), `Delete ${person.name}? You can undo it.`);
    $('confirm-dialog').showModal();
  }

  confirmDelete() {
    const tag = this.pendingDelete;
    $('confirm-dialog').close();
    if (tag != null && this.live?.sync.view.contains(tag)) {
      this.edit([remove(tag)], { label: 'Remove Person' });
    }
    this.list.focusSelected();
  }

  undo() { if (this.live && undoable(this.live.sync).can) this.live.undo(); }

  redo() { if (this.live?.sync.history.canRedo) this.live.redo(); }

  /** Ctrl/Cmd+Z, Shift+Ctrl/Cmd+Z, Ctrl+Y; the name field keeps the browser's own text undo. */
  shortcut(e) {
    if (!this.live || $('room').hidden || $('confirm-dialog').open) return;
    if (!(e.ctrlKey || e.metaKey) || e.altKey) return;
    if (e.target === this.editor.name) return;
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

  notice(text) {
    setText($('notice'), text);
    clearTimeout(this.timers.notice);
    this.timers.notice = setTimeout(() => setText($('notice'), ''), NOTICE_MS);
  }

  activity(text) {
    setText($('activity'), text);
    setAttr($('activity'), 'title', text || null);
    clearTimeout(this.timers.activity);
    this.timers.activity = setTimeout(() => setText($('activity'), ''), ACTIVITY_MS);
  }

  /** What the room said since the last render, then the render. */
  update(notices) {
    let nameEdits = null;
    let nameTouched = 0;
    for (const n of notices) {
      switch (n.type) {
        case 'remote':
          this.highlights.add(n.diffs, n.author);
          this.activity(remoteText(n));
          for (const d of n.diffs) {
            if (d.tag !== this.selectedTag) continue;
            if (d.op === 'text') { nameEdits = d.edits; nameTouched += 1; }
            if (d.op === 'set' && d.field === 'name') nameTouched += 2;
          }
          break;
        case 'skipped': {
          const nameOf = (tag) => n.people.get(tag)?.name ?? this.knownNames.get(tag);
          this.notice(reportsText(n.reports, nameOf));
          break;
        }
        case 'nothing':
          this.notice(n.kind === 'undo' ? 'Nothing of yours to undo here.' : 'Nothing of yours to redo here.');
          break;
        case 'error':
          this.notice(errorText(n));
          break;
        case 'fatal':
          this.live = null;
          $('room').hidden = true;
          this.join.show(`The hub refused to let you in: ${n.message}`);
          return;
        case 'offline':
          this.activity(`The hub is unreachable (${n.why}). Your changes are kept and sent when it is back.`);
          break;
        default: break;
      }
    }
    this.render(nameTouched === 1 ? nameEdits : null);
  }

  // MARK: Rendering

  render(nameEdits = null) {
    const live = this.live;
    if (!live) return;
    if (live.everWelcomed && $('room').hidden) {
      this.join.hide();
      $('room').hidden = false;
      document.title = `${this.roomName} — PeopleKeeper`;
      this.list.focusSelected();
    }
    const view = live.sync.view;
    if (this.selectedTag == null || !view.contains(this.selectedTag)) {
      // The selected person is gone: stay at the same place in the list.
      this.selectedTag = view.count ? view.people[Math.min(this.lastIndex, view.count - 1)].tag : null;
    }
    if (this.selectedTag != null) this.lastIndex = view.indexOf(this.selectedTag);
    for (const p of view.people) this.knownNames.set(p.tag, p.name);

    const me = live.sync.user;
    const viewersOf = (tag) => [...new Set(live.sync.presence
      .filter((e) => e.viewing === tag && e.user !== me).map((e) => e.user))];
    this.list.render(view.people, this.selectedTag, viewersOf, (tag) => this.highlights.by(`row:${tag}`));
    const person = this.selectedTag != null ? view.get(this.selectedTag) : null;
    this.editor.render(person, (key) => this.highlights.by(`${person.tag}:${key}`), nameEdits);
    this.renderHeader();
    this.renderPresence();
    this.focusedField = this.editor.focusedField;
    this.tellPresence();

    clearTimeout(this.timers.highlight);
    const next = this.highlights.nextExpiry();
    if (next != null) this.timers.highlight = setTimeout(() => this.render(), next + 20);
  }

  renderHeader() {
    const live = this.live;
    const link = live.link;
    const connection = $('connection');
    setAttr(connection, 'data-state', link);
    setAttr($('room'), 'data-link', link);
    let words = link === 'online' ? 'Online' : 'Connecting…';
    if (link === 'offline') {
      const seconds = live.retryAt != null ? Math.max(0, Math.ceil((live.retryAt - Date.now()) / 1000)) : null;
      words = seconds == null ? 'Offline' : `Offline, retrying in ${seconds} s`;
    }
    setText(connection, words);
    setAttr(connection, 'title', link === 'offline' && live.why ? live.why : null);
    if (this.lastLink && link !== this.lastLink) {
      if (link === 'offline' && this.lastLink === 'online') {
        setText($('announcer'), 'Connection lost. Your changes are kept and sent when the hub is back.');
      } else if (link === 'online') {
        setText($('announcer'), 'Back online.');
      }
    }
    this.lastLink = link;
    if (!live.everWelcomed) {
      this.join.status(link === 'offline'
        ? `Cannot reach the hub (${live.why}); ${words.toLowerCase()}.`
        : `Connecting to room ${this.roomName}…`);
    }

    const pending = live.pending;
    setText($('waiting'), pending > 0 ? String(pending) : '');
    setText($('waiting-words'), pending === 1 ? 'change waiting' : 'changes waiting');
    $('waiting-box').hidden = pending === 0;

    const h = live.sync.history;
    const u = undoable(live.sync);
    const undo = $('undo');
    const redo = $('redo');
    setText(undo, u.can && u.label ? `Undo ${u.label}` : 'Undo');
    setText(redo, h.canRedo && h.redoLabel && !u.queued ? `Redo ${h.redoLabel}` : 'Redo');
    undo.disabled = !u.can;
    redo.disabled = !h.canRedo || u.queued;
  }

  /** One line per user: "ann — Bob · hairColor" (what each of their tabs is looking at). */
  renderPresence() {
    const live = this.live;
    const byUser = new Map();
    for (const e of live.sync.presence) {
      if (!byUser.has(e.user)) byUser.set(e.user, []);
      if (e.viewing == null) continue;
      const name = live.sync.view.get(e.viewing)?.name ?? `tag ${e.viewing}`;
      const what = e.field ? `${name} · ${e.field}` : name;
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

  /** While offline, the retry countdown in the header ticks. */
  tick() {
    clearInterval(this.timers.tick);
    this.timers.tick = setInterval(() => {
      if (this.live?.link === 'offline') this.renderHeader();
    }, 500);
  }
}

const app = new App();
app.join.start();

/**
 * What Undo offers: the hub's history, or, while an edit of ours is still queued (offline, or waiting
 * for its ack), that edit: an undo then waits behind it and the hub undoes it. (A queued edit also
 * clears the redo stack when it lands, so Redo is off meanwhile.)
 */
function undoable(sync) {
  const queued = sync.outbox ?? [];
  const last = queued[queued.length - 1];
  if (last && last.request.type === 'submit') {
    return { can: true, label: last.request.label ?? sync.history.undoLabel, queued: true };
  }
  return { can: sync.history.canUndo, label: sync.history.undoLabel, queued: false };
}
