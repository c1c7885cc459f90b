// The page's notices (skip reports, refusals, "nothing to undo"): the one shown now and a short log
// of recent ones.
//
// A notice belongs to the action that caused it: it stays until the user dismisses it or acts again
// (an edit, an undo, a redo), then lives on only in the log. No timer takes it away while the user
// may still be reading it. The log keeps the newest `size` notices, newest first, each shown once
// even if it was dismissed. Time is a parameter (`now`); no DOM, so node tests it as it is.

export const NOTICE_LOG_SIZE = 5;

export class NoticeBoard {
  constructor({ now = () => Date.now(), size = NOTICE_LOG_SIZE } = {}) {
    this.now = now;
    this.size = size;
    /** The notice shown now: {id, text, at}, or null. */
    this.current = null;
    /** Recent notices, newest first: [{id, text, at, amended?}] (`amended`: how often said again with more). */
    this.log = [];
    this.nextId = 1;
  }

  /** Shows `text` now (replacing the notice shown) and logs it. Empty text shows nothing. */
  show(text) {
    if (!text) return;
    const notice = { id: this.nextId++, text, at: this.now() };
    this.current = notice;
    this.log = [notice, ...this.log].slice(0, this.size);
  }

  /** The id of the newest notice shown (0 before any). */
  get lastId() { return this.nextId - 1; }

  /** The notice shown now says `text` instead (in the log too): more about the same moment. */
  amend(text) {
    if (!this.current) return this.show(text);
    const notice = { ...this.current, text, amended: (this.current.amended ?? 0) + 1 };
    this.current = notice;
    this.log = this.log.map((n) => (n.id === notice.id ? notice : n));
  }

  /** The user closed the notice. */
  dismiss() { this.current = null; }

  /** The user did something new: the notice of the last action goes (it stays in the log). */
  actionTaken() { this.current = null; }

  /** The notice's text, or '' when none is shown. */
  get text() { return this.current?.text ?? ''; }
}
