// Skip reports and other happenings as sentences for a person reading the page (the web twin of
// Sources/PeopleClient/ReportText.swift, with fields in words: "Your change to Bob's hair colour was
// overwritten by bob").

/** Fields in words, as a sentence names them. */
export const fieldWords = Object.freeze({
  name: 'name',
  hairColor: 'hair colour',
  hairLength: 'hair length',
  eyeColor: 'eye colour',
  glasses: 'glasses',
  position: 'place in the list',
  facialHair: 'facial hair',
  preference: 'likes',
});

const capitalised = (s) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * A skip report ({reason, tag, field?, style?, topic?, by?}) as one sentence. `nameOf(tag)` gives the
 * person's name when it is still known (else the sentence says "tag N").
 */
export function reportSentence(report, nameOf) {
  const name = nameOf(report.tag);
  const who = name ? name : `tag ${report.tag}`;
  let what;
  if (report.style != null) what = `${who}'s facial hair (${report.style})`;
  else if (report.topic != null) what = `${who}'s opinion on ${report.topic}`;
  else if (report.field != null) what = `${who}'s ${fieldWords[report.field] ?? report.field}`;
  else what = who;
  const by = report.by != null ? ` by ${report.by}` : '';
  let sentence;
  switch (report.reason) {
    case 'overwritten':
      // No field: a person the undo would put back is there already (a teammate restored them).
      if (report.field == null && report.style == null && report.topic == null) {
        sentence = `${who} was already back${report.by != null ? ` (restored by ${report.by})` : ''}`;
      } else {
        sentence = `your change to ${what} was overwritten${by}`;
      }
      break;
    case 'targetRemoved': sentence = `${who} was removed${by}`; break;
    case 'editedByOthers': sentence = `${who} was edited${by} since you added them`; break;
    case 'invariant': sentence = `your change to ${what} no longer fits (the name would be too long)`; break;
    case 'expired': sentence = `your change to ${who} is too old to undo`; break;
    default: sentence = `part of your change to ${who} was skipped`; break;
  }
  return capitalised(sentence);
}

/** Several reports as one notice: their sentences, each once, joined. */
export function reportsText(reports, nameOf) {
  const sentences = [];
  for (const r of reports) {
    const s = reportSentence(r, nameOf);
    if (!sentences.includes(s)) sentences.push(s);
  }
  return sentences.join('. ');
}

/** A teammate's revision in a few words: "bob: Change Hair Color", "bob undid: Toggle Glasses". */
export function remoteText({ author, kind, label }) {
  const what = label ?? 'a change';
  if (kind === 'undo') return `${author} undid: ${what}`;
  if (kind === 'redo') return `${author} redid: ${what}`;
  return `${author}: ${what}`;
}

/** A refusal from the hub ({code, message}) as a sentence. */
export function errorText({ code, message }) {
  switch (code) {
    case 'room-full': return `Not saved: ${message}`;
    case 'rate-limited': return 'Too many changes at once; the hub dropped one. Try again in a moment.';
    case 'forbidden': return 'You can look but not edit in this room.';
    case 'server-error': return `The hub failed: ${message}`;
    default: return `The hub refused a change: ${message}`;
  }
}
