// The join screen: room, user name (remembered in localStorage) and an access token when the room
// needs one. The room (and the user) come from the address: `/?room=team-a` fills the room;
// `&user=ann` joins at once. Joining writes `?room=…&user=…` to the address bar, never the token.
//
// The token is kept for the tab's session (token-store.js: sessionStorage), so a reload or a shared
// link opened again in the tab joins without asking. When the hub refuses to let the user in, the
// screen says why in plain words (report-text.js `refusalText`) and, for a token, puts the focus on
// the token field.

import { setAttr, setText } from './dom.js';

const ROOM = /^[A-Za-z0-9_.-]{1,64}$/;
const USER_KEY = 'peoplekeeper.user';
const MAX_USER_BYTES = 64;

const utf8Bytes = (s) => new TextEncoder().encode(s).length;

function remembered() {
  try { return localStorage.getItem(USER_KEY) ?? ''; } catch { return ''; }
}

function remember(user) {
  try { localStorage.setItem(USER_KEY, user); } catch { /* private mode: nothing kept */ }
}

/** Why `room` / `user` cannot be used, or null when both are fine. */
export function joinProblem(room, user) {
  if (!ROOM.test(room)) return 'A room name is 1 to 64 letters, digits, “_”, “.” or “-”.';
  const bytes = utf8Bytes(user);
  if (bytes === 0) return 'Say who you are: your name is how teammates see your changes.';
  if (bytes > MAX_USER_BYTES) return `Your name can be at most ${MAX_USER_BYTES} bytes long.`;
  return null;
}

export class JoinScreen {
  /**
   * @param {(request: {room, user, token}) => void} onJoin
   * @param {import('./token-store.js').TokenStore} tokens  the tokens kept for this tab
   */
  constructor(onJoin, tokens) {
    this.onJoin = onJoin;
    this.tokens = tokens;
    this.el = document.getElementById('join');
    this.form = document.getElementById('join-form');
    this.room = document.getElementById('join-room');
    this.user = document.getElementById('join-user');
    this.token = document.getElementById('join-token');
    this.error = document.getElementById('join-error');
    this.statusLine = document.getElementById('join-status');
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit();
    });
  }

  /** Fills the form from the address and localStorage; joins at once when the address names both. */
  start() {
    const params = new URLSearchParams(location.search);
    const room = params.get('room') ?? '';
    const user = params.get('user');
    this.room.value = room;
    this.user.value = user ?? remembered();
    this.showKept();
    for (const field of [this.room, this.user]) field.addEventListener('input', () => this.showKept());
    if (room && user) this.submit();
    else (room ? (this.user.value ? document.getElementById('join-submit') : this.user) : this.room).focus();
  }

  submit() {
    const room = this.room.value.trim();
    const user = this.user.value.trim();
    const problem = joinProblem(room, user);
    setText(this.error, problem ?? '');
    if (problem) {
      (ROOM.test(room) ? this.user : this.room).focus();
      return;
    }
    remember(user);
    const query = new URLSearchParams({ room, user });
    history.replaceState(null, '', `${location.pathname}?${query}`);
    const token = this.token.value.trim() || this.tokens.get(user, room);
    this.token.value = '';
    setAttr(this.token, 'aria-invalid', null);
    this.showKept();
    this.onJoin({ room, user, token: token || undefined });
  }

  /** Says, in the token field, whether a token is kept for this room and user. */
  showKept() {
    const kept = this.tokens.get(this.user.value.trim(), this.room.value.trim());
    setAttr(this.token, 'placeholder', kept ? 'kept for this tab' : null);
  }

  /** The hub would not let the user in: say why (`text`), and ask for a token when that is it. */
  refused(text, { askForToken = false } = {}) {
    this.show(text);
    this.showKept();
    if (askForToken) {
      setAttr(this.token, 'aria-invalid', 'true');
      this.token.focus();
    }
  }

  /** Shows the join screen (with a reason, after a refusal); the address keeps only the room. */
  show(error = '') {
    this.el.hidden = false;
    setText(this.error, error);
    setText(this.statusLine, '');
    const room = this.room.value.trim();
    if (room) history.replaceState(null, '', `${location.pathname}?${new URLSearchParams({ room })}`);
    document.title = 'PeopleKeeper';
    this.room.focus();
  }

  hide() { this.el.hidden = true; }

  /** What the connection is doing before the first welcome. */
  status(text) { setText(this.statusLine, text); }
}
