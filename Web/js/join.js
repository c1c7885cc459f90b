// The join screen: room, user name (remembered in localStorage) and an optional token. The room
// (and the user) come from the address: `/?room=team-a` fills the room; `&user=ann` joins at once.
// Joining writes `?room=…&user=…` to the address bar, never the token.

import { setText } from './dom.js';

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
  /** @param {(request: {room, user, token}) => void} onJoin */
  constructor(onJoin) {
    this.onJoin = onJoin;
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
    this.onJoin({ room, user, token: this.token.value });
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
