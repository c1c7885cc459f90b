"""The soak (issue 7): mixed clients joining, editing, undoing, dropping and reconnecting for a long time,
with the hub SIGKILLed and restarted twice; no acknowledged revision may be lost, every client must
converge, and the hub's memory must stay flat once its configured windows are full.

`make test` runs it for 2 minutes (the default); `make soak` for 30 (PEOPLEKEEPER_SOAK_SECONDS=1800).

The hub: the embedded store (SQLite in the hub's working directory, the default kind), small windows
(SOAK_CONFIG: `rooms.keptRevisions`, `rooms.repliesKept`, `rooms.keptSessions`, `undo.depth`), every
limit at its default. At about 1/3 and 2/3 of the run it is SIGKILLed and started again at once on the
same port, config and SQLite file (conftest `Hub.kill` / `restart(same_port=True)`).

Who is there (three busy rooms, and a quiet one that only the terminal client visits, now and then, so
that it is unloaded after `rooms.unloadAfterSeconds` and loaded again from the store):

- per busy room, four editors: two tabs of one user (ann), bob, and cem, who drops often. Each is a
  `SoakWorker`, test_durability's `Worker` (one request in flight, base = the last revision it saw;
  after a lost connection: `hello` with `resume` and `since`, then the pending request resent as the
  very same frame, so the hub must answer it once) with its own requests: mixed batches from
  test_convergence's `random_diff` (set, facial hair, preference, text, insert, move, remove), runs of
  typing (text inserts on one name with a `coalesce` key), undo and redo, some scoped to a person, on
  a paced random schedule (a few requests a second per room). Now and then a worker drops its
  connection: abruptly (TCP shutdown, no close frame) or with a close frame; while a request is in
  flight (it is resent) or while idle (it stays offline a moment, then resumes with `since`);
- per busy room, a watcher (`SoakWatcher`) that only reads, sends presence and pings, and drops too;
- new clients joining all the time (`Joiners`): editors of a small pool of users who join a random
  busy room with a fresh session, edit for 5-30 s and leave (abruptly or not);
- the real terminal client (`peoplekeeper`, PEOPLEKEEPER_CLIENT_BIN): one `CliDriver` runs its
  scriptable commands (set, like / dislike / neutral, facial-hair, move, add, remove, undo / redo with
  and without --scope, list) with --json, one at a time across the rooms; and per busy room a
  `peoplekeeper watch --json` process (`CliWatch`) prints every revision.

What is recorded (per room): every revision a Python client was told about (ack / undone / redone with
a rev, every `ops` frame, by test_durability's `Recorder`, which also flags a revision number told with
two contents and a request answered at two revisions), every revision the terminal client acked or
watched, the label each edit was sent with, and every full state any client was given (a `welcome`
with people, `list --json`) with its revision.

What is asserted:
- during the run: no client thread fails (no `error` frame from the hub, no reply to another seq, a
  resume never loses a session that had answered requests, a hello with `since` always gets a catch-up,
  revisions reach each connection one by one); right after each restart, every room's head is at least
  the newest revision any client had been told of;
- zero lost acks: the store's journal (`peoplekeeper-hub history ROOM --json --last 0`, read while the
  hub runs) is revisions 1..N with no gap, N is the head a fresh client is welcomed at, and every
  revision any client was told of (acked or broadcast) is there at the same number with the same ops,
  author, kind and label; per worker user, as many revisions as requests answered with one (a resend
  is never applied twice); replaying the journal from the seed goes through every full state a client
  was given at its revision and ends at the fresh welcome's people;
- convergence: with the load stopped, every live client (editors, watchers, joiners still there) has
  exactly the people of a fresh joiner's welcome, and each `peoplekeeper watch` printed every revision
  up to the head, without a gap;
- the terminal client's commands end with a status docs/CLIENT.md allows for what happened (0; 1 for
  an undo / redo with nothing to do; 65 `no-such-person` for a tag removed meanwhile; 69 / 75 only
  while the hub was down); the first frame each Python connection gets after its `hello` is the `welcome`;
- memory: the hub's VmRSS is sampled every second; after the last restart, the median of the last
  quarter of the segment is within RSS_GROWTH_BOUND of the median of its first quarter (after a
  warm-up). See RSS_GROWTH_BOUND for why that bound.

A summary is printed (run with -s): revisions, acks, reconnects, drops, commands, RSS per segment.
Knobs: PEOPLEKEEPER_SOAK_SECONDS (default 120), PEOPLEKEEPER_SOAK_SEED (default 20261121; printed first,
so a failing run can be replayed: the schedule is seeded, thread timing is not).
"""

from __future__ import annotations

import collections
import copy
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass

import pytest
from websockets.exceptions import ConnectionClosed

from conftest import HUB_BIN, REPO, SEED
from pkclient import HubClient, apply_ops, norm
from test_client_cli import CLIENT_BIN, client_env, require_client
from test_convergence import LETTERS, random_diff
from test_durability import (USER_FIELDS, LabelCounter, Recorder, Worker, canon, check_workers_agree, close_drained,
                             connect_errors)
from test_hostile import metric, mib, rss_bytes

SOAK_SECONDS = float(os.environ.get("PEOPLEKEEPER_SOAK_SECONDS", "120"))
SOAK_SEED = int(os.environ.get("PEOPLEKEEPER_SOAK_SEED", "20261121"))

# The windows that bound a room's memory, kept small so that they fill early in the run (a busy room
# makes ~5 revisions a second: 200 revisions take under a minute) and memory must then plateau.
# tagBlockSize is large so that no worker runs out of tags for its inserts (blocks are per session).
SOAK_CONFIG = {
    "storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite", "snapshotEvery": 250},
    "rooms": {"keptRevisions": 200, "repliesKept": 16, "keptSessions": 64, "tagBlockSize": 1000,
              "unloadAfterSeconds": 10},
    "undo": {"conflicts": "skip", "cascade": True, "depth": 20, "coalesceMillis": 500},
    "logging": {"level": "warning", "format": "text"},
}

# Memory. The bound on growth within the last segment (after the second restart): the median of its
# last quarter minus the median of its first quarter (after RSS_WARMUP). Why 8 MiB: the soak makes ~17
# revisions a second (printed as "revisions/s"), so in the 30-minute soak (10-minute segments) the two
# quarters' middles are ~400 s, ~6,900 revisions, apart: a leak of 2 KB per revision grows RSS by
# ~13 MiB between them and fails, and so does any leak over ~1.2 KB per revision. Normal behaviour
# passes with room to spare: after a restart the heap grows for two or three minutes (the windows and
# stacks refilling, allocator arenas, SQLite's page cache) and then creeps. A 30-minute run here (debug
# build): the last segment went 41.8 -> 50.9 MiB in its first tenth and ended at 52.8 MiB; the quarters'
# medians were 51.9 and 52.9 MiB (1.0 MiB over 9,147 revisions, a slope of ~150 bytes per revision).
# The summary prints these figures. In the 2-minute version the segment is only ~40 s, so the bound
# there catches only gross leaks.
RSS_GROWTH_BOUND = 8 * 1024 * 1024
RSS_WARMUP = 60.0            # seconds after the restart before the early quarter starts (at most 1/4 of the segment)

PEOPLE_MIN, PEOPLE_MAX = 3, 9   # rooms stay this size (removes below / inserts above are not made)
NAME_MAX = 12                   # typing deletes instead of inserting beyond this many code points
KILL_GRACE = 5.0                # the terminal client may find the hub unreachable this long after a restart
PROBE_TIMEOUT = 30.0            # a room must welcome a probe within this after a restart
CLI_TIMEOUT = 10                # the terminal client's --timeout
CLI_USERS = ["cli-kim", "cli-lee"]
JOINER_USERS = ["dee", "eve", "fay"]
MAX_JOINERS = 3

CLI_LABELS = {"name": "Change Name", "hairColor": "Change Hair Color", "hairLength": "Change Hair Length",
              "eyeColor": "Change Eye Color", "glasses": "Toggle Glasses", "like": "Change Likes",
              "dislike": "Change Likes", "neutral": "Change Likes", "facial-hair": "Change Facial Hair",
              "move": "Move Person", "add": "Add Person", "remove": "Delete Person"}
HAIR = {"hairColor": ["black", "brown", "blonde", "red", "gray", "white"],
        "hairLength": ["bald", "short", "medium", "long"],
        "eyeColor": ["black", "brown", "blue", "green", "gray", "hazel"],
        "glasses": ["true", "false"]}
TOPICS = ["sports", "music", "movies", "books", "travel", "food", "art", "weather", "politics", "technology"]
STYLES = ["mustache", "beard", "goatee", "sideburns", "stubble"]


@dataclass(frozen=True)
class Profile:
    think: tuple = (0.25, 1.2)        # seconds between two requests
    undo: float = 0.12                # share of requests that are undos
    redo: float = 0.07                # ... and redos
    scoped: float = 0.4               # share of undos / redos scoped to a person
    typing: float = 0.08              # chance that a request starts a run of typing (2-6 coalesced inserts)
    drop_in_flight: float = 0.01      # chance of dropping the connection right after sending a request
    drop_idle: float = 0.01           # chance of dropping it between two requests (then offline a while)
    offline: tuple = (0.2, 3.0)       # seconds offline after an idle drop


EDITOR = Profile()
FLAKY = Profile(think=(0.3, 1.5), drop_in_flight=0.06, drop_idle=0.05)
JOINER = Profile(think=(0.3, 1.5), drop_in_flight=0.02, drop_idle=0.02)
WATCHER = Profile(drop_idle=0.08, offline=(0.5, 4.0))


class TagsExhausted(Exception):
    pass


# ----------------------------------------------------------------------------------------------------
# What the run saw
# ----------------------------------------------------------------------------------------------------

class Soak:
    """Shared by every thread: per-room recorders, the terminal client's acks, full states seen, the
    hub's down times, and problems to report at the end (the run goes on, so one report has them all)."""

    def __init__(self, hub, rooms: list[str]):
        self.hub = hub
        self.lock = threading.Lock()
        self.rec = {r: Recorder() for r in rooms}
        self.labels = LabelCounter()
        self.cli_acks: dict[str, list[dict]] = collections.defaultdict(list)
        self.cli_unknown: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.snapshots: dict[str, list[tuple[int, list, str]]] = collections.defaultdict(list)
        self.problems: list[str] = []
        self.down: list[list] = []       # [t_kill, t_ready or None]

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(f"[{time.strftime('%H:%M:%S')}] {text}")

    def snapshot(self, room: str, rev: int, people: list, source: str) -> None:
        with self.lock:
            self.snapshots[room].append((rev, copy.deepcopy(people), source))

    def during_downtime(self, t0: float, t1: float) -> bool:
        """Whether [t0, t1] overlaps a time the hub was down (from its kill to KILL_GRACE after it was up)."""
        with self.lock:
            windows = [(a, (b if b is not None else float("inf")) + KILL_GRACE) for a, b in self.down]
        return any(t0 <= b and a <= t1 for a, b in windows)

    def told_max(self, room: str) -> int:
        with self.lock:
            cli = max((a["rev"] for a in self.cli_acks[room]), default=0)
        return max(self.rec[room].max_rev(), cli)


# ----------------------------------------------------------------------------------------------------
# Python clients: test_durability's Worker with mixed requests, drops, and a watcher
# ----------------------------------------------------------------------------------------------------

class SoakWorker(Worker):
    """test_durability's Worker (its loop, reconnect with resume + since, resend, and recording) with the
    soak's own requests (`_next_request`), drops (`_drop_idle`, and in `_wait_reply`), a tag cursor kept
    across reconnects (a resumed session gets the same block back), and, for joiners, a lifetime."""

    def __init__(self, name: str, user: str, room: str, soak: Soak, stop: threading.Event, seed: int,
                 profile: Profile, lifetime: float | None = None):
        # Worker looks up the fields its own (set-only) load edits; the soak composes its requests itself.
        USER_FIELDS.setdefault(user, {})
        url = soak.hub.url(room)
        super().__init__(name, user, room, (lambda: [url]), soak.rec[room], soak.labels, stop, seed,
                         first_url=url)
        self.soak = soak
        self.profile = profile
        self.leave_at = time.monotonic() + lifetime if lifetime else None
        self.block: tuple[int, int] | None = None
        self.cursor: int | None = None
        self.typing: tuple[int, int] | None = None   # (tag, requests left) of a run of typing
        self.last_tag: int | None = None

    # -- connecting ------------------------------------------------------------------------------------

    def _try(self, url: str, first: bool, people, since) -> str:
        outcome = super()._try(url, first, people, since)
        if outcome == "welcome":
            c = self.client
            if c.log and c.log[0]["type"] != "welcome":
                self.soak.problem(f"{self.wname}: the first frame after hello (since {since}) was not the "
                                  f"welcome: {[m['type'] for m in c.log[:3]]}: {c.log[0]}")
                self.stats["frames before welcome"] += 1
            w = c.welcome
            if "people" in w:
                self.soak.snapshot(self.room, w["rev"], w["people"], f"{self.wname} welcome")
            block = (w["tags"]["from"], w["tags"]["to"])
            if block != self.block:
                self.block, self.cursor = block, block[0]
        return outcome

    def new_tag(self) -> int:
        """A tag for an insert (random_diff asks its client for one): the next of this session's block."""
        if self.cursor is None or self.cursor > self.block[1]:
            raise TagsExhausted()
        t = self.cursor
        self.cursor += 1
        return t

    def _drop(self, abrupt: bool) -> None:
        c = self.client
        if abrupt:        # the network goes away: no close frame
            try:
                c.ws.socket.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        else:
            c.close()

    def _pause(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.stop_event.is_set():
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.1))

    def _drop_idle(self) -> None:
        self._drop(abrupt=self.rng.random() < 0.7)
        self.stats["drops idle"] += 1
        self._pause(self.rng.uniform(*self.profile.offline))
        self._reconnect(first=False, why="dropped on purpose")

    # -- requests --------------------------------------------------------------------------------------

    def _next_request(self) -> dict:
        p = self.profile
        self._pause(self.rng.uniform(0.05, 0.25) if self.typing else self.rng.uniform(*p.think))
        if self.rng.random() < p.drop_idle:
            self._drop_idle()
        self.seq += 1
        people = self.client.people
        base = self.client.rev
        if self.typing:
            msg = self._typing(people, base)
            if msg is not None:
                return msg
        r = self.rng.random()
        if r < p.undo + p.redo:
            msg = {"type": "undo" if r < p.undo else "redo", "seq": self.seq}
            if people and self.rng.random() < p.scoped:
                present = [q["tag"] for q in people]
                msg["scope"] = (self.last_tag if self.last_tag in present and self.rng.random() < 0.7
                                else self.rng.choice(present))
            return msg
        if people and self.rng.random() < p.typing:
            self.typing = (self.rng.choice(people)["tag"], self.rng.randint(2, 6))
            msg = self._typing(people, base)
            if msg is not None:
                return msg
        return {"type": "submit", "seq": self.seq, "base": base, "ops": self._batch(people),
                "label": self.labels.next(self.user)}

    def _batch(self, people: list) -> list:
        """1-3 diffs made on a scratch copy of this client's view (so each applies after the previous),
        by test_convergence's random_diff, keeping the room between PEOPLE_MIN and PEOPLE_MAX people."""
        scratch = copy.deepcopy(people)
        ops = []
        want = self.rng.choice([1, 1, 1, 2, 3])
        for _ in range(want * 4):
            if len(ops) >= want:
                break
            try:
                d = random_diff(self.rng, scratch, self)
            except TagsExhausted:
                continue
            if d is None:
                continue
            if d["op"] == "insert" and len(scratch) >= PEOPLE_MAX:
                continue
            if d["op"] == "remove" and len(scratch) <= PEOPLE_MIN:
                continue
            if d["op"] == "set" and d["field"] == "name" and d["value"] == "":
                d["value"] = self.rng.choice(LETTERS)
            apply_ops(scratch, [d])
            ops.append(d)
        if not ops:    # (only if every draw was refused: an empty room, say) a plain insert
            ops = [{"op": "insert", "at": 0, "person": {"tag": self.new_tag(), "name": "Kim", "hairColor": "black",
                                                         "hairLength": "short", "eyeColor": "brown", "glasses": False,
                                                         "facialHair": [], "likes": [], "dislikes": []}}]
        return ops

    def _typing(self, people: list, base: int) -> dict | None:
        """The next keystroke of a run of typing on one person's name (coalesced into one undo step)."""
        tag, left = self.typing
        target = next((q for q in people if q["tag"] == tag), None)
        if target is None or left <= 0:
            self.typing = None
            return None
        self.typing = (tag, left - 1)
        name = target["name"]
        if len(name) >= NAME_MAX:
            edits = ([{"retain": len(name) - 1}] if len(name) > 1 else []) + [{"delete": 1}]
        else:
            edits = ([{"retain": len(name)}] if name else []) + [{"insert": self.rng.choice(LETTERS)}]
        self.stats["keystrokes"] += 1
        return {"type": "submit", "seq": self.seq, "base": base, "ops": [{"op": "text", "tag": tag, "edits": edits}],
                "label": f"{self.labels.next(self.user)} typing", "coalesce": f"name:{tag}"}

    def _wait_reply(self, seq: int) -> dict:
        if self.rng.random() >= self.profile.drop_in_flight:
            return super()._wait_reply(seq)
        time.sleep(self.rng.uniform(0, 0.03))   # the reply may be on its way, or already here
        self._drop(abrupt=self.rng.random() < 0.8)
        self.stats["drops in flight"] += 1
        reply = super()._wait_reply(seq)        # raises (the run loop reconnects and resends) ...
        # ... unless the reply had arrived before the drop: the connection is gone all the same
        self.answered_in_session = True
        self._reconnect(first=False, why="dropped on purpose after the reply had arrived")
        return reply

    def _on_reply(self, reply: dict) -> None:
        super()._on_reply(reply)
        for op in reply.get("ops") or []:
            self.last_tag = op["person"]["tag"] if op["op"] == "insert" else op.get("tag", self.last_tag)
        if self.leave_at is not None and time.monotonic() > self.leave_at:
            self.stop_event.set()      # a joiner's own stop: it leaves with nothing pending


class SoakWatcher(SoakWorker):
    """Only reads (keeping its model), says what it is looking at (presence), pings, and drops now and
    then (resuming with `since`). It makes no revision."""

    def run(self) -> None:
        try:
            self._reconnect(first=True)
            while not self.stop_event.is_set():
                try:
                    self._listen(self.rng.uniform(1.0, 5.0))
                    if self.stop_event.is_set():
                        break
                    r = self.rng.random()
                    people = self.client.people
                    if r < self.profile.drop_idle:
                        self._drop_idle()
                    elif r < 0.7 and people:
                        self.client.send({"type": "presence", "viewing": self.rng.choice(people)["tag"],
                                          "field": self.rng.choice(["name", "hairColor", "glasses"])})
                        self.stats["presence"] += 1
                    else:
                        self.client.ping_seq += 1
                        self.client.send({"type": "ping", "seq": self.client.ping_seq})
                        self.stats["pings"] += 1
                except (ConnectionClosed, OSError, EOFError) as e:
                    self.stats["lost connection"] += 1
                    self._reconnect(first=False, why=repr(e))
        except BaseException:
            self.error = f"{self.wname}: {traceback.format_exc()}"
        finally:
            self.done.set()

    def _listen(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.stop_event.is_set():
            left = end - time.monotonic()
            if left <= 0:
                return
            try:
                msg = self.client._read(min(left, 0.25))
            except TimeoutError:
                continue
            if msg["type"] == "error":
                raise AssertionError(f"{self.wname}: an error from the hub: {msg}")
            self._record_new_frames()

    def tags_now(self) -> list[int]:
        c = self.client
        people = c.people if c is not None else None
        return [p["tag"] for p in list(people or [])]


class Joiners(threading.Thread):
    """New clients all the time: every 2-6 s (while fewer than MAX_JOINERS are there) a joiner of the
    JOINER_USERS pool joins a random busy room with a new session, edits for 5-30 s, and leaves; half
    leave abruptly."""

    def __init__(self, soak: Soak, rooms: list[str], stop: threading.Event, seed: int):
        super().__init__(name="joiners", daemon=True)
        self.soak, self.rooms, self.stop_event = soak, rooms, stop
        self.rng = random.Random(seed)
        self.live: list[SoakWorker] = []
        self.gone: list[SoakWorker] = []
        self.error: str | None = None
        self.n = 0

    def run(self) -> None:
        try:
            while not self.stop_event.wait(self.rng.uniform(2.0, 6.0)):
                self.reap()
                if len(self.live) < MAX_JOINERS:
                    self.n += 1
                    user = self.rng.choice(JOINER_USERS)
                    room = self.rng.choice(self.rooms)
                    j = SoakWorker(f"{user}#{self.n}@{room[-1]}", user, room, self.soak, threading.Event(),
                                   self.rng.randrange(1 << 30), JOINER, lifetime=self.rng.uniform(5, 30))
                    self.live.append(j)
                    j.start()
        except BaseException:
            self.error = f"joiners: {traceback.format_exc()}"

    def reap(self) -> None:
        for j in [j for j in self.live if j.done.is_set()]:
            self.live.remove(j)
            self.gone.append(j)
            if j.client is not None:
                if self.rng.random() < 0.5:
                    j._drop(abrupt=True)
                close_drained(j.client)
                j.client = None

    def all(self) -> list[SoakWorker]:
        return self.live + self.gone


# ----------------------------------------------------------------------------------------------------
# The terminal client
# ----------------------------------------------------------------------------------------------------

class CliDriver(threading.Thread):
    """Runs `peoplekeeper` commands with --json, one at a time, 0.3-1 s apart, in the busy rooms (tags
    taken from the room's watcher) and, every 12-20 s, in the quiet room (after a `list`)."""

    def __init__(self, soak: Soak, rooms: list[str], quiet: str, watchers: dict, stop: threading.Event, seed: int):
        super().__init__(name="cli", daemon=True)
        self.soak, self.rooms, self.quiet, self.watchers, self.stop_event = soak, rooms, quiet, watchers, stop
        self.rng = random.Random(seed)
        self.error: str | None = None
        self.stats = collections.Counter()
        self.durations: list[float] = []

    def run(self) -> None:
        try:
            next_quiet = time.monotonic() + 3.0
            while not self.stop_event.wait(self.rng.uniform(0.3, 1.0)):
                if time.monotonic() >= next_quiet:
                    self.visit(self.quiet)
                    next_quiet = time.monotonic() + self.rng.uniform(12.0, 20.0)
                else:
                    self.visit(self.rng.choice(self.rooms))
        except BaseException:
            self.error = f"cli: {traceback.format_exc()}"

    def visit(self, room: str) -> None:
        user = self.rng.choice(CLI_USERS)
        tags = None
        if room == self.quiet or self.rng.random() < 0.1:
            doc = self.command(room, user, "list", [])
            if doc is not None:
                self.soak.snapshot(room, doc["rev"], doc["people"], f"{user} list")
                tags = [p["tag"] for p in doc["people"]]
            if room != self.quiet or tags is None:
                return
        if tags is None:
            tags = self.watchers[room].tags_now()
        if not tags:
            return
        rng = self.rng
        tag = str(rng.choice(tags))
        r = rng.random()
        if r < 0.3:
            field = rng.choice(["name", "hairColor", "hairLength", "eyeColor", "glasses"])
            value = "".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 6))) if field == "name" \
                else rng.choice(HAIR[field])
            self.command(room, user, "set", [tag, field, value], label=CLI_LABELS[field])
        elif r < 0.4:
            verb = rng.choice(["like", "dislike", "neutral"])
            self.command(room, user, verb, [tag, rng.choice(TOPICS)], label=CLI_LABELS[verb])
        elif r < 0.48:
            self.command(room, user, "facial-hair", [tag, rng.choice(STYLES), rng.choice(["on", "off"])],
                         label=CLI_LABELS["facial-hair"])
        elif r < 0.56:
            self.command(room, user, "move", [tag, str(rng.randrange(len(tags)))], label=CLI_LABELS["move"])
        elif r < 0.63 and len(tags) < PEOPLE_MAX:
            self.command(room, user, "add", ["--name", rng.choice(["Ines", "Olaf", "Uma", "Yann"]),
                                             "--hair-color", rng.choice(HAIR["hairColor"])], label=CLI_LABELS["add"])
        elif r < 0.7 and len(tags) > PEOPLE_MIN + 1:
            self.command(room, user, "remove", [tag], label=CLI_LABELS["remove"])
        else:
            verb = "undo" if r < 0.88 else "redo"
            self.command(room, user, verb, ["--scope", tag] if rng.random() < 0.4 else [])

    def command(self, room: str, user: str, verb: str, args: list, label: str | None = None) -> dict | None:
        """Run one command; record its ack; judge its exit status. Returns its JSON document when it
        succeeded."""
        argv = [CLIENT_BIN, verb, *args, "--url", f"ws://127.0.0.1:{self.soak.hub.port}", "--room", room,
                "--user", user, "--json", "--timeout", str(CLI_TIMEOUT)]
        t0 = time.monotonic()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=CLI_TIMEOUT * 4, env=client_env(),
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            self.soak.problem(f"`peoplekeeper {' '.join(argv[1:])}` was still running after {CLI_TIMEOUT * 4}s")
            return None
        t1 = time.monotonic()
        self.durations.append(t1 - t0)
        self.stats[f"{verb} {proc.returncode}"] += 1
        what = f"`peoplekeeper {' '.join(argv[1:])}` exited {proc.returncode}: {proc.stderr.strip()[:300]!r}"
        try:
            doc = json.loads(proc.stdout) if proc.stdout.strip() else None
        except ValueError:
            self.soak.problem(f"{what}; stdout is not JSON: {proc.stdout[:200]!r}")
            return None
        code = (doc or {}).get("error", {}).get("code") if isinstance(doc, dict) else None
        if proc.returncode == 0:
            if verb in ("list",):
                return doc
            if doc.get("rev") is not None and doc.get("ops"):
                kind = verb if verb in ("undo", "redo") else "edit"
                with self.soak.lock:
                    self.soak.cli_acks[room].append({"rev": doc["rev"], "user": user, "kind": kind, "ops": doc["ops"],
                                                     "label": doc.get("label") if kind != "edit" else label,
                                                     "what": " ".join([verb, *args])})
            return doc
        if proc.returncode == 1 and verb in ("undo", "redo") and doc is not None and doc.get("rev") is None:
            return doc           # nothing to undo / redo, or every part skipped
        if proc.returncode == 65 and code == "no-such-person":
            return None          # the tag was removed since the watcher saw it
        if proc.returncode in (69, 75) and self.soak.during_downtime(t0, t1):
            with self.soak.lock:
                self.soak.cli_unknown[room][user] += 1    # it may have been applied, unacknowledged
            return None
        self.soak.problem(what)
        with self.soak.lock:
            self.soak.cli_unknown[room][user] += 1
        return None


class CliWatch(threading.Thread):
    """`peoplekeeper watch --json` on one room, for the whole run: each line is a revision (recorded like
    any client's); within one process the revisions must follow one another. When the hub is killed the
    process exits 69 and is started again."""

    def __init__(self, soak: Soak, room: str, stop: threading.Event):
        super().__init__(name=f"cli-watch-{room}", daemon=True)
        self.soak, self.room, self.stop_event = soak, room, stop
        self.proc: subprocess.Popen | None = None
        self.last_rev: int | None = None
        self.lines = 0
        self.starts = 0
        self.error: str | None = None

    def run(self) -> None:
        rec = self.soak.rec[self.room]
        try:
            while not self.stop_event.is_set():
                errf = tempfile.TemporaryFile(mode="w+")
                argv = [CLIENT_BIN, "watch", "--json", "--url", f"ws://127.0.0.1:{self.soak.hub.port}",
                        "--room", self.room, "--user", "cli-watch", "--timeout", str(CLI_TIMEOUT)]
                t0 = time.monotonic()
                self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errf, text=True, env=client_env(),
                                             stdin=subprocess.DEVNULL)
                self.starts += 1
                prev = None
                for line in self.proc.stdout:
                    m = json.loads(line)
                    if "error" in m:       # said on the way out (the exit status is judged below)
                        continue
                    if m.get("type") != "ops":
                        self.soak.problem(f"watch {self.room}: a line that is not an ops frame: {line[:200]!r}")
                        continue
                    rec.revision(m["rev"], m["ops"], author=m.get("author"), kind=m.get("kind"),
                                 source=f"cli-watch#{self.starts}")
                    if prev is not None and m["rev"] != prev + 1:
                        self.soak.problem(f"watch {self.room}: revision {m['rev']} printed after {prev}")
                    prev = self.last_rev = m["rev"]
                    self.lines += 1
                code = self.proc.wait()
                t1 = time.monotonic()
                errf.seek(0)
                err = errf.read().strip()
                errf.close()
                if self.stop_event.is_set() and code in (0, -signal.SIGINT):
                    return
                if not (code in (69, 75) and self.soak.during_downtime(t0, t1)):
                    self.soak.problem(f"watch {self.room} exited {code} while the hub was up: {err[:300]!r}")
                self.stop_event.wait(0.3)
        except BaseException:
            self.error = f"cli-watch {self.room}: {traceback.format_exc()}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        self.join(15)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()


# ----------------------------------------------------------------------------------------------------
# Memory
# ----------------------------------------------------------------------------------------------------

class RssSampler(threading.Thread):
    """The hub's VmRSS every second: (time, which start of the hub, RSS bytes, revisions so far)."""

    def __init__(self, hub, soak: Soak, rooms: list[str], stop: threading.Event):
        super().__init__(name="rss", daemon=True)
        self.hub, self.soak, self.rooms, self.stop_event = hub, soak, rooms, stop
        self.samples: list[tuple[float, int, int, int]] = []

    def run(self) -> None:
        while not self.stop_event.wait(1.0):
            proc, start = self.hub.proc, self.hub.starts
            if proc.poll() is not None:
                continue
            try:
                rss = rss_bytes(proc.pid)
            except (OSError, AssertionError):
                continue
            revs = sum(self.soak.rec[r].max_rev() for r in self.rooms)
            self.samples.append((time.monotonic(), start, rss, revs))


def rss_verdict(samples, t_from: float, t_to: float) -> dict:
    """The last segment's early and late medians (first and last quarter after the warm-up)."""
    warm = min(RSS_WARMUP, (t_to - t_from) * 0.25)
    seg = [s for s in samples if t_from + warm <= s[0] <= t_to]
    assert len(seg) >= 8, f"too few RSS samples in the last segment: {len(seg)}"
    span = seg[-1][0] - seg[0][0]
    early = [s[2] for s in seg if s[0] <= seg[0][0] + span / 4]
    late = [s[2] for s in seg if s[0] >= seg[-1][0] - span / 4]
    revs = seg[-1][3] - seg[0][3]
    # least-squares slope of RSS over revisions, for the report
    xs, ys = [s[3] for s in seg], [s[2] for s in seg]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else 0.0
    return {"early": statistics.median(early), "late": statistics.median(late), "revisions": revs,
            "seconds": span, "slope_bytes_per_rev": slope, "n": len(seg)}


# ----------------------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------------------

def slow_share(text: str, name: str, over: float) -> tuple[int, int]:
    """(observations over `over` seconds, all observations) of a Prometheus histogram."""
    buckets = {}
    for m in re.finditer(r"^" + re.escape(name) + r'_bucket\{le="([^"]+)"\} ([0-9.eE+-]+)$', text, re.M):
        buckets[float("inf") if m.group(1) == "+Inf" else float(m.group(1))] = int(float(m.group(2)))
    total = buckets.get(float("inf"), 0)
    upto = max((le for le in buckets if le <= over), default=None)
    return total - (buckets[upto] if upto is not None else 0), total


def store_history(hub, room: str) -> list[dict]:
    """Every revision of the room, from the store (`peoplekeeper-hub history ROOM --json --last 0`)."""
    r = subprocess.run([HUB_BIN, "history", room, "--json", "--last", "0", "--config", str(hub.config_path)],
                       cwd=str(REPO), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"peoplekeeper-hub history {room} exited {r.returncode}: {r.stderr[-2000:]}"
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


def probe(hub, room: str, soak: Soak, what: str) -> dict:
    """A fresh client's welcome (retried while the restarted hub comes up)."""
    deadline = time.monotonic() + PROBE_TIMEOUT
    while True:
        c = None
        try:
            c = HubClient(hub.url(room), name="probe", open_timeout=3)
            w = c.hello("soak-probe")
            assert "people" in w, w
            soak.snapshot(room, w["rev"], w["people"], what)
            return w
        except connect_errors():
            assert time.monotonic() < deadline, f"{what}: no welcome in {room} within {PROBE_TIMEOUT}s"
            time.sleep(0.2)
        finally:
            if c is not None:
                close_drained(c)


def check_room_log(room: str, rows: list[dict], fw: dict, soak: Soak, worker_users: set[str]) -> dict:
    """Zero lost acks and a consistent journal (see the module docstring). Returns counts for the summary."""
    rec = soak.rec[room]
    revs = [r["rev"] for r in rows]
    assert revs == list(range(1, len(rows) + 1)), \
        f"{room}: the journal's revisions are not 1..N in order: {[(i + 1, r) for i, r in enumerate(revs) if r != i + 1][:10]}"
    assert len(rows) == fw["rev"], f"{room}: the journal ends at {len(rows)}, a fresh welcome is at {fw['rev']}"
    log = {r["rev"]: r for r in rows}
    rec.assert_no_conflicts(f"{room} at the end")
    told = rec.snapshot()
    missing = sorted(r for r in told if r not in log)
    assert not missing, f"{room}: revisions clients were told about are not in the journal: {missing[:20]}"
    for r, s in sorted(told.items()):
        m = log[r]
        assert canon(m["ops"]) == s["key"], f"{room}: rev {r} was told to {s['source']} as {s['ops']}, the journal has {m}"
        assert s["author"] in (None, m["author"]) and s["kind"] in (None, m["kind"]), \
            f"{room}: rev {r} was told to {s['source']} as by {s['author']} ({s['kind']}), the journal has {m}"
    for r, label in sorted(dict(rec.labels).items()):
        assert log[r].get("label") == label, f"{room}: rev {r} was sent with label {label!r}, the journal has {log[r]}"
    with soak.lock:
        cli = list(soak.cli_acks[room])
        cli_unknown = dict(soak.cli_unknown[room])
    for a in cli:
        m = log.get(a["rev"])
        assert m is not None, f"{room}: the terminal client's `{a['what']}` was acked at rev {a['rev']}, not in the journal"
        assert (m["author"], m["kind"]) == (a["user"], a["kind"]) and canon(m["ops"]) == canon(a["ops"]), \
            f"{room}: `{a['what']}` by {a['user']} was acked at rev {a['rev']} as {a['ops']}, the journal has {m}"
        if a["label"] is not None:
            assert m.get("label") == a["label"], f"{room}: `{a['what']}` label {a['label']!r}, the journal has {m}"
    # each request answered once: per worker user, revisions in the journal = requests answered with one
    by_author = collections.Counter(m["author"] for m in rows)
    answered = collections.Counter(rec.request_user[k] for k in rec.request_rev)
    for u in sorted(worker_users):
        assert by_author[u] == answered[u], \
            (f"{room}: {u} has {by_author[u]} revisions in the journal but {answered[u]} requests were answered "
             f"with one: a request applied twice, or a revision nobody asked for")
    cli_acked = collections.Counter(a["user"] for a in cli)
    for u in CLI_USERS:
        extra = by_author[u] - cli_acked[u]
        assert 0 <= extra <= cli_unknown.get(u, 0), \
            (f"{room}: {u} has {by_author[u]} revisions in the journal, {cli_acked[u]} acked to the terminal client, "
             f"{cli_unknown.get(u, 0)} commands without a known outcome")
    strangers = set(by_author) - worker_users - set(CLI_USERS)
    assert not strangers, f"{room}: revisions by users no client played: {strangers}"
    # the journal replays from the seed through every full state a client was given
    with soak.lock:
        snaps = list(soak.snapshots[room])
    by_rev = collections.defaultdict(list)
    for rev, people, source in snaps:
        by_rev[rev].append((people, source))
    people = copy.deepcopy(SEED)
    for snap, source in by_rev.get(0, []):
        assert norm(snap) == norm(people), f"{room}: {source} was given at rev 0 {snap}, not the seed"
    for m in rows:
        apply_ops(people, m["ops"])
        for snap, source in by_rev.get(m["rev"], []):
            assert norm(snap) == norm(people), \
                f"{room}: {source} was given at rev {m['rev']}\n{snap}\nbut the journal replays to\n{people}"
    assert norm(people) == norm(fw["people"]), \
        f"{room}: the journal replays to\n{people}\nbut a fresh welcome at rev {fw['rev']} has\n{fw['people']}"
    kinds = collections.Counter(m["kind"] for m in rows)
    return {"revisions": len(rows), "told": len(told), "cli acks": len(cli), "snapshots": len(snaps), **kinds}


# ----------------------------------------------------------------------------------------------------
# The soak
# ----------------------------------------------------------------------------------------------------

@pytest.mark.soak
def test_soak(hub_factory, rooms):
    print(f"\n[soak] seed {SOAK_SEED} (PEOPLEKEEPER_SOAK_SEED), {SOAK_SECONDS:.0f} s (PEOPLEKEEPER_SOAK_SECONDS)",
          flush=True)
    require_client()
    rng = random.Random(SOAK_SEED)
    hub = hub_factory(SOAK_CONFIG)
    busy = [rooms(f"-{x}") for x in "abc"]
    quiet = rooms("-quiet")
    soak = Soak(hub, busy + [quiet])
    stop = threading.Event()

    watchers = {r: SoakWatcher(f"val@{r[-1]}", "val", r, soak, stop, rng.randrange(1 << 30), WATCHER) for r in busy}
    editors = [SoakWorker(f"{name}@{r[-1]}", user, r, soak, stop, rng.randrange(1 << 30), profile)
               for r in busy
               for name, user, profile in [("ann-1", "ann", EDITOR), ("ann-2", "ann", EDITOR), ("bob", "bob", EDITOR),
                                           ("cem", "cem", FLAKY)]]
    joiners = Joiners(soak, busy, stop, rng.randrange(1 << 30))
    cli = CliDriver(soak, busy, quiet, watchers, stop, rng.randrange(1 << 30))
    cli_watches = [CliWatch(soak, r, stop) for r in busy]
    sampler = RssSampler(hub, soak, busy + [quiet], stop)
    resident = list(watchers.values()) + editors
    threads = [*resident, joiners, cli, *cli_watches]

    def failures() -> list[str]:
        errs = [w.error for w in resident + joiners.all() if w.error]
        errs += [t.error for t in [joiners, cli, *cli_watches] if t.error]
        return errs

    def run_until(t: float) -> None:
        while time.monotonic() < t:
            errs = failures()
            when = f"seed {SOAK_SEED}, {time.monotonic() - t_start:.0f} s into the run"
            assert not errs, (f"client threads failed ({when}):\n" + "\n".join(errs)
                              + "".join(f"\nproblem: {p}" for p in soak.problems[:20]))
            assert hub.alive(), f"the hub died ({when}, exit {hub.proc.poll()}); stderr:\n{hub.stderr()[-3000:]}"
            time.sleep(0.5)

    t_start = time.monotonic()
    t_ready = t_start
    kills = []
    try:
        sampler.start()
        for t in threads:
            t.start()
        for i, frac in enumerate((1 / 3, 2 / 3)):
            run_until(t_start + SOAK_SECONDS * frac + rng.uniform(-2.0, 2.0))
            told = {r: soak.told_max(r) for r in busy + [quiet]}
            with soak.lock:
                soak.down.append([time.monotonic(), None])
            t_kill = time.monotonic()
            hub.kill()
            hub.restart(same_port=True)
            t_ready = time.monotonic()
            with soak.lock:
                soak.down[-1][1] = t_ready
            heads = {r: probe(hub, r, soak, f"probe after kill #{i + 1}")["rev"] for r in busy + [quiet]}
            for r in busy + [quiet]:
                assert heads[r] >= told[r], \
                    f"after kill #{i + 1}: {r} restarted at rev {heads[r]}, but clients had been told of rev {told[r]}"
            kills.append({"at_s": round(t_kill - t_start, 1), "restart_s": round(t_ready - t_kill, 2),
                          "told": told, "heads": heads})
        run_until(t_start + SOAK_SECONDS)
        t_load_end = time.monotonic()

        # the load stops: every client finishes its pending request and keeps its connection
        stop.set()
        for j in list(joiners.live):
            j.stop_event.set()
        for w in resident + joiners.all():
            if w.ident is not None:
                w.join(60)
        cli.join(CLI_TIMEOUT * 5)
        joiners.join(30)
        errs = failures()
        assert not errs, "client threads failed:\n" + "\n".join(errs)
        assert not any(w.is_alive() for w in resident + joiners.all()), "a client did not finish"
        live_joiners = [j for j in joiners.live if j.client is not None]

        # convergence: every live client = a fresh joiner's welcome; each `watch` printed up to the head
        finals = {}
        for r in busy + [quiet]:
            fresh = HubClient(hub.url(r), name="fresh")
            try:
                finals[r] = fresh.hello("soak-fresh")
            finally:
                close_drained(fresh)
            soak.snapshot(r, finals[r]["rev"], finals[r]["people"], "final fresh welcome")
        for r in busy:
            check_workers_agree([w for w in resident + live_joiners if w.room == r], finals[r])
        for cw in cli_watches:
            deadline = time.monotonic() + 15
            while cw.last_rev != finals[cw.room]["rev"] and time.monotonic() < deadline:
                time.sleep(0.1)
            assert cw.last_rev == finals[cw.room]["rev"], \
                f"peoplekeeper watch {cw.room} printed up to rev {cw.last_rev}; the head is {finals[cw.room]['rev']}"
            cw.stop()

        # zero lost acks, from the store's journal
        worker_users = {"ann", "bob", "cem", *JOINER_USERS}
        counts = {r: check_room_log(r, store_history(hub, r), finals[r], soak, worker_users) for r in busy + [quiet]}
        metrics_text = hub.metrics()
    except AssertionError as e:
        if soak.problems:   # what else went wrong on the way may say why
            raise AssertionError(f"{e}\n-- and {len(soak.problems)} problems seen during the run (seed {SOAK_SEED}):\n"
                                 + "\n".join(soak.problems[:20])) from e
        raise
    finally:
        stop.set()
        for j in joiners.all():
            j.stop_event.set()
        for cw in cli_watches:
            cw.stop()
        for w in resident + joiners.all():
            if w.client is not None:
                close_drained(w.client)
        sampler.join(5)

    # ---- summary ----------------------------------------------------------------------------------------
    elapsed = time.monotonic() - t_start
    all_workers = resident + joiners.all()
    st = collections.Counter()
    for w in all_workers:
        st.update(w.stats)
    total_revs = sum(c["revisions"] for c in counts.values())
    print(f"[soak] {SOAK_SECONDS:.0f} s of load, {elapsed:.0f} s in all; {total_revs} revisions "
          f"({total_revs / (t_load_end - t_start):.1f} revisions/s): "
          + "; ".join(f"{r}: {c}" for r, c in counts.items()))
    print(f"[soak] Python clients: {len(resident)} resident + {len(joiners.all())} joiners; "
          f"requests {st['requests']}, replies {st['replies']} (replayed after a resend {st['replayed replies']}), "
          f"edit/undo/redo revisions {st['submit revisions']}/{st['undo revisions']}/{st['redo revisions']}, "
          f"keystrokes {st['keystrokes']}, reconnects {st['reconnects']}, lost connections {st['lost connection']}, "
          f"resends {st['resends']}, drops in flight {st['drops in flight']}, drops idle {st['drops idle']}, "
          f"presence {st['presence']}, pings {st['pings']}")
    print(f"[soak] terminal client: {sum(cli.stats.values())} commands "
          f"(median {statistics.median(cli.durations) if cli.durations else 0:.2f} s): {dict(sorted(cli.stats.items()))}; "
          f"watch: " + ", ".join(f"{cw.room[-1]} {cw.lines} lines / {cw.starts} starts" for cw in cli_watches))
    print(f"[soak] kills: {kills}")
    for k in sorted({s[1] for s in sampler.samples}):
        seg = [s[2] for s in sampler.samples if s[1] == k]
        print(f"[soak] RSS, hub start #{k}: {len(seg)} samples, first {mib(seg[0])}, min {mib(min(seg))}, "
              f"max {mib(max(seg))}, last {mib(seg[-1])}; at each tenth: "
              + " ".join(f"{seg[min(len(seg) - 1, i * len(seg) // 10)] / 2 ** 20:.1f}" for i in range(11)))
    print("[soak] metrics since the last start: " + ", ".join(
        f"{name}{labels} {metric(metrics_text, name, labels)}"
        for name, labels in [("peoplekeeper_connections", ""), ("peoplekeeper_rooms", ""),
                             ("peoplekeeper_room_unloads_total", ""), ("peoplekeeper_room_loads_total", '{outcome="loaded"}'),
                             ("peoplekeeper_send_queue_drops_total", ""), ("peoplekeeper_errors_total", '{code="rate-limited"}')]))
    waits = {f"> {t} s": slow_share(metrics_text, "peoplekeeper_durable_wait_seconds", t) for t in (0.1, 1.0)}
    print(f"[soak] durable waits (acks and broadcasts held for a commit) since the last start: "
          + ", ".join(f"{k}: {a} of {n}" for k, (a, n) in waits.items()))
    notes = [n for w in all_workers for n in w.notes]
    if notes:
        print(f"[soak] notes: {collections.Counter(notes)}")
    lines = [ln for ln in hub.stderr().splitlines() if ln.strip()]
    print("[soak] hub stderr (last 20 lines):\n  " + "\n  ".join(lines[-20:]))

    # ---- memory -----------------------------------------------------------------------------------------
    last = [s for s in sampler.samples if s[1] == hub.starts]
    v = rss_verdict(last, t_ready, t_load_end)
    growth = v["late"] - v["early"]
    print(f"[soak] RSS after the last restart: early median {mib(v['early'])}, late median {mib(v['late'])}, "
          f"growth {mib(growth)} over {v['revisions']} revisions in {v['seconds']:.0f} s "
          f"(slope {v['slope_bytes_per_rev']:.0f} bytes/revision); bound {mib(RSS_GROWTH_BOUND)}")

    assert not soak.problems, f"{len(soak.problems)} problems (seed {SOAK_SEED}):\n" + "\n".join(soak.problems[:40])
    assert growth <= RSS_GROWTH_BOUND, \
        (f"the hub's RSS grew by {mib(growth)} within the last segment ({mib(v['early'])} -> {mib(v['late'])} over "
         f"{v['revisions']} revisions), over the bound {mib(RSS_GROWTH_BOUND)}")
