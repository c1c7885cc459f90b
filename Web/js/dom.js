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

/** Sets an element's text, touching the DOM only on a change. */
export function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

/** Marks an element as changed by `by` (a teammate), or clears the mark when `by` is null. */
export function setChanged(el, by) {
  el.classList.toggle('changed', by != null);
  setAttr(el, 'data-by', by);
}

/** A word of a vocabulary for people to read: "blonde" → "Blonde". */
export function titleCase(word) {
  return word.charAt(0).toUpperCase() + word.slice(1);
}
