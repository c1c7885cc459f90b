// Frames on the wire (port of Sources/PeopleCore/Wire/ClientMessage+JSON.swift, ServerMessage+JSON.swift).
//
// Messages are plain objects in their wire shape (PROTOCOL.md); decoding validates a parsed frame and
// makes its people and diffs canonical (the form the rest of the core expects). Encoding is
// `JSON.stringify(message)`: the core's objects are already in wire shape.

import { ErrorCode, ProtocolError, protocolError } from './errors.js';
import { WireFields } from './fields.js';
import { parsePerson, FacialHairStyle, Topic } from './model.js';
import { parseDiff } from './diff.js';
import { parseReport, historySummary } from './undo.js';

function parseFrame(frame) {
  if (typeof frame !== 'string') return frame;
  try {
    return JSON.parse(frame);
  } catch (error) {
    throw new ProtocolError(ErrorCode.badJSON, error.message);
  }
}

function put(target, key, value) { if (value !== undefined) target[key] = value; }

/** The kinds of a revision: a user's edit, an undo / redo, or a restore to an earlier revision. */
export const RevisionKind = Object.freeze(['edit', 'undo', 'redo', 'restore']);

/** The default and the bounds of a `log` request's `limit` (HISTORY §4). */
export const LogLimit = Object.freeze({ default: 50, min: 1, max: 200 });

/** The parts of a person `blame` names one writer for: the scalar fields and the position. */
export const BlameFields = Object.freeze(['name', 'hairColor', 'hairLength', 'eyeColor', 'glasses', 'position']);

/**
 * Decodes a client → hub frame (text or parsed JSON), following PROTOCOL.md's parse order: not JSON →
 * `bad-json`; wrong envelope → `bad-message`; `hello` with another protocol integer →
 * `unsupported-protocol`; anything wrong inside `ops` → `invalid-op`. Throws a ProtocolError.
 */
export function decodeClientMessage(frame) {
  const f = new WireFields(parseFrame(frame), 'message', ErrorCode.badMessage);
  const type = f.string('type');
  const m = { type };
  switch (type) {
    case 'hello': {
      const version = f.raw('protocol');
      if (version === undefined) throw f.fail('hello needs `protocol`');
      if (!Number.isSafeInteger(version)) throw f.fail('`protocol` must be an integer');
      if (version !== 1) {
        throw new ProtocolError(ErrorCode.unsupportedProtocol, `protocol ${version} is not supported; this hub speaks 1`);
      }
      m.protocol = version;
      m.user = f.string('user');
      put(m, 'token', f.optionalString('token'));
      put(m, 'client', f.optionalString('client'));
      put(m, 'resume', f.optionalString('resume'));
      put(m, 'since', f.optionalInt('since'));
      put(m, 'sinceTime', f.optionalInt('sinceTime'));
      return m;
    }
    case 'submit': {
      m.seq = f.int('seq');
      m.base = f.int('base');
      const ops = f.array('ops');
      put(m, 'label', f.optionalString('label'));
      put(m, 'coalesce', f.optionalString('coalesce'));
      m.ops = ops.map((op, index) => {
        try {
          return parseDiff(op);
        } catch (error) {
          throw protocolError(ErrorCode.invalidOp, `ops[${index}]: ${error.reason ?? error.message}`);
        }
      });
      return m;
    }
    case 'undo': case 'redo': {
      m.seq = f.int('seq');
      const scope = f.optionalInt('scope');
      const entry = f.optionalInt('entry');
      if (entry !== undefined && type === 'redo') throw f.fail('redo takes no `entry`');
      if (entry !== undefined && scope !== undefined) throw f.fail('undo takes `entry` or `scope`, not both');
      put(m, 'scope', scope);
      put(m, 'entry', entry);
      return m;
    }
    case 'restore':
      m.seq = f.int('seq');
      m.rev = f.int('rev');
      put(m, 'label', f.optionalString('label'));
      return m;
    case 'log': {
      // Read in Swift's order (seq, before, limit, tag); the limit's bounds are the room's check.
      const seq = f.optionalInt('seq');
      const before = f.optionalInt('before');
      const limit = f.optionalInt('limit') ?? LogLimit.default;
      const tag = f.optionalInt('tag');
      put(m, 'seq', seq);
      put(m, 'before', before);
      m.limit = limit;
      put(m, 'tag', tag);
      return m;
    }
    case 'blame': {
      const seq = f.optionalInt('seq');
      put(m, 'seq', seq);
      m.tag = f.int('tag');
      return m;
    }
    case 'presence':
      put(m, 'viewing', f.optionalInt('viewing'));
      put(m, 'field', f.optionalString('field'));
      return m;
    case 'ping':
      put(m, 'seq', f.optionalInt('seq'));
      return m;
    case 'tags':
      return m;
    default:
      throw f.fail(`unknown type '${type}'`);
  }
}

function history(g) {
  return historySummary({ canUndo: g.bool('canUndo'), canRedo: g.bool('canRedo'),
    undoLabel: g.optionalString('undoLabel'), redoLabel: g.optionalString('redoLabel') });
}

function block(g) { return { from: g.int('from'), to: g.int('to') }; }

function presenceEntry(json) {
  const g = new WireFields(json, 'presence entry', ErrorCode.badMessage);
  const e = { user: g.string('user') };
  put(e, 'viewing', g.optionalInt('viewing'));
  put(e, 'field', g.optionalString('field'));
  return e;
}

function revisionKind(f, key) {
  const kind = f.string(key);
  if (!RevisionKind.includes(kind)) throw f.fail(`unknown kind '${kind}'`);
  return kind;
}

/**
 * A log entry: {rev, time?, author, kind, label?, ops, entry?, removed?} (Swift `LogEntry(json:)`).
 * `removed` ({tag: name}, this hub's addition) is kept when well formed and left out otherwise.
 */
function logEntry(json) {
  const g = new WireFields(json, 'log entry', ErrorCode.badMessage);
  const ops = g.array('ops').map(parseDiff);
  const e = { rev: g.int('rev') };
  put(e, 'time', g.optionalInt('time'));
  e.author = g.string('author');
  e.kind = revisionKind(g, 'kind');
  put(e, 'label', g.optionalString('label'));
  e.ops = ops;
  put(e, 'entry', g.optionalInt('entry'));
  const removed = json?.removed;
  if (removed && typeof removed === 'object' && !Array.isArray(removed)) {
    const names = {};
    for (const [tag, name] of Object.entries(removed)) {
      if (/^\d+$/.test(tag) && typeof name === 'string') names[tag] = name;
    }
    if (Object.keys(names).length > 0) e.removed = names;
  }
  return e;
}

/** A writer: {user (null for the seed), rev, time?} (Swift `Writer(json:)`). */
function writer(json) {
  const g = new WireFields(json ?? null, 'writer', ErrorCode.badMessage);
  const w = { user: g.optionalString('user') ?? null, rev: g.int('rev') };
  put(w, 'time', g.optionalInt('time'));
  return w;
}

/** A map of words to writers, in vocabulary order; anything but an object is read as none (as Swift). */
function writers(g, key, vocabulary, what) {
  const out = {};
  const value = g.raw(key);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return out;
  for (const word of Object.keys(value)) {
    if (!vocabulary.has(word)) throw g.fail(`unknown ${what} ${word}`);
  }
  for (const word of vocabulary.words) {
    if (Object.prototype.hasOwnProperty.call(value, word)) out[word] = writer(value[word]);
  }
  return out;
}

/**
 * The `created` and `fields` members of a blame (Swift `PersonBlame(fields:)`), made canonical: the
 * writers of the fields present in BlameFields order, then `facialHair` and `preference` (objects,
 * maybe empty, in vocabulary order).
 */
function personBlame(f) {
  const created = writer(f.raw('created'));
  const g = new WireFields(f.raw('fields') ?? null, 'fields', ErrorCode.badMessage);
  const fields = {};
  for (const field of BlameFields) {
    const w = g.raw(field);
    if (w !== undefined) fields[field] = writer(w);
  }
  fields.facialHair = writers(g, 'facialHair', FacialHairStyle, 'style');
  fields.preference = writers(g, 'preference', Topic, 'topic');
  return { created, fields };
}

/** Decodes a hub → client frame (text or parsed JSON). Errors are `bad-json` / `bad-message` / `invalid-op`. */
export function decodeServerMessage(frame) {
  const f = new WireFields(parseFrame(frame), 'message', ErrorCode.badMessage);
  const diffs = (key) => f.array(key).map(parseDiff);
  const reports = (key) => (f.optionalArray(key) ?? []).map(parseReport);
  const type = f.string('type');
  const m = { type };
  switch (type) {
    case 'welcome': {
      const role = f.string('role');
      if (role !== 'editor' && role !== 'viewer') throw f.fail(`unknown role '${role}'`);
      const people = f.optionalArray('people')?.map((p) => parsePerson(p, ErrorCode.badMessage));
      const tags = f.raw('tags');
      const h = f.raw('history');
      if (tags === undefined || h === undefined) throw f.fail('welcome is incomplete');
      const presence = (f.optionalArray('presence') ?? []).map(presenceEntry);
      m.session = f.string('session');
      m.user = f.string('user');
      m.role = role;
      m.rev = f.int('rev');
      put(m, 'time', f.optionalInt('time'));
      if (f.raw('reset') !== undefined && f.bool('reset')) m.reset = true;
      put(m, 'people', people);
      m.tags = block(new WireFields(tags, 'tags', ErrorCode.badMessage));
      m.history = history(new WireFields(h, 'history', ErrorCode.badMessage));
      m.presence = presence;
      return m;
    }
    case 'ack':
      m.seq = f.int('seq');
      m.rev = f.int('rev');
      put(m, 'time', f.optionalInt('time'));
      m.ops = diffs('ops');
      m.noop = reports('noop');
      return m;
    case 'ops': {
      m.rev = f.int('rev');
      put(m, 'time', f.optionalInt('time'));
      m.author = f.string('author');
      m.kind = revisionKind(f, 'kind');
      m.ops = diffs('ops');
      put(m, 'label', f.optionalString('label'));
      put(m, 'seq', f.optionalInt('seq'));
      return m;
    }
    case 'undone': case 'redone':
      m.seq = f.int('seq');
      put(m, 'rev', f.optionalInt('rev'));
      put(m, 'time', f.optionalInt('time'));
      m.ops = diffs('ops');
      put(m, 'label', f.optionalString('label'));
      m.skipped = reports('skipped');
      put(m, 'entry', f.optionalInt('entry'));
      return m;
    case 'restored':
      m.seq = f.int('seq');
      put(m, 'rev', f.optionalInt('rev'));
      put(m, 'time', f.optionalInt('time'));
      m.ops = diffs('ops');
      m.label = f.string('label');
      return m;
    case 'log': {
      const entries = f.array('entries').map(logEntry);
      put(m, 'seq', f.optionalInt('seq'));
      m.entries = entries;
      m.more = f.bool('more');
      return m;
    }
    case 'blame': {
      put(m, 'seq', f.optionalInt('seq'));
      m.tag = f.int('tag');
      return Object.assign(m, personBlame(f));
    }
    case 'history':
      return { type, ...history(f) };
    case 'presence':
      m.users = f.array('users').map(presenceEntry);
      return m;
    case 'error': {
      const code = f.string('code');
      if (!Object.values(ErrorCode).includes(code)) throw f.fail(`unknown code '${code}'`);
      put(m, 'seq', f.optionalInt('seq'));
      m.code = code;
      m.message = f.string('message');
      if (code === ErrorCode.unsupportedProtocol || code === ErrorCode.unauthorized) m.fatal = true;
      return m;
    }
    case 'redirect':
      m.url = f.string('url');
      return m;
    case 'pong':
      put(m, 'seq', f.optionalInt('seq'));
      put(m, 'time', f.optionalInt('time'));
      return m;
    case 'tags':
      return { type, ...block(f) };
    default:
      throw f.fail(`unknown type '${type}'`);
  }
}

/** The text frame of a message. */
export function encode(message) { return JSON.stringify(message); }
