"""`peoplekeeper-hub export ROOM` and `import ROOM FILE` (docs/HTTP.md, docs/CONFIG.md): the HTTP API's
export and import for operators, on the store the config names.

A room edited over WebSocket and HTTP on a SQLite hub, exported with its history by the command while
the hub runs, imported by the command under another name, then read through the hub: the import's
export equals the original's (but the room's name), the CSV is the people, and the commands refuse a
room that exists (73), a file that does not add up (65) and a room the store lacks (66)."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import subprocess
import time

from conftest import HUB_BIN, REPO
from pkhttp import HubHTTP


def command(hub, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([HUB_BIN, *args, "--config", str(hub.config_path)], cwd=str(REPO),
                          capture_output=True, text=True, timeout=60)


def test_export_then_import_reproduces_the_room_with_every_revision(hub_factory, room, tmp_path):
    hub = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"}})
    ann = hub.join(room, "ann")
    ann.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}], label="Change Hair Color")
    http = HubHTTP(hub.port, user="bob")
    http.edit(room, [{"op": "set", "tag": 2, "field": "glasses", "value": True}], base=1, label="Glasses, \"round\"")
    ann.sync(2)
    ann.undo()

    exported = command(hub, "export", room, "--history")
    assert exported.returncode == 0, exported.stderr
    original = json.loads(exported.stdout)
    assert [(r["rev"], r["author"], r["kind"]) for r in original["revisions"]] == [
        (1, "ann", "edit"), (2, "bob", "edit"), (3, "ann", "undo")], original["revisions"]
    assert original == http.export(room, history=True).json, "the command and the route export the same"

    path = tmp_path / "export.json"
    path.write_text(exported.stdout)
    copy = room[:50] + "-copy"
    imported = command(hub, "import", copy, str(path))
    assert imported.returncode == 0, imported.stderr
    assert "revision 3" in imported.stdout, imported.stdout
    again = http.export(copy, history=True).json
    assert {**again, "room": room} == original, (again, original)
    assert http.log(copy).json["entries"][-1]["author"] == "ann", "authors came along"

    table = command(hub, "export", room, "--csv")
    rows = list(csv.DictReader(io.StringIO(table.stdout)))
    assert [int(r["tag"]) for r in rows] == [p["tag"] for p in original["people"]], table.stdout
    assert {r["glasses"] for r in rows} <= {"true", "false"}, rows

    exists = command(hub, "import", copy, str(path))
    assert exists.returncode == 73 and "exists" in exists.stderr, (exists.returncode, exists.stderr)
    broken = dict(original, people=original["initial"])
    path.write_text(json.dumps(broken))
    refused = command(hub, "import", room[:50] + "-bad", str(path))
    assert refused.returncode == 65, (refused.returncode, refused.stderr)
    assert http.state(room[:50] + "-bad").status == 404, "a refused import creates nothing"
    missing = command(hub, "export", "no-such-room")
    assert missing.returncode == 66, (missing.returncode, missing.stderr)
    nowhere = command(hub, "import", room[:50] + "-none", str(tmp_path / "nowhere.json"))
    assert nowhere.returncode == 66 and "cannot read" in nowhere.stderr and "no such file" in nowhere.stderr, \
        (nowhere.returncode, nowhere.stderr)


def test_checkpoints_are_built_for_rooms_stored_before_hubs_kept_them(hub_factory, room):
    """`peoplekeeper-hub checkpoints`: a room stored by an older hub has no checkpoints below its first
    newer snapshot (made here by deleting rows: every one of room B, those below revision 15 of room A).
    The command walks each back and keeps the people at every multiple of storage.snapshotEvery and at
    revision 0, equal to what the hub says the room was then (GET ?at=); a second run does nothing."""
    hub = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite", "snapshotEvery": 5}})
    http = HubHTTP(hub.port, user="ann")
    a, b = room[:50] + "-a", room[:50] + "-b"
    for name in (a, b):
        hub.join(name, "ann").close()                # the room, with the tutorial's people
        for i in range(23):
            http.edit(name, [{"op": "set", "tag": 1 + i % 3, "field": "name", "value": f"Name {i}"}])
    db = hub.workdir / "data" / "pk.sqlite"

    def kept(name: str) -> dict[int, list]:
        with sqlite3.connect(db) as conn:
            return {rev: json.loads(people) for rev, people in
                    conn.execute("SELECT revision, people FROM checkpoints WHERE room = ?", (name,))}

    assert set(kept(a)) >= {0, 5, 10, 15, 20}, kept(a).keys()
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM checkpoints WHERE room = ? AND revision < 15", (a,))
        conn.execute("DELETE FROM checkpoints WHERE room = ?", (b,))
    assert min(kept(a)) == 15 and kept(b) == {}

    done = command(hub, "checkpoints", a, b)
    assert done.returncode == 0, done.stderr
    assert f"room {a}: 3 checkpoints kept, revisions 0–15 walked back" in done.stdout, done.stdout
    assert f"room {b}: 5 checkpoints kept, revisions 0–23 walked back" in done.stdout, done.stdout
    for name in (a, b):
        checkpoints = kept(name)
        assert {0, 5, 10, 15, 20} <= set(checkpoints), (name, checkpoints.keys())
        for rev, people in checkpoints.items():
            assert people == http.people(name, at=rev), f"{name}: the checkpoint at {rev} is not the room then"

    again = command(hub, "checkpoints")
    assert again.returncode == 0, again.stderr
    assert f"room {a}: has its checkpoints (one at revision 0): nothing to do" in again.stdout, again.stdout
    missing = command(hub, "checkpoints", room[:50] + "-none")
    assert missing.returncode == 66 and "there is no room" in missing.stderr, (missing.returncode, missing.stderr)

    # A room whose head is itself a multiple of snapshotEvery keeps one there too.
    c = room[:50] + "-c"
    hub.join(c, "ann").close()
    for i in range(20):
        http.edit(c, [{"op": "set", "tag": 1 + i % 3, "field": "name", "value": f"Name {i}"}])
    # The hub saves revision 20's snapshot (and checkpoint) after the edit's answer: wait for it, so
    # that it is not written after the deletion below (then the command found it, and kept 4).
    deadline = time.monotonic() + 10
    while 20 not in kept(c) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 20 in kept(c), kept(c).keys()
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM checkpoints WHERE room = ?", (c,))
    done = command(hub, "checkpoints", c)
    assert f"room {c}: 5 checkpoints kept, revisions 0–20 walked back" in done.stdout, (done.stdout, done.stderr)
    assert set(kept(c)) == {0, 5, 10, 15, 20} and kept(c)[20] == http.people(c), kept(c).keys()


def test_an_imported_history_keeps_checkpoints_and_a_snapshot_at_its_head(hub_factory, room, tmp_path):
    """An import, over HTTP (`PUT`) or by the command, keeps what a hub that made the same revisions one
    by one keeps: the people at every multiple of storage.snapshotEvery (so a restore or `?at=` far back
    in the imported history reads at most that many revisions) and a snapshot at the head (so loading
    the room replays nothing). Before, an import kept checkpoints at 0 and its head only (HTTP) or at 0
    alone with no snapshot after it (the command)."""
    hub = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite", "snapshotEvery": 5}})
    http = HubHTTP(hub.port, user="ann")
    hub.join(room, "ann").close()
    for i in range(23):
        http.edit(room, [{"op": "set", "tag": 1 + i % 3, "field": "name", "value": f"Name {i}"}])
    exported = http.export(room, history=True).json
    path = tmp_path / "export.json"
    path.write_text(json.dumps(exported))
    by_http, by_command = room[:50] + "-http", room[:50] + "-cmd"
    created = http.request("PUT", HubHTTP.room_path(by_http), body=exported)
    assert created.status == 201 and created.json["rev"] == 23, created
    done = command(hub, "import", by_command, str(path))
    assert done.returncode == 0 and "revision 23" in done.stdout, (done.returncode, done.stdout, done.stderr)
    db = hub.workdir / "data" / "pk.sqlite"
    for name in (by_http, by_command):
        with sqlite3.connect(db) as conn:
            checkpoints = {rev: json.loads(people) for rev, people in
                           conn.execute("SELECT revision, people FROM checkpoints WHERE room = ?", (name,))}
            heads = [rev for (rev,) in conn.execute("SELECT revision FROM snapshots WHERE room = ?", (name,))]
        assert {0, 5, 10, 15, 20, 23} <= set(checkpoints), (name, sorted(checkpoints))
        for rev, people in checkpoints.items():
            assert people == http.people(room, at=rev), f"{name}: the checkpoint at {rev} is not the room then"
        assert heads == [23], (name, heads)
        again = http.export(name, history=True).json
        assert {**again, "room": room} == exported, name


def test_the_store_commands_do_not_create_a_store_where_there_is_none(hub_factory, tmp_path):
    """A mistyped storage.path: `checkpoints`, `history` and `export` say there is no store there (exit
    66) instead of creating an empty one and finding nothing (or nothing to do) in it."""
    config = tmp_path / "elsewhere.yaml"
    path = tmp_path / "no-such-dir" / "pk.sqlite"
    config.write_text(f"storage:\n  kind: embedded\n  path: {path}\n")
    for args in (["checkpoints"], ["history", "team-a"], ["export", "team-a"]):
        done = subprocess.run([HUB_BIN, *args, "--config", str(config)], cwd=str(REPO), capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 66 and "there is no store at" in done.stderr, (args, done.returncode, done.stderr)
    assert not path.exists() and not path.parent.exists()


def test_an_export_that_cannot_be_written_fails_and_a_reader_going_away_does_not(hub_factory, room, tmp_path):
    """`export ROOM > /dev/full` exited 0 with nothing written (stdio's buffer lost the failure): a
    backup script took it for a backup. `--csv` crashed (exit 132). Both are 74 with `cannot write the
    output` on stderr; so is a token; a reader that went away ends it with 0."""
    hub = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"}})
    hub.join(room, "ann").edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}], label="Change Hair Color")
    for args in (["export", room, "--history"], ["export", room, "--csv"]):
        with open("/dev/full", "w") as full:
            proc = subprocess.run([HUB_BIN, *args, "--config", str(hub.config_path)], cwd=str(REPO), stdout=full,
                                  stderr=subprocess.PIPE, text=True, timeout=60)
        assert proc.returncode == 74 and "cannot write the output" in proc.stderr, (args, proc.returncode, proc.stderr)
    (tmp_path / "secret").write_text("s" * 32 + "\n")
    (tmp_path / "token.yaml").write_text(f"auth:\n  mode: token\n  secretFile: {tmp_path / 'secret'}\n")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([HUB_BIN, "token", "--user", "ann", "--room", room, "--config", str(tmp_path / "token.yaml")],
                              cwd=str(REPO), stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == 74 and "cannot write the output" in proc.stderr, (proc.returncode, proc.stderr)
    # A reader already gone (the pipe's read end closed before the command writes): it was killed by
    # SIGPIPE (exit 141 in a shell) as nothing in the hub's commands ignored it; `| head` raced it.
    import os
    for args in (["export", room, "--history"], ["config-keys"], ["history", room]):
        read, write = os.pipe()
        os.close(read)
        try:
            gone = subprocess.run([HUB_BIN, *args, *(["--config", str(hub.config_path)] if args[0] != "config-keys" else [])],
                                  cwd=str(REPO), stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
        finally:
            os.close(write)
        assert gone.returncode == 0 and gone.stderr == "", (args, gone.returncode, gone.stderr)
