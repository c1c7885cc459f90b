// Frames on the wire (port of Sources/PeopleCore/Wire/ClientMessage+JSON.swift, ServerMessage+JSON.swift).
//
// Messages are plain objects in their wire shape (PROTOCOL.md); decoding validates a parsed frame and
// makes its people and diffs canonical (the form the rest of the core expects). Encoding is
// `JSON.stringify(message)`: the core's objects are already in wire shape.

import { ErrorCode, ProtocolError, protocolError } from './errors.js';
import { WireFields } from './fields.js';
import { parsePerson } from './model.js';
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
    case 'undo': case 'redo':
      m.seq = f.int('seq');
      put(m, 'scope', f.optionalInt('scope'));
      return m;
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
      put(m, 'people', people);
      m.tags = block(new WireFields(tags, 'tags', ErrorCode.badMessage));
      m.history = history(new WireFields(h, 'history', ErrorCode.badMessage));
      m.presence = presence;
      return m;
    }
    case 'ack':
      m.seq = f.int('seq');
      m.rev = f.int('rev');
      m.ops = diffs('ops');
      m.noop = reports('noop');
      return m;
    case 'ops': {
      const kind = f.string('kind');
      if (!['edit', 'undo', 'redo'].includes(kind)) throw f.fail(`unknown kind '${kind}'`);
      m.rev = f.int('rev');
      m.author = f.string('author');
      m.kind = kind;
      m.ops = diffs('ops');
      put(m, 'label', f.optionalString('label'));
      put(m, 'seq', f.optionalInt('seq'));
      return m;
    }
    case 'undone': case 'redone':
      m.seq = f.int('seq');
      put(m, 'rev', f.optionalInt('rev'));
      m.ops = diffs('ops');
      put(m, 'label', f.optionalString('label'));
      m.skipped = reports('skipped');
      return m;
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
      return m;
    case 'tags':
      return { type, ...block(f) };
    default:
      throw f.fail(`unknown type '${type}'`);
  }
}

/** The text frame of a message. */
export function encode(message) { return JSON.stringify(message); }
