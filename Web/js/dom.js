// Small DOM helpers for the page's views: making elements and changing them only when a value
// differs, so that a render after every message leaves focus, carets and open menus alone.

/**
 * An element: `h('button', {class: 'pick', type: 'button', onclick}, 'text', child…)`.
 * Attributes whose value is null, undefined or false are left out; `on…` functions become listeners.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value == null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Sets an attribute (null or false removes it), touching the DOM only on a change. */
export function setAttr(el, name, value) {
  if (value == null || value === false) {
    if (el.hasAttribute(name)) el.removeAttribute(name);
    return;
  }
  const text = value === true ? '' : String(value);
  if (el.getAttribute(name) !== text) el.setAttribute(name, text);
}

/** Whether focus can go to `el` now: in the page, not disabled, not inside anything hidden. */
export function canFocus(el) {
  return el != null && el.isConnected && !el.disabled && el.closest('[hidden]') == null;
}

/** Sets an element's text, touching the DOM only on a change. */
export function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

/**
 * Marks an element as changed by a teammate (`mark`: {by, since, until} from highlights.js), or clears
 * the mark when `mark` is null. The mark fades by a CSS animation (`.changed` in app.css) that lasts
 * `until - since` and starts `now - since` in, so an element drawn late fades with the others. A new
 * mark on the same element starts its fade again by switching it to the other of two identical
 * animations (`data-changed-phase` a / b): no forced layout, which in a room of 1,000 people cost a
 * layout of the whole page per highlight.
 */
export function setChanged(el, mark, now = Date.now()) {
  if (!mark) {
    if (el.classList.contains('changed')) el.classList.remove('changed');
    setAttr(el, 'data-by', null);
    setAttr(el, 'data-changed-since', null);
    return;
  }
  const since = String(mark.since);
  if (el.getAttribute('data-changed-since') !== since) {
    el.style.setProperty('--highlight-ms', `${mark.until - mark.since}ms`);
    restartFade(el, mark.since, now);
    el.setAttribute('data-changed-since', since);
  }
  el.classList.add('changed');
  setAttr(el, 'data-by', mark.by);
}

/**
 * Starts a marked element's fade again where it is by now (`now - since` in). For a list row scrolled
 * into view: a row out of view skips its contents (content-visibility), so its wash and badge are made
 * when it comes into view and would fade from the start there, then vanish when the mark ends.
 */
export function resumeChanged(el, now = Date.now()) {
  const since = Number(el.getAttribute('data-changed-since'));
  if (el.classList.contains('changed') && Number.isFinite(since)) restartFade(el, since, now);
}

/** Starts the fade of a mark made at `since` again, `now - since` in: the other of the two phases. */
function restartFade(el, since, now) {
  el.style.setProperty('--changed-delay', `${Math.min(0, since - now)}ms`);
  el.setAttribute('data-changed-phase', el.getAttribute('data-changed-phase') === 'a' ? 'b' : 'a');
}
