// What the page says about its connection, computed from the room's state and nothing else.
//
// Invariant: this is the only place connection words come from, and it is a function of the state at
// the moment it is called, so a message about the connection exists exactly as long as it is true:
// "the hub can't be reached" only while the link is down, "your changes are kept" only while some are
// queued (or the link is down), "sending your changes" only while the ones made offline are still
// going out. The page renders it on every change and every half second while the link is down; no
// timer ever clears or keeps a connection message. Pure (time is a parameter): node tests it as is.

/**
 * @param {object} s  the room's state (LiveRoom.connection):
 *   link: 'connecting' | 'online' | 'offline'; outage: the hub has been out of reach since the last
 *   welcome (a 'connecting' retry is still part of it); why: why the last connection was lost; retryAt: when the next attempt starts (ms) while offline; pending: requests not yet
 *   answered; catchingUp: some of them were made while the link was down.
 * @param {number} now  ms, on the clock of `retryAt`
 * @returns {{state: string, down: boolean, words: string, detail: string, title: string|null}}
 *   `state` is the `data-state` hook, `down` whether the hub is out of reach (retries included),
 *   `words` the short label, `detail` the sentence beside it (empty when there is nothing to say),
 *   `title` the technical reason, for a tooltip.
 */
export function connectionStatus({ link, outage = false, why = null, retryAt = null, pending = 0, catchingUp = false },
  now) {
  const changes = (n) => (n === 1 ? 'Your change is' : `Your ${n} changes are`);
  const down = link === 'offline' || (link === 'connecting' && outage);
  if (down) {
    let words = link === 'connecting' ? 'Reconnecting…' : 'Offline';
    if (link === 'offline' && retryAt != null) {
      words = `Offline, retrying in ${Math.max(0, Math.ceil((retryAt - now) / 1000))} s`;
    }
    const kept = pending > 0 ? `${changes(pending)} kept and sent when it is back.`
      : 'Changes you make are kept and sent when it is back.';
    return { state: link, down, words, detail: `The hub can't be reached. ${kept}`, title: why };
  }
  if (link === 'connecting') return { state: link, down, words: 'Connecting…', detail: '', title: null };
  const detail = catchingUp && pending > 0
    ? `Back online: sending ${pending === 1 ? 'the change' : `${pending} changes`} made while offline…`
    : '';
  return { state: 'online', down, words: 'Online', detail, title: null };
}
