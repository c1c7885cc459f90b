// The model of a room (port of Sources/PeopleCore/Model/): vocabularies, the name limit, people and
// the ordered list of people keyed by tag.
//
// A person is a plain object in its wire form (PROTOCOL.md), treated as an immutable value (frozen):
//   {tag, name, hairColor, hairLength, eyeColor, glasses, facialHair: [...], likes: [...], dislikes: [...]}
// with the three sets as arrays in vocabulary order, so two equal people have equal fields. Likes and
// dislikes are views of one register per topic: `opinion` / `withOpinion` read and write the register,
// so a topic is never in both (by construction, as in Swift).

import { InvalidOp, ErrorCode } from './errors.js';
import { WireFields } from './fields.js';

/** A closed, ordered vocabulary of protocol version 1. */
export class Vocabulary {
  constructor(name, words) {
    this.name = name;
    this.words = Object.freeze([...words]);
    this.rank = new Map(words.map((w, i) => [w, i]));
    Object.freeze(this);
  }

  has(word) { return this.rank.has(word); }

  /** The words of an iterable, deduplicated, in vocabulary order. */
  sorted(words) {
    return [...new Set(words)].sort((a, b) => this.rank.get(a) - this.rank.get(b));
  }
}

export const HairColor = new Vocabulary('hairColor', ['black', 'brown', 'blonde', 'red', 'gray', 'white']);
export const HairLength = new Vocabulary('hairLength', ['bald', 'short', 'medium', 'long']);
export const EyeColor = new Vocabulary('eyeColor', ['black', 'brown', 'blue', 'green', 'gray', 'hazel']);
export const FacialHairStyle = new Vocabulary('facialHair', ['mustache', 'beard', 'goatee', 'sideburns', 'stubble']);
export const Topic = new Vocabulary('topic',
  ['sports', 'music', 'movies', 'books', 'travel', 'food', 'art', 'weather', 'politics', 'technology']);
/** The value of one topic's register. */
export const Opinion = new Vocabulary('preference', ['like', 'dislike', 'none']);

/** The scalar fields settable with `set`, and the vocabulary of each (null: name is text, glasses a bool). */
export const Fields = Object.freeze({
  name: null, hairColor: HairColor, hairLength: HairLength, eyeColor: EyeColor, glasses: null,
});
export const fieldNames = Object.freeze(Object.keys(Fields));
export function isField(field) { return Object.prototype.hasOwnProperty.call(Fields, field); }

// MARK: Text

/** Unicode scalars (code points) of `s`; a lone surrogate counts as one. */
export function scalars(s) { return Array.from(s); }

/** Number of Unicode scalars of `s`. */
export function scalarCount(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/**
 * Whether two strings hold the same Unicode scalars (Swift `String.sameScalars(as:)`): how names, name
 * values and inserted text compare (SEMANTICS §7 reading 7), never by canonical equivalence. So "é" (one
 * scalar) and "e" + U+0301 are different names: an edit from one to the other is a change. (JS strings
 * compare by UTF-16 code units, which for well-formed strings is comparing code points.)
 */
export function sameText(a, b) {
  return a === b;
}

/** The name rule of SEMANTICS §1: at most 200 UTF-8 bytes, measured on the name's NFC form. */
export const NameLimit = Object.freeze({
  maxUTF8Bytes: 200,
  /**
   * The most Unicode scalars a name within the limit can have as stored (Swift `NameLimit.maxScalars`):
   * only the NFC form is measured, and a composed character of b bytes stands for at most 1.5 b scalars
   * (U+01D5 is U+0055 U+0308 U+0304), so 200 bytes are at most 300; twice the bytes leaves room.
   */
  maxScalars: 400,

  /** UTF-8 length of the NFC form of `name`. */
  nfcByteCount(name) {
    // Fast path: ASCII is already NFC.
    if (/^[\x00-\x7f]*$/.test(name)) return name.length;
    return utf8Length(name.normalize('NFC'));
  },

  allows(name) { return NameLimit.nfcByteCount(name) <= NameLimit.maxUTF8Bytes; },
});

function utf8Length(s) {
  let n = 0;
  for (const ch of s) {
    const c = ch.codePointAt(0);
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  return n;
}

// MARK: People

/** A person from its fields (defaults as Swift's `Person.init`); sets are normalised. */
export function makePerson({
  tag, name, hairColor = 'brown', hairLength = 'short', eyeColor = 'brown', glasses = false,
  facialHair = [], likes = [], dislikes = [],
}) {
  const liked = new Set(likes);
  return freezePerson({
    tag, name, hairColor, hairLength, eyeColor, glasses,
    facialHair: FacialHairStyle.sorted(facialHair),
    likes: Topic.sorted(likes),
    // One register per topic: like wins, as in Swift's init (dislikes first, then likes).
    dislikes: Topic.sorted(dislikes).filter((t) => !liked.has(t)),
  });
}

function freezePerson(p) {
  Object.freeze(p.facialHair);
  Object.freeze(p.likes);
  Object.freeze(p.dislikes);
  return Object.freeze(p);
}

/** A copy of `person` with some fields replaced (sets given in vocabulary order). */
export function withFields(person, changes) {
  return freezePerson({ ...person, ...changes });
}

/**
 * Reads a person; every field is required, elements listed once, no topic in both sets
 * (Swift `Person(json:code:)`). The name limit is not checked here (apply checks it).
 */
export function parsePerson(json, code = ErrorCode.invalidOp) {
  const f = new WireFields(json, 'person', code);
  const tag = f.int('tag');
  if (!(tag > 0)) throw f.fail('tag must be positive');
  const likes = f.words('likes', Topic);
  const dislikes = f.words('dislikes', Topic);
  const both = likes.find((t) => dislikes.includes(t));
  if (both !== undefined) throw f.fail(`'${both}' is in both likes and dislikes`);
  return makePerson({
    tag, name: f.string('name'), hairColor: f.word('hairColor', HairColor),
    hairLength: f.word('hairLength', HairLength), eyeColor: f.word('eyeColor', EyeColor),
    glasses: f.bool('glasses'), facialHair: f.words('facialHair', FacialHairStyle), likes, dislikes,
  });
}

/** The person's wire form (a fresh plain object, sets in vocabulary order). */
export function personJSON(p) {
  return {
    tag: p.tag, name: p.name, hairColor: p.hairColor, hairLength: p.hairLength, eyeColor: p.eyeColor,
    glasses: p.glasses, facialHair: [...p.facialHair], likes: [...p.likes], dislikes: [...p.dislikes],
  };
}

/** The topic's register: 'like', 'dislike' or 'none'. */
export function opinion(person, topic) {
  if (person.likes.includes(topic)) return 'like';
  if (person.dislikes.includes(topic)) return 'dislike';
  return 'none';
}

/** A copy of `person` with the topic's register written ('none' clears it). */
export function withOpinion(person, topic, value) {
  const likes = person.likes.filter((t) => t !== topic);
  const dislikes = person.dislikes.filter((t) => t !== topic);
  if (value === 'like') likes.push(topic);
  if (value === 'dislike') dislikes.push(topic);
  return withFields(person, { likes: Topic.sorted(likes), dislikes: Topic.sorted(dislikes) });
}

/** Whether two values of `field` are equal (names by code points, as Swift's `FieldValue ==`). */
export function sameValue(field, a, b) {
  return field === 'name' ? (typeof a === 'string' && typeof b === 'string' && sameText(a, b)) : a === b;
}

function sameWords(a, b) {
  return a.length === b.length && a.every((w, i) => w === b[i]);
}

/** Person equality as Swift's `Person ==` (names by code points, sets as sets). */
export function samePerson(a, b) {
  if (a === b) return true;
  if (!a || !b) return false;
  return a.tag === b.tag && sameText(a.name, b.name) && a.hairColor === b.hairColor
    && a.hairLength === b.hairLength && a.eyeColor === b.eyeColor && a.glasses === b.glasses
    && sameWords(a.facialHair, b.facialHair) && sameWords(a.likes, b.likes) && sameWords(a.dislikes, b.dislikes);
}

/**
 * The authoritative state of one room: an ordered list of people keyed by tag.
 * Index lookups are linear in the number of people (rooms hold tens to hundreds).
 */
export class PeopleModel {
  /** `people`: persons (already valid values); tags must be unique. */
  constructor(people = []) {
    this.people = [...people];
    const seen = new Set();
    for (const p of this.people) {
      if (seen.has(p.tag)) throw new InvalidOp(`tag ${p.tag} twice`);
      seen.add(p.tag);
    }
  }

  /** A model from the wire form of its people (validating each). */
  static fromJSON(list, code = ErrorCode.invalidOp) {
    return new PeopleModel(list.map((p) => parsePerson(p, code)));
  }

  get count() { return this.people.length; }
  get tags() { return this.people.map((p) => p.tag); }
  /** The person with `tag`, or undefined. */
  get(tag) { return this.people.find((p) => p.tag === tag); }
  /** The index of `tag`, or -1. */
  indexOf(tag) { return this.people.findIndex((p) => p.tag === tag); }
  contains(tag) { return this.indexOf(tag) >= 0; }
  /** An independent copy (people are immutable values, so the list is all that is copied). */
  clone() { return new PeopleModel(this.people); }
  toJSON() { return this.people.map(personJSON); }

  /** Whether two models hold equal people in the same order. */
  equals(other) {
    return this.people.length === other.people.length && this.people.every((p, i) => samePerson(p, other.people[i]));
  }

  /**
   * Checks every invariant of SEMANTICS §1 and returns the first one broken (a description), if any:
   * tags positive and unique, names within the limit, no topic both liked and disliked.
   */
  invariantViolation() {
    const seen = new Set();
    for (const p of this.people) {
      if (!(p.tag > 0)) return `tag ${p.tag} is not positive`;
      if (seen.has(p.tag)) return `tag ${p.tag} twice`;
      seen.add(p.tag);
      if (!NameLimit.allows(p.name)) return `name of ${p.tag} is over ${NameLimit.maxUTF8Bytes} bytes`;
      if (p.likes.some((t) => p.dislikes.includes(t))) return `a topic of ${p.tag} is both liked and disliked`;
    }
    return null;
  }

  /** The neighbours of the person at `index`: {before, after}, tags or null. */
  neighbours(index) {
    return {
      before: index > 0 ? this.people[index - 1].tag : null,
      after: index + 1 < this.people.length ? this.people[index + 1].tag : null,
    };
  }

  /** The seed people of the People Keeper tutorial (Bob, Joan and Sam), tags 1…3. */
  static tutorialSeed() {
    return new PeopleModel([
      makePerson({ tag: 1, name: 'Bob', hairColor: 'brown', hairLength: 'short', eyeColor: 'blue', glasses: true,
        facialHair: ['beard'], likes: ['sports', 'food'], dislikes: ['politics'] }),
      makePerson({ tag: 2, name: 'Joan', hairColor: 'red', hairLength: 'long', eyeColor: 'green', glasses: false,
        facialHair: [], likes: ['books', 'art'], dislikes: ['sports'] }),
      makePerson({ tag: 3, name: 'Sam', hairColor: 'black', hairLength: 'medium', eyeColor: 'brown', glasses: false,
        facialHair: ['mustache', 'stubble'], likes: ['music', 'technology'], dislikes: ['weather'] }),
    ]);
  }
}
