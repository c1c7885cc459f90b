"""The shared undo vectors (Tests/Vectors/undo.json) over WebSocket, as an independent client.

The Swift core, the hub's own wire tests and the JS core run the same file. Here each case runs against
a real hub started with the case's policy and seed: its users join a fresh room in the listed order (so
their tag blocks are the ones the vectors use: A from 4, B from 104), an observer joins last, and every
step is sent and answered one at a time. Checked per step: the reply (an `ack` with `rev` and `noop`, an
`undone` / `redone` with `rev` and `skipped`, or an `error` with its code and nothing broadcast) and the
people, as every connection's own model has them from the frames it received. At the end a fresh
joiner's welcome must hold the same people.

Reports are compared as multisets (the contract does not order them). Cases with a coalesce key depend
on time: they run in real time with the window and the gaps stretched three times.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import unique_room
from pkclient import norm

VECTORS = Path(__file__).resolve().parent.parent / "Vectors" / "undo.json"
CASES = json.loads(VECTORS.read_text())["cases"]
STRETCH = 3


def _timed(case: dict) -> bool:
    return any("coalesce" in step for step in case["steps"])


def _config(case: dict, workdir_seed: Path) -> dict:
    policy = case.get("policy", {})
    window = policy.get("coalesceMillis", 500) * (STRETCH if _timed(case) else 1)
    undo = {"coalesceMillis": window}
    if "conflicts" in policy:
        undo["conflicts"] = policy["conflicts"]
    if "cascade" in policy:
        undo["cascade"] = policy["cascade"]
    return {"undo": undo, "rooms": {"seed": str(workdir_seed)}}


def _reports(got: list) -> list:
    return sorted(json.dumps(r, sort_keys=True, ensure_ascii=False) for r in got)


@pytest.fixture(scope="module")
def hubs(tmp_path_factory):
    """One hub per (policy, seed), started on first use and stopped (exit 0) at the end."""
    from conftest import _start
    started: dict[str, object] = {}

    def get(case: dict):
        seed = json.dumps(case["start"], ensure_ascii=False)
        key = json.dumps([case.get("policy"), _timed(case), seed])
        if key not in started:
            path = tmp_path_factory.mktemp("seed") / "seed.json"
            path.write_text(seed)
            started[key] = _start(_config(case, path))
        return started[key]

    yield get
    for h in started.values():
        h.stop()


@pytest.mark.parametrize("case", CASES, ids=[c["name"][:90] for c in CASES])
def test_vector(hubs, case):
    hub = hubs(case)
    room = unique_room("vector")
    users = {name: hub.join(room, name) for name in case["users"]}
    observer = hub.join(room, "observer")
    connections = [*users.values(), observer]
    window = case.get("policy", {}).get("coalesceMillis", 500)
    head = 0
    clock = 0
    previous_clock = None
    previous_step = time.monotonic()
    for index, step in enumerate(case["steps"]):
        context = f"{case['name']} step {index}"
        client = users[step["user"]]
        clock = step.get("at", clock + 1000)
        if _timed(case) and previous_clock is not None:
            gap = min(clock - previous_clock, window + 100) * STRETCH / 1000
            wait = previous_step + gap - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        previous_clock, previous_step = clock, time.monotonic()
        expect = step.get("expect", {})
        if "submit" in step:
            mark = observer.mark()
            seq = client.submit(step["submit"], base=step.get("base", head), label=step.get("label"),
                                coalesce=step.get("coalesce"))
            if "error" in expect:
                error = client.take_error()
                assert error.get("seq") == seq and error["code"] == expect["error"], f"{context}: {error}"
                # Nothing was applied: no revision reaches anyone (a ping round trip orders the check).
                observer.expect_nothing("ops", since=mark, barrier=True)
            else:
                ack = client.take("ack")
                assert ack["seq"] == seq, f"{context}: {ack}"
                if "rev" in expect:
                    assert ack["rev"] == expect["rev"], f"{context}: {ack}"
                if "noop" in expect:
                    assert _reports(ack.get("noop", [])) == _reports(expect["noop"]), f"{context}: {ack}"
                head = max(head, ack["rev"])
        else:
            kind = "redo" if "redo" in step else "undo"
            scope = step[kind].get("scope")
            reply = client.redo(scope) if kind == "redo" else client.undo(scope)
            if "rev" in expect:
                assert reply.get("rev") == expect["rev"], f"{context}: {reply}"
            if "skipped" in expect:
                assert _reports(reply["skipped"]) == _reports(expect["skipped"]), f"{context}: {reply}"
            head = max(head, reply.get("rev", head))
        for c in connections:
            c.sync(head)
        if "people" in expect:
            for c in connections:
                assert norm(c.people) == norm(expect["people"]), f"{context}: {c}'s model"
    for c in connections:
        assert norm(c.people) == norm(case["people"]), f"{case['name']}: {c}'s final model"
    late = hub.join(room, "late")
    assert norm(late.welcome["people"]) == norm(case["people"]), f"{case['name']}: a late joiner's welcome"
    for c in [*connections, late]:
        c.close()
