// Access tokens kept for the tab's session: in sessionStorage (gone when the tab closes, never shared
// with other tabs, never in localStorage), never in the address bar.
//
// Tokens are kept per user and room, with the user's newest token as a fallback for other rooms (a
// token's `rooms` may name several). A token is kept once the hub has welcomed it, and forgotten when
// the hub refuses it, so a reload never loops on a bad token. `storage` is a parameter (the Web
// Storage interface) so node tests run it with a plain object; a storage that throws (private mode,
// blocked) keeps nothing.

const KEY = 'peoplekeeper.tokens';

export class TokenStore {
  constructor(storage = globalThis.sessionStorage) {
    this.storage = storage;
  }

  read() {
    try {
      const parsed = JSON.parse(this.storage?.getItem(KEY) ?? '{}');
      return parsed && typeof parsed === 'object' ? parsed : {};
    } catch { return {}; }
  }

  write(map) {
    try {
      if (Object.keys(map).length) this.storage?.setItem(KEY, JSON.stringify(map));
      else this.storage?.removeItem(KEY);
    } catch { /* nothing kept */ }
  }

  /** The token to try for `user` in `room`, or ''. */
  get(user, room) {
    const map = this.read();
    return map[`${user}\n${room}`] ?? map[user] ?? '';
  }

  /** `token` let `user` into `room`. */
  keep(user, room, token) {
    if (!token) return;
    const map = this.read();
    map[`${user}\n${room}`] = token;
    map[user] = token;
    this.write(map);
  }

  /** `token` was refused for `user` in `room`: not tried there again. */
  forget(user, room, token) {
    const map = this.read();
    if (map[`${user}\n${room}`] === token) delete map[`${user}\n${room}`];
    if (map[user] === token) delete map[user];
    this.write(map);
  }
}
