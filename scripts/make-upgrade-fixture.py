#!/usr/bin/env python3
"""Make the store an older hub leaves behind, for tests that the current hub upgrades it.

    scripts/make-upgrade-fixture.py --hub OLD/peoplekeeper-hub --commit COMMIT --out Tests/fixtures/upgrade-v1

Runs the given (older) hub on a fresh SQLite store, edits two rooms over WebSocket as two users (inserts,
sets, name typing, moves, a removal, undo and redo), stops it with SIGTERM, empties the write-ahead log
into the file, and writes beside `pk.sqlite` an `expected.json`: for each room its head revision, the
people at every revision (as the users' own models saw them) and who made each revision of which kind.
`Tests/python/test_upgrade.py` opens that file with the current hub. The edits are fixed (no randomness),
so a fixture made again from the same commit holds the same rooms.

    scripts/make-upgrade-fixture.py --keys --hub OLD/peoplekeeper-hub --commit COMMIT --out Tests/fixtures/upgrade-keys

Hubs before session 36 kept every HTTP idempotency key and its first answer in each snapshot of the
room; later ones keep only where the keys start in the journal and read the answers back from it.
With `--keys` the hub (a snapshot every 5 revisions) gets room `keys` made with `PUT` and 12 keyed
writes as `ann` (keys `key-1` … `key-12`, each a `set` of one name; the last two after the last
snapshot), and is killed (SIGKILL: no snapshot at exit, so the last keys are only in the journal's
tail, as after a crash). `expected.json` holds each key's first answer (status and body) and the keys
the snapshot holds.

Loopback only. Needs the test suite's Python clients (Tests/python/pkclient.py, pkhttp.py)."""

from __future__ import annotations

import argparse
import copy
import json
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "Tests" / "python"))
from pkclient import HubClient, person  # noqa: E402
from pkhttp import HubHTTP  # noqa: E402

LISTEN = re.compile(r"listening on https?://127\.0\.0\.1:(\d+)/")
TEAM, QUIET = "upgrade-team", "upgrade-quiet"
KEYS_ROOM, KEYED_WRITES = "keys", 12


def set_op(tag, field, value):
    return {"op": "set", "tag": tag, "field": field, "value": value}


class Recorder:
    """The people at every revision of a room, from one watching client's model."""

    def __init__(self, watcher: HubClient):
        self.watcher = watcher
        self.states = {watcher.rev: copy.deepcopy(watcher.people)}
        self.log: list[dict] = []

    def after(self, reply: dict, author: str, kind: str) -> None:
        rev = reply.get("rev")
        if rev is None or rev in self.states:  # a batch, undo or redo that changed nothing makes no revision
            return
        self.watcher.sync(rev)
        self.states[rev] = copy.deepcopy(self.watcher.people)
        self.log.append({"rev": rev, "author": author, "kind": kind})


def play_team(port: int) -> dict:
    url = f"ws://127.0.0.1:{port}/v1/rooms/{TEAM}"
    ann, bob, watcher = HubClient(url, name="ann"), HubClient(url, name="bob"), HubClient(url, name="watcher")
    ann.hello("ann")
    bob.hello("bob")
    watcher.hello("watcher")
    rec = Recorder(watcher)

    def edit(client, who, ops, **kw):
        client.sync(watcher.rev)
        rec.after(client.edit(ops, **kw), who, "edit")

    def undo(client, who):
        client.sync(watcher.rev)
        rec.after(client.undo(), who, "undo")

    def redo(client, who):
        client.sync(watcher.rev)
        rec.after(client.redo(), who, "redo")

    names = ["Ada Lovelace", "Grace Hopper", "Katherine Johnson", "Hedy Lamarr", "Radia Perlman"]
    tags = []
    for i, name in enumerate(names):
        client, who = (ann, "ann") if i % 2 == 0 else (bob, "bob")
        tag = client.new_tag()
        tags.append(tag)
        edit(client, who, [{"op": "insert", "at": i, "person": person(tag, name)}], label="Add person")
    colors = ["red", "blonde", "brown", "black", "gray"]
    for round_ in range(6):
        for i, tag in enumerate(tags):
            client, who = (bob, "bob") if (i + round_) % 2 else (ann, "ann")
            edit(client, who, [set_op(tag, "hairColor", colors[(i + round_) % len(colors)])], label="Change Hair Color")
        edit(ann, "ann", [set_op(tags[round_ % 5], "glasses", round_ % 2 == 0)], label="Glasses")
    # Typing a name: one coalesced undo step of several revisions.
    for typed in ("Ada L.", "Ada Lo", "Ada Lov"):
        old = next(p["name"] for p in rec.states[watcher.rev] if p["tag"] == tags[0])
        edit(ann, "ann", [{"op": "text", "tag": tags[0], "edits": [{"delete": len(old)}, {"insert": typed}]}],
             label="Name", coalesce=f"name-{tags[0]}")
    edit(bob, "bob", [{"op": "move", "tag": tags[4], "to": 0}], label="Move")
    edit(bob, "bob", [{"op": "facialHair", "tag": tags[1], "style": "beard", "present": True}], label="Beard")
    edit(ann, "ann", [{"op": "preference", "tag": tags[2], "topic": "music", "value": "like"}], label="Likes music")
    undo(bob, "bob")
    redo(bob, "bob")
    undo(ann, "ann")
    edit(bob, "bob", [{"op": "remove", "tag": tags[3]}], label="Delete person")
    undo(bob, "bob")
    for round_ in range(10):
        edit(bob, "bob", [set_op(tags[1], "eyeColor", ["blue", "green", "brown"][round_ % 3])], label="Change Eye Color")
    # ann's last edit, which a test undoes after the upgrade.
    wearing = next(p["glasses"] for p in rec.states[watcher.rev] if p["tag"] == tags[2])
    edit(ann, "ann", [set_op(tags[2], "glasses", not wearing)], label="Glasses")
    assert rec.log[-1]["author"] == "ann", "ann's last edit made a revision"
    for c in (ann, bob, watcher):
        c.close()
    return {"rev": watcher.rev, "people": rec.states[watcher.rev], "states": rec.states, "log": rec.log,
            "tags": tags}


def play_quiet(port: int) -> dict:
    url = f"ws://127.0.0.1:{port}/v1/rooms/{QUIET}"
    bob = HubClient(url, name="bob")
    bob.hello("bob")
    rec = Recorder(bob)
    for name in ("Alan Turing", "Barbara Liskov"):
        tag = bob.new_tag()
        rec.after(bob.edit([{"op": "insert", "at": 0, "person": person(tag, name)}], label="Add person"), "bob", "edit")
    rec.after(bob.edit([set_op(tag, "hairLength", "long")], label="Change Hair Length"), "bob", "edit")
    bob.close()
    return {"rev": bob.rev, "people": rec.states[bob.rev], "states": rec.states, "log": rec.log}


def play_keys(port: int) -> dict:
    http = HubHTTP(port, user="ann")
    bob = {"tag": 1, "name": "Bob", "hairColor": "black", "hairLength": "short", "eyeColor": "brown",
           "glasses": False, "facialHair": [], "likes": [], "dislikes": []}
    made = http.put(HubHTTP.room_path(KEYS_ROOM), {"people": [bob]})
    assert made.status == 201, made
    answers = {}
    for n in range(1, KEYED_WRITES + 1):
        resp = http.batch(KEYS_ROOM, [set_op(1, "name", f"Bob {n}")], n - 1, key=f"key-{n}")
        assert resp.status == 200, resp
        answers[f"key-{n}"] = {"status": resp.status, "body": resp.json}
    http.close()
    return answers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hub", required=True, help="the older hub's binary")
    parser.add_argument("--commit", required=True, help="the commit it was built from (recorded in expected.json)")
    parser.add_argument("--out", required=True, help="the fixture's directory (pk.sqlite, expected.json)")
    parser.add_argument("--keys", action="store_true", help="the idempotency keys' fixture (upgrade-keys)")
    args = parser.parse_args()
    every = 5 if args.keys else 25

    work = Path(tempfile.mkdtemp(prefix="pk-upgrade-fixture-"))
    try:
        store = work / "pk.sqlite"
        config = work / "hub.yaml"
        config.write_text(f"""listen:
  host: 127.0.0.1
  port: 0
rooms:
  seed: tutorial
logging:
  level: warning
storage:
  kind: embedded
  path: {store}
  snapshotEvery: {every}
""")
        hub = subprocess.Popen([args.hub, "--config", str(config), "--port", "0"], cwd=str(REPO),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        line = hub.stdout.readline()
        match = LISTEN.search(line)
        if not match:
            hub.kill()
            print(f"the hub did not start: {line!r} {hub.stderr.read()[-2000:]}", file=sys.stderr)
            return 1
        port = int(match.group(1))
        if args.keys:
            answers = play_keys(port)
            hub.kill()
            hub.wait(30)
        else:
            rooms = {TEAM: play_team(port), QUIET: play_quiet(port)}
            hub.send_signal(signal.SIGTERM)
            if hub.wait(30) != 0:
                print(f"the hub exited {hub.returncode}: {hub.stderr.read()[-2000:]}", file=sys.stderr)
                return 1
        db = sqlite3.connect(store)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("VACUUM")
        if args.keys:
            snapshot = json.loads(db.execute("SELECT state FROM snapshots WHERE room = ?", (KEYS_ROOM,)).fetchone()[0])
            in_snapshot = sorted(k["key"] for s in snapshot["sessions"] for k in (s.get("keys") or []))
            assert snapshot["rev"] == 10 and len(in_snapshot) == 10, (snapshot["rev"], in_snapshot)
            expected = {"madeBy": args.commit, "room": KEYS_ROOM, "snapshotEvery": every, "snapshotRev": snapshot["rev"],
                        "keysInSnapshot": in_snapshot, "answers": answers}
            made = f"{KEYED_WRITES} keyed writes in {KEYS_ROOM}, {len(in_snapshot)} keys in the snapshot at revision 10"
        else:
            expected = {"madeBy": args.commit, "snapshotEvery": every, "rooms": rooms}
            made = ", ".join(f"{name} at revision {room['rev']}" for name, room in rooms.items())
        db.close()
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(store, out / "pk.sqlite")
        (out / "expected.json").write_text(json.dumps(expected, sort_keys=True, indent=1 if args.keys else None) + "\n")
        print(f"{out}/pk.sqlite: {made}")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
