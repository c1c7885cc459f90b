"""Upgrading: the current hub opens a SQLite store an older hub wrote, and nothing a user had is lost.

`Tests/fixtures/upgrade-v1/pk.sqlite` was written by the hub of the commit named in its
`expected.json` (`madeBy`), the last one whose store had only the first schema (`v1: journal and
snapshots`): every migration since (`v2` … `v6`) runs on it here, as at a real upgrade
(docs/OPERATIONS.md, "Upgrade"). `scripts/make-upgrade-fixture.py` made it: two users edited two rooms
over WebSocket (inserts, sets, typing a name, moves, a removal, undo and redo; a snapshot every 25
revisions), and `expected.json` holds the people at every revision as the users saw them and who made
each revision of which kind.

On a copy of that file the current hub must give: the room list with each room's head and count of
people; each room's people at its head and at every earlier revision (`?at=`, from a store with no
checkpoints); the timeline with its authors and kinds; the change feed from revision 0; ann's undo of
her last edit, made before the upgrade (her undo stack came through); the checkpoints command filling
the rooms' past; and an edit after the upgrade that outlives a crash and a second start on the
upgraded file.

`Tests/fixtures/upgrade-keys/pk.sqlite` (`scripts/make-upgrade-fixture.py --keys`) was written by a hub that
kept HTTP idempotency keys in each snapshot: twelve keyed writes, the first ten in the snapshot, the
last two only in the journal after it (the hub was killed). The current hub must answer every key
with its first answer, keep doing so after it saves snapshots of its own (which hold no keys) and
restarts, and apply a new key once."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import time

from conftest import HUB_BIN, REPO
from pkhttp import HubHTTP, expect

FIXTURE = REPO / "Tests" / "fixtures" / "upgrade-v1"
KEYS_FIXTURE = REPO / "Tests" / "fixtures" / "upgrade-keys"


def expected() -> dict:
    return json.loads((FIXTURE / "expected.json").read_text())


def stored_fixture(tmp_path):
    path = tmp_path / "old" / "pk.sqlite"
    path.parent.mkdir()
    shutil.copyfile(FIXTURE / "pk.sqlite", path)
    return path


def test_the_fixture_is_the_older_schema():
    """The fixture is what it says: migration v1 only, so the test below runs every later one."""
    db = sqlite3.connect(f"file:{FIXTURE / 'pk.sqlite'}?mode=ro", uri=True)
    try:
        applied = [row[0] for row in db.execute("SELECT identifier FROM grdb_migrations ORDER BY rowid")]
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        db.close()
    assert applied == ["v1: journal and snapshots"], applied
    assert "checkpoints" not in tables and "webhook_owed" not in tables, tables


def test_a_store_written_by_an_older_hub_opens_with_every_room_history_and_undo_stack(hub_factory, tmp_path):
    want = expected()
    team, quiet = want["rooms"]["upgrade-team"], want["rooms"]["upgrade-quiet"]
    path = stored_fixture(tmp_path)
    hub = hub_factory({"storage": {"kind": "embedded", "path": str(path)}})
    http = HubHTTP(hub.port)

    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    applied = [row[0] for row in db.execute("SELECT identifier FROM grdb_migrations ORDER BY rowid")]
    db.close()
    assert applied[0] == "v1: journal and snapshots" and len(applied) >= 5, applied

    listed = {r["name"]: r for r in expect(http.rooms(), 200, "GET /v1/rooms")["rooms"]}
    for name, room in want["rooms"].items():
        assert listed[name]["rev"] == room["rev"] and listed[name]["people"] == len(room["people"]), listed[name]
        state = expect(http.state(name), 200, f"GET {name}")
        assert state["rev"] == room["rev"] and state["people"] == room["people"], (name, state)
        for rev, people in room["states"].items():
            assert http.people(name, at=int(rev)) == people, f"{name} at revision {rev}"
        revisions, _ = http.feed_all(name, after=0)
        assert [(r["rev"], r["author"], r["kind"]) for r in revisions] == \
            [(e["rev"], e["author"], e["kind"]) for e in room["log"]], name
        entries, before = [], None
        while True:
            page = expect(http.log(name, before=before, limit=200), 200, f"log of {name}")
            entries += page["entries"]
            if not page["more"]:
                break
            before = page["entries"][-1]["rev"]
        assert [(e["rev"], e["author"], e["kind"]) for e in reversed(entries)] == \
            [(e["rev"], e["author"], e["kind"]) for e in room["log"]], name

    # ann's last edit (the room's last revision) was made before the upgrade: her undo takes it back.
    ann = hub.join("upgrade-team", "ann")
    assert ann.welcome["rev"] == team["rev"] and ann.welcome["people"] == team["people"]
    assert ann.welcome["history"]["canUndo"] is True, ann.welcome["history"]
    undone = ann.undo()
    assert undone["rev"] == team["rev"] + 1 and undone["skipped"] == [], undone
    assert http.people("upgrade-team") == team["states"][str(team["rev"] - 1)]
    # bob edits the quiet room after the upgrade.
    bob = hub.join("upgrade-quiet", "bob")
    tag = quiet["people"][0]["tag"]
    ack = bob.edit([{"op": "set", "tag": tag, "field": "eyeColor", "value": "green"}])
    assert ack["rev"] == quiet["rev"] + 1, ack
    ann.close()
    bob.close()

    # The rooms' past gets its checkpoints (none were kept before); `?at=` answers the same.
    done = subprocess.run([HUB_BIN, "checkpoints", "--config", str(hub.config_path)], cwd=str(REPO),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "room upgrade-team:" in done.stdout and "checkpoint" in done.stdout, done
    for rev, people in team["states"].items():
        assert http.people("upgrade-team", at=int(rev)) == people, f"at revision {rev} after the checkpoints"

    # A crash, then a second start on the upgraded file: what was made after the upgrade is there.
    hub.kill()
    hub.restart()
    http = HubHTTP(hub.port)
    assert http.people("upgrade-team") == team["states"][str(team["rev"] - 1)]
    quiet_now = expect(http.state("upgrade-quiet"), 200, "the quiet room after the crash")
    assert quiet_now["rev"] == quiet["rev"] + 1
    assert next(p for p in quiet_now["people"] if p["tag"] == tag)["eyeColor"] == "green"


def test_a_command_does_not_upgrade_a_store_an_older_hub_is_using(tmp_path):
    """After the binary is replaced on disk, an older hub may still run on the store: a command of the
    new version (`history`, `export`, …) opening it ran the new migrations under that hub (an index
    build holds the write lock for seconds; the hub's commits failed meanwhile; a review, session 43).
    Now it refuses (exit 74, naming the hub's pid and what to do) and changes nothing; once no hub holds
    the store it upgrades it as before. The older hub's claim is held here as a hub holds it (an
    exclusive lock on the store's `.lock` file, its pid inside)."""
    import fcntl
    import os
    path = stored_fixture(tmp_path)
    config = tmp_path / "pk.yaml"
    config.write_text(f"storage:\n  kind: embedded\n  path: {path}\n")

    def migrations() -> list[str]:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return [row[0] for row in db.execute("SELECT identifier FROM grdb_migrations ORDER BY rowid")]
        finally:
            db.close()
    lock = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(lock, b"4242\n")
        done = subprocess.run([HUB_BIN, "history", "upgrade-team", "--config", str(config)], cwd=str(REPO),
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 74, done
        assert "in use by a hub (pid 4242) that has not upgraded it" in done.stderr, done.stderr
        assert "restart it with this version" in done.stderr, done.stderr
        assert migrations() == ["v1: journal and snapshots"], "the command upgraded the store under the hub"
    finally:
        os.close(lock)
    done = subprocess.run([HUB_BIN, "history", "upgrade-team", "--config", str(config)], cwd=str(REPO),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done
    assert len(migrations()) > 1


def test_keys_kept_in_an_older_hubs_snapshots_and_journal_are_answered_after_the_upgrade(hub_factory, tmp_path):
    want = json.loads((KEYS_FIXTURE / "expected.json").read_text())
    room, answers = want["room"], want["answers"]
    path = tmp_path / "old" / "pk.sqlite"
    path.parent.mkdir()
    shutil.copyfile(KEYS_FIXTURE / "pk.sqlite", path)
    # As if the older hub had run a minute ago: a key is answered again for 24 hours from its time, so
    # the copy's key times are moved to now (in the snapshot's keys and the journal's records), nothing else.
    db = sqlite3.connect(path)
    state = json.loads(db.execute("SELECT state FROM snapshots WHERE room = ?", (room,)).fetchone()[0])
    kept = [k for s in state["sessions"] for k in (s.get("keys") or [])]
    assert sorted(k["key"] for k in kept) == want["keysInSnapshot"] and "keysFrom" not in state
    shift = int(time.time() * 1000) - 60_000 - min(k["time"] for k in kept)
    for k in kept:
        k["time"] += shift
    db.execute("UPDATE snapshots SET state = ? WHERE room = ?", (json.dumps(state, separators=(",", ":")), room))
    keyed = 0
    for position, text in db.execute("SELECT position, record FROM journal WHERE room = ?", (room,)).fetchall():
        record = json.loads(text)
        if "keyTime" in record:
            record["keyTime"] += shift
            keyed += 1
            db.execute("UPDATE journal SET record = ? WHERE room = ? AND position = ?",
                       (json.dumps(record, separators=(",", ":")), room, position))
    db.commit()
    db.close()
    assert keyed == len(answers) == 12

    hub = hub_factory({"storage": {"kind": "embedded", "path": str(path), "snapshotEvery": 5}})
    http = HubHTTP(hub.port, user="ann")

    def retry_all(head: int) -> None:
        for key, first in answers.items():
            again = http.batch(room, [{"op": "set", "tag": 1, "field": "name", "value": "Again"}], 0, key=key)
            assert (again.status, again.json) == (first["status"], first["body"]), key
        state = expect(http.state(room), 200, "the room")
        assert state["rev"] == head and state["people"][0]["name"] == f"Bob {head}", state

    retry_all(12)
    # Three new keyed writes: a snapshot of the current hub's (every 5) comes and holds no key.
    for n in range(13, 16):
        made = http.batch(room, [{"op": "set", "tag": 1, "field": "name", "value": f"Bob {n}"}], n - 1, key=f"key-{n}")
        answers[f"key-{n}"] = {"status": made.status, "body": expect(made, 200, f"key-{n}")}
    retry_all(15)
    assert hub.terminate() == 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    state = json.loads(db.execute("SELECT state FROM snapshots WHERE room = ?", (room,)).fetchone()[0])
    db.close()
    in_snapshot = sorted(k["key"] for s in state["sessions"] for k in (s.get("keys") or []))
    assert state["rev"] == 15 and in_snapshot == want["keysInSnapshot"], "only the older hub's keys stay in it"
    assert "keysFrom" in state
    # Started again on that snapshot, then after a crash: every key still gets its first answer.
    hub.restart()
    http = HubHTTP(hub.port, user="ann")
    retry_all(15)
    hub.kill()
    hub.restart()
    http = HubHTTP(hub.port, user="ann")
    retry_all(15)
