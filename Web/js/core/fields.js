// Typed reading of one JSON object's members (port of Sources/PeopleCore/Wire/WireFields.swift).
// Every failure is a ProtocolError (an InvalidOp for code `invalid-op`) naming the context.

import { protocolError } from './errors.js';

/** Whether `s` holds a UTF-16 surrogate that is not half of a pair (Swift strings cannot hold one). */
export function hasLoneSurrogate(s) {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (d >= 0xdc00 && d <= 0xdfff) { i++; continue; }
      return true;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return true;
  }
  return false;
}

/** Whether `value` is an integer the core accepts: exact as a double (decision 12). */
export function isWireInt(value) {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

export class WireFields {
  /** `json` must be a plain object; `code` is the error code of every failure. */
  constructor(json, context, code) {
    if (json === null || typeof json !== 'object' || Array.isArray(json)) {
      throw protocolError(code, `${context} must be an object`);
    }
    this.json = json;
    this.context = context;
    this.code = code;
  }

  /** A failure of this object; a field of the frame itself (context `message`) is named alone. */
  fail(message) {
    return protocolError(this.code, this.context === 'message' ? message : `${this.context}: ${message}`);
  }

  /** The member's value; null counts as missing (JSON.parse keeps the last of duplicate keys, as Swift does). */
  raw(key) {
    if (!Object.prototype.hasOwnProperty.call(this.json, key)) return undefined;
    const value = this.json[key];
    return value === null ? undefined : value;
  }

  int(key) {
    const value = this.optionalInt(key);
    if (value === undefined) throw this.fail(`\`${key}\` is missing`);
    return value;
  }

  optionalInt(key) {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (isWireInt(value)) return value;
    throw this.fail(`\`${key}\` must be an integer`);
  }

  string(key) {
    const value = this.optionalString(key);
    if (value === undefined) throw this.fail(`\`${key}\` is missing`);
    return value;
  }

  optionalString(key) {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (typeof value !== 'string') throw this.fail(`\`${key}\` must be a string`);
    if (hasLoneSurrogate(value)) throw this.fail(`\`${key}\` holds a lone surrogate`);
    return value;
  }

  bool(key) {
    const value = this.raw(key);
    if (typeof value !== 'boolean') {
      throw this.fail(value === undefined ? `\`${key}\` is missing` : `\`${key}\` must be true or false`);
    }
    return value;
  }

  array(key) {
    const value = this.optionalArray(key);
    if (value === undefined) throw this.fail(`\`${key}\` is missing`);
    return value;
  }

  optionalArray(key) {
    const value = this.raw(key);
    if (value === undefined) return undefined;
    if (!Array.isArray(value)) throw this.fail(`\`${key}\` must be an array`);
    return value;
  }

  /** One word of `vocabulary` (a Vocabulary from model.js). */
  word(key, vocabulary) { return WireFields.word(this.string(key), vocabulary, (m) => this.fail(m)); }

  static word(text, vocabulary, fail) {
    if (!vocabulary.has(text)) throw fail(`'${text}' is not a ${vocabulary.name}`);
    return text;
  }

  /** A set of words: strings, no duplicates; returned in vocabulary order. */
  words(key, vocabulary) {
    const seen = new Set();
    for (const element of this.array(key)) {
      if (typeof element !== 'string') throw this.fail(`\`${key}\` must hold strings`);
      WireFields.word(element, vocabulary, (m) => this.fail(m));
      if (seen.has(element)) throw this.fail(`\`${key}\` lists '${element}' twice`);
      seen.add(element);
    }
    return vocabulary.sorted(seen);
  }
}
