// The people list: one row per person (small face, name, who else is looking), the selection, and
// the row actions (move up / down, drag and drop, delete).
//
// Rows are kept by tag and changed in place, so a teammate's edit never takes focus away. The list
// is an ARIA grid of one-row-per-person; the selected row carries `aria-selected="true"` and the
// grid's one tab stop, its name (roving tabindex), so Tab goes list → editor, ↑ / ↓ move the
// selection and ← / → move between the row's cells (its name, move up, move down, delete). For a viewer
// (`editable` false) the move and delete buttons are not shown and rows cannot be dragged; Delete and
// Alt+↑ / ↓ go to the page, which says the user can only view the room (they did nothing, unsaid).

import { faceSVG, faceDescription } from './face.js';
import { canFocus, h, resumeChanged, setAttr, setText, setChanged } from './dom.js';

const faceKey = (p) => `${p.hairColor}|${p.hairLength}|${p.eyeColor}|${p.glasses}|${p.facialHair.join(',')}`;

export class PeopleList {
  /**
   * @param {HTMLUListElement} ul
   * @param {{select(tag, {focus}), move(tag, to), remove(tag)}} actions
   */
  constructor(ul, actions) {
    this.ul = ul;
    this.actions = actions;
    /** tag → {li, pick, face, faceKey, name, description, viewers, up, down, del} */
    this.rows = new Map();
    this.order = [];
    this.dragged = null;
    this.editable = true;
    ul.addEventListener('keydown', (e) => this.key(e));
  }

  /**
   * Shows `people` (in order), with `selected` (a tag or null), `viewersOf(tag)` (other users looking),
   * `changedBy(tag)` (the highlight of a teammate who just changed the row: {by, since, until}, or
   * null) and whether this user may edit.
   */
  render(people, selected, viewersOf, changedBy, editable = true, filter = '') {
    this.editable = editable;
    // "Find a person": rows whose name does not hold what was typed are hidden (case and accents
    // ignored); moves still count places in the whole list.
    const needle = fold(filter.trim());
    this.shown = 0;
    const tags = people.map((p) => p.tag);
    // Rows about to move, come or go: where the selected row is on the screen, to keep it there.
    const reordered = tags.length !== this.order.length || tags.some((tag, i) => tag !== this.order[i]);
    const anchor = reordered ? this.anchorOf(selected) : null;
    const present = new Set(tags);
    for (const [tag, row] of this.rows) {
      if (!present.has(tag)) {
        row.li.remove();
        this.rows.delete(tag);
      }
    }
    people.forEach((person, index) => {
      const row = this.rows.get(person.tag) ?? this.makeRow(person.tag);
      const viewers = viewersOf(person.tag);
      const mark = changedBy(person.tag);
      // A render comes after every message: a row whose person (an immutable value), place at the
      // ends, selection, viewers and highlight are as last drawn is left alone (in a room of 1,000
      // people, refilling every row cost most of a render).
      const shown = !needle || fold(person.name).includes(needle);
      if (shown) this.shown += 1;
      if (row.li.hidden === shown) row.li.hidden = !shown;
      const memo = {
        person, first: index === 0, last: index === people.length - 1, selected: person.tag === selected,
        viewers: viewers.join(', '), mark: mark ? `${mark.since}\n${mark.by}` : '', editable,
      };
      const old = row.memo;
      if (old && Object.keys(memo).every((key) => old[key] === memo[key])) return;
      row.memo = memo;
      this.fill(row, person, index, people.length, memo.selected, viewers, mark);
    });
    // Put rows in order, moving only those out of place (a moved node loses focus: give it back).
    const focused = document.activeElement;
    let cursor = this.ul.firstElementChild;
    for (const tag of tags) {
      const li = this.rows.get(tag).li;
      if (li === cursor) cursor = cursor.nextElementSibling;
      else this.ul.insertBefore(li, cursor);
    }
    if (focused && focused !== document.activeElement && this.ul.contains(focused)) {
      focused.focus({ preventScroll: true });
    }
    if (anchor?.li.isConnected) {
      this.ul.scrollTop += anchor.li.getBoundingClientRect().top - this.ul.getBoundingClientRect().top - anchor.top;
    }
    this.order = tags;
  }

  /**
   * The selected row and its offset from the list's top, when it is in view. The list keeps it there
   * as rows move, come and go (`#people` has `overflow-anchor: none`: the browser's own anchor is the
   * first row in view, and the list scrolled after it when a teammate moved that row far down).
   */
  anchorOf(selected) {
    const row = selected != null ? this.rows.get(selected) : null;
    if (!row || row.li.hidden) return null;
    const list = this.ul.getBoundingClientRect();
    const box = row.li.getBoundingClientRect();
    return box.bottom > list.top && box.top < list.bottom ? { li: row.li, top: box.top - list.top } : null;
  }

  makeRow(tag) {
    const row = {};
    row.face = h('span', { class: 'face' });
    row.name = h('span', { class: 'name', dir: 'auto' });  // a right-to-left name reads as one
    row.pick = h('button', { type: 'button', class: 'pick', tabindex: '-1' }, row.face, row.name);
    row.viewers = h('span', { class: 'viewers', role: 'gridcell' });
    row.up = h('button', { type: 'button', class: 'move-up icon', tabindex: '-1' }, '↑');
    row.down = h('button', { type: 'button', class: 'move-down icon', tabindex: '-1' }, '↓');
    row.del = h('button', { type: 'button', class: 'delete icon', tabindex: '-1' }, '×');
    row.actions = h('span', { class: 'actions', role: 'gridcell' }, row.up, row.down, row.del);
    row.li = h('li', { role: 'row', 'data-tag': tag, draggable: 'true', 'aria-selected': 'false' },
      h('span', { class: 'cell-pick', role: 'gridcell' }, row.pick),
      row.viewers,
      row.actions);
    row.li.addEventListener('click', (e) => {
      if (e.target.closest('.actions')) return;
      this.actions.select(tag, { focus: true, tapped: true });
    });
    // A lit row that comes into view fades from where it is by now, not from the start.
    row.li.addEventListener('contentvisibilityautostatechange', (e) => { if (!e.skipped) resumeChanged(row.li); });
    row.up.addEventListener('click', () => this.step(tag, -1));
    row.down.addEventListener('click', () => this.step(tag, 1));
    row.del.addEventListener('click', () => this.actions.remove(tag));
    this.dragAndDrop(row.li, tag);
    this.rows.set(tag, row);
    return row;
  }

  fill(row, person, index, count, selected, viewers, changedBy) {
    setText(row.name, person.name);
    // Its name and looks, in one label: from the name's and a hidden description's text, a screen
    // reader read "Bob , brown short hair" (a space between the button's flex items).
    setAttr(row.pick, 'aria-label', `${person.name}, ${faceDescription(person)}`);
    const key = faceKey(person);
    if (row.faceKey !== key) {
      row.face.innerHTML = faceSVG(person, 40);
      row.faceKey = key;
    }
    setText(row.viewers, viewers.join(', '));
    setAttr(row.viewers, 'title', viewers.length ? `Also looking: ${viewers.join(', ')}` : null);
    setAttr(row.li, 'aria-selected', selected ? 'true' : 'false');
    setAttr(row.pick, 'aria-current', selected ? 'true' : null);
    // One tab stop for the whole grid (the selected row's name); ← → move between its cells.
    setAttr(row.pick, 'tabindex', selected ? '0' : '-1');
    for (const b of [row.up, row.down, row.del]) setAttr(b, 'tabindex', '-1');
    setAttr(row.up, 'aria-label', `Move ${person.name} up`);
    setAttr(row.down, 'aria-label', `Move ${person.name} down`);
    setAttr(row.del, 'aria-label', `Delete ${person.name}`);
    row.up.disabled = !this.editable || index === 0;
    row.down.disabled = !this.editable || index === count - 1;
    row.del.disabled = !this.editable;
    row.actions.hidden = !this.editable;
    setAttr(row.li, 'draggable', this.editable ? 'true' : 'false');
    setChanged(row.li, changedBy);
  }

  /** Moves `tag` one place up (-1) or down (+1). */
  step(tag, delta) {
    const index = this.order.indexOf(tag);
    const to = index + delta;
    if (index < 0 || to < 0 || to >= this.order.length) return;
    this.actions.move(tag, to);
  }

  /** The tags of the rows shown (all, or those "Find a person" leaves), in list order. */
  shownTags() { return this.order.filter((tag) => !this.rows.get(tag)?.li.hidden); }

  /**
   * Puts focus on the selected row's button; false when it could not (nobody selected, or the row left
   * out by Find a person).
   */
  focusSelected() {
    const pick = this.ul.querySelector('li[aria-selected="true"] .pick');
    pick?.focus();
    return pick != null && document.activeElement === pick;
  }

  key(e) {
    const li = e.target.closest('li[data-tag]');
    if (!li || e.ctrlKey || e.metaKey) return;
    const tag = Number(li.dataset.tag);
    const shown = this.shownTags();
    const index = shown.indexOf(tag);
    const choose = (i) => {
      const next = shown[Math.max(0, Math.min(shown.length - 1, i))];
      if (next != null) this.actions.select(next, { focus: true });
    };
    switch (e.key) {
      case 'ArrowUp':
        if (e.altKey) this.step(tag, -1); else choose(index - 1);
        break;
      case 'ArrowDown':
        if (e.altKey) this.step(tag, 1); else choose(index + 1);
        break;
      case 'ArrowLeft':
      case 'ArrowRight': {
        // The grid's cells: the name, then the move and delete buttons a user may press.
        const row = this.rows.get(tag);
        const cells = [row.pick, row.up, row.down, row.del].filter(canFocus);
        const at = cells.indexOf(document.activeElement);
        const next = cells[Math.max(0, Math.min(cells.length - 1, (at < 0 ? 0 : at) + (e.key === 'ArrowRight' ? 1 : -1)))];
        next?.focus();
        break;
      }
      case 'Home': choose(0); break;
      case 'End': choose(shown.length - 1); break;
      case 'Delete': this.actions.remove(tag); break;
      default: return;
    }
    e.preventDefault();
  }

  /** Drag a row onto another: it lands in that row's place. */
  dragAndDrop(li, tag) {
    li.addEventListener('dragstart', (e) => {
      if (!this.editable) { e.preventDefault(); return; }
      this.dragged = tag;
      e.dataTransfer.effectAllowed = 'move';
      e.dataTransfer.setData('text/plain', String(tag));
      li.classList.add('dragging');
    });
    li.addEventListener('dragend', () => {
      this.dragged = null;
      li.classList.remove('dragging');
      for (const row of this.rows.values()) row.li.classList.remove('drop-before', 'drop-after');
    });
    li.addEventListener('dragover', (e) => {
      if (this.dragged == null || this.dragged === tag) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = 'move';
      const from = this.order.indexOf(this.dragged);
      const to = this.order.indexOf(tag);
      li.classList.toggle('drop-before', to < from);
      li.classList.toggle('drop-after', to > from);
    });
    li.addEventListener('dragleave', () => li.classList.remove('drop-before', 'drop-after'));
    li.addEventListener('drop', (e) => {
      e.preventDefault();
      li.classList.remove('drop-before', 'drop-after');
      const dragged = this.dragged;
      if (dragged == null || dragged === tag) return;
      this.actions.move(dragged, this.order.indexOf(tag));
    });
  }
}

/**
 * A name or a search as "Find a person" compares them: lower case, without accents, and the letters
 * that carry their mark inside them (no decomposition takes it off) written as the letters people type
 * for them: "oyvind" finds Øyvind, "lukasz" Łukasz, "strasse" Straße. The terminal client folds the
 * same way (`SearchFold`).
 */
export function fold(text) {
  return text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase().replace(/[øłđħıæœþßŧðŀ]/g, (c) => FOLDED[c]);
}

const FOLDED = { ø: 'o', ł: 'l', đ: 'd', ħ: 'h', ı: 'i', æ: 'ae', œ: 'oe', þ: 'th', ß: 'ss', ŧ: 't', ð: 'd', ŀ: 'l' };
