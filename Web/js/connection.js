// What the page says about its connection, computed from the room's state and nothing else.
//
// Invariant: this is the only place connection words come from, and it is a function of the state at
// the moment it is called, so a message about the connection exists exactly as long as it is true:
// "the hub can't be reached" only while the link is down, "your changes are kept" only while some are
// queued (or the link is down), "sending your changes" only while the ones made offline are still
// going out. "Kept" and "sending" count the same requests (those kept through the outage) and name
// them the same way, an undo or a redo as such: "Your 2 changes and 1 undo are kept…", then
// "Back online: sending 2 changes and 1 undo made while offline…". The page renders it on every
// change and every half second while the link is down; no timer ever clears or keeps a connection
// message. Pure (time is a parameter): node tests it as is.

/** Requests by kind ({changes, undos, redos}) in words: "2 changes and 1 undo", "1 redo". */
function requestWords({ changes = 0, undos = 0, redos = 0 }) {
  const parts = [[changes, 'change'], [undos, 'undo'], [redos, 'redo']]
    .filter(([n]) => n > 0).map(([n, word]) => `${n} ${word}${n === 1 ? '' : 's'}`);
  return parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}` : parts[0] ?? '';
}

/** The one request kept, as a noun ("change", "undo"), or null when there are several (or none). */
function onlyRequest({ changes = 0, undos = 0, redos = 0 }) {
  if (changes + undos + redos !== 1) return null;
  return changes ? 'change' : undos ? 'undo' : 'redo';
}

/**
 * Why the hub is out of reach, as a sentence: a hub that closed the connection itself (a commit it
 * could not make, a drain; `closedBy` {code, reason}) is up, and is not called unreachable (an
 * operator's drill; the terminal says the same); nor is one that answers but refuses this page's
 * connection (`refused`).
 */
export function awayText(closedBy, refused = false) {
  if (closedBy) return `The hub closed the connection (${closedBy.code}${closedBy.reason ? ` ${closedBy.reason}` : ''}).`;
  // Running, but its handshake refused this page: whoever runs the hub can tell why from its log.
  if (refused) return "The hub is running but won't let this page connect: it may be full, or not set up for pages from this address.";
  return "The hub can't be reached.";
}

/**
 * @param {object} s  the room's state (LiveRoom.connection):
 *   link: 'connecting' | 'online' | 'offline'; outage: the hub has been out of reach since the last
 *   welcome (a 'connecting' retry is still part of it); why: why the last connection was lost (words for a
 *   tooltip); closedBy: {code, reason} when the hub closed it itself; refused: the hub is running but
 *   does not let this page connect (LiveRoom.refused); retryAt: when the next attempt starts (ms) while offline; pending: requests not yet
 *   answered; catchingUp: some of them were kept through the outage; kept: those, by kind
 *   ({changes, undos, redos}; without it, every pending request counts as a change).
 * @param {number} now  ms, on the clock of `retryAt`
 * @returns {{state: string, down: boolean, words: string, detail: string, title: string|null}}
 *   `state` is the `data-state` hook, `down` whether the hub is out of reach (retries included),
 *   `words` the short label, `detail` the sentence beside it (empty when there is nothing to say),
 *   `title` the technical reason, for a tooltip.
 */
export function connectionStatus({ link, outage = false, why = null, closedBy = null, refused = false, retryAt = null,
  pending = 0, catchingUp = false, kept = null }, now) {
  const counts = kept ?? { changes: pending };
  const one = onlyRequest(counts);
  const some = requestWords(counts) !== '';
  const down = link === 'offline' || (link === 'connecting' && outage);
  if (down) {
    let words = link === 'connecting' ? 'Reconnecting…' : 'Offline';
    if (link === 'offline' && retryAt != null) {
      words = `Offline, retrying in ${Math.max(0, Math.ceil((retryAt - now) / 1000))} s`;
    }
    const yours = one ? `Your ${one} is` : `Your ${requestWords(counts)} are`;
    const when = refused && !closedBy ? 'once it lets this page in' : 'when it is back';
    const said = some ? `${yours} kept and sent ${when}.` : `Changes you make are kept and sent ${when}.`;
    // The tooltip agrees with the sentence (the last attempt's own reason said "cannot be reached").
    const title = refused && !closedBy ? "the hub answers, but refused this page's connection" : why;
    return { state: link, down, words, detail: `${awayText(closedBy, refused)} ${said}`, title };
  }
  if (link === 'connecting') return { state: link, down, words: 'Connecting…', detail: '', title: null };
  const detail = catchingUp && some
    ? `Back online: sending ${one ? `the ${one}` : requestWords(counts)} made while offline…`
    : '';
  return { state: 'online', down, words: 'Online', detail, title: null };
}
