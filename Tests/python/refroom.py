"""An independent reference model of ONE PeopleKeeper room, written from the product contract alone
(shared/spec/SEMANTICS.md and PROTOCOL.md; §7 "Settled readings" override the earlier sections).
No hub code was read. test_differential.py plays the same random script against the hub and this model.

The model is deliberately naive: it keeps every revision, every applied diff ("step") with the lists and
names around it, and recomputes what it needs by walking that history. Each rule cites the contract.

Where the contract left me a choice, this is the reading taken (A1..A14, B1..B10). Where I could not choose,
the model raises `Ambiguous` and the driver simply does not send that request (A1, A2, part of A14, B8;
B9 once, settled since).
Readings marked "(hub's)" were first read otherwise here; the hub's reading was taken after checking it
is as good a reading of the words (never to make a hub departure go away).

A1  §3.6 vs §7.4. §3.6: "if concurrent typing would push a name over the limit, the later batch is
    invalid-op"; §7.4: validity (incl. "a rebased name over the limit") is decided at the batch's base
    and "the same batch on the same base gets the same verdict whatever teammates did meanwhile". A
    batch valid at its base whose rebased text would push the name over 200 bytes therefore has no
    verdict the contract names (invalid-op would contradict §7.4, applying it breaks §1). -> Ambiguous.
A2  Undo of a `remove` whose person is already back (§2 table: "else it is a no-op"): which report, if
    any, is not said (no reason in §4's list fits). -> Ambiguous (nearly unreachable: only the remover's
    own undo can bring a removed person back).
A3  "Positions" (§3.3, §2 clamps): a gap is an index in the list as the diff saw it; `insert.at` is
    clamped to 0..count and `move.to` to 0..count-1 in the batch's context (base + the batch's earlier
    diffs), then transformed. A move's `to` is a gap in the list WITHOUT the moved person. Transform of a
    gap past an applied insert at gap q: q <= p -> p+1 (applied first at an equal gap); past an applied
    remove at index q: q < p -> p-1; an applied move = remove then insert, even when it looks like a
    no-op once the incoming diff's own person is left out. A batch's diffs are rebased as a sequence
    (the usual OT grid: the applied diffs are carried past the batch's earlier diffs).
A4  §3.7 "every diff that §3 turns into a no-op is reported": only `targetRemoved` (rule 2) and the
    `text`-after-`set(name)` case (rule 6) turn a diff into a no-op. A `text` whose characters a teammate
    already deleted, or a set to a value a teammate already wrote, "writes the value already there": it is
    dropped from the ops as applied WITHOUT a report. A submitted text diff whose name was replaced by a
    `set` and whose person was then removed reports `overwritten`: §3 transforms over the applied batches
    in order, and the first rule that makes the diff a no-op names it (a person is removed after the set
    that overwrote a text, never before, unless restored in between). (hub's; first read: `targetRemoved`.)
A5  Undo guards, "since": every write after the diff being inverted. The insert guard ("nobody else has
    edited that person") counts every applied diff naming the tag by another user, of any kind (edit,
    undo, redo). The move guard ("nobody else has moved that person") counts only `move` diffs (any kind)
    by another user; a teammate putting a removed person back (undo of remove) is not a move. The set /
    facialHair / preference guards are §2's value check plus §7.2 (last write by another user's edit or
    redo fails it). An absent person is reported `targetRemoved` before any guard is looked at.
A6  Writers (for `by`): an insert (or re-insert) writes every scalar field, every listed facialHair style
    and liked / disliked topic, and the position (as shared/spec/HISTORY.md §5 puts it); a move writes the
    position; set / facialHair / preference / text write their cell. `by` is the latest writer of that
    cell (for `targetRemoved`: the latest remover; for `editedByOthers`: the latest other user who wrote
    anything on the person). The seed is nobody's: `by` would be absent.
A7  Undo placing (§4, §7.5) is evaluated part by part, at application: previous neighbour if present,
    else next neighbour if present, else the original gap rebased over every positional change SINCE
    the inverted diff (the later diffs of its own batch, every later revision, and this undo's parts
    applied so far - so a skipped part shifts nothing). No edit / revert cancellation for positions.
A8  Text inverse rebasing (§4, §7.3): the inverse is transformed over every later change of that name
    (later diffs of its batch, later revisions, this undo's earlier parts) after taking out, bracket
    fashion, every change directly followed (on that name) by its own revert (an undo part reverting it,
    or a redo part reverting that undo part); whole-name `set`s take part in this too. A remaining `set`
    in that sequence makes the part a no-op reported `overwritten` (field `name`), under both policies.
    Incoming submits are rebased WITHOUT this cancellation (§7.3 speaks of text inverses only).
    "Equal positions: the applied one goes first" is about where inserts land: an applied edit spelled
    [delete 1, insert "x"] at position p still puts its "x" before an incoming insert at p.
A9  "Tags it touched" (§4, for `scope`): the tags named by the entry's diffs AS APPLIED.
A10 An undo whose parts apply but leave the model identical is "consumed" with no revision and nothing
    pushed on the redo stack (§4 "changes nothing"). `undone.label` ("label?") with a revision is the
    label of the entry that made it; without a revision the contract does not say, so the reply lists the
    consumed entries' labels ("consumed_labels") and the driver accepts no label or one of those.
A11 A batch that "changes nothing" (§7.1) = every diff, applied in order, is a no-op or writes what is
    there; its ack is at the current revision with `ops: []` (no history change).
A12 `text` components are {"retain": n} / {"insert": s} / {"delete": n} with n >= 1 and s non-empty;
    comparisons of ops as applied are made on a canonical form (adjacent runs merged, deletes before
    inserts at one position, trailing retain dropped), since the wire form of a transformed edit is the
    hub's to choose.
A13 "Writes" are the revisions already applied when the request is handled: the parts an undo has
    applied earlier in the same (still unfinished) revision are not yet on record. So `by` names the
    latest writer among applied revisions, and §7.2's "last write since the entry" is looked for there
    too. The value checks of the guards, though, see the parts applied so far (an entry [set red,
    set blonde] undoes to the original colour). (hub's; first read: the parts count as writes.)
A14 Coalescing (§4) is modelled for a window that never closes (the driver runs such hubs with
    undo.coalesceMillis 3600000, so the hub's clock cannot matter): a batch that makes a revision
    joins the user's current run when it has the run's key; any undo / redo request, or a batch making
    a revision with another key or none, ends the run. A batch that changes nothing (or is refused)
    leaves the run alone ("the user's own batches that change nothing do not break a run") - unless it
    carries another key while a run is open: "a batch with another key or none does [break it]"
    contradicts that, so that case is Ambiguous.

HISTORY.md (shared/spec/HISTORY.md: entry ids, selective undo, restore, log, blame) - readings B1..B10:
B1  A restore is a write like an edit: for SEMANTICS §7.2 (a plain undo's set / facialHair / preference guard
    fails when the last write since the entry was another user's edit or redo) a teammate's restore counts
    too ("a restore clears the user's redo stack like any edit"; HISTORY §5 "restore revisions are writes by
    their author").
B2  Entry ids (HISTORY §1) are `Entry.rev`; the revisions an entry covers (for `log`'s `entry` marks) are
    every revision of its steps (a coalesced run: each batch's).
B3  Selective undo (HISTORY §2) guards, "since" = every applied revision after the step being inverted,
    the entry's own steps excepted; this undo's own parts applied so far are not "since" (A13). The
    insert guard counts any diff on the person by anyone (`by` = the latest such user); the set /
    facialHair / preference guard is the value check plus "the latest write since was an edit, redo or
    restore by anyone" (`by` = that writer = the latest writer of the cell). `text` parts as in A8.
    No cascade; an entry that changes nothing is consumed with no revision and nothing pushed (A10).
    A selective undo that ends in an error (`no-entry`, `bad-message`) leaves the coalescing run alone.
B4  (hub's) Moves under selective undo: HISTORY §2 lists no move guard, and "where this page is silent,
    SEMANTICS holds": the move part is skipped only when another user moved the person since (A5). (First
    read: "never undo what came after it, by anyone" -> any later edit / redo / restore move guards.)
B5  Restore batch order (HISTORY §3): removes in the current list's order; re-inserts in r's order, each
    after its r-predecessor (present by then), else (first at r) before its r-successor if present, else
    at its r index (clamped); then, person by person in r's order, `set`s in the order name, hairColor,
    hairLength, eyeColor, glasses, then facialHair styles and preference topics in vocabulary order.
B6  (hub's) "Ties: the one that keeps earlier people": among the longest increasing runs, the one whose
    people, compared in the CURRENT list's order, come earliest (lexicographically smallest positions).
    (First read: earliest in r's order.)
B7  Each moved person goes right after its r-predecessor in the list as it then is (`to` counted without
    the person), or to 0 if it is first at r.
B8  A restore that changes nothing while the user's coalescing run is open: whether it ends the run is
    not said (a restore is not a batch) -> Ambiguous. One that changes something ends it (a revision
    with no key), clears redo, and pushes one entry.
B9  A re-insert (only a restore can do it) under another name than the person had when removed is a
    whole-name write: an incoming stale `text` on that name becomes a no-op reported `overwritten` (§3.6;
    §7.4 forbids refusing it). A TEXT INVERSE whose path crosses such a re-insert: whether it is
    `overwritten` (§3.6) or rebased anyway ("a text part is never skipped") is not said; this was
    Ambiguous here until the project settled it (its decision 19: `overwritten`, as across a whole-name
    `set`, A8 - the characters that entry typed are not in the new name). The model now follows that
    decision, so the driver sends these undos too.
B10 Blame (HISTORY §5): the cells an insert / re-insert writes are exactly A6's (every scalar, the
    LISTED facialHair styles and liked / disliked topics, the position); "only the elements ever
    written" keeps an element written before a re-insert that does not list it, with its old writer.
    `log` with `before` <= 0 lists nothing; `tag` / `before` / `limit` of the wrong type are bad-message.

Not modelled (the driver never does these): viewers (`forbidden` for restore), hub-side times (the
driver checks them itself: HISTORY §1), expiry (`expired`, rooms.keptRevisions), a coalescing window
that can close, room / rate limits, lone surrogates, reconnects.

The corners where the hub once departed from the contract (the brief's (a)-(d), all fixed) are marked on
results as `hazards`, so a run can say how often it reached them:
  "a" a batch invalid at its base (§7.4): stale and invalid for a span / limit / absent tag, or naming a
      person the batch itself removed; "b" an undo / redo move placed with both old neighbours gone
      (§7.5); "c" a text diff with `edits: []` or only retains (§7.6); "d" a normalization-only text
      edit (§7.7).
"""

from __future__ import annotations

import unicodedata

HAIR_COLORS = ["black", "brown", "blonde", "red", "gray", "white"]
HAIR_LENGTHS = ["bald", "short", "medium", "long"]
EYE_COLORS = ["black", "brown", "blue", "green", "gray", "hazel"]
FACIAL_HAIR = ["mustache", "beard", "goatee", "sideburns", "stubble"]
TOPICS = ["sports", "music", "movies", "books", "travel", "food", "art", "weather", "politics", "technology"]
ENUMS = {"hairColor": HAIR_COLORS, "hairLength": HAIR_LENGTHS, "eyeColor": EYE_COLORS}
SCALARS = ("name", "hairColor", "hairLength", "eyeColor", "glasses")
PERSON_KEYS = ("tag", "name", "hairColor", "hairLength", "eyeColor", "glasses", "facialHair", "likes", "dislikes")
NAME_LIMIT = 200  # §1: UTF-8 bytes of the NFC form


class Invalid(Exception):
    """The batch is `invalid-op` (§2's list). `kind` says which rule (for the hazard marks)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class Ambiguous(Exception):
    """The contract does not decide this case (see the notes above); the driver avoids it."""


class ModelBug(AssertionError):
    """The model's own bookkeeping broke (never the hub's fault)."""


def name_bytes(s: str) -> int:
    """§1 / §7: a name's size is measured on its NFC form."""
    return len(unicodedata.normalize("NFC", s).encode("utf-8"))


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _has_lone_surrogate(s: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in s)


# ---------------------------------------------------------------------------------------------------
# Text edits (PROTOCOL "Diffs": retain / insert / delete over code points; the rest is retained)
# A component list is [("r", n) | ("i", s) | ("d", n)].
# ---------------------------------------------------------------------------------------------------

def text_span(comps) -> int:
    return sum(n for k, n in comps if k in ("r", "d"))


def text_full(comps, length: int):
    """The same edit spelled out over the whole name (an explicit trailing retain)."""
    rest = length - text_span(comps)
    if rest < 0:
        raise ModelBug(f"text edit {comps} longer than its name ({length})")
    return list(comps) + ([("r", rest)] if rest else [])


def text_apply(name: str, comps) -> str:
    out, pos = [], 0
    for k, v in comps:
        if k == "r":
            out.append(name[pos:pos + v])
            pos += v
        elif k == "i":
            out.append(v)
        else:
            pos += v
    if pos > len(name):
        raise ModelBug(f"text edit {comps} past the end of {name!r}")
    out.append(name[pos:])
    return "".join(out)


def text_invert(comps, name: str):
    """The inverse edit, on the name the edit produced."""
    inv, pos = [], 0
    for k, v in text_full(comps, len(name)):
        if k == "r":
            inv.append(("r", v))
            pos += v
        elif k == "i":
            inv.append(("d", len(v)))
        else:
            inv.append(("i", name[pos:pos + v]))
            pos += v
    return inv


def text_transform(a, b):
    """TP1 transform of two full-length edits of one name (§3.6): returns (a', b') with b·a' == a·b'.
    At an equal position b's insert goes first (b is the one the hub applied earlier)."""
    a, b = [list(c) for c in _inserts_first(a)], [list(c) for c in _inserts_first(b)]
    ai = bi = 0
    a2, b2 = [], []
    while ai < len(a) or bi < len(b):
        if bi < len(b) and b[bi][0] == "i":
            b2.append(("i", b[bi][1]))
            a2.append(("r", len(b[bi][1])))
            bi += 1
            continue
        if ai < len(a) and a[ai][0] == "i":
            a2.append(("i", a[ai][1]))
            b2.append(("r", len(a[ai][1])))
            ai += 1
            continue
        if ai >= len(a) or bi >= len(b):
            raise ModelBug(f"text transform of edits of different lengths: {a} / {b}")
        (ka, na), (kb, nb) = a[ai], b[bi]
        m = min(na, nb)
        if ka == "r" and kb == "r":
            a2.append(("r", m))
            b2.append(("r", m))
        elif ka == "d" and kb == "r":
            a2.append(("d", m))
        elif ka == "r" and kb == "d":
            b2.append(("d", m))
        # delete / delete: both already gone
        a[ai][1] -= m
        b[bi][1] -= m
        if a[ai][1] == 0:
            ai += 1
        if b[bi][1] == 0:
            bi += 1
    return _merge(a2), _merge(b2)


def _inserts_first(comps):
    """The same edit with, at each position, its insert before its delete: "at an equal position" is
    about where an insert lands, not about the order the components happen to be spelled in."""
    out, run = [], []

    def flush():
        out.extend([c for c in run if c[0] == "i"] + [c for c in run if c[0] == "d"])
        run.clear()

    for c in comps:
        if c[0] == "r":
            flush()
            out.append(c)
        else:
            run.append(c)
    flush()
    return _merge(out)


def _merge(comps):
    out = []
    for k, v in comps:
        if (k != "i" and v == 0) or (k == "i" and v == ""):
            continue
        if out and out[-1][0] == k:
            out[-1] = (k, out[-1][1] + v)
        else:
            out.append((k, v))
    return out


def text_canon(comps) -> tuple:
    """A canonical spelling (A12): runs merged, at one position the delete before the insert, no
    trailing retain."""
    out = []
    dl, ins = 0, ""

    def flush():
        nonlocal dl, ins
        if dl:
            out.append(("d", dl))
        if ins:
            out.append(("i", ins))
        dl, ins = 0, ""

    for k, v in comps:
        if k == "r":
            flush()
            if out and out[-1][0] == "r":
                out[-1] = ("r", out[-1][1] + v)
            else:
                out.append(("r", v))
        elif k == "d":
            dl += v
        else:
            ins += v
    flush()
    while out and out[-1][0] == "r":
        out.pop()
    return tuple(out)


def text_to_wire(comps) -> list:
    key = {"r": "retain", "i": "insert", "d": "delete"}
    return [{key[k]: v} for k, v in text_canon(comps)]


def text_from_wire(edits) -> list:
    """Parse `edits` (Invalid on anything PROTOCOL rules out)."""
    if not isinstance(edits, list):
        raise Invalid("shape", "text edits must be a list")
    comps = []
    for e in edits:
        if not isinstance(e, dict) or len(e) != 1:
            raise Invalid("shape", f"bad text edit {e!r}")
        (k, v), = e.items()
        if k in ("retain", "delete"):
            if not _is_int(v) or v < 1:
                raise Invalid("shape", f"bad count in {e!r}")
            comps.append(("r" if k == "retain" else "d", v))
        elif k == "insert":
            if not isinstance(v, str) or v == "":
                raise Invalid("shape", f"bad insert in {e!r}")
            if _has_lone_surrogate(v):
                raise Invalid("shape", "lone surrogate")
            comps.append(("i", v))
        else:
            raise Invalid("shape", f"unknown text edit {e!r}")
    return comps


# ---------------------------------------------------------------------------------------------------
# People (§1). Internally: facialHair is a frozenset, likes / dislikes ONE register per topic.
# ---------------------------------------------------------------------------------------------------

def person_from_wire(w) -> dict:
    """§2: an insert must list every person field, no element twice, no topic in both sets."""
    if not isinstance(w, dict):
        raise Invalid("shape", "person must be an object")
    for k in PERSON_KEYS:
        if k not in w:
            raise Invalid("shape", f"person lacks {k}")
    if not _is_int(w["tag"]) or w["tag"] <= 0:
        raise Invalid("shape", "bad tag")
    if not isinstance(w["name"], str) or _has_lone_surrogate(w["name"]):
        raise Invalid("shape", "bad name")
    for f, vocab in ENUMS.items():
        if w[f] not in vocab or not isinstance(w[f], str):
            raise Invalid("shape", f"bad {f}")
    if not isinstance(w["glasses"], bool):
        raise Invalid("shape", "bad glasses")
    for f, vocab in (("facialHair", FACIAL_HAIR), ("likes", TOPICS), ("dislikes", TOPICS)):
        v = w[f]
        if not isinstance(v, list) or any(not isinstance(x, str) or x not in vocab for x in v) or len(set(v)) != len(v):
            raise Invalid("shape", f"bad {f}")
    if set(w["likes"]) & set(w["dislikes"]):
        raise Invalid("shape", "a topic in both likes and dislikes")
    prefs = {t: "like" for t in w["likes"]}
    prefs.update({t: "dislike" for t in w["dislikes"]})
    return {"tag": w["tag"], "name": w["name"], "hairColor": w["hairColor"], "hairLength": w["hairLength"],
            "eyeColor": w["eyeColor"], "glasses": w["glasses"], "facialHair": frozenset(w["facialHair"]),
            "prefs": prefs}


def person_to_wire(p) -> dict:
    return {"tag": p["tag"], "name": p["name"], "hairColor": p["hairColor"], "hairLength": p["hairLength"],
            "eyeColor": p["eyeColor"], "glasses": p["glasses"],
            "facialHair": [s for s in FACIAL_HAIR if s in p["facialHair"]],
            "likes": [t for t in TOPICS if p["prefs"].get(t) == "like"],
            "dislikes": [t for t in TOPICS if p["prefs"].get(t) == "dislike"]}


def copy_person(p) -> dict:
    q = dict(p)
    q["prefs"] = dict(p["prefs"])
    return q


def copy_people(people) -> list:
    return [copy_person(p) for p in people]


def find(people, tag):
    for i, p in enumerate(people):
        if p["tag"] == tag:
            return i
    return -1


def _clamp(v, lo, hi):
    return max(lo, min(v, hi))


# ---------------------------------------------------------------------------------------------------
# Diffs as sent (§2, PROTOCOL "Diffs")
# ---------------------------------------------------------------------------------------------------

def parse_diff(w) -> dict:
    """Structural checks only (the ones that need no model). Raises Invalid."""
    if not isinstance(w, dict) or not isinstance(w.get("op"), str):
        raise Invalid("shape", f"not a diff: {w!r}")
    op = w["op"]
    if op == "insert":
        if not _is_int(w.get("at")) or w["at"] < 0:
            raise Invalid("shape", "insert needs at >= 0")
        p = person_from_wire(w.get("person"))
        return {"op": "insert", "tag": p["tag"], "at": w["at"], "person": p}
    if op not in ("remove", "move", "set", "facialHair", "preference", "text"):
        raise Invalid("shape", f"unknown op {op!r}")
    if not _is_int(w.get("tag")):
        raise Invalid("shape", "missing tag")
    d = {"op": op, "tag": w["tag"]}
    if op == "move":
        if not _is_int(w.get("to")) or w["to"] < 0:
            raise Invalid("shape", "move needs to >= 0")
        d["to"] = w["to"]
    elif op == "set":
        f, v = w.get("field"), w.get("value")
        if f == "name":
            ok = isinstance(v, str) and not _has_lone_surrogate(v)
        elif f == "glasses":
            ok = isinstance(v, bool)
        elif f in ENUMS:
            ok = isinstance(v, str) and v in ENUMS[f]
        else:
            raise Invalid("shape", f"unknown field {f!r}")
        if not ok:
            raise Invalid("shape", f"bad value for {f}")
        d.update(field=f, value=v)
    elif op == "facialHair":
        if w.get("style") not in FACIAL_HAIR or not isinstance(w.get("present"), bool):
            raise Invalid("shape", "bad facialHair diff")
        d.update(style=w["style"], present=w["present"])
    elif op == "preference":
        if w.get("topic") not in TOPICS or w.get("value") not in ("like", "dislike", "none"):
            raise Invalid("shape", "bad preference diff")
        d.update(topic=w["topic"], value=w["value"])
    elif op == "text":
        d["comps"] = text_from_wire(w.get("edits"))
    return d


# ---------------------------------------------------------------------------------------------------
# The room
# ---------------------------------------------------------------------------------------------------

def _op_tag(o) -> int | None:
    """The tag a wire op names (HISTORY §4's `tag` filter)."""
    if o.get("op") == "insert":
        return o["person"]["tag"]
    return o.get("tag")


def _lis_keep(cur: list, tpos: dict) -> list:
    """HISTORY §3 / B6: a longest run of `cur` already in the target's relative order (a longest
    increasing subsequence of target positions); among the longest, the one that keeps the earliest
    people of the current list (its positions in `cur`, compared in order, lexicographically smallest)."""
    seq = [tpos[t] for t in cur]
    n = len(seq)
    best = [None] * n            # best[i]: the preferred longest increasing run STARTING at i (indices)
    for i in range(n - 1, -1, -1):
        cand = [i]
        for j in range(i + 1, n):
            if seq[j] > seq[i]:
                c = [i] + best[j]
                if len(c) > len(cand) or (len(c) == len(cand) and c < cand):
                    cand = c
        best[i] = cand
    top = []
    for b in best:
        if len(b) > len(top) or (len(b) == len(top) and b < top):
            top = b
    return [cur[i] for i in top]


class Step:
    """One applied diff (an op as applied) of one revision, with what undo needs (captured at apply
    time, §2's third column) and the lists / names around it."""

    def __init__(self, sid, rev, user, kind, op, before, after, inv, cells, reverts, name_op):
        self.id, self.rev, self.user, self.kind = sid, rev, user, kind
        self.op = op                  # resolved diff (internal form)
        self.tag = op["tag"]
        self.before, self.after = before, after   # tuples of tags around it
        self.inv = inv                # the inverse, captured at apply time
        self.cells = cells            # what it wrote (A6)
        self.reverts = reverts        # id of the step this undo / redo part reverts
        self.name_op = name_op        # ("text", full comps) / ("set", value) / None
        self.pos = op["op"] if op["op"] in ("insert", "remove", "move") else None

    def wire(self) -> dict:
        o = self.op
        if o["op"] == "insert":
            return {"op": "insert", "at": o["at"], "person": person_to_wire(o["person"])}
        if o["op"] == "remove":
            return {"op": "remove", "tag": o["tag"]}
        if o["op"] == "move":
            return {"op": "move", "tag": o["tag"], "to": o["to"]}
        if o["op"] == "set":
            return {"op": "set", "tag": o["tag"], "field": o["field"], "value": o["value"]}
        if o["op"] == "facialHair":
            return {"op": "facialHair", "tag": o["tag"], "style": o["style"], "present": o["present"]}
        if o["op"] == "preference":
            return {"op": "preference", "tag": o["tag"], "topic": o["topic"], "value": o["value"]}
        return {"op": "text", "tag": o["tag"], "edits": text_to_wire(o["comps"])}

    def __repr__(self):
        return f"<step {self.id} r{self.rev} {self.user}/{self.kind} {self.wire()}>"


class Entry:
    """§4: one undo / redo entry = the steps of one revision of this user, its label, its tags."""

    def __init__(self, rev, label, steps):
        self.rev, self.label, self.steps = rev, label, list(steps)
        self.tags = {s.tag for s in steps}   # A9

    @property
    def id(self) -> int:
        """HISTORY §1: the revision of the first revision it recorded."""
        return self.rev

    @property
    def revs(self) -> set:
        """HISTORY §4: the revisions that belong to this entry (a coalesced run: every batch's)."""
        return {self.rev} | {s.rev for s in self.steps}

    def extend(self, steps):
        """§4 coalescing: a later batch of the run joins the entry (the first batch's label stays)."""
        self.steps.extend(steps)
        self.tags |= {s.tag for s in steps}

    def __repr__(self):
        return f"<entry {self.id} {self.label!r} tags={sorted(self.tags)}>"


class _Tx:
    """A revision in the making: a working copy of the people and the steps applied to it so far."""

    def __init__(self, people, next_id, rev):
        self.people = copy_people(people)
        self.steps: list[Step] = []
        self.next_id = next_id
        self.rev = rev


def report(reason, tag, **kw) -> dict:
    r = {"reason": reason, "tag": tag}
    r.update({k: v for k, v in kw.items() if v is not None})
    return r


class Room:
    def __init__(self, seed_people: list, *, conflicts: str = "skip", cascade: bool = True, depth: int = 100):
        assert conflicts in ("skip", "force")
        self.force = conflicts == "force"
        self.cascade = cascade
        self.depth = depth
        self.people = [person_from_wire(p) for p in seed_people]   # §1: the seed is nobody's edit
        self.rev = 0
        self.snapshots = {0: copy_people(self.people)}
        self.revisions = {}             # rev -> {"rev","author","kind","ops","label"?}
        self.steps: list[Step] = []     # every applied diff, in hub order
        self.used_tags = {p["tag"] for p in self.people}
        self.blocks: dict[str, list] = {}
        self.undo_stacks: dict[str, list] = {}
        self.redo_stacks: dict[str, list] = {}
        self.runs: dict[str, tuple] = {}    # user -> (coalesce key, its entry) of the open run (A14)

    # -- plumbing ------------------------------------------------------------------------------------

    def give_block(self, user: str, lo: int, hi: int) -> None:
        """PROTOCOL: welcome.tags is a block reserved for this user's inserts."""
        self.blocks.setdefault(user, []).append((lo, hi))

    def in_blocks(self, user, tag) -> bool:
        return any(lo <= tag <= hi for lo, hi in self.blocks.get(user, []))

    def people_wire(self, rev: int | None = None) -> list:
        src = self.people if rev is None else self.snapshots[rev]
        return [person_to_wire(p) for p in src]

    def history_state(self, user) -> dict:
        """PROTOCOL `history`."""
        u, r = self.undo_stacks.get(user, []), self.redo_stacks.get(user, [])
        h = {"canUndo": bool(u), "canRedo": bool(r)}
        if u and u[-1].label is not None:
            h["undoLabel"] = u[-1].label
        if r and r[-1].label is not None:
            h["redoLabel"] = r[-1].label
        return h

    def _all_steps(self, tx):
        return self.steps + (tx.steps if tx else [])

    def _latest(self, tx, pred):
        for s in reversed(self._all_steps(tx)):
            if pred(s):
                return s
        return None

    def _by_cell(self, tx, tag, cell):
        s = self._latest(None, lambda s: s.tag == tag and cell in s.cells)      # A13: applied revisions
        return s.user if s else None

    def _overwritten(self, tx, tag, cell, user=None, **extra):
        """An `overwritten` report. "_alt" keeps the `by` an older hub gave instead (findings F1, F3,
        since fixed); the driver ignores it: the model's answer is "by"."""
        r = report("overwritten", tag, by=self._by_cell(tx, tag, cell), **extra)
        alt = {}
        s = self._latest(None, lambda s: s.tag == tag and cell in s.cells and not (s.pos == "insert" and s.kind != "edit"))
        if (s.user if s else None) != r.get("by"):
            alt["reinsert-by"] = s.user if s else None          # F1: re-inserts by undo / redo not counted
        if cell[1] == "position" and user is not None:
            s = self._latest(None, lambda s: s.tag == tag and s.pos == "move" and s.user != user)
            if s and s.user != r.get("by"):
                alt["position-by"] = s.user                     # F3: the latest OTHER mover
        if alt:
            r["_alt"] = alt
        return r

    def _remover(self, tx, tag):
        s = self._latest(None, lambda s: s.tag == tag and s.pos == "remove")   # A13
        return s.user if s else None

    # -- applying one resolved diff and capturing its inverse (§2) -------------------------------------

    def _apply(self, tx: _Tx, user, kind, op, reverts=None):
        """Apply a resolved diff to tx.people. Returns its Step, or None if it changes nothing (§2:
        such diffs are left out of the ops as applied; §7.7: names compare by code points)."""
        people = tx.people
        before = tuple(p["tag"] for p in people)
        o, tag = op["op"], op["tag"]
        i = find(people, tag)
        cells, name_op = [], None
        if o == "insert":
            p = copy_person(op["person"])
            at = _clamp(op["at"], 0, len(people))
            people.insert(at, p)
            op = dict(op, at=at)
            inv = {"kind": "remove", "tag": tag}
            gone = self._latest(tx, lambda w: w.tag == tag and w.pos == "remove")
            if gone is not None and gone.inv["person"]["name"] != p["name"]:
                name_op = ("set", p["name"])      # B9: a re-insert under another name replaces it whole
            cells = [(tag, f) for f in SCALARS] + [(tag, "fh", s) for s in p["facialHair"]] + \
                    [(tag, "pref", t) for t in p["prefs"]] + [(tag, "position")]
        elif o == "remove":
            p = people.pop(i)
            inv = {"kind": "insert", "tag": tag, "person": copy_person(p), "gap": i,
                   "prev": before[i - 1] if i > 0 else None,
                   "next": before[i + 1] if i + 1 < len(before) else None}
        elif o == "move":
            to = _clamp(op["to"], 0, len(people) - 1)
            if to == i:
                return None
            p = people.pop(i)
            people.insert(to, p)
            op = dict(op, to=to)
            inv = {"kind": "move", "tag": tag, "gap": i,
                   "prev": before[i - 1] if i > 0 else None,
                   "next": before[i + 1] if i + 1 < len(before) else None}
            cells = [(tag, "position")]
        else:
            p = people[i]
            if o == "set":
                old = p[op["field"]]
                if old == op["value"] and type(old) is type(op["value"]):
                    return None
                p[op["field"]] = op["value"]
                inv = {"kind": "set", "tag": tag, "field": op["field"], "old": old, "new": op["value"]}
                cells = [(tag, op["field"])]
                if op["field"] == "name":
                    name_op = ("set", op["value"])
            elif o == "facialHair":
                old = op["style"] in p["facialHair"]
                if old == op["present"]:
                    return None
                p["facialHair"] = (p["facialHair"] | {op["style"]}) if op["present"] else (p["facialHair"] - {op["style"]})
                inv = {"kind": "facialHair", "tag": tag, "style": op["style"], "old": old, "new": op["present"]}
                cells = [(tag, "fh", op["style"])]
            elif o == "preference":
                old = p["prefs"].get(op["topic"], "none")
                if old == op["value"]:
                    return None
                if op["value"] == "none":
                    p["prefs"].pop(op["topic"], None)
                else:
                    p["prefs"][op["topic"]] = op["value"]
                inv = {"kind": "preference", "tag": tag, "topic": op["topic"], "old": old, "new": op["value"]}
                cells = [(tag, "pref", op["topic"])]
            elif o == "text":
                old = p["name"]
                comps = text_full(op["comps"], len(old))
                new = text_apply(old, comps)
                if new == old:
                    return None
                p["name"] = new
                op = dict(op, comps=comps)
                inv = {"kind": "text", "tag": tag, "comps": text_invert(comps, old)}
                cells = [(tag, "name")]
                name_op = ("text", comps)
            else:
                raise ModelBug(o)
        after = tuple(q["tag"] for q in people)
        step = Step(tx.next_id, tx.rev, user, kind, op, before, after, inv, cells, reverts, name_op)
        tx.next_id += 1
        tx.steps.append(step)
        return step

    def _commit(self, tx: _Tx, user, kind, label) -> dict:
        """A new revision (§3: the next revision number, broadcast to everyone else)."""
        self.rev = tx.rev
        self.people = tx.people
        self.steps.extend(tx.steps)
        for s in tx.steps:
            if s.pos == "insert":
                self.used_tags.add(s.tag)
        self.snapshots[self.rev] = copy_people(self.people)
        rec = {"rev": self.rev, "author": user, "kind": kind, "ops": [s.wire() for s in tx.steps]}
        if label is not None:
            rec["label"] = label
        self.revisions[self.rev] = rec
        return rec

    def _push(self, stack, entry):
        """§4: undo.depth bounds each stack (0 = unlimited); older entries fall off the bottom."""
        stack.append(entry)
        if self.depth and len(stack) > self.depth:
            del stack[0]

    # -- positions (§3.3, A3, A7) ----------------------------------------------------------------------

    @staticmethod
    def _shift(p, before, after, z, kind):
        """Carry gap p (in `before`, own person already left out) past one positional change of z
        (§3.3: applied first at an equal gap; positions shift past inserts, removes and moves)."""
        if kind in ("remove", "move"):
            f = before.index(z)
            if f < p:
                p -= 1
        if kind in ("insert", "move"):
            g = after.index(z)
            if g <= p:
                p += 1
        return p

    def _rebase_gap_along(self, gap, own, steps):
        """A7: a gap (in a list without `own`) rebased over real applied steps, in order."""
        for s in steps:
            if s.pos is None or s.tag == own:
                continue                     # §3.3: the own person's moves do not shift its `to`
            b = [t for t in s.before if t != own]
            a = [t for t in s.after if t != own]
            gap = self._shift(gap, b, a, s.tag, s.pos)
        return gap

    @staticmethod
    def _apply_prefix(lst, diffs, gaps, k):
        """The tag list `lst` with the batch's first k positional diffs applied at their gaps."""
        lst = list(lst)
        for i in range(k):
            d = diffs[i]
            if d["op"] == "insert":
                g = gaps[i]
                if not 0 <= g <= len(lst):
                    raise ModelBug(f"insert gap {g} outside {lst}")
                lst.insert(g, d["tag"])
            elif d["op"] in ("remove", "move") and d["tag"] in lst:
                lst.remove(d["tag"])
                if d["op"] == "move":
                    g = gaps[i]
                    if not 0 <= g <= len(lst):
                        raise ModelBug(f"move gap {g} outside {lst}")
                    lst.insert(g, d["tag"])
        return lst

    def _rebase_batch_gaps(self, base_tags, diffs, gaps, applied):
        """A3: every insert / move gap of a batch made on `base_tags`, carried over the applied steps
        (the OT grid, done on tag lists: the applied change as the batch's earlier diffs see it is read
        off the two lists around it)."""
        gaps = list(gaps)
        prev_list = list(base_tags)
        for s in applied:
            if list(s.before) != prev_list:
                raise ModelBug(f"history gap before {s}")
            prev_list = list(s.after)
            if s.pos is None:
                continue
            z = s.tag
            new = list(gaps)
            for k, d in enumerate(diffs):
                if d["op"] not in ("insert", "move"):
                    continue
                own = d["tag"]
                if z == own:
                    continue            # §3.3 two moves of one tag: the later `to` stands
                P = [t for t in self._apply_prefix(s.before, diffs, gaps, k) if t != own]
                Q = [t for t in self._apply_prefix(s.after, diffs, new, k) if t != own]
                if [t for t in P if t != z] != [t for t in Q if t != z]:
                    raise ModelBug(f"grid lists differ beyond {z}: {P} / {Q}")
                prefix_took_z = any(diffs[i]["op"] in ("move", "remove") and diffs[i]["tag"] == z for i in range(k))
                if z in P and z in Q:
                    if s.pos == "move" and not prefix_took_z:
                        new[k] = self._shift(gaps[k], P, Q, z, "move")
                    elif P != Q:
                        raise ModelBug(f"unexpected shift of {z}: {P} / {Q}")
                elif z in P:
                    new[k] = self._shift(gaps[k], P, Q, z, "remove")
                elif z in Q:
                    new[k] = self._shift(gaps[k], P, Q, z, "insert")
            gaps = new
        return gaps

    # -- submit (§2, §3, §7.1, §7.4) ------------------------------------------------------------------

    def submit(self, user: str, base: int, ops: list, label=None, *, coalesce=None, commit=True) -> dict:
        """A batch from `user` made on revision `base`. Returns the reply (`ack` or `error`) as a dict
        without seq, plus "revision" (the broadcast, if one is made) and "hazards"."""
        hazards = set()
        if not 0 <= base <= self.rev:
            raise ModelBug("the driver must respect PROTOCOL's base rule")
        stale = base < self.rev
        run = self.runs.get(user)
        if run is not None and coalesce != run[0]:
            # A14: only decidable once we know whether the batch changes something
            def changes_nothing():
                raise Ambiguous("A14: a batch that changes nothing, with another key, inside a coalescing run")
        else:
            def changes_nothing():
                pass
        try:
            if not isinstance(ops, list):
                raise Invalid("shape", "ops must be a list")
            diffs = [parse_diff(w) for w in ops]
            gaps = self._validate_at_base(user, base, diffs)
        except Invalid as e:
            if e.kind == "removed-in-batch" or (stale and e.kind in ("span", "limit", "absent")):
                hazards.add("a")
            changes_nothing()
            return {"type": "error", "code": "invalid-op", "why": str(e), "hazards": hazards}
        for d in diffs:
            if d["op"] == "text" and not any(k != "r" for k, _ in d["comps"]):
                hazards.add("c")

        applied = [s for s in self.steps if s.rev > base]
        # §3.3 positions, the batch as a sequence over everything applied since base
        base_tags = [p["tag"] for p in self.snapshots[base]]
        gaps = self._rebase_batch_gaps(base_tags, diffs, gaps, applied)
        # §3.6 names: text / set(name) of the batch against the applied ones, in the same grid
        name_ops = {}
        for k, d in enumerate(diffs):
            if d["op"] == "text":
                name_ops[k] = ("text", d["full"])
            elif d["op"] == "set" and d["field"] == "name":
                name_ops[k] = ("set", d["value"])
        for s in applied:
            if s.name_op is None:
                continue
            cur = s.name_op
            for k in sorted(name_ops):
                if diffs[k]["tag"] != s.tag:
                    continue
                mine = name_ops[k]
                if mine == "overwritten" or cur is None:
                    continue
                if mine[0] == "text" and cur[0] == "text":
                    a2, b2 = text_transform(mine[1], cur[1])
                    name_ops[k], cur = ("text", a2), ("text", b2)
                elif mine[0] == "text":          # text against an applied set(name): no-op
                    name_ops[k] = "overwritten"
                else:                            # set(name) wins over a text / earlier set
                    cur = None

        tx = _Tx(self.people, len(self.steps), self.rev + 1)
        reports, d_tags = [], set()
        for k, d in enumerate(diffs):
            tag = d["tag"]
            if name_ops.get(k) == "overwritten":        # §3.6, decided first in hub order (A4)
                reports.append(self._overwritten(tx, tag, (tag, "name"), field="name"))
                continue
            if d["op"] != "insert" and find(tx.people, tag) < 0:
                # §3.2: the person is gone (and not restored): no-op, reported by the remover
                reports.append(report("targetRemoved", tag, by=self._remover(tx, tag)))
                continue
            op = dict(d)
            if d["op"] in ("insert", "move"):
                op["at" if d["op"] == "insert" else "to"] = gaps[k]
                n = len(tx.people) - (1 if d["op"] == "move" else 0)
                if not 0 <= gaps[k] <= n:
                    raise ModelBug(f"rebased gap {gaps[k]} outside 0..{n}")
            if d["op"] == "text":
                op["comps"] = name_ops[k][1]
                old = tx.people[find(tx.people, tag)]["name"]
                if text_span(op["comps"]) != len(old):
                    raise ModelBug(f"rebased text {op['comps']} does not fit {old!r}")
                new = text_apply(old, op["comps"])
                if name_bytes(new) > NAME_LIMIT:
                    raise Ambiguous("A1: valid at its base, the rebased text pushes the name over the limit")
                if new != old and unicodedata.normalize("NFC", new) == unicodedata.normalize("NFC", old):
                    hazards.add("d")
                    d_tags.add(tag)
            self._apply(tx, user, "edit", op)

        if not tx.steps:
            # §2 / §7.1: changes nothing -> acked at the current revision, no entry, redo untouched
            changes_nothing()
            return {"type": "ack", "rev": self.rev, "ops": [], "noop": reports, "hazards": hazards}
        reply = {"type": "ack", "rev": tx.rev, "ops": [s.wire() for s in tx.steps], "noop": reports,
                 "hazards": hazards, "d_tags": d_tags}
        if commit:
            reply["revision"] = self._commit(tx, user, "edit", label)
            stack = self.undo_stacks.setdefault(user, [])
            if coalesce is not None and run is not None and run[0] == coalesce and stack and stack[-1] is run[1]:
                run[1].extend(tx.steps)                      # §4 coalescing: one entry for the run
            else:
                entry = Entry(self.rev, label, tx.steps)
                self._push(stack, entry)
                self.runs[user] = (coalesce, entry) if coalesce is not None else None
            self.redo_stacks[user] = []   # §4: a new edit clears the user's redo stack
        else:
            reply["revision"] = {"rev": tx.rev}
        return reply

    def _validate_at_base(self, user, base, diffs) -> list:
        """§2's invalid-op list, decided at the base with the batch's earlier diffs applied (§7.4).
        Returns each insert / move's gap in its context (A3); text diffs get their full spelling."""
        S = copy_people(self.snapshots[base])
        used = set(self.used_tags)
        removed = set()
        gaps = []
        for d in diffs:
            tag = d["tag"]
            gap = None
            if d["op"] == "insert":
                if tag in used:
                    raise Invalid("tag-used", f"tag {tag} was already used")
                if not self.in_blocks(user, tag):
                    raise Invalid("tag-block", f"tag {tag} is outside {user}'s blocks")
                if name_bytes(d["person"]["name"]) > NAME_LIMIT:
                    raise Invalid("limit", "name over the limit")
                gap = _clamp(d["at"], 0, len(S))
                S.insert(gap, copy_person(d["person"]))
                used.add(tag)
                gaps.append(gap)
                continue
            i = find(S, tag)
            if i < 0:
                if tag in removed:
                    raise Invalid("removed-in-batch", f"tag {tag} was removed earlier in this batch")
                raise Invalid("absent", f"tag {tag} was not present at base {base}")
            p = S[i]
            if d["op"] == "remove":
                S.pop(i)
                removed.add(tag)
            elif d["op"] == "move":
                gap = _clamp(d["to"], 0, len(S) - 1)
                S.insert(gap, S.pop(i))
            elif d["op"] == "set":
                if d["field"] == "name" and name_bytes(d["value"]) > NAME_LIMIT:
                    raise Invalid("limit", "name over the limit")
                p[d["field"]] = d["value"]
            elif d["op"] == "facialHair":
                p["facialHair"] = (p["facialHair"] | {d["style"]}) if d["present"] else (p["facialHair"] - {d["style"]})
            elif d["op"] == "preference":
                if d["value"] == "none":
                    p["prefs"].pop(d["topic"], None)
                else:
                    p["prefs"][d["topic"]] = d["value"]
            elif d["op"] == "text":
                if text_span(d["comps"]) > len(p["name"]):
                    raise Invalid("span", "text span past the end of the name")
                d["full"] = text_full(d["comps"], len(p["name"]))
                new = text_apply(p["name"], d["comps"])
                if name_bytes(new) > NAME_LIMIT:
                    raise Invalid("limit", "text pushes the name over the limit")
                p["name"] = new
            gaps.append(gap)
        return gaps

    # -- undo / redo (§4) ------------------------------------------------------------------------------

    def undo(self, user, scope=None, *, commit=True) -> dict:
        return self._undo_redo(user, scope, "undo", commit)

    def redo(self, user, scope=None, *, commit=True) -> dict:
        return self._undo_redo(user, scope, "redo", commit)

    def _undo_redo(self, user, scope, kind, commit) -> dict:
        src = list(self.undo_stacks.get(user, []) if kind == "undo" else self.redo_stacks.get(user, []))
        reply = {"type": "undone" if kind == "undo" else "redone", "ops": [], "skipped": [], "hazards": set()}
        while True:
            idx = next((i for i in range(len(src) - 1, -1, -1) if scope is None or scope in src[i].tags), None)
            if idx is None:
                break                                   # empty stack: ops [], no rev, no error
            entry = src.pop(idx)                        # consumed whatever happens
            reply.setdefault("consumed_labels", []).append(entry.label)
            tx = _Tx(self.people, len(self.steps), self.rev + 1)
            self._revert(tx, user, kind, entry, reply)
            if tx.people != self.people:
                reply["rev"] = tx.rev
                reply["ops"] = [s.wire() for s in tx.steps]
                if entry.label is not None:
                    reply["label"] = entry.label
                if commit:
                    reply["revision"] = self._commit(tx, user, kind, entry.label)
                    other = self.redo_stacks.setdefault(user, []) if kind == "undo" else self.undo_stacks.setdefault(user, [])
                    self._push(other, Entry(self.rev, entry.label, tx.steps))
                else:
                    reply["revision"] = {"rev": tx.rev}
                break
            # §4: an entry that changes nothing is consumed and reported; cascade goes on
            if not self.cascade:
                break
        if commit:
            self.runs[user] = None          # §4: any undo / redo request ends a coalescing run
            if kind == "undo":
                self.undo_stacks[user] = src
            else:
                self.redo_stacks[user] = src
        return reply

    # -- HISTORY.md: selective undo (§2), restore (§3), log (§4), blame (§5) ----------------------------

    def undo_entry(self, user, entry_id, scope=None, *, commit=True) -> dict:
        """HISTORY §2: undo the named entry of the user's undo stack, wherever it sits; no cascade."""
        if scope is not None or not _is_int(entry_id):
            return {"type": "error", "code": "bad-message", "hazards": set()}
        stack = self.undo_stacks.get(user, [])
        idx = next((i for i, e in enumerate(stack) if e.id == entry_id), None)
        if idx is None:
            return {"type": "error", "code": "no-entry", "hazards": set()}   # the run stays as it was
        entry = stack[idx]
        reply = {"type": "undone", "entry": entry_id, "ops": [], "skipped": [], "hazards": set(),
                 "consumed_labels": [entry.label]}
        tx = _Tx(self.people, len(self.steps), self.rev + 1)
        self._revert(tx, user, "undo", entry, reply, selective=True)
        changed = tx.people != self.people
        if changed:
            reply["rev"] = tx.rev
            reply["ops"] = [s.wire() for s in tx.steps]
            if entry.label is not None:
                reply["label"] = entry.label
        if not commit:
            if changed:
                reply["revision"] = {"rev": tx.rev}
            return reply
        self.undo_stacks[user] = stack[:idx] + stack[idx + 1:]         # consumed whatever happens
        if changed:
            reply["revision"] = self._commit(tx, user, "undo", entry.label)
            self._push(self.redo_stacks.setdefault(user, []), Entry(self.rev, entry.label, tx.steps))
        self.runs[user] = None
        return reply

    def restore(self, user, r, label=None, *, commit=True) -> dict:
        """HISTORY §3: one batch from the head to the model right after revision r (B5-B8)."""
        if not _is_int(r) or not 0 <= r <= self.rev or (label is not None and not isinstance(label, str)):
            return {"type": "error", "code": "bad-message", "hazards": set()}
        if label is None:
            label = f"Restore to revision {r}"
        target = self.snapshots[r]
        ttags = [p["tag"] for p in target]
        tpos = {t: i for i, t in enumerate(ttags)}
        tx = _Tx(self.people, len(self.steps), self.rev + 1)
        ppl = tx.people
        # 1. remove every person present now and absent at r (in the current order)
        for t in [p["tag"] for p in ppl if p["tag"] not in tpos]:
            self._apply(tx, user, "restore", {"op": "remove", "tag": t})
        # 2. re-insert the people present at r and absent now, in r's order, by the neighbour rule
        for i, t in enumerate(ttags):
            if find(tx.people, t) >= 0:
                continue
            cur = [p["tag"] for p in tx.people]
            if i > 0 and ttags[i - 1] in cur:
                at = cur.index(ttags[i - 1]) + 1
            elif i + 1 < len(ttags) and ttags[i + 1] in cur:
                at = cur.index(ttags[i + 1])
            else:
                at = _clamp(i, 0, len(cur))
            self._apply(tx, user, "restore", {"op": "insert", "tag": t, "at": at, "person": copy_person(target[i])})
        # 3. the differing fields of the people in both (r's order; fields in the contract's order)
        for q in target:
            t = q["tag"]
            p = tx.people[find(tx.people, t)]
            for f in SCALARS:
                if not (p[f] == q[f] and type(p[f]) is type(q[f])):
                    self._apply(tx, user, "restore", {"op": "set", "tag": t, "field": f, "value": q[f]})
            for st in FACIAL_HAIR:
                if (st in p["facialHair"]) != (st in q["facialHair"]):
                    self._apply(tx, user, "restore", {"op": "facialHair", "tag": t, "style": st,
                                                      "present": st in q["facialHair"]})
            for tp in TOPICS:
                if p["prefs"].get(tp, "none") != q["prefs"].get(tp, "none"):
                    self._apply(tx, user, "restore", {"op": "preference", "tag": t, "topic": tp,
                                                      "value": q["prefs"].get(tp, "none")})
        # 4. the fewest moves: keep a longest run already in r's order (B6), move the others in r's order
        cur = [p["tag"] for p in tx.people]
        keep = set(_lis_keep(cur, tpos))
        for i, t in enumerate(ttags):
            if t in keep:
                continue
            rest = [x for x in (p["tag"] for p in tx.people) if x != t]
            to = rest.index(ttags[i - 1]) + 1 if i > 0 else 0       # B7: right after its r-predecessor
            self._apply(tx, user, "restore", {"op": "move", "tag": t, "to": to})
        if [p["tag"] for p in tx.people] != ttags or tx.people != copy_people(target):
            raise ModelBug(f"restore to {r} did not reach it: {tx.people} / {target}")
        reply = {"type": "restored", "ops": [], "label": label, "hazards": set()}
        if tx.people == self.people and not tx.steps:
            if self.runs.get(user) is not None:
                raise Ambiguous("B8: a restore that changes nothing inside a coalescing run")
            return reply
        reply["rev"] = tx.rev
        reply["ops"] = [s.wire() for s in tx.steps]
        if not commit:
            reply["revision"] = {"rev": tx.rev}
            return reply
        reply["revision"] = self._commit(tx, user, "restore", label)
        self._push(self.undo_stacks.setdefault(user, []), Entry(self.rev, label, tx.steps))
        self.redo_stacks[user] = []
        self.runs[user] = None
        return reply

    def log(self, user, before=None, limit=None, tag=None) -> dict:
        """HISTORY §4: a page of the timeline, newest first, with the asker's entry marks."""
        if before is not None and not _is_int(before):
            return {"type": "error", "code": "bad-message"}
        if limit is None:
            limit = 50
        if not _is_int(limit) or not 1 <= limit <= 200:
            return {"type": "error", "code": "bad-message"}
        if tag is not None and not _is_int(tag):
            return {"type": "error", "code": "bad-message"}
        marks = {}
        for e in self.undo_stacks.get(user, []):
            for rv in e.revs:
                marks[rv] = e.id
        hits = []
        for rv in range(self.rev, 0, -1):
            if before is not None and rv >= before:
                continue
            rec = self.revisions[rv]
            if tag is not None and not any(_op_tag(o) == tag for o in rec["ops"]):
                continue
            hits.append(rv)
        entries = []
        for rv in hits[:limit]:
            rec = self.revisions[rv]
            e = {"rev": rv, "author": rec["author"], "kind": rec["kind"], "ops": rec["ops"]}
            if "label" in rec:
                e["label"] = rec["label"]
            if rv in marks:
                e["entry"] = marks[rv]
            entries.append(e)
        return {"type": "log", "entries": entries, "more": len(hits) > limit}

    def blame(self, tag) -> dict:
        """HISTORY §5: the latest writer of each field / element / register / position, and `created`."""
        if not _is_int(tag) or find(self.people, tag) < 0:
            return {"type": "error", "code": "bad-message"}
        seed = {"user": None, "rev": 0}
        created, cells = None, {}
        s0 = find(self.snapshots[0], tag)
        if s0 >= 0:
            p = self.snapshots[0][s0]
            created = seed
            for c in [(tag, f) for f in SCALARS] + [(tag, "fh", x) for x in p["facialHair"]] + \
                     [(tag, "pref", x) for x in p["prefs"]] + [(tag, "position")]:
                cells[c] = seed
        for st in self.steps:
            if st.tag != tag:
                continue
            w = {"user": st.user, "rev": st.rev}
            if st.pos == "insert":
                created = w
            for c in st.cells:
                cells[c] = w
        fields = {"facialHair": {}, "preference": {}}
        for c, w in cells.items():
            if len(c) == 2:
                fields[c[1]] = w
            elif c[1] == "fh":
                fields["facialHair"][c[2]] = w
            else:
                fields["preference"][c[2]] = w
        return {"type": "blame", "tag": tag, "created": created, "fields": fields}

    def _revert(self, tx: _Tx, user, kind, entry: Entry, reply, selective=False) -> None:
        """Apply what survives of the entry's inverse, newest diff first (§2 guards under skip, §3
        under both policies), into tx; reports go to reply["skipped"]. `selective`: HISTORY §2's
        guards (every later write by anyone counts, the entry's own batches excepted)."""
        skipped = reply["skipped"]
        own = {s.id for s in entry.steps}
        for s in reversed(entry.steps):
            inv = s.inv
            tag = inv["tag"]
            present = find(tx.people, tag) >= 0
            later = [w for w in self._all_steps(tx) if w.id > s.id]

            if inv["kind"] == "insert":                 # undo of a remove: put the person back
                if present:
                    raise Ambiguous("A2: undo of a remove whose person is already back")
                gap = self._place(tx, inv, later, reply)
                self._apply(tx, user, kind, {"op": "insert", "tag": tag, "at": gap, "person": inv["person"]}, s.id)
                continue

            if not present:                             # §3.2 under both policies
                skipped.append(report("targetRemoved", tag, by=self._remover(tx, tag)))
                continue

            if inv["kind"] == "remove":                 # undo of an insert
                if not self.force and selective:
                    # HISTORY §2: "an insert whose person anyone touched since" (B3: this undo's own
                    # parts, and the entry's own batches, are not "since")
                    touched = [w for w in self.steps if w.id > s.id and w.id not in own and w.tag == tag]
                    if touched:
                        skipped.append(report("editedByOthers", tag, by=touched[-1].user))
                        continue
                elif not self.force:
                    others = [w for w in later if w.tag == tag and w.user != user]
                    if others:
                        by = self._latest(None, lambda w: w.tag == tag and w.user != user).user   # A13
                        skipped.append(report("editedByOthers", tag, by=by))
                        continue
                self._apply(tx, user, kind, {"op": "remove", "tag": tag}, s.id)

            elif inv["kind"] == "move":
                if selective:
                    # B4 (hub's): the position is a field (HISTORY §5, SEMANTICS §2 "field position"):
                    # skipped when the latest write to it since (a move or a re-insert; the entry's own
                    # steps excepted) was an edit, redo or restore by anyone; an undo claims nothing
                    pw = [w for w in self.steps if w.id > s.id and w.id not in own and (tag, "position") in w.cells]
                    guarded = bool(pw) and pw[-1].kind in ("edit", "redo", "restore")
                else:
                    guarded = any(w.tag == tag and w.pos == "move" and w.user != user for w in later)
                if not self.force and guarded:
                    skipped.append(self._overwritten(tx, tag, (tag, "position"), user, field="position"))
                    continue
                gap = self._place(tx, inv, later, reply)
                self._apply(tx, user, kind, {"op": "move", "tag": tag, "to": gap}, s.id)

            elif inv["kind"] in ("set", "facialHair", "preference"):
                p = tx.people[find(tx.people, tag)]
                if inv["kind"] == "set":
                    cell, cur, extra = (tag, inv["field"]), p[inv["field"]], {"field": inv["field"]}
                    op = {"op": "set", "tag": tag, "field": inv["field"], "value": inv["old"]}
                elif inv["kind"] == "facialHair":
                    cell, cur, extra = (tag, "fh", inv["style"]), inv["style"] in p["facialHair"], \
                        {"field": "facialHair", "style": inv["style"]}
                    op = {"op": "facialHair", "tag": tag, "style": inv["style"], "present": inv["old"]}
                else:
                    cell, cur, extra = (tag, "pref", inv["topic"]), p["prefs"].get(inv["topic"], "none"), \
                        {"field": "preference", "topic": inv["topic"]}
                    op = {"op": "preference", "tag": tag, "topic": inv["topic"], "value": inv["old"]}
                if not self.force:
                    writes = [w for w in self.steps if w.id > s.id and not (selective and w.id in own) and cell in w.cells]   # A13
                    # §7.2 (+ B1: a restore is a write like an edit); HISTORY §2: by anyone when selective
                    theirs = bool(writes) and (selective or writes[-1].user != user) and \
                        writes[-1].kind in ("edit", "redo", "restore")
                    if not (cur == inv["new"] and type(cur) is type(inv["new"])) or theirs:   # §2 + §7.2
                        skipped.append(self._overwritten(tx, tag, cell, **extra))
                        continue
                self._apply(tx, user, kind, op, s.id)

            elif inv["kind"] == "text":                 # never guarded; rebased character-wise (§2, §7.3)
                comps = inv["comps"]
                raw = [w for w in later if w.tag == tag and w.name_op is not None]   # B9: renaming re-inserts too
                path = self._cancel_reverts(raw)
                overwritten = False
                for w in path:
                    if w.name_op[0] == "set":
                        overwritten = True
                        break
                    comps, _ = text_transform(comps, w.name_op[1])
                if overwritten:
                    skipped.append(self._overwritten(tx, tag, (tag, "name"), field="name"))
                    continue
                p = tx.people[find(tx.people, tag)]
                if text_span(comps) != len(p["name"]):
                    raise ModelBug(f"rebased text inverse {comps} does not fit {p['name']!r}")
                new = text_apply(p["name"], comps)
                if name_bytes(new) > NAME_LIMIT:
                    skipped.append(report("invariant", tag, field="name"))
                    continue
                if new != p["name"] and unicodedata.normalize("NFC", new) == unicodedata.normalize("NFC", p["name"]):
                    reply["hazards"].add("d")
                    reply.setdefault("d_tags", set()).add(tag)
                self._apply(tx, user, kind, {"op": "text", "tag": tag, "comps": comps}, s.id)
            else:
                raise ModelBug(inv)

    @staticmethod
    def _cancel_reverts(path):
        """A8 / §7.3: take out every change directly followed (on this name) by its own revert."""
        out = []
        for w in path:
            if out and w.reverts is not None and w.reverts == out[-1].id:
                out.pop()
            else:
                out.append(w)
        return out

    def _place(self, tx, inv, later, reply) -> int:
        """§4 placing by neighbours (A7, §7.5): the gap, in the list without the person."""
        tag = inv["tag"]
        cur = [p["tag"] for p in tx.people if p["tag"] != tag]
        if inv["prev"] is not None and inv["prev"] in cur:
            return cur.index(inv["prev"]) + 1
        if inv["next"] is not None and inv["next"] in cur:
            return cur.index(inv["next"])
        if inv["kind"] == "move":
            reply["hazards"].add("b")
            reply.setdefault("b_tags", set()).add(tag)
        gap = self._rebase_gap_along(inv["gap"], tag, later)
        return _clamp(gap, 0, len(cur))

