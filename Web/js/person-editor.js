// The detail editor for the selected person: a large face, the name (typed character by character,
// one coalesced undo step), hair color, hair length and eye color as choices, glasses and each
// facial hair style as toggles, each topic as like / neutral / dislike, and "Undo on this person".
//
// The controls are built once and changed in place on every render, so a teammate's edit never takes
// focus away or moves the caret out of place. Edits go out through `actions.edit(diffs, options)`.
// Each topic is one tab stop (its current opinion); ← / → move between like, neutral and dislike.
// For a viewer (`editable` false) every control is disabled and the scoped undo / redo are not shown.
// Labels and action names come from words.js; presence names a topic or a facial hair style by its
// own word ("weather", "beard"), so other people read what this user looks at.
//
// Beside each field, who last changed it and when ("bob · 2 min ago", HISTORY.md §6): a `.writer`
// element per field (`data-writer` = the field's key, as attribution.js names it), filled by
// `renderWriters` from the hub's `blame` (kept live by the page); the exact time is its tooltip, and
// each control is described by it (`aria-describedby`). The head says who added the person and who
// last moved them in the list.
//
// "Place in the list" (`#place`) moves the person to any place at once: a number, taken on Enter or
// when the field is left (a move far down the list was a tap per place on a touch screen, where the
// list cannot be dragged). From focus until it is taken (Enter), left, or Escape, the number in it is
// the user's: a teammate's move does not change it (a rewrite would drop what they selected: Ctrl+A,
// then 5, read "25"); "of N" follows. After Enter, or the undo and redo keys, it follows the room.

import { faceSVG, faceDescription } from './face.js';
import { h, setAttr, setText, setChanged } from './dom.js';
import { fieldLabels, actionLabels, titleCase } from './words.js';
import { HairColor, HairLength, EyeColor, FacialHairStyle, Topic, NameLimit, opinion } from './core/model.js';
import { set, facialHair, preference, text } from './core/diff.js';
import { nameEdit, caretAfter, scalarOffset } from './name-edit.js';

/** The choice fields: id, words to read, vocabulary, undo label. */
const CHOICES = [['hairColor', HairColor], ['hairLength', HairLength], ['eyeColor', EyeColor]]
  .map(([field, vocabulary]) => ({ field, label: fieldLabels[field], vocabulary, action: actionLabels[field] }));
const OPINIONS = [['like', 'Like'], ['none', 'Neutral'], ['dislike', 'Dislike']];
/** Milliseconds between two changes of one choice that make them one run (one undo step). */
const CHOICE_RUN_MS = 1000;

export class PersonEditor {
  /**
   * @param {HTMLElement} section  `#detail`
   * @param {{edit(diffs, {label, coalesce}), move(tag, to), notice(text), undoHere(tag), redoHere(tag), fieldFocused(field)}} actions
   */
  constructor(section, actions) {
    this.section = section;
    this.actions = actions;
    this.person = null;
    this.faceKey = null;
    /** A name the input holds that cannot be sent (empty or too long): left alone until fixed or blurred. */
    this.nameDraft = false;
    this.composing = false;
    this.editable = true;
    /** key → element(s) that show the `.changed` mark of that field */
    this.marks = new Map();
    /** key → the `.writer` element beside that field */
    this.writers = new Map();
    this.build();
  }

  /** The `.writer` element of `key` ("bob · 2 min ago"), made once. */
  writerFor(key) {
    const id = `writer-${key}`;
    const el = h('span', { class: 'writer', id, 'data-writer': key });
    this.writers.set(key, el);
    return el;
  }

  build() {
    const s = this.section;
    this.empty = h('p', { class: 'empty' }, 'Nobody here yet. Add a person to start.');
    this.face = h('div', { class: 'face face-large' });
    this.title = h('h2', { id: 'detail-title' });
    this.description = h('p', { class: 'face-description', id: 'face-description' });
    this.tagText = h('span', {});
    this.tagLine = h('p', { class: 'tag-line' }, this.tagText,
      h('span', { class: 'origin' }, this.writerFor('created')),
      h('span', { class: 'origin moved' }, this.writerFor('position')));
    this.undoHere = h('button', { id: 'undo-person', type: 'button' }, 'Undo on this person');
    this.redoHere = h('button', { id: 'redo-person', type: 'button' }, 'Redo on this person');
    this.undoHere.addEventListener('click', () => this.person && this.actions.undoHere(this.person.tag));
    this.redoHere.addEventListener('click', () => this.person && this.actions.redoHere(this.person.tag));

    this.name = h('input', { id: 'name', type: 'text', autocomplete: 'off', spellcheck: 'false', dir: 'auto',
      'data-presence': 'name', 'aria-describedby': 'name-help writer-name' });
    this.nameHelp = h('p', { id: 'name-help', class: 'help' }, 'Saved as you type.');
    const nameField = h('div', { class: 'field', 'data-field': 'name' },
      h('label', { for: 'name' }, fieldLabels.name), this.name,
      h('div', { class: 'field-foot' }, this.nameHelp, this.writerFor('name')));
    this.marks.set('name', [nameField, this.name]);
    this.name.addEventListener('input', (e) => { if (!e.isComposing) this.typed(); });
    this.name.addEventListener('compositionstart', () => { this.composing = true; });
    this.name.addEventListener('compositionend', () => { this.composing = false; this.typed(); });
    this.name.addEventListener('blur', () => this.nameBlurred());
    this.name.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && this.nameDraft) this.nameBlurred();
    });

    this.placeInput = h('input', { id: 'place', type: 'number', min: '1', step: '1', inputmode: 'numeric',
      autocomplete: 'off', 'aria-describedby': 'place-count writer-position' });
    this.placeCount = h('span', { id: 'place-count', class: 'help' });
    /** Where the person is ({index, count}), as last shown. */
    this.placeShown = null;
    /** The number in the field is the user's (focused, selected or typed into since it was last taken). */
    this.placeHeld = false;
    const placeField = h('div', { class: 'field place', 'data-field': 'position' },
      h('label', { for: 'place' }, 'Place in the list'),
      h('div', { class: 'place-row' }, this.placeInput, this.placeCount));
    this.marks.set('position', [placeField]);
    this.placeInput.addEventListener('change', () => this.placeChanged());
    // Focus (Tab selects the number), a pointer and a key make the number the user's; Enter (through
    // `change`), Escape, leaving and the undo / redo keys give the field back to the room's place.
    this.placeInput.addEventListener('focus', () => { this.placeHeld = true; });
    this.placeInput.addEventListener('pointerdown', () => { this.placeHeld = true; });
    this.placeInput.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        this.placeHeld = false;
        this.showPlace(this.placeShown, { force: true });
      } else if ((e.ctrlKey || e.metaKey) && /^[zy]$/i.test(e.key)) {
        this.placeHeld = false;
      } else if (!['Enter', 'Tab', 'Shift', 'Control', 'Alt', 'Meta'].includes(e.key)) {
        this.placeHeld = true;
      }
    });
    this.placeInput.addEventListener('blur', () => {
      this.placeHeld = false;
      this.showPlace(this.placeShown, { force: true });
    });

    this.selects = new Map();
    const choices = h('div', { class: 'choices' }, CHOICES.map(({ field, label, vocabulary, action }) => {
      const select = h('select', { id: field, 'data-presence': field, 'aria-describedby': `writer-${field}` },
        vocabulary.words.map((w) => h('option', { value: w }, titleCase(w))));
      select.addEventListener('change', () => {
        // Arrow keys on a closed choice change it at each press: a run of them is one undo step (as
        // typing a name is), not one per value passed on the way. Only a quick run: a change made
        // a while after the last (offline, where queued edits with one key are merged whenever made)
        // is a step of its own.
        if (!this.person) return;
        const base = `${field}:${this.person.tag}`;
        const now = performance.now();
        if (this.choiceRun?.base !== base || now - this.choiceRun.at >= CHOICE_RUN_MS) {
          this.choiceRun = { base, id: (this.choiceRun?.id ?? 0) + 1 };
        }
        this.choiceRun.at = now;
        this.actions.edit([set(this.person.tag, field, select.value)],
          { label: action, coalesce: `${base}:${this.choiceRun.id}` });
      });
      this.selects.set(field, select);
      const wrap = h('div', { class: 'field', 'data-field': field }, h('label', { for: field }, label), select,
        this.writerFor(field));
      this.marks.set(field, [wrap, select]);
      return wrap;
    }));

    this.checkboxes = new Map();
    const toggle = (id, label, key, presence, onChange) => {
      const box = h('input', { type: 'checkbox', id, 'data-presence': presence, 'aria-describedby': `writer-${key}` });
      box.addEventListener('change', () => { if (this.person) onChange(box.checked); });
      this.checkboxes.set(key, box);
      const writer = this.writerFor(key);
      writer.setAttribute('aria-hidden', 'true'); // inside the label: read as the box's description only
      const wrap = h('label', { class: 'field toggle', for: id, 'data-field': key }, box,
        h('span', { class: 'toggle-text' }, h('span', {}, label), writer));
      this.marks.set(key, [wrap, box]);
      return wrap;
    };
    const toggles = h('fieldset', { class: 'toggles' }, h('legend', {}, 'Glasses and facial hair'),
      toggle('glasses', fieldLabels.glasses, 'glasses', 'glasses',
        (on) => this.actions.edit([set(this.person.tag, 'glasses', on)], { label: actionLabels.glasses })),
      FacialHairStyle.words.map((style) => toggle(`facialHair-${style}`, titleCase(style),
        `facialHair-${style}`, style,
        (on) => this.actions.edit([facialHair(this.person.tag, style, on)], { label: actionLabels.facialHair }))));

    this.topicButtons = new Map();
    const topics = h('fieldset', { class: 'topics' }, h('legend', {}, 'Likes and dislikes'),
      Topic.words.map((topic) => {
        const buttons = OPINIONS.map(([value, words]) => {
          const b = h('button', { type: 'button', 'data-opinion': value, 'data-presence': topic,
            'aria-pressed': 'false' }, words);
          b.addEventListener('click', () => {
            if (!this.person || opinion(this.person, topic) === value) return;
            this.actions.edit([preference(this.person.tag, topic, value)], { label: actionLabels.preference });
          });
          return b;
        });
        this.topicButtons.set(topic, buttons);
        buttons.forEach((b, i) => b.addEventListener('keydown', (e) => {
          const step = { ArrowLeft: -1, ArrowRight: 1 }[e.key];
          if (!step) return;
          e.preventDefault();
          buttons[(i + step + buttons.length) % buttons.length].focus();
        }));
        const labelId = `topic-${topic}-label`;
        const row = h('div', { class: 'field topic', 'data-topic': topic, 'data-field': `topic-${topic}`,
          role: 'group', 'aria-labelledby': labelId, 'aria-describedby': `writer-topic-${topic}` },
        h('span', { class: 'topic-text' }, h('span', { class: 'topic-name', id: labelId }, titleCase(topic)),
          this.writerFor(`topic-${topic}`)),
        h('span', { class: 'opinions' }, buttons));
        this.marks.set(`topic-${topic}`, [row]);
        return row;
      }));

    this.form = h('div', { class: 'editor' },
      h('div', { class: 'detail-head' }, this.face,
        h('div', { class: 'detail-title' }, this.title, this.description, this.tagLine,
          h('div', { class: 'scoped' }, this.undoHere, this.redoHere))),
      nameField, placeField, choices, toggles, topics);
    s.append(this.empty, this.form);
    s.addEventListener('focusin', (e) => this.actions.fieldFocused(e.target.dataset?.presence ?? null));
    s.addEventListener('focusout', (e) => {
      if (!s.contains(e.relatedTarget)) this.actions.fieldFocused(null);
    });
  }

  /** The field with focus, as presence names it, or null. */
  get focusedField() {
    const el = document.activeElement;
    return el && this.section.contains(el) ? el.dataset.presence ?? null : null;
  }

  /**
   * Shows `person` (or nobody), with `changedBy(key)` the highlight of the teammate who just changed a
   * field ({by, since, until}, or null), and whether this user may edit.
   * `nameSteps`: teammates' text edits of this name since the last render, in order, when known (keeps
   * the caret).
   */
  render(person, changedBy, nameSteps, editable = true, place = null) {
    const switched = person?.tag !== this.person?.tag;
    this.person = person ?? null;
    if (this.editable !== editable) this.setEditable(editable);
    setAttr(this.section, 'data-tag', person ? person.tag : null);
    this.empty.hidden = !!person;
    this.form.hidden = !person;
    if (!person) return;
    if (switched) this.clearDraft();

    const key = `${person.hairColor}|${person.hairLength}|${person.eyeColor}|${person.glasses}|${person.facialHair}`;
    if (this.faceKey !== key) {
      this.face.innerHTML = faceSVG(person, 132);
      this.faceKey = key;
    }
    setText(this.title, person.name);
    const description = titleCase(faceDescription(person));
    setText(this.description, description);
    setAttr(this.description, 'title', description);  // cut after two lines (app.css)
    setText(this.tagText, `tag ${person.tag}`);
    // The visible words first, so that speech input ("click Undo on this person") finds the button.
    setAttr(this.undoHere, 'aria-label', `Undo on this person: your newest change to ${person.name}`);
    setAttr(this.redoHere, 'aria-label', `Redo on this person: your newest undone change to ${person.name}`);
    this.showName(person.name, switched ? null : nameSteps);
    this.showPlace(place, { force: switched });

    for (const { field } of CHOICES) {
      const select = this.selects.get(field);
      if (select.value !== person[field]) select.value = person[field];
    }
    this.checkboxes.get('glasses').checked = person.glasses;
    for (const style of FacialHairStyle.words) {
      this.checkboxes.get(`facialHair-${style}`).checked = person.facialHair.includes(style);
    }
    for (const topic of Topic.words) {
      const current = opinion(person, topic);
      for (const b of this.topicButtons.get(topic)) {
        const pressed = b.dataset.opinion === current;
        setAttr(b, 'aria-pressed', pressed ? 'true' : 'false');
        // One tab stop per topic (the current opinion); ← → move between the three.
        setAttr(b, 'tabindex', pressed ? '0' : '-1');
      }
    }
    for (const [k, elements] of this.marks) {
      const by = switched ? null : changedBy(k);
      for (const el of elements) setChanged(el, by);
    }
  }

  /**
   * Who last changed each field of the person shown: `writerOf(key)` gives {text, title, user} (see
   * history-text.js `writerText`), or null while not known (the field then says nothing). The head says
   * "added by ann · 3 min ago" (or "in the room from the start") and, when the person was moved since,
   * "moved by bob · just now".
   */
  renderWriters(writerOf) {
    for (const [key, el] of this.writers) {
      const w = this.person ? writerOf(key) : null;
      let text = w?.text ?? '';
      if (key === 'created' && w) text = w.user == null ? 'in the room from the start' : `added by ${w.text}`;
      if (key === 'position' && w) text = w.moved ? `moved by ${w.text}` : '';
      setText(el, text);
      setAttr(el, 'title', text ? w.title : null);
      setAttr(el, 'data-user', text ? w.user ?? '' : null);
    }
  }

  /**
   * Shows where the person is (`place`: {index, count}) as "3" "of 40". While the number is the
   * user's (`placeHeld`) it is left alone, unless `force`: a number input's selection cannot be read
   * or kept, so a rewrite between a select-all and the next key would add that key to the new number.
   */
  showPlace(place, { force = false } = {}) {
    const input = this.placeInput;
    this.placeShown = place;
    if (!place) return;
    setAttr(input, 'max', String(place.count));
    setText(this.placeCount, `of ${place.count}`);
    if (this.placeHeld && document.activeElement === input && !force) return;
    if (input.value !== String(place.index + 1)) input.value = String(place.index + 1);
  }

  /** The user gave a place: the person goes there (a number past the end: last), or the field goes back. */
  placeChanged() {
    this.placeHeld = false;
    const place = this.placeShown;
    const wanted = Number.parseInt(this.placeInput.value, 10);
    if (!this.person || !place || !this.editable || !Number.isFinite(wanted)) {
      this.showPlace(place, { force: true });
      return;
    }
    const to = Math.min(Math.max(wanted, 1), place.count) - 1;
    if (to === place.index) {
      this.showPlace(place, { force: true });
      return;
    }
    this.placeInput.value = String(to + 1);  // what was typed is taken (99 of 15 reads 15)
    this.actions.move(this.person.tag, to);
  }

  /** A viewer sees every value, and no control that would change one. */
  setEditable(editable) {
    this.editable = editable;
    const controls = [this.name, this.placeInput, ...this.selects.values(), ...this.checkboxes.values(),
      ...[...this.topicButtons.values()].flat()];
    for (const c of controls) c.disabled = !editable;
    this.undoHere.hidden = !editable;
    this.redoHere.hidden = !editable;
    this.undoHere.disabled = !editable;
    this.redoHere.disabled = !editable;
    setText(this.nameHelp, editable ? 'Saved as you type.' : 'View only.');
    setAttr(this.section, 'data-editable', editable ? null : 'false');
  }

  /** Puts the name in the input unless the user is in the middle of it; keeps the caret in place. */
  showName(name, steps) {
    const input = this.name;
    if (this.composing || this.nameDraft || input.value === name) return;
    if (document.activeElement === input) {
      const before = input.value;
      const { start, end } = caretAfter(before, name,
        { start: input.selectionStart ?? before.length, end: input.selectionEnd ?? before.length }, steps);
      input.value = name;
      input.setSelectionRange(start, end);
    } else {
      input.value = name;
    }
  }

  /** The user typed in the name: one text edit from the name as it is to what the input holds. */
  typed() {
    if (!this.person || this.composing) return;
    const value = this.name.value;
    const bytes = NameLimit.nfcByteCount(value);
    if (bytes === 0 || bytes > NameLimit.maxUTF8Bytes) {
      this.nameDraft = true;
      setAttr(this.name, 'aria-invalid', 'true');
      const why = bytes === 0
        ? 'A name cannot be empty: type one (it is not saved until then).'
        : `A name can be at most ${NameLimit.maxUTF8Bytes} bytes long (this one is ${bytes}): not saved.`;
      setText(this.nameHelp, why);
      this.actions.notice(why);
      return;
    }
    this.clearDraft();
    const caret = scalarOffset(value, this.name.selectionEnd ?? value.length);
    const edits = nameEdit(this.person.name, value, caret);
    if (!edits) return;
    const tag = this.person.tag;
    this.actions.edit([text(tag, edits)], { label: 'Change Name', coalesce: `name:${tag}` });
  }

  /** Leaving the name with a value that cannot be saved puts the saved name back. */
  nameBlurred() {
    if (!this.nameDraft) return;
    this.clearDraft();
    if (this.person) this.showName(this.person.name, null);
  }

  clearDraft() {
    this.nameDraft = false;
    setAttr(this.name, 'aria-invalid', null);
    setText(this.nameHelp, this.editable ? 'Saved as you type.' : 'View only.');
  }

  /** Focuses the name and selects all of it (a new person: type to replace "New person"). */
  focusName() {
    this.name.focus();
    this.name.select();
  }
}
