// Whether a restore would change anything: the room as it was right after a revision, read from the
// hub's HTTP API (`GET /v1/rooms/ROOM?at=REV`, HTTP.md), against the room as the page shows it now.
// A restore to a state the room already has changes nothing (HISTORY §3: `ops: []`, no revision, no
// undo entry), so the restore question says so instead of offering it.
//
// One question is open at a time: `start(rev)` reads that revision's state (a past state never
// changes, so it is read once per question) and forgets any earlier question's read, whose late
// answer is dropped. Until the state is read, or when it cannot be (the hub out of reach, a token
// it refuses), the verdict is 'unknown' and the page asks as it always did. `read` is a parameter
// (readRoomAt makes one over `fetch`), so node tests it with a fake (Tests/js/page-history.test.mjs).

import { PeopleModel } from './core/model.js';
import { nodeAddress } from './live-room.js';

/**
 * A reader of the room's past states over HTTP: `(rev) → Promise<PeopleModel>` from
 * `GET /v1/rooms/ROOM?at=REV`, with the access token as a bearer token when there is one. Rejects on
 * any answer but a 200 with that revision's people.
 *
 * `node()` is the room's WebSocket address on the hub node the page is connected to (LiveRoom's `url`,
 * which follows the cluster's redirects): the read goes to that node, whose answer the page may read
 * when the node lists the page's origin (`auth.allowedOrigins`). Another node would send it there
 * with a 307, which a browser follows without the token. Without `node`, the hub that served the page.
 */
export function readRoomAt({ room, token, node, fetch = (...args) => globalThis.fetch(...args) }) {
  return async (rev) => {
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    const answer = await fetch(roomStateURL(node?.(), room, rev), { headers });
    if (!answer.ok) throw new Error(`the hub answered ${answer.status}`);
    const body = await answer.json();
    if (body?.rev !== rev || !Array.isArray(body.people)) throw new Error('not the state asked for');
    return PeopleModel.fromJSON(body.people);
  };
}

/**
 * The HTTP address of `room` as it was right after `rev`, on the node of the WebSocket address `node`
 * (`ws(s)://HOST/…/v1/rooms/ROOM` → `http(s)://HOST/…/v1/rooms/ROOM?at=REV`); a path on the page's own
 * hub when `node` is not given.
 */
export function roomStateURL(node, room, rev) {
  return `${node ? nodeAddress(node) : ''}/v1/rooms/${encodeURIComponent(room)}?at=${rev}`;
}

export class RestoreCheck {
  /** @param {(rev: number) => Promise<PeopleModel>} read */
  constructor(read) {
    this.read = read;
    /** The open question's read: {rev, past (a PeopleModel once read), failed}, or null. */
    this.current = null;
  }

  /** A question about revision `rev` was opened: reads its state; `done()` is called once it is known. */
  start(rev, done = () => {}) {
    const check = { rev, past: null, failed: false };
    this.current = check;
    this.read(rev).then((past) => { check.past = past; }, () => { check.failed = true; })
      .then(() => { if (this.current === check) done(); });
  }

  /** The question was closed: a late answer to it changes nothing. */
  stop() { this.current = null; }

  /**
   * What a restore to `rev` would do to `view` (the room as the page shows it): 'same' (it would change
   * nothing), 'differs', or 'unknown' (not read yet, not readable, or another revision's question).
   */
  verdict(rev, view) {
    const check = this.current;
    if (!check || check.rev !== rev || !check.past) return 'unknown';
    return check.past.equals(view) ? 'same' : 'differs';
  }
}
