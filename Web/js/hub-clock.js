// How far the hub's clock is from this one. A revision's `time` is the hub's clock; "2 min ago" is
// worked out on this one, so a computer whose clock is three minutes fast showed a change made this
// instant as "3 min ago" (and one three minutes slow, every change of the last three minutes as "just
// now"). The hub's `pong` says its clock when it answered (`time`, *this hub*): the middle of the ping's
// round trip on this clock is about that moment, so the difference is the offset, within half the round
// trip. The twin of Sources/PeopleClient/HubClock.swift.
//
// Pure: the caller says when it sent each ping and when each pong came (milliseconds, its own clock).

/** A round trip longer than this says too little about when the hub answered: its pong is not used. */
export const LONGEST_USEFUL_ROUND_TRIP = 10_000;

export class HubClock {
  constructor() {
    /** The hub's clock minus this one (ms); 0 until a pong with `time` came. */
    this.offset = 0;
    /** When each ping not yet answered on this connection was sent, oldest first (pongs come in order). */
    this.sent = [];
  }

  /** A ping went out at `local`. */
  pingSent(local) { this.sent.push(local); }

  /** A pong came at `local`, saying the hub's clock was `time` (absent: a hub that does not say). */
  pong(time, local) {
    const sentAt = this.sent.shift();
    if (sentAt === undefined || time == null) return;
    const roundTrip = local - sentAt;
    if (roundTrip < 0 || roundTrip > LONGEST_USEFUL_ROUND_TRIP) return;
    this.offset = Math.round(time - (sentAt + local) / 2);
  }

  /** The connection ended: its pings will not be answered (the offset is kept). */
  connectionLost() { this.sent = []; }

  /** The hub's clock now, for `local` this clock's now. */
  hubTime(local) { return local + this.offset; }
}
