"""Random concurrent editing: three connections (users A, B and a second tab of A) each keep one request
in flight, made on their own view (base = the last revision they saw), while the others do the same.
Every connection applies the hub's ops as applied, as they come; at the end every connection's model and
a fresh hello's people must be identical, and no request may be refused."""

from __future__ import annotations

import copy
import random
import threading
import time

import pytest

from pkclient import (EYE_COLORS, FACIAL_HAIR, HAIR_COLORS, HAIR_LENGTHS, TOPICS, apply_op, norm,
                      person)

LETTERS = "abcdefghijklmnopqrstuvwxyzéß😀"


def random_diff(rng: random.Random, people: list, client) -> dict | None:
    kinds = ["set", "set", "facialHair", "preference", "text", "text", "insert", "move", "remove"]
    kind = rng.choice(kinds)
    if kind == "insert" or not people:
        t = client.new_tag()
        return {"op": "insert", "at": rng.randint(0, len(people)),
                "person": person(t, rng.choice(["Kim", "Lee", "Max", ""]), hairColor=rng.choice(HAIR_COLORS))}
    p = rng.choice(people)
    tag = p["tag"]
    if kind == "set":
        field = rng.choice(["name", "hairColor", "hairLength", "eyeColor", "glasses"])
        value = {"name": lambda: "".join(rng.choice(LETTERS) for _ in range(rng.randint(0, 6))),
                 "hairColor": lambda: rng.choice(HAIR_COLORS), "hairLength": lambda: rng.choice(HAIR_LENGTHS),
                 "eyeColor": lambda: rng.choice(EYE_COLORS), "glasses": lambda: rng.random() < 0.5}[field]()
        return {"op": "set", "tag": tag, "field": field, "value": value}
    if kind == "facialHair":
        return {"op": "facialHair", "tag": tag, "style": rng.choice(FACIAL_HAIR), "present": rng.random() < 0.5}
    if kind == "preference":
        return {"op": "preference", "tag": tag, "topic": rng.choice(TOPICS),
                "value": rng.choice(["like", "dislike", "none"])}
    if kind == "text":
        name = p["name"]
        pos = rng.randint(0, len(name))
        if (len(name) > 20 or rng.random() < 0.3) and pos < len(name):
            edits = ([{"retain": pos}] if pos else []) + [{"delete": 1}]
        else:
            edits = ([{"retain": pos}] if pos else []) + [{"insert": "".join(rng.choice(LETTERS)
                                                                          for _ in range(rng.randint(1, 2)))}]
        return {"op": "text", "tag": tag, "edits": edits}
    if kind == "move":
        return {"op": "move", "tag": tag, "to": rng.randint(0, len(people) - 1)}
    if kind == "remove" and len(people) > 3:
        return {"op": "remove", "tag": tag}
    return None


def random_batch(rng, people, client) -> list:
    scratch = copy.deepcopy(people)
    ops = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        d = random_diff(rng, scratch, client)
        if d is None:
            continue
        apply_op(scratch, d)
        ops.append(d)
    return ops


def run_client(client, rng: random.Random, steps: int, problems: list):
    try:
        for _ in range(steps):
            r = rng.random()
            if r < 0.12:
                client.undo()
            elif r < 0.2:
                client.redo()
            else:
                ops = random_batch(rng, client.people, client)
                if ops:
                    client.edit(ops)
            time.sleep(rng.uniform(0.005, 0.02))   # stays under limits.opsPerSecond, and interleaves
    except Exception as e:  # noqa: BLE001
        problems.append(f"{client.name}: {type(e).__name__}: {e}")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_concurrent_editing_converges(hub, room, seed):
    clients = [hub.join(room, "A"), hub.join(room, "B"), hub.join(room, "A")]
    clients[2].name = "A-tab2"
    problems: list[str] = []
    threads = [threading.Thread(target=run_client, args=(c, random.Random(seed * 100 + i), 50, problems),
                                daemon=True)
               for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a client hung"
    assert not problems, f"seed {seed}: {problems}"
    final = max(c.rev for c in clients)
    for c in clients:
        c.sync(final)
    fresh = hub.join(room, "F")
    assert fresh.welcome["rev"] == final
    for c in clients:
        assert norm(c.people) == norm(fresh.people), f"seed {seed}: {c.name} diverged from the hub"
    assert final > 60
    # the run did exercise transforms: many batches were made on a base behind the revision they got
    base_of = {(c.name, m["seq"]): m["base"] for c in clients for m in c.sent}
    behind = sum(1 for c in clients for m in c.log
                 if m["type"] == "ack" and m["rev"] > base_of[(c.name, m["seq"])] + 1)
    assert behind >= 10, behind
