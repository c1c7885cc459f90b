#!/usr/bin/env python3
"""Generate a PeopleKeeper export with history (the shape of GET /v1/rooms/R/export?history=true).

usage: gen_export.py N_REVISIONS OUT.json [ROOM] [SEED]
Room of ~50-200 people (starts with 100), 5 users, mix of renames, text edits, field sets,
facial hair, preferences, moves, inserts and removes.  Simulates the model so `people` is where
the revisions lead.  Times spread over ~3 years ending now.
"""
import json, random, sys, time

HAIR = ["black", "brown", "blonde", "red", "gray", "white"]
LEN = ["bald", "short", "medium", "long"]
EYE = ["black", "brown", "blue", "green", "gray", "hazel"]
FH = ["mustache", "beard", "goatee", "sideburns", "stubble"]
TOP = ["sports", "music", "movies", "books", "travel", "food", "art", "weather", "politics", "technology"]
USERS = ["ann", "bob", "cyd", "dee", "eve"]
NAMES = ["Ada", "Bea", "Cal", "Dan", "Eli", "Fay", "Gus", "Hal", "Ivy", "Jo", "Kim", "Lu", "Max", "Ned", "Oz", "Pam"]

def sort_vocab(lst, vocab):
    return sorted(set(lst), key=vocab.index)

def person(rng, tag):
    return {"tag": tag, "name": rng.choice(NAMES) + str(tag), "hairColor": rng.choice(HAIR),
            "hairLength": rng.choice(LEN), "eyeColor": rng.choice(EYE), "glasses": rng.random() < 0.5,
            "facialHair": sort_vocab(rng.sample(FH, rng.randint(0, 2)), FH),
            "likes": sort_vocab(rng.sample(TOP[:5], rng.randint(0, 2)), TOP),
            "dislikes": sort_vocab(rng.sample(TOP[5:], rng.randint(0, 2)), TOP)}

def main():
    n = int(sys.argv[1]); out = sys.argv[2]
    room = sys.argv[3] if len(sys.argv) > 3 else "big"
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 37)
    people = [person(rng, t) for t in range(1, 101)]
    initial = json.loads(json.dumps(people))
    next_tag = 101
    now = int(time.time() * 1000) - 60_000
    t0 = now - 3 * 365 * 86400 * 1000
    step = (now - t0) // n
    revs = []
    hot = 1  # a person edited very often (for blame)
    for r in range(1, n + 1):
        user = USERS[r % len(USERS)]
        x = rng.random()
        byTag = {p["tag"]: p for p in people}
        p = byTag.get(hot) if (rng.random() < 0.05 and hot in byTag) else rng.choice(people)
        label = None
        if x < 0.25:
            nm = rng.choice(NAMES) + str(rng.randint(1, 999))
            while nm == p["name"]: nm = rng.choice(NAMES) + str(rng.randint(1, 999))
            ops = [{"op": "set", "tag": p["tag"], "field": "name", "value": nm}]; p["name"] = nm; label = "Rename"
        elif x < 0.35:
            ops = [{"op": "text", "tag": p["tag"], "edits": [{"insert": "x"}]}]; p["name"] = "x" + p["name"]
            if len(p["name"]) > 40:
                p["name"] = p["name"][-10:]
                ops = [{"op": "set", "tag": p["tag"], "field": "name", "value": p["name"]}]
            label = "Edit name"
        elif x < 0.55:
            f, voc = rng.choice([("hairColor", HAIR), ("hairLength", LEN), ("eyeColor", EYE)])
            v = rng.choice([q for q in voc if q != p[f]]); ops = [{"op": "set", "tag": p["tag"], "field": f, "value": v}]; p[f] = v
            label = "Change " + f
        elif x < 0.62:
            v = not p["glasses"]; ops = [{"op": "set", "tag": p["tag"], "field": "glasses", "value": v}]; p["glasses"] = v
        elif x < 0.70:
            s = rng.choice(FH); pres = s not in p["facialHair"]
            ops = [{"op": "facialHair", "tag": p["tag"], "style": s, "present": pres}]
            p["facialHair"] = sort_vocab(p["facialHair"] + [s], FH) if pres else [y for y in p["facialHair"] if y != s]
        elif x < 0.80:
            tp = rng.choice(TOP); cur = "like" if tp in p["likes"] else ("dislike" if tp in p["dislikes"] else "none")
            v = rng.choice([q for q in ["like", "dislike", "none"] if q != cur])
            ops = [{"op": "preference", "tag": p["tag"], "topic": tp, "value": v}]
            p["likes"] = [y for y in p["likes"] if y != tp]; p["dislikes"] = [y for y in p["dislikes"] if y != tp]
            if v == "like": p["likes"] = sort_vocab(p["likes"] + [tp], TOP)
            if v == "dislike": p["dislikes"] = sort_vocab(p["dislikes"] + [tp], TOP)
        elif x < 0.90:
            i0 = people.index(p); to = rng.choice([i for i in range(len(people)) if i != i0]); people.remove(p); people.insert(to, p)
            ops = [{"op": "move", "tag": p["tag"], "to": to}]; label = "Move person"
        elif (x < 0.95 and len(people) < 200) or len(people) <= 50:
            np_ = person(rng, next_tag); next_tag += 1; at = rng.randrange(len(people) + 1)
            people.insert(at, np_); ops = [{"op": "insert", "at": at, "person": json.loads(json.dumps(np_))}]; label = "Add person"
        else:
            if p["tag"] == hot:
                p = rng.choice([q for q in people if q["tag"] != hot])
            people.remove(p); ops = [{"op": "remove", "tag": p["tag"]}]; label = "Remove person"
        rev = {"rev": r, "time": t0 + r * step, "author": user, "kind": "edit"}
        if label: rev["label"] = label
        rev["ops"] = ops
        revs.append(rev)
    doc = {"room": room, "rev": n, "people": people, "initial": initial, "revisions": revs}
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))

if __name__ == "__main__":
    main()
