// A person drawn as a small face: inline SVG built from their hair colour and length, eye colour,
// glasses and facial hair, so a change (yours or a teammate's) is seen, not read.
//
// faceSVG(person, size) returns SVG markup. Every value drawn comes from the closed vocabularies
// (PROTOCOL.md), never from free text, so the markup needs no escaping; unknown values fall back to
// neutral colours.

const HAIR = {
  black: "#2b2118", brown: "#6b4226", blonde: "#e3c16f", red: "#b5452b", gray: "#9a9a9a", white: "#ecebe6",
};
const EYES = {
  black: "#1d1d1d", brown: "#5a3a1e", blue: "#3a78c2", green: "#3f8f4f", gray: "#7d8791", hazel: "#8e6b3a",
};
const SKIN = "#f1c9a5";
const LINE = "#3b2a20";

function hairShape(length, colour) {
  // The top of the head is hair for every length but bald; longer hair falls beside the face.
  switch (length) {
    case "bald":
      return "";
    case "short":
      return `<path d="M18 42 Q18 14 50 12 Q82 14 82 42 Q76 26 50 24 Q24 26 18 42Z" fill="${colour}"/>`;
    case "medium":
      return `<path d="M14 60 Q12 12 50 10 Q88 12 86 60 L78 60 Q80 28 50 24 Q20 28 22 60Z" fill="${colour}"/>`;
    case "long":
    default:
      return `<path d="M12 92 Q6 10 50 8 Q94 10 88 92 L76 92 Q82 30 50 24 Q18 30 24 92Z" fill="${colour}"/>`;
  }
}

function facialHairShapes(styles, colour) {
  const parts = [];
  const has = (s) => styles.includes(s);
  if (has("stubble")) {
    parts.push(`<path d="M28 64 Q50 92 72 64 Q66 84 50 86 Q34 84 28 64Z" fill="${colour}" opacity="0.28"/>`);
  }
  if (has("beard")) {
    parts.push(`<path d="M24 58 Q26 94 50 96 Q74 94 76 58 Q70 78 50 80 Q30 78 24 58Z" fill="${colour}"/>`);
  }
  if (has("goatee")) {
    parts.push(`<path d="M43 76 Q50 92 57 76 Q50 80 43 76Z" fill="${colour}"/>`);
  }
  if (has("sideburns")) {
    parts.push(`<rect x="20" y="40" width="6" height="22" rx="3" fill="${colour}"/>`);
    parts.push(`<rect x="74" y="40" width="6" height="22" rx="3" fill="${colour}"/>`);
  }
  if (has("mustache")) {
    parts.push(`<path d="M38 68 Q44 62 50 66 Q56 62 62 68 Q56 70 50 68 Q44 70 38 68Z" fill="${colour}"/>`);
  }
  return parts.join("");
}

/** SVG markup for `person` (wire format), `size` pixels square. */
export function faceSVG(person, size = 48) {
  const hair = HAIR[person.hairColor] ?? "#777";
  const eyes = EYES[person.eyeColor] ?? "#555";
  const styles = Array.isArray(person.facialHair) ? person.facialHair : [];
  const glasses = person.glasses
    ? `<g fill="none" stroke="${LINE}" stroke-width="2.5"><circle cx="38" cy="48" r="8"/><circle cx="62" cy="48" r="8"/>` +
      `<path d="M46 48 L54 48"/></g>`
    : "";
  return (
    `<svg class="face" viewBox="0 0 100 100" width="${size}" height="${size}" aria-hidden="true" focusable="false">` +
    (person.hairLength === "long" || person.hairLength === "medium" ? hairShape(person.hairLength, hair) : "") +
    `<ellipse cx="50" cy="54" rx="30" ry="36" fill="${SKIN}" stroke="${LINE}" stroke-width="1.5"/>` +
    (person.hairLength === "short" || person.hairLength === "bald" ? hairShape(person.hairLength, hair) : "") +
    `<path d="M24 30 Q50 14 76 30 Q66 22 50 22 Q34 22 24 30Z" fill="${person.hairLength === "bald" ? SKIN : hair}"/>` +
    `<circle cx="38" cy="48" r="4" fill="${eyes}"/><circle cx="62" cy="48" r="4" fill="${eyes}"/>` +
    `<path d="M40 74 Q50 80 60 74" fill="none" stroke="${LINE}" stroke-width="2" stroke-linecap="round"/>` +
    facialHairShapes(styles, hair) +
    glasses +
    `</svg>`
  );
}

/** A short description of the face for screen readers ("brown short hair, blue eyes, glasses, beard"). */
export function faceDescription(person) {
  const parts = [
    person.hairLength === "bald" ? "bald" : `${person.hairColor} ${person.hairLength} hair`,
    `${person.eyeColor} eyes`,
  ];
  if (person.glasses) parts.push("glasses");
  for (const style of person.facialHair ?? []) parts.push(style);
  return parts.join(", ");
}
