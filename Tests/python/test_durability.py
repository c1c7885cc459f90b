"""Durability and scale-out, from the outside: crash a hub (SIGKILL) under load and fail a room over to
another cluster node, then check that nothing acknowledged was lost (PROTOCOL.md: an `ack` means "durable
at `rev`"; SEMANTICS §4: undo stacks survive a hub restart).

Both tests drive the same kind of load: a few client threads (`Worker`), each keeping one request in flight
(PROTOCOL.md "One submit in flight") and sending small labelled `set` batches on the seed people, and now
and then an `undo` or a `redo`, as fast as the replies come. A worker that loses its connection reconnects
with `resume` (its session) and `since` (the last revision it has), and resends its unanswered request
with the same `seq` (the hub must answer it once: with the kept reply if it was applied, else by applying
it). Every revision a client hears of (`ack` / `undone` / `redone` with a `rev`, and every `ops` frame) is
recorded, so the checks can compare what clients were told with what the hub serves afterwards.

Each user edits only their own fields (ann: hairColor, glasses; bob: eyeColor, hairLength), so that every
undo / redo made under load is exactly predictable: it reverts the user's newest entry in full. The final
checks then make a teammate overwrite one of ann's fields on purpose, to see a skip report.

The failover test needs a real PostgreSQL 15 (the `pg_server` fixture, conftest.py / pgserver.py); it
fails, not skips, without one.

Knobs (environment): PK_DURABILITY_SEED (random seed, default 20261121), PK_CRASH_KILLS (default 4).
"""

from __future__ import annotations

import collections
import copy
import errno
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
import traceback

import pytest
from websockets.exceptions import ConnectionClosed, WebSocketException

from conftest import HUB_BIN, REPO, SEED
from pgserver import PostgresServer
from pkclient import EYE_COLORS, HAIR_COLORS, HAIR_LENGTHS, HubClient, apply_ops, by_tag, norm
from reports import assert_reports, rep

SEED_RANDOM = int(os.environ.get("PK_DURABILITY_SEED", "20261121"))
CRASH_KILLS = int(os.environ.get("PK_CRASH_KILLS", "4"))

REPLY_TIMEOUT = 15.0       # a connected hub that does not answer a request within this is hung
RECONNECT_TIMEOUT = 30.0   # a worker that cannot get a welcome within this gives up (and fails the test)
PROGRESS_TIMEOUT = 30.0    # every worker must get a reply within this after a restart / failover
SYNC_TIMEOUT = 30.0        # an observer must reach a revision within this
MAX_REDIRECTS = 20         # redirects in a row without a welcome (about 3 s of them): a redirect loop

USER_FIELDS = {
    "ann": {"hairColor": HAIR_COLORS, "glasses": [True, False]},
    "bob": {"eyeColor": EYE_COLORS, "hairLength": HAIR_LENGTHS},
}

# Every hub in this file: no rate limit in the way of the load (PROTOCOL: 100 frames/s by default), the
# default undo depth and window, written out because the stack model below relies on them.
# The observer below joins with `since: 0` and needs every revision as an `ops` frame: rooms.maxCatchUp
# (beyond it a hello gets the full state) is raised, and with it sendQueueMessages, which caps it (a
# catch-up is queued at once).
LOAD_CONFIG = {
    "limits": {"opsPerSecond": 100000, "sendQueueMessages": 1000000},
    "rooms": {"maxCatchUp": 1000000},
    "undo": {"conflicts": "skip", "cascade": True, "depth": 100, "coalesceMillis": 500},
}
UNDO_DEPTH = 100

BENCH_DIR = REPO / ".build" / "bench"


def set_op(tag, field, value):
    return {"op": "set", "tag": tag, "field": field, "value": value}


def canon(ops) -> list:
    """Ops as a comparable, order-insensitive list (an undo of a two-diff batch may list them in either
    order)."""
    return sorted(json.dumps(o, sort_keys=True) for o in ops)


def connect_errors():
    return (OSError, TimeoutError, EOFError, WebSocketException)


def close_drained(c: HubClient) -> None:
    """Read what is waiting, then close. (The websockets sync client stops reading the socket while more
    than `max_queue` frames wait unread, so closing with a backlog does not see the hub's close frame and
    gives up after close_timeout with 1006: a client-side artefact, not a slow hub.)"""
    try:
        c.pump(0.02)
    except Exception:
        pass
    c.close()


# ----------------------------------------------------------------------------------------------------
# What clients were told
# ----------------------------------------------------------------------------------------------------

class Recorder:
    """Every revision any client heard of, and every reply, from all threads.

    A revision number seen twice with different ops / author / kind is a conflict (an acknowledged
    revision was lost and its number reused, or a reply lies). A request (session, seq) answered with
    two different revisions is a conflict too (a resend applied twice)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.revs: dict[int, dict] = {}
        self.conflicts: list[str] = []
        self.request_rev: dict[tuple[str, int], int] = {}
        self.request_user: dict[tuple[str, int], str] = {}
        self.labels: dict[int, str] = {}           # rev -> the label the author sent (edits)
        self.replies: list[tuple[float, str, str, str, int | None]] = []  # (t, worker, url, type, rev)

    def revision(self, rev: int, ops: list, *, author: str | None, kind: str | None, source: str) -> None:
        key = canon(ops)
        with self.lock:
            cur = self.revs.get(rev)
            if cur is None:
                self.revs[rev] = {"ops": ops, "key": key, "author": author, "kind": kind, "source": source}
                return
            if cur["key"] != key:
                self.conflicts.append(f"rev {rev}: {source} got ops {ops}, but {cur['source']} got {cur['ops']}")
            for k, v in (("author", author), ("kind", kind)):
                if v is None:
                    continue
                if cur[k] is None:
                    cur[k] = v
                elif cur[k] != v:
                    self.conflicts.append(f"rev {rev}: {source} says {k} {v!r}, {cur['source']} said {cur[k]!r}")

    def request(self, session: str, seq: int, rev: int, user: str, source: str) -> None:
        with self.lock:
            old = self.request_rev.setdefault((session, seq), rev)
            self.request_user[(session, seq)] = user
            if old != rev:
                self.conflicts.append(f"{source}: request seq {seq} of session {session[:8]} answered at rev "
                                      f"{rev}, earlier at rev {old} (applied twice?)")

    def label(self, rev: int, label: str, source: str) -> None:
        with self.lock:
            old = self.labels.setdefault(rev, label)
            if old != label:
                self.conflicts.append(f"rev {rev}: {source} sent label {label!r}, another reply said {old!r}")

    def reply(self, worker: str, url: str, mtype: str, rev: int | None) -> None:
        with self.lock:
            self.replies.append((time.monotonic(), worker, url, mtype, rev))

    def max_rev(self) -> int:
        with self.lock:
            return max(self.revs, default=0)

    def snapshot(self) -> dict[int, dict]:
        with self.lock:
            return {r: dict(v) for r, v in self.revs.items()}

    def assert_no_conflicts(self, when: str) -> None:
        with self.lock:
            conflicts = list(self.conflicts)
        assert not conflicts, f"{when}: clients were told contradicting things:\n" + "\n".join(conflicts[:20])


class LoadClient(HubClient):
    """A HubClient that knows which seqs it resent after a reconnect. The reply to such a seq is the kept
    reply, replayed verbatim (PROTOCOL.md, seq); for a batch that changed nothing that is an `ack` with
    `ops: []` at the revision it was first answered at, which may be older than where the catch-up has
    brought this connection (pkclient, written for live no-change acks, would call that a violation)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.resent_seqs: set[int] = set()

    def _process(self, msg: dict) -> None:
        if (msg["type"] == "ack" and not msg["ops"] and msg.get("seq") in self.resent_seqs
                and self.rev is not None and msg["rev"] < self.rev):
            self.replayed.append(msg)
            return
        super()._process(msg)


class LabelCounter:
    """Unique labels per user, shared by that user's tabs: ann#1, ann#2, ..."""

    def __init__(self):
        self.lock = threading.Lock()
        self.n = collections.Counter()

    def next(self, user: str) -> str:
        with self.lock:
            self.n[user] += 1
            return f"{user}#{self.n[user]}"


# ----------------------------------------------------------------------------------------------------
# A client under load
# ----------------------------------------------------------------------------------------------------

class Worker(threading.Thread):
    """One tab of `user` in `room`, sending requests one at a time until `stop` is set (then it finishes
    its pending request, keeps its connection open for the final checks, and exits). While `go` is
    cleared it sends no new request (but still reconnects and sees its pending one through).

    Reconnecting (after the hub closed the connection or died): first the URL it was last connected or
    redirected to, then each of `given_urls()` in order (the list of nodes an app is configured with); a
    `redirect` is followed. Each attempt says hello with `resume` and `since`; then the pending request,
    if any, is resent as the very same frame (same seq, same base)."""

    def __init__(self, name: str, user: str, room: str, given_urls, rec: Recorder, labels: LabelCounter,
                 stop: threading.Event, seed: int, first_url: str | None = None,
                 go: threading.Event | None = None):
        super().__init__(name=f"worker-{name}", daemon=True)
        self.wname = name
        self.user = user
        self.room = room
        self.given_urls = given_urls
        self.rec = rec
        self.labels = labels
        self.stop_event = stop
        self.go = go              # cleared: send no new request (the pending one is still seen through)
        self.rng = random.Random(seed)
        self.fields = USER_FIELDS[user]
        self.current_url = first_url
        self.client: HubClient | None = None
        self.url: str | None = None      # the URL of the current connection
        self.session: str | None = None
        self.seq = 0
        self.pending: dict | None = None  # the request frame awaiting its reply
        self.answered_in_session = False
        self._log_idx = 0
        self.error: str | None = None
        self.done = threading.Event()
        # statistics, for the report and for the test's waits (read by the main thread)
        self.connects = 0
        self.replies_since_connect = 0
        self.stats = collections.Counter()
        self.redirects: list[tuple[float, str]] = []
        self.welcomes: list[tuple[float, str]] = []
        self.notes: list[str] = []

    # -- the loop --------------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._reconnect(first=True)
            while True:
                if self.pending is None:
                    while self.go is not None and not self.go.wait(0.05) and not self.stop_event.is_set():
                        pass
                    if self.stop_event.is_set():
                        break
                    self.pending = self._next_request()
                    self.stats["requests"] += 1
                try:
                    self.client.send(self.pending)
                    reply = self._wait_reply(self.pending["seq"])
                except (ConnectionClosed, OSError, EOFError) as e:
                    self.stats["lost connection"] += 1
                    self._reconnect(first=False, why=repr(e))
                    if self.pending is not None:
                        self.stats["resends"] += 1
                        self.client.resent_seqs.add(self.pending["seq"])
                    continue
                self._on_reply(reply)
                self.pending = None
        except BaseException:
            self.error = f"{self.wname}: {traceback.format_exc()}"
        finally:
            self.done.set()

    def _next_request(self) -> dict:
        self.seq += 1
        r = self.rng.random()
        if r < 0.14:
            return {"type": "undo", "seq": self.seq}
        if r < 0.21:
            return {"type": "redo", "seq": self.seq}
        people = self.client.people
        pairs = [(t, f) for t in (1, 2, 3) for f in self.fields]
        chosen = self.rng.sample(pairs, 2 if self.rng.random() < 0.2 else 1)
        ops = []
        for tag, field in chosen:
            now = by_tag(people, tag)[field]
            ops.append(set_op(tag, field, self.rng.choice([v for v in self.fields[field] if v != now])))
        return {"type": "submit", "seq": self.seq, "base": self.client.rev, "ops": ops,
                "label": self.labels.next(self.user)}

    def _wait_reply(self, seq: int) -> dict:
        c = self.client
        deadline = time.monotonic() + REPLY_TIMEOUT
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self.wname}: no reply to seq {seq} within {REPLY_TIMEOUT}s from a "
                                     f"connected hub ({self.url}); last frames: {c.log[-5:]}")
            try:
                msg = c._read(left)
            except TimeoutError:
                continue
            self._record_new_frames()
            if msg["type"] == "error":
                raise AssertionError(f"{self.wname}: error from the hub for {self.pending}: {msg}")
            if msg["type"] in ("ack", "undone", "redone") and msg.get("seq") == seq:
                return msg
            if msg["type"] in ("ack", "undone", "redone"):
                raise AssertionError(f"{self.wname}: a reply to seq {msg.get('seq')} while seq {seq} is the "
                                     f"only request in flight: {msg}")

    def _on_reply(self, reply: dict) -> None:
        want = {"submit": "ack", "undo": "undone", "redo": "redone"}[self.pending["type"]]
        assert reply["type"] == want, f"{self.wname}: {self.pending} answered by {reply}"
        self.answered_in_session = True
        self.replies_since_connect += 1
        self.stats["replies"] += 1
        if reply in self.client.replayed:
            self.stats["replayed replies"] += 1
        if reply.get("rev") is not None and reply["ops"]:
            self.stats[f"{self.pending['type']} revisions"] += 1
        self.rec.reply(self.wname, self.url, reply["type"], reply.get("rev"))

    def _record_new_frames(self) -> None:
        """Record every revision-bearing frame that arrived on this connection since the last call."""
        c = self.client
        for msg in c.log[self._log_idx:]:
            t = msg["type"]
            src = f"{self.wname}@{self.url}"
            if t == "ops":
                self.rec.revision(msg["rev"], msg["ops"], author=msg.get("author"), kind=msg.get("kind"),
                                  source=f"{src} ops")
                if "seq" in msg:     # a catch-up frame of this session's own request
                    assert msg.get("author") == self.user, f"{self.wname}: a frame with seq by another user: {msg}"
                    self.rec.request(self.session, msg["seq"], msg["rev"], self.user, f"{src} catch-up")
            elif t in ("ack", "undone", "redone") and msg.get("rev") is not None and msg["ops"]:
                kind = {"ack": "edit", "undone": "undo", "redone": "redo"}[t]
                self.rec.revision(msg["rev"], msg["ops"], author=self.user, kind=kind, source=f"{src} {t}")
                self.rec.request(self.session, msg["seq"], msg["rev"], self.user, f"{src} {t}")
                if t == "ack" and self.pending is not None and self.pending.get("seq") == msg["seq"]:
                    self.rec.label(msg["rev"], self.pending["label"], src)
        self._log_idx = len(c.log)
        if len(c.log) > 2000:        # keep memory flat under load: the recorder has what matters
            del c.log[:-50], c.raw[:-50]
            self._log_idx = len(c.log)
        for q in c.queues.values():
            q.clear()
        del c.replayed[:-10]

    # -- (re)connecting --------------------------------------------------------------------------------

    def _candidates(self) -> list[str]:
        out = []
        for u in ([self.current_url] if self.current_url else []) + list(self.given_urls()):
            if u not in out:
                out.append(u)
        return out

    def _reconnect(self, first: bool, why: str = "") -> None:
        old = self.client
        people = copy.deepcopy(old.people) if old is not None else None
        since = old.rev if old is not None else None
        if old is not None:
            old.close()
        deadline = time.monotonic() + RECONNECT_TIMEOUT
        redirects_in_row = 0
        attempts = []
        while True:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.wname}: no welcome within {RECONNECT_TIMEOUT}s after losing the "
                                     f"connection ({why}); attempts: {attempts[-10:]}")
            for url in self._candidates():
                outcome = self._try(url, first, people, since)
                attempts.append((round(time.monotonic(), 3), url, outcome))
                if outcome == "welcome":
                    return
                if outcome.startswith("redirect "):
                    redirects_in_row += 1
                    assert redirects_in_row <= MAX_REDIRECTS, \
                        f"{self.wname}: redirect loop: {redirects_in_row} redirects in a row: {attempts[-12:]}"
                    self.current_url = outcome.split(" ", 1)[1]
                    time.sleep(min(0.02 * redirects_in_row, 0.2))
                    break                     # start over from the URL we were sent to
            else:
                self.current_url = None       # nobody answered: fall back to the given list
                time.sleep(0.05)

    def _try(self, url: str, first: bool, people, since) -> str:
        try:
            c = LoadClient(url, name=self.wname, open_timeout=2)
        except connect_errors() as e:
            return f"connect failed: {type(e).__name__}"
        hello = {}
        if not first:
            hello = {"resume": self.session, "since": since}
        try:
            c.hello(self.user, expect_welcome=False, people=people, **hello)
            deadline = time.monotonic() + REPLY_TIMEOUT
            while True:
                left = deadline - time.monotonic()
                assert left > 0, f"{self.wname}: no welcome or redirect within {REPLY_TIMEOUT}s from {url}"
                try:
                    msg = c._read(left)
                except TimeoutError:
                    continue
                if msg["type"] == "redirect":
                    self.redirects.append((time.monotonic(), msg["url"]))
                    self.stats["redirects"] += 1
                    c.close()
                    return f"redirect {msg['url']}"
                if msg["type"] == "error":
                    raise AssertionError(f"{self.wname}: hello at {url} answered by an error: {msg}")
                if msg["type"] == "welcome":
                    break
        except (ConnectionClosed, OSError, EOFError) as e:
            c.close()
            return f"closed before welcome: {type(e).__name__}"
        w = c.welcome
        if not first:
            if w["session"] != self.session:
                if self.answered_in_session:
                    raise AssertionError(f"{self.wname}: resume of session {self.session} (which had "
                                         f"answered requests) started a new session {w['session']}")
                self.notes.append(f"resume of a session with no answered request started a new one")
                self.answered_in_session = False
            if "people" in w:
                raise AssertionError(f"{self.wname}: hello since {since} got the full state instead of a "
                                     f"catch-up (the hub is at {w['rev']}): did it lose revisions?")
            self.stats["reconnects"] += 1
        self.session = w["session"]
        self.welcomes.append((time.monotonic(), url))
        self.client, self.url, self.current_url = c, url, url
        self._log_idx = 0
        self.connects += 1
        self.replies_since_connect = 0
        self._record_new_frames()
        return "welcome"

    # -- the end ---------------------------------------------------------------------------------------

    def finish(self, timeout: float = 30.0) -> None:
        """Wait for the thread to end (the caller has set `stop`); raise its error, if any."""
        self.join(timeout)
        assert not self.is_alive(), f"{self.wname} did not finish within {timeout}s (pending {self.pending})"
        assert self.error is None, self.error

    def sync_and_pump(self, rev: int) -> None:
        self.client.sync(rev, timeout=SYNC_TIMEOUT)
        self.client.pump(0.05)
        self._record_new_frames()


def start_workers(workers: list[Worker]) -> None:
    for w in workers:
        w.start()


def stop_workers(stop: threading.Event, workers: list[Worker]) -> None:
    stop.set()
    for w in workers:
        w.join(30)


def assert_workers_ok(workers: list[Worker]) -> None:
    errors = [w.error for w in workers if w.error]
    assert not errors, "\n".join(errors)


def wait_for_progress(workers: list[Worker], *, since_connects: dict | None = None, what: str,
                      undo_too: bool = False) -> None:
    """Every worker has (re)connected (past `since_connects`) and had a reply there (with `undo_too`,
    also an undo that made a revision, at some point)."""
    deadline = time.monotonic() + PROGRESS_TIMEOUT
    while True:
        assert_workers_ok(workers)
        ok = all((since_connects is None or w.connects > since_connects[w.wname])
                 and w.replies_since_connect >= 1
                 and (not undo_too or w.stats["undo revisions"] >= 1) for w in workers)
        if ok:
            return
        if time.monotonic() > deadline:
            state = {w.wname: (w.url, w.connects, w.replies_since_connect, dict(w.stats)) for w in workers}
            raise AssertionError(f"{what}: workers made no progress within {PROGRESS_TIMEOUT}s: {state}")
        time.sleep(0.02)


# ----------------------------------------------------------------------------------------------------
# Per-user undo stacks, predicted from the log
# ----------------------------------------------------------------------------------------------------

class Entry:
    """One undo (or redo) entry: the (tag, field) parts it wrote, each with the value before and after."""

    def __init__(self, label: str | None, parts: list[tuple[int, str, object, object]], rev: int):
        self.label = label
        self.parts = parts      # (tag, field, before, after)
        self.rev = rev

    def __repr__(self):
        return f"Entry({self.label!r} @{self.rev}: {self.parts})"


class StackModel:
    """SEMANTICS §4 for batches of `set` diffs, policy skip, cascade on, no coalescing: replaying the
    revision log, each user's undo / redo stacks are predicted, and every undo / redo revision is checked
    against the prediction (it reverts the newest entry, except parts whose field no longer holds the
    value the user wrote or was last written by a teammate's edit or redo, docs/SEMANTICS.md decision 2;
    an entry that would change nothing is consumed and the next one is taken)."""

    def __init__(self, seed: list, depth: int):
        self.people = copy.deepcopy(seed)
        self.depth = depth
        self.undo: dict[str, list[Entry]] = collections.defaultdict(list)
        self.redo: dict[str, list[Entry]] = collections.defaultdict(list)
        self.rev = 0
        self.writer: dict[tuple, tuple[str, str]] = {}   # (tag, field) -> (author, kind) of the last write

    def _write(self, author: str, kind: str, ops: list) -> None:
        apply_ops(self.people, ops)
        for op in ops:
            self.writer[(op["tag"], op["field"])] = (author, kind)

    def _push(self, stack: list, entry: Entry) -> None:
        stack.append(entry)
        if self.depth and len(stack) > self.depth:
            del stack[0]

    def _parts(self, ops: list) -> list:
        out = []
        for op in ops:
            assert op["op"] == "set", f"this load only makes set diffs, got {op}"
            out.append((op["tag"], op["field"], by_tag(self.people, op["tag"])[op["field"]], op["value"]))
        return out

    def plan(self, user: str, kind: str) -> dict:
        """What an undo / redo by `user` should do now: the ops it applies, the parts it skips (as
        (tag, field)), how many entries it consumes, and the entry it applies (None if none)."""
        stack = list(self.undo[user] if kind == "undo" else self.redo[user])
        skipped, consumed = [], 0
        while stack:
            entry = stack.pop()
            consumed += 1
            ops, skip = [], []
            for tag, field, before, after in reversed(entry.parts):
                author, how = self.writer.get((tag, field), (user, "edit"))
                claimed = author != user and how != "undo"
                if by_tag(self.people, tag)[field] == after and not claimed:
                    ops.append(set_op(tag, field, before))
                else:
                    skip.append((tag, field))
            skipped += skip
            if ops:
                return {"ops": ops, "skipped": skipped, "consumed": consumed, "entry": entry}
        return {"ops": [], "skipped": skipped, "consumed": consumed, "entry": None}

    def history(self, user: str) -> dict:
        h = {"canUndo": bool(self.undo[user]), "canRedo": bool(self.redo[user])}
        if self.undo[user]:
            h["undoLabel"] = self.undo[user][-1].label
        if self.redo[user]:
            h["redoLabel"] = self.redo[user][-1].label
        return h

    def apply(self, rev: int, author: str, kind: str, ops: list, label: str | None) -> None:
        """One revision of the log (checked if it is an undo / redo)."""
        assert rev == self.rev + 1, (rev, self.rev)
        parts = self._parts(ops)
        if kind == "edit":
            self._push(self.undo[author], Entry(label, parts, rev))
            self.redo[author].clear()
        else:
            p = self.plan(author, kind)
            assert p["entry"] is not None, \
                f"rev {rev}: {author}'s {kind} changed {ops}, but the model has nothing to {kind} for them"
            assert canon(ops) == canon(p["ops"]), \
                (f"rev {rev}: {author}'s {kind} applied {ops}; their newest entry {p['entry']} predicts "
                 f"{p['ops']} (skipping {p['skipped']})")
            self.commit(author, kind, p, ops, rev)
            return
        self._write(author, kind, ops)
        self.rev = rev

    def commit(self, user: str, kind: str, p: dict, ops: list, rev: int | None) -> None:
        """Apply an undo / redo outcome `p` (from plan) whose ops as applied are `ops`."""
        src, dst = (self.undo, self.redo) if kind == "undo" else (self.redo, self.undo)
        del src[user][len(src[user]) - p["consumed"]:]
        if ops:
            self._push(dst[user], Entry(p["entry"].label, self._parts(ops), rev))
            self._write(user, kind, ops)
            self.rev = rev


# ----------------------------------------------------------------------------------------------------
# Checks against a live hub
# ----------------------------------------------------------------------------------------------------

def check_log(url: str, rec: Recorder, when: str) -> tuple[list[dict], dict]:
    """Join an observer with `since: 0` (it must get a catch-up: every revision 1..head as `ops` frames,
    in order) and a fresh full `welcome`, and assert:
      - every revision any client was told about (ack / undone / redone / ops) is in the log at the same
        rev with the same ops, author and kind, and no rev was told with two different contents;
      - replaying the log from the seed gives exactly the people of the fresh welcome.
    Returns the observer's ops frames (1..N, N >= the fresh welcome's rev) and the fresh welcome."""
    rec.assert_no_conflicts(when)
    obs = HubClient(url, name="observer")
    fresh = HubClient(url, name="fresh")
    try:
        w = obs.hello("observer", since=0, people=SEED)
        assert "people" not in w, f"{when}: hello since 0 got the full state instead of a catch-up: rev {w['rev']}"
        fw = fresh.hello("observer")
        assert "people" in fw, fw
        target = max(fw["rev"], rec.max_rev())
        obs.sync(target, timeout=SYNC_TIMEOUT)
        frames = [m for m in obs.log if m["type"] == "ops"]
        assert [m["rev"] for m in frames] == list(range(1, len(frames) + 1)), \
            f"{when}: the catch-up is not revisions 1..N in order: {[m['rev'] for m in frames][:50]}"
        log = {m["rev"]: m for m in frames}
        # (clients go on editing meanwhile: revisions past what the observer has reached are newer than
        # `target`, and checked next time)
        seen = {r: s for r, s in rec.snapshot().items() if r <= len(frames)}
        missing = sorted(r for r in seen if r not in log)
        assert not missing, f"{when}: revisions clients were told about are not in the log: {missing[:20]}"
        for r, s in sorted(seen.items()):
            m = log[r]
            assert canon(m["ops"]) == s["key"], \
                f"{when}: rev {r} was told to {s['source']} as {s['ops']}, the log now has {m['ops']}"
            assert s["author"] in (None, m["author"]) and s["kind"] in (None, m["kind"]), \
                f"{when}: rev {r} was told to {s['source']} as by {s['author']} ({s['kind']}), the log has {m}"
        for r, label in dict(rec.labels).items():
            if r in log and "label" in log[r]:
                assert log[r]["label"] == label, f"{when}: rev {r} was sent with label {label!r}, log: {log[r]}"
        people = apply_ops(copy.deepcopy(SEED), [op for m in frames if m["rev"] <= fw["rev"] for op in m["ops"]])
        assert norm(people) == norm(fw["people"]), \
            (f"{when}: replaying revisions 1..{fw['rev']} from the seed gives\n{people}\nbut a fresh welcome "
             f"at rev {fw['rev']} has\n{fw['people']}")
        rec.assert_no_conflicts(when)
        return frames, fw
    finally:
        close_drained(obs)
        close_drained(fresh)


def model_from_log(frames: list[dict], rec: Recorder, upto: int) -> StackModel:
    """Replay revisions 1..upto through the stack model (checking every undo / redo on the way)."""
    model = StackModel(SEED, UNDO_DEPTH)
    for m in frames:
        if m["rev"] > upto:
            break
        label = m.get("label", rec.labels.get(m["rev"])) if m["kind"] == "edit" else None
        model.apply(m["rev"], m["author"], m["kind"], m["ops"], label)
    return model


def check_undo_after_restart(url: str, model: StackModel, users: list[str], when: str) -> None:
    """With the load stopped: each user's welcome shows the history the model predicts (labels of their
    newest undo / redo entries), an undo reverts their newest entry and a redo puts it back; then bob
    overwrites one of the fields of ann's newest entry and ann's undo skips exactly that part, reported
    `overwritten` by bob."""
    conns = {}
    try:
        for u in users:
            c = HubClient(url, name=f"{u}-final")
            conns[u] = c
            w = c.hello(u)
            assert w["rev"] == model.rev, f"{when}: the hub is at {w['rev']}, the log at {model.rev}"
            assert w["history"] == model.history(u), \
                f"{when}: {u}'s history after the restart is {w['history']}, the log predicts {model.history(u)}"

        def step(u, kind):
            c = conns[u]
            p = model.plan(u, kind)
            r = c.undo() if kind == "undo" else c.redo()
            assert canon(r["ops"]) == canon(p["ops"]), \
                f"{when}: {u}'s {kind} applied {r['ops']}; predicted {p['ops']} (entry {p['entry']})"
            assert ("rev" in r) == bool(p["ops"]), r
            if p["ops"]:
                assert r["rev"] == model.rev + 1, (r, model.rev)
            expected = [rep("overwritten", t, field=f, by="bob") for t, f in p["skipped"]]
            assert_reports(r["skipped"], expected)
            model.commit(u, kind, p, r["ops"], r.get("rev"))
            for other in conns.values():
                other.sync(model.rev)
            return r, p

        for u in users:
            if model.undo[u]:
                r, p = step(u, "undo")
                assert r["skipped"] == [] and r.get("label") in (None, p["entry"].label), r
                r, p = step(u, "redo")
                assert r["skipped"] == [], r

        # a teammate's overwrite: ann's undo must skip exactly that field, reporting bob (and, by the
        # cascade, any older entry of ann's on it: bob's write makes the field his, whatever value ann's
        # entries wrote there, docs/SEMANTICS.md decision 2). bob's value is one no entry on ann's stack
        # wrote to that field anyway.
        if model.undo["ann"] and "bob" in conns:
            top = model.undo["ann"][-1]
            choices = [(t, f, v) for t, f, _b, after in top.parts for v in USER_FIELDS["ann"][f]
                       if v != after and not any((t, f, v) == (pt, pf, pa) for e in model.undo["ann"]
                                                 for pt, pf, _pb, pa in e.parts)]
            if not choices:   # every value was written by some entry: any other value will do
                t, f, _b, after = top.parts[0]
                choices = [(t, f, next(v for v in USER_FIELDS["ann"][f] if v != after))]
            tag, field, value = choices[0]
            ack = conns["bob"].edit([set_op(tag, field, value)], label="bob overwrites ann")
            assert ack["rev"] == model.rev + 1 and ack["ops"] == [set_op(tag, field, value)], ack
            model.apply(ack["rev"], "bob", "edit", ack["ops"], "bob overwrites ann")
            conns["ann"].sync(model.rev)
            r, p = step("ann", "undo")
            assert (tag, field) in p["skipped"], p
            assert r["skipped"] and all(rp == {"reason": "overwritten", "tag": tag, "field": field, "by": "bob"}
                                        for rp in r["skipped"]), r
            conns["bob"].sync(model.rev)
            assert norm(conns["bob"].people) == norm(model.people), (conns["bob"].people, model.people)
        for u, c in conns.items():
            c.sync(model.rev)
            c.pump(0.05)
            assert c.history == model.history(u), f"{when}: {u}'s history {c.history}, predicted {model.history(u)}"
    finally:
        for c in conns.values():
            close_drained(c)


def check_workers_agree(workers: list[Worker], fw: dict) -> None:
    """After the load: every worker's local model, caught up to the fresh welcome's rev, is the welcome's
    people."""
    for w in workers:
        w.sync_and_pump(fw["rev"])
        assert w.client.rev == fw["rev"], (w.wname, w.client.rev, fw["rev"])
        assert norm(w.client.people) == norm(fw["people"]), \
            f"{w.wname}'s model {w.client.people}\nthe hub's {fw['people']}"


def check_applied_once(frames: list[dict], rec: Recorder, upto: int) -> None:
    """Each user has exactly as many revisions in the log as requests of theirs were answered with a
    revision (by a reply, or by a catch-up frame carrying the seq): no resent request was applied twice,
    and no revision appeared that no request made."""
    by_author = collections.Counter(m["author"] for m in frames if m["rev"] <= upto)
    answered = collections.Counter(rec.request_user[k] for k, r in rec.request_rev.items() if r <= upto)
    assert by_author == answered, \
        (f"revisions per author in the log {dict(by_author)} differ from the requests answered with a "
         f"revision {dict(answered)}: a request was applied twice, or a revision has no request")


def summary(workers: list[Worker]) -> str:
    return "; ".join(f"{w.wname}: {dict(w.stats)}" for w in workers)


def hub_log_lines(*hubs) -> list[str]:
    """What the hubs logged (warning level and up, as configured), for the test's output."""
    lines = []
    for h in hubs:
        lines += [f"{h.workdir.name}: {line}" for line in h.stderr().splitlines() if line.strip()]
    return lines


# ----------------------------------------------------------------------------------------------------
# a. Crash under load (SQLite)
# ----------------------------------------------------------------------------------------------------

def test_sigkill_under_load_loses_nothing_acknowledged(hub_factory, room):
    """SQLite store, three tabs (ann twice, bob) editing and undoing as fast as acks allow; the hub is
    SIGKILLed at random moments (0.3-1.5 s into the load) CRASH_KILLS times and restarted at once on the
    same config, file and port. While the checks after a restart run, the tabs reconnect and resend what
    was pending but start nothing new (so the checks see a quiet room). Asserts, after each restart:
      - the restarted hub's head is at least the newest revision any client had been told about;
      - every revision any client was told about is in the hub's log (an observer's `since: 0`
        catch-up) at the same rev, with the same ops, author and kind, and no rev was told with two
        contents (check_log);
      - the model (a fresh full welcome) is the replay of the log from the seed (check_log);
      - every undo / redo in the log so far reverted exactly its author's newest entry, as the log
        implies it, across the crashes (model_from_log);
    and at the end, with the load stopped, also:
      - every tab's local model equals the hub's (check_workers_agree);
      - no resent request was applied twice (check_applied_once);
      - each user's welcome shows the undo / redo labels the log implies, an undo reverts their newest
        entry and a redo restores it, and after a teammate overwrites one of ann's fields her undo skips
        exactly that field, reported `overwritten` by bob (check_undo_after_restart)."""
    started = time.monotonic()
    rng = random.Random(SEED_RANDOM)
    hub = hub_factory({**LOAD_CONFIG, "storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"}})
    url = hub.url(room)
    rec, labels, stop, go = Recorder(), LabelCounter(), threading.Event(), threading.Event()
    go.set()
    workers = [Worker(n, u, room, (lambda: [hub.url(room)]), rec, labels, stop, SEED_RANDOM + i, first_url=url,
                      go=go)
               for i, (n, u) in enumerate([("ann-1", "ann"), ("ann-2", "ann"), ("bob", "bob")])]
    kills = []
    try:
        start_workers(workers)
        wait_for_progress(workers, what="start", undo_too=True)
        for k in range(CRASH_KILLS):
            time.sleep(rng.uniform(0.3, 1.5))
            acked = rec.max_rev()
            connects = {w.wname: w.connects for w in workers}
            hub.kill()
            t_kill = time.monotonic()
            go.clear()      # the clients reconnect and resend what is pending, but start nothing new
            hub.restart(same_port=True)
            restart_s = time.monotonic() - t_kill
            assert hub.url(room) == url
            when = f"after kill #{k + 1} (clients had been told up to rev {acked})"
            t_check = time.monotonic()
            frames, fw = check_log(url, rec, when)
            assert fw["rev"] >= acked, f"{when}: the restarted hub is at rev {fw['rev']}"
            model_from_log(frames, rec, fw["rev"])
            check_s = time.monotonic() - t_check
            go.set()
            wait_for_progress(workers, since_connects=connects, what=when)
            kills.append({"acked": acked, "head": fw["rev"], "restart_s": round(restart_s, 3),
                          "check_s": round(check_s, 2)})
        time.sleep(0.3)
        stop_workers(stop, workers)
        for w in workers:
            w.finish()
        assert_workers_ok(workers)

        when = f"at the end ({len(kills)} kills)"
        t_final = time.monotonic()
        frames, fw = check_log(url, rec, when)
        check_workers_agree(workers, fw)
        check_applied_once(frames, rec, fw["rev"])
        model = model_from_log(frames, rec, fw["rev"])
        assert model.rev == fw["rev"]
        check_undo_after_restart(url, model, ["ann", "bob"], when)
        check_log(url, rec, when + ", after the final undos")
        final_s = time.monotonic() - t_final
    finally:
        stop.set()
        for w in workers:
            w.join(10)
            if w.client is not None:
                close_drained(w.client)
    elapsed = time.monotonic() - started
    print(f"\n[crash] seed {SEED_RANDOM}: {len(kills)} SIGKILLs, final rev {fw['rev']}, "
          f"{elapsed:.1f}s (final checks {final_s:.1f}s); kills {kills}\n[crash] {summary(workers)}")
    notes = [n for w in workers for n in w.notes]
    if notes:
        print(f"[crash] notes: {notes}")
    print("[crash] hub stderr:\n  " + "\n  ".join(hub_log_lines(hub)[-30:]))


# ----------------------------------------------------------------------------------------------------
# b. Failover between two cluster nodes (PostgreSQL)
# ----------------------------------------------------------------------------------------------------

def expect_redirect(url: str, user: str, to: str, when: str) -> None:
    """A hello at `url` is answered by exactly {"type":"redirect","url": to}, and the hub then closes the
    connection with 1000."""
    c = HubClient(url, name=f"{user}-probe")
    try:
        c.hello(user, expect_welcome=False)
        m = c.take("redirect", timeout=REPLY_TIMEOUT, allow_error=True)
        assert m == {"type": "redirect", "url": to}, f"{when}: hello at {url} got {m}, expected a redirect to {to}"
        others = [x for x in c.log if x["type"] not in ("redirect",)]
        assert not others, f"{when}: a redirected hello also got {others}"
        code = c.wait_closed(timeout=REPLY_TIMEOUT)
        assert code == 1000, f"{when}: after the redirect the connection was closed with {code}, not 1000"
    finally:
        c.close()


def test_failover_to_the_surviving_node(hub_factory, pg_server, room):
    """Two nodes A and B on one PostgreSQL database. ann joins room R at A (A owns R); bob's hello at B is
    redirected to A and he follows. Both edit and undo under load; A is SIGKILLed. ann reconnects to A,
    then to B (her second address); bob to A (where he was sent), then to B (his address). Asserts:
      - both clients continue on B, which takes the room over from the database; the time from the kill
        to the first ack from B is measured (printed, and written to .build/bench/failover.json);
      - nothing acknowledged before the kill is lost, the log replays to the model, no request was
        applied twice (the same checks as the crash test);
      - each user's undo stack survived the move (B's welcome shows their newest labels, undo / redo
        revert / restore their newest entry);
      - A, restarted (nodeId a), redirects a hello for R to B."""
    started = time.monotonic()
    rng = random.Random(SEED_RANDOM + 1)

    def node(node_id):
        return {**LOAD_CONFIG, "storage": {"kind": "postgres", "postgresURL": pg_server.url},
                "cluster": {"nodeId": node_id}}

    a = hub_factory(node("a"))
    b = hub_factory(node("b"))
    url_a, url_b = a.url(room), b.url(room)
    rec, labels, stop = Recorder(), LabelCounter(), threading.Event()
    ann = Worker("ann", "ann", room, lambda: [url_a, url_b], rec, labels, stop, SEED_RANDOM + 10, first_url=url_a)
    bob = Worker("bob", "bob", room, lambda: [url_b], rec, labels, stop, SEED_RANDOM + 11, first_url=url_a)
    workers = [ann, bob]
    try:
        ann.start()
        wait_for_progress([ann], what="ann's start at A")
        assert ann.url == url_a and not ann.redirects, (ann.url, ann.redirects)
        # bob says hello at B first (his configured node): sent to A, the owner
        expect_redirect(url_b, "bob", url_a, "bob's first hello")
        bob.start()               # ...and follows the redirect (his worker starts at A's URL)
        wait_for_progress(workers, what="load on A", undo_too=True)
        assert bob.url == url_a, bob.url
        time.sleep(rng.uniform(0.3, 1.0))

        acked = rec.max_rev()
        connects = {w.wname: w.connects for w in workers}
        t_kill = time.monotonic()
        a.kill()
        wait_for_progress(workers, since_connects=connects, what="failover to B")
        assert all(w.url == url_b for w in workers), {w.wname: w.url for w in workers}
        deadline = time.monotonic() + PROGRESS_TIMEOUT
        while True:     # the first replies at B may be undone / redone: wait for an ack
            with rec.lock:
                after = [(t, wn, typ) for t, wn, u, typ, _ in rec.replies if t > t_kill and u == url_b]
            if any(typ == "ack" for _, _, typ in after):
                break
            assert time.monotonic() < deadline, f"no ack from B within {PROGRESS_TIMEOUT}s of the kill: {after}"
            assert_workers_ok(workers)
            time.sleep(0.01)
        first_ack = min(t for t, _, typ in after if typ == "ack") - t_kill
        first_reply = min(t for t, _, _ in after) - t_kill
        first_welcome = min(t for w in workers for t, u in w.welcomes if t > t_kill and u == url_b) - t_kill

        time.sleep(0.5)           # the load goes on at B
        stop_workers(stop, workers)
        for w in workers:
            w.finish()

        when = "after the failover"
        frames, fw = check_log(url_b, rec, when)
        assert fw["rev"] >= acked, f"{when}: B is at rev {fw['rev']}, clients had been told up to {acked}"
        check_workers_agree(workers, fw)
        check_applied_once(frames, rec, fw["rev"])
        model = model_from_log(frames, rec, fw["rev"])
        assert model.rev == fw["rev"]
        check_undo_after_restart(url_b, model, ["ann", "bob"], when)
        check_log(url_b, rec, when + ", after the final undos")

        # A comes back: R stays at B
        a.restart(same_port=True)
        expect_redirect(a.url(room), "ann", url_b, "hello at the restarted A")
        c = HubClient(url_b, name="ann-after")
        try:
            c.hello("ann")
            ack = c.edit([set_op(1, "glasses", not by_tag(c.people, 1)["glasses"])], label="after A came back")
            assert ack["rev"] == model.rev + 1, ack
        finally:
            close_drained(c)
    finally:
        stop.set()
        for w in workers:
            w.join(10)
            if w.client is not None:
                close_drained(w.client)

    result = {
        "failover_seconds": round(first_ack, 4),
        "first_reply_seconds": round(first_reply, 4),
        "first_welcome_seconds": round(first_welcome, 4),
        "acked_rev_at_kill": acked,
        "final_rev": fw["rev"],
        "redirects_s_from_kill": {w.wname: [(round(t - t_kill, 4), "A" if u == url_a else "B" if u == url_b else u)
                                          for t, u in w.redirects] for w in workers},
        "seed": SEED_RANDOM,
        "test_seconds": round(time.monotonic() - started, 2),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "hub": HUB_BIN,
        "what": "SIGKILL of the owner node to the first ack from the surviving node (clients reconnect "
                f"at once; PostgreSQL on 127.0.0.1; {'release' if '/release/' in HUB_BIN else 'debug'} build)",
    }
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    (BENCH_DIR / "failover.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"\n[failover] kill -> first ack from B: {first_ack * 1000:.0f} ms (first welcome "
          f"{first_welcome * 1000:.0f} ms, first reply {first_reply * 1000:.0f} ms); {result}")
    print(f"[failover] {summary(workers)}")
    print("[failover] hub stderr:\n  " + "\n  ".join(hub_log_lines(a, b)[-30:]))


# ----------------------------------------------------------------------------------------------------
# Health: /healthz follows the store
# ----------------------------------------------------------------------------------------------------

def wait_for_health(hub, status: int, timeout: float = 30.0) -> bytes:
    deadline = time.monotonic() + timeout
    while True:
        got, _, body = hub.http("GET", "/healthz")
        if got == status:
            return body
        assert time.monotonic() < deadline, f"/healthz still answers {got} ({body!r}), expected {status}"
        time.sleep(0.25)


@pytest.mark.parametrize("gone", ["pk.sqlite-wal", "pk.sqlite"])
def test_a_store_file_deleted_under_the_hub_stops_acks_and_health(hub_factory, room, gone):
    """An SRE's pass: with the SQLite file (or its write-ahead log) deleted while the hub ran, the hub
    kept acknowledging edits into a file no name reached, /healthz said ok, and a SIGKILL lost them.
    Now the next edit is not acknowledged (its room closes with 1011 `store failed`), /healthz answers
    503 naming the deleted file within the check interval, and the rooms can still be exported."""
    hub = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"}})
    a = hub.join(room, "A")
    a.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])
    path = hub.workdir / "data" / gone
    assert path.exists(), sorted(p.name for p in path.parent.iterdir())
    path.unlink()
    a.submit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])
    assert a.wait_closed() == 1011
    assert not any(f["type"] == "ack" and f.get("rev") == 2 for f in a.log), "an edit acknowledged on a deleted file"
    body = wait_for_health(hub, 503, timeout=15)
    assert body.startswith(b"store unavailable: ") and b"was deleted" in body, body
    # A room made now is never durable: its hello is not welcomed, and it is not counted as created
    # (it was, before its first commit, until session 28).
    fresh = hub.connect(room[:40] + "-new", "B")
    fresh.hello("B", expect_welcome=False)
    assert fresh.wait_closed() == 1011
    assert not any(f["type"] == "welcome" for f in fresh.log), fresh.log
    assert metric(hub.metrics(), "peoplekeeper_room_loads_total", '{outcome="created"}') == 1


def metric(text: str, name: str, labels: str = "") -> float | None:
    for line in text.splitlines():
        if line.startswith(name + labels + " "):
            return float(line.split()[-1])
    return None


def test_healthz_answers_503_while_the_store_is_down(hub_factory, room):
    """A hub on a PostgreSQL that goes away says so on /healthz (503, naming the store) within its
    check interval; its clients are closed (1012: the leases went with the connection); when the
    database is back, /healthz is 200 again and a client rejoins with its acked edit there. The store
    metrics count the commits, the waits for them and the room loads."""
    pg = PostgresServer().start()
    try:
        hub = hub_factory({"storage": {"kind": "postgres", "postgresURL": pg.url}})
        assert wait_for_health(hub, 200) == b"ok\n"
        a = hub.join(room, "A")
        rev = a.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])["rev"]
        pg.halt()
        body = wait_for_health(hub, 503)
        assert body.startswith(b"store unavailable: "), body
        assert a.wait_closed() == 1012
        pg.relaunch()
        assert wait_for_health(hub, 200) == b"ok\n"
        b = hub.join(room, "B")
        assert b.welcome["rev"] == rev
        assert by_tag(b.welcome["people"], 1)["hairColor"] == "red"
        text = hub.metrics()
        assert metric(text, "peoplekeeper_room_loads_total", '{outcome="created"}') == 1, text
        assert metric(text, "peoplekeeper_room_loads_total", '{outcome="loaded"}') == 1, text
        assert metric(text, "peoplekeeper_room_load_duration_seconds_count") == 1, text
        assert metric(text, "peoplekeeper_store_commit_size_count", '{store="postgres"}') >= 2, text
        assert metric(text, "peoplekeeper_durable_wait_seconds_count") >= 2, text
    finally:
        pg.stop()


def fill(directory) -> None:
    """Writes zeros into `directory`/filler until its file system has no page left."""
    with open(os.path.join(directory, "filler"), "wb", buffering=0) as f:
        for chunk in (1 << 16, 1 << 12):
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e


def test_a_postgres_disk_freed_after_filling_brings_healthz_back(hub_factory, room):
    """The store's tables on a real file system that fills up (a 1 MiB tmpfs as their tablespace): the
    edit that needs a new page is not acknowledged, /healthz answers 503 and stays there while the disk
    is full (the probe after a failed commit grows a table, as the journal does), and once space is
    freed it answers 200 again with no client writing (an empty probe could not tell, so until session
    29 the node stayed at 503 until a client's commit worked, which a load balancer routing by /healthz
    never sends). Every acknowledged edit is there after."""
    if os.geteuid() != 0:
        pytest.fail("this test mounts a tmpfs: run it as root (make test does)", pytrace=False)
    pg = PostgresServer()
    disk = None
    try:
        pg.start()
        # Inside the server's own directory, which its user can reach.
        disk = pg.dir / "small"
        disk.mkdir()
        owner = os.stat(pg.dir)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size=1m,mode=0700,uid={owner.st_uid},gid={owner.st_gid}",
                        "tmpfs", str(disk)], check=True)
        pg.psql(f"CREATE TABLESPACE small LOCATION '{disk}'")
        pg.psql(f"ALTER DATABASE {pg.database} SET default_tablespace = small")
        hub = hub_factory({"storage": {"kind": "postgres", "postgresURL": pg.url},
                           "limits": {"opsPerSecond": 100000}})
        assert wait_for_health(hub, 200) == b"ok\n"
        assert pg.psql("SELECT tablespace FROM pg_tables WHERE tablename = 'journal'") == "small"
        a = hub.join(room, "A")
        acked = a.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])["rev"]
        fill(disk)
        for i in range(2000):
            a.submit([{"op": "set", "tag": 1, "field": "name", "value": f"{i:04d} " + "x" * 190}])
            try:
                acked = a.take("ack", timeout=10)["rev"]
            except (AssertionError, ConnectionClosed):
                break
        else:
            pytest.fail("2,000 edits acknowledged on a full disk")
        assert a.wait_closed() == 1011
        body = wait_for_health(hub, 503, timeout=15)
        assert body.startswith(b"store unavailable: "), body
        # Two checks and more while the disk is still full: the probe fails as the journal did.
        until = time.monotonic() + 11
        while time.monotonic() < until:
            got, _, body = hub.http("GET", "/healthz")
            assert got == 503, f"/healthz {got} {body!r} on a full disk"
            time.sleep(0.5)
        os.unlink(disk / "filler")
        assert wait_for_health(hub, 200, timeout=15) == b"ok\n"
        b = hub.join(room, "B")
        assert b.welcome["rev"] == acked
        assert b.edit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])["rev"] == acked + 1
    finally:
        pg.halt()
        if disk is not None:
            subprocess.run(["umount", str(disk)], check=False)
        pg.stop()


def _silence(port: int, on: bool) -> None:
    """Drop every packet to and from `port` (iptables, in this test's own network namespace)."""
    if os.stat("/proc/self/ns/net").st_ino == int(os.environ["PEOPLEKEEPER_TEST_HOST_NETNS"]):
        raise AssertionError("not in a network namespace of the test's own: the host's iptables are left alone")
    for match in ("--dport", "--sport"):
        subprocess.run(["iptables", "-I" if on else "-D", "INPUT", "-p", "tcp", match, str(port), "-j", "DROP"],
                       check=on, capture_output=True)


def test_a_postgres_node_whose_network_goes_silent_gives_up_within_its_lease_timeout(request, hub_factory, room):
    """A network that goes silent between a node and PostgreSQL (a partition, a dead router: nothing
    is closed, packets just stop) held the node's commit, its store check and its drain until the kernel
    gave up retransmitting, about 15 minutes, long after PostgreSQL had freed its leases for another
    node: a node stopped then waited for systemd's stop timeout. The node's own sockets now give up as
    the server's side does, after cluster.leaseTimeoutSeconds (here 6): the waiting edit's room closes
    unacknowledged, /healthz says 503, and the node serves again once packets pass. A node stopped while
    its commit waits on the silent network (with the default 30 s) closes that connection 10 s into the
    stop and exits (a partition pass saw 49 s, SIGKILLed by systemd at 30). Packets are dropped with iptables in
    a network namespace of the test's own (`unshare --net`, its own loopback), so nothing else on the
    machine is touched."""
    if "PEOPLEKEEPER_TEST_HOST_NETNS" not in os.environ:
        if os.geteuid() != 0:
            pytest.fail("this test drops packets in a network namespace: run it as root (make test does)",
                        pytrace=False)
        missing = [tool for tool in ("unshare", "ip", "iptables") if shutil.which(tool) is None]
        assert not missing, f"this test needs {', '.join(missing)} (util-linux, iproute2, iptables)"
        test = f"{request.node.path}::{request.node.name}"
        # Its own network (a loopback of its own) and its own processes: when the run ends, or is
        # killed for its time, everything it started (PostgreSQL, the hub) ends with it. And a /proc of
        # its own processes: libdispatch's thread-pool monitor reads /proc/TID/stat of its workers by
        # their ids in this namespace and traps when the file is missing; under the host's /proc a
        # fresh-clone run's hub did (SIGILL at start: open("/proc/33/stat") had failed).
        host = str(os.stat("/proc/self/ns/net").st_ino)
        run = subprocess.run(["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c",
                              'ip link set lo up && exec "$0" -m pytest -q -p no:cacheprovider -p no:xdist "$1"',
                              sys.executable, test], env={**os.environ, "PEOPLEKEEPER_TEST_HOST_NETNS": host},
                             cwd=str(REPO), capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"in its own network namespace:\n{run.stdout[-8000:]}\n{run.stderr[-3000:]}"
        return
    pg = PostgresServer()
    try:
        pg.start()
        def edit_then_wait_on_silence(node: str, lease: int, user: str, field: str, value):
            """A node, an acknowledged edit, then the network goes silent under a second edit."""
            hub = hub_factory({"storage": {"kind": "postgres", "postgresURL": pg.url},
                               "cluster": {"nodeId": node, "leaseTimeoutSeconds": lease}})
            client = hub.join(room, user)
            acked = client.edit([{"op": "set", "tag": 1, "field": field, "value": value}])["rev"]
            _silence(pg.port, True)
            seen = len(client.log)
            client.submit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])
            return hub, client, acked, seen

        hub, a, acked, seen = edit_then_wait_on_silence("a", 6, "ann", "hairColor", "red")
        # 1011 when the waiting commit fails first, 1012 ("room moved") when a store check finds the
        # lost connection first: either way unacknowledged, and the client reconnects.
        assert a.wait_closed(timeout=40) in (1011, 1012)
        assert [m for m in a.log[seen:] if m.get("type") == "ack"] == [], a.log[seen:]
        assert wait_for_health(hub, 503, timeout=20).startswith(b"store unavailable: ")

        _silence(pg.port, False)
        assert wait_for_health(hub, 200, timeout=60) == b"ok\n"
        b = hub.join(room, "bob")
        assert b.welcome["rev"] == acked
        acked = b.edit([{"op": "set", "tag": 1, "field": "eyeColor", "value": "green"}])["rev"]

        hub.stop()

        # A node with the default lease timeout (30 s: a service manager's whole stop timeout) stopped
        # while its commit waits on the silent network: the stop closes that connection after 10 s.
        slow, _, acked, _ = edit_then_wait_on_silence("b", 30, "cy", "hairLength", "long")
        time.sleep(0.5)
        started = time.monotonic()
        code = slow.terminate(timeout=60)
        took = time.monotonic() - started
        assert code == 0, f"exit {code} after SIGTERM; stderr tail:\n{slow.stderr()[-3000:]}"
        assert took < 20, f"the node took {took:.1f} s to stop:\n{slow.stderr()[-3000:]}"
        assert "closing its PostgreSQL connection" in slow.stderr(), slow.stderr()[-3000:]
        # Every acknowledged edit is in the database, nothing after them.
        _silence(pg.port, False)
        assert pg.psql(f"SELECT max(revision) FROM journal WHERE room = '{room}'") == str(acked)
    finally:
        _silence(pg.port, False)
        pg.halt()
        pg.stop()


def test_a_postgres_node_gives_up_on_a_server_that_stopped_answering_and_serves_again(hub_factory, room):
    """A PostgreSQL that is there but does not answer (SIGSTOP to its processes, or processes stuck,
    while its machine runs) keeps its connections alive at the TCP level, its kernel answering the keepalives:
    the node's commit waited until the server came back, however long, the client's edit neither
    acknowledged nor refused and nothing telling anyone. Now a query unanswered for
    cluster.leaseTimeoutSeconds (10 s at least; here 4, so 10), on a server that answers no new
    connection either (asked twice, 10 s each), closes its connection: the waiting
    edit's room closes unacknowledged, the log says why, and once the server answers again the node
    serves the room: every acknowledged edit, and the waiting one once when its client sends it again.
    A node stopped while it asks the stopped server whether it answers exits 0 within the stop's 10 s."""
    pg = PostgresServer()
    frozen = False
    try:
        pg.start()
        hub = hub_factory({"storage": {"kind": "postgres", "postgresURL": pg.url},
                           "cluster": {"nodeId": "a", "leaseTimeoutSeconds": 4}})
        a = hub.join(room, "ann")
        acked = a.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])["rev"]
        pg.pause()
        frozen = True
        seen = len(a.log)
        a.submit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])
        # 1011 when the waiting commit fails first, 1012 ("room moved") when the lost leases are
        # noticed first: either way unacknowledged, and the client reconnects.
        assert a.wait_closed(timeout=60) in (1011, 1012), hub.stderr()[-3000:]
        assert [m for m in a.log[seen:] if m.get("type") == "ack"] == [], a.log[seen:]
        assert "PostgreSQL has answered neither a query for 10 s nor a new connection" in hub.stderr(), \
            hub.stderr()[-3000:]
        assert wait_for_health(hub, 503, timeout=30).startswith(b"store unavailable: ")

        pg.pause(False)
        frozen = False
        assert wait_for_health(hub, 200, timeout=60) == b"ok\n"
        # The commit may have reached the server before it stopped, and been made when it went on (it
        # was in the socket's buffer): unacknowledged is not undone. ann's client resumes its session
        # and sends the edit again with its seq, as after any lost connection: it is in the room once.
        ann = hub.join(room, "ann", resume=a.welcome["session"])
        ann.submit([{"op": "set", "tag": 1, "field": "glasses", "value": True}], base=acked, seq=2)
        assert ann.take("ack")["rev"] == acked + 1
        acked += 1
        b = hub.join(room, "bob")
        assert b.welcome["rev"] == acked and by_tag(b.welcome["people"], 1)["glasses"] is True
        acked = b.edit([{"op": "set", "tag": 1, "field": "eyeColor", "value": "green"}])["rev"]
        assert pg.psql(f"SELECT count(*) || ' ' || max(revision) FROM journal WHERE room = '{room}' AND revision IS NOT NULL") \
            == f"{acked} {acked}"

        # Stopped again, and the node stopped while it asks the server whether it answers (a query
        # waiting 10 s, then a connection waiting for its start-up): it exits 0 within the stop's 10 s.
        pg.pause()
        frozen = True
        b.submit([{"op": "set", "tag": 1, "field": "hairLength", "value": "long"}])
        time.sleep(12)
        started = time.monotonic()
        code = hub.terminate(timeout=60)
        took = time.monotonic() - started
        assert code == 0 and took < 20, f"exit {code} {took:.1f} s after SIGTERM:\n{hub.stderr()[-3000:]}"
    finally:
        if frozen:
            pg.pause(False)
        pg.stop()


def test_a_postgres_node_that_postgresql_does_not_answer_answers_no_read_from_memory(hub_factory, room):
    """A node's leases are its own only as long as its writer session lives: PostgreSQL ends it about
    cluster.leaseTimeoutSeconds after the network went silent, and another node ends a silent, idle one.
    A node that PostgreSQL does not answer (a partition, a server stuck: here its processes stopped)
    went on answering reads of its rooms from memory until its connection was found gone, 20 s and more
    here, while another node could have taken the room and written to it. Now it is sure of its leases
    only until three quarters of the lease timeout after the newest statement answered on that
    connection was sent (here 8 s: 6 s): a read is then 503 with Retry-After: 1, a WebSocket hello is
    not welcomed, the log says why, and once PostgreSQL answers again the node serves the room as it
    was."""
    pg = PostgresServer()
    frozen = False
    try:
        pg.start()
        hub = hub_factory({"storage": {"kind": "postgres", "postgresURL": pg.url},
                           "cluster": {"nodeId": "a", "leaseTimeoutSeconds": 8}})
        a = hub.join(room, "ann")
        acked = a.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])["rev"]
        path = f"/v1/rooms/{room}"
        assert hub.http("GET", path)[0] == 200
        pg.pause()
        frozen = True
        paused = time.monotonic()
        while True:
            status, headers, body = hub.http("GET", path)
            waited = time.monotonic() - paused
            if status != 200:
                break
            assert waited < 9, f"a read still answered from memory {waited:.1f} s into PostgreSQL's silence"
            time.sleep(0.2)
        assert status == 503 and headers.get("retry-after") == "1", (status, headers, body)
        assert b"checking that it still holds room" in body, body
        assert waited >= 5, f"503 only {waited:.1f} s into the silence: the last answer keeps the node sure 6 s"
        # Logged by the store's watch, which looks every 250 ms.
        said = "PostgreSQL has answered nothing sent on the connection holding the room leases for"
        deadline = time.monotonic() + 2
        while said not in hub.stderr():
            assert time.monotonic() < deadline, hub.stderr()[-3000:]
            time.sleep(0.05)
        # A WebSocket hello is not welcomed from memory either: it waits until the node is sure again,
        # or is closed with the room if the leases went meanwhile. (A fresh hello's welcome waits for
        # the commit of its tag block anyway; a resumed session's waits for nothing, and was sent from
        # memory before session 44.)
        # Nor is a `log` question of a client already in the room (before session 45 it was): it waits,
        # then is answered, or goes with the room (1012).
        a.send({"type": "log", "seq": 70, "limit": 5})
        carl = hub.connect(room, name="ann-again")
        carl.hello("ann", expect_welcome=False, resume=a.welcome["session"], since=acked, people=a.people)
        carl.expect_nothing("welcome", quiet=1.0)
        a.expect_nothing("log")
        pg.pause(False)
        frozen = False
        try:
            page = a.take("log", timeout=40)
        except ConnectionClosed:
            assert a.closed_code == 1012, (a.closed_code, a.log[-4:])
        else:
            assert page["seq"] == 70 and page["entries"][0]["rev"] == acked, page
        try:
            welcome = carl.take("welcome", timeout=40)
        except ConnectionClosed:
            assert carl.closed_code == 1012, (carl.closed_code, carl.log[-4:])
        else:
            assert welcome["rev"] == acked, welcome
        deadline = time.monotonic() + 40
        while True:
            status, _, body = hub.http("GET", path)
            if status == 200:
                break
            assert time.monotonic() < deadline, f"the node does not serve the room again: {status} {body!r}"
            time.sleep(0.2)
        assert json.loads(body)["rev"] == acked, body
        b = hub.join(room, "bob")
        assert b.welcome["rev"] == acked and by_tag(b.welcome["people"], 1)["hairColor"] == "red"
    finally:
        if frozen:
            pg.pause(False)
        pg.halt()
        pg.stop()


def test_a_postgres_node_busy_in_a_long_statement_stays_sure_of_its_leases(hub_factory, room):
    """The other side of the test above: a node whose writer waits in one long statement (here for a
    table lock another session holds 9 s; an import's commit is another) answers nothing on its lease
    connection meanwhile, yet its session is busy and no other node may end it. It went unsure after 6
    s (lease timeout 8) and answered its rooms' reads 503 (a review, session 43); now it asks on
    another connection whether its session still holds its lock, and serves them all along. The
    waiting edit is acknowledged once the lock goes."""
    pg = PostgresServer()
    try:
        pg.start()
        hub = hub_factory({"storage": {"kind": "postgres", "postgresURL": pg.url},
                           "cluster": {"nodeId": "a", "leaseTimeoutSeconds": 8}})
        other = room[:57] + "-b"
        a = hub.join(room, "ann")
        b = hub.join(other, "bob")
        b.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])
        locker = threading.Thread(target=pg.psql, args=(
            "BEGIN; LOCK TABLE journal IN SHARE MODE; SELECT pg_sleep(9); COMMIT;",), kwargs={"timeout": 30})
        locker.start()
        time.sleep(0.5)
        a.submit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])
        started = time.monotonic()
        answers = []
        while locker.is_alive():
            status, _, body = hub.http("GET", f"/v1/rooms/{other}")
            answers.append((round(time.monotonic() - started, 1), status))
            assert status == 200, f"{status} {body!r} {time.monotonic() - started:.1f} s into the writer's wait: {answers}"
            time.sleep(0.25)
        assert answers[-1][0] >= 7, f"the lock was held {answers[-1][0]} s only: {answers}"
        assert a.take("ack", timeout=20)["rev"] == 1
        assert "PostgreSQL has answered nothing" not in hub.stderr(), hub.stderr()[-3000:]
    finally:
        pg.halt()
        pg.stop()


def test_a_nul_in_a_label_or_user_name_is_kept_on_postgres(hub_factory, pg_server, room):
    """The product contract allows any text in a label or a user name. The journal's readable columns
    copied them raw, and PostgreSQL's text refuses a NUL (22021): the commit failed, the room closed
    1011 for everyone in it, and the sender's client sent the edit again at each reconnect (a code
    review). Now the columns hold U+FFFD there and the record the exact text: the edit is
    acknowledged, teammates, the log and a restarted hub all give the label as it was sent."""
    hub = hub_factory({"storage": {"kind": "postgres", "postgresURL": pg_server.url}})
    a = hub.join(room, "a\u0000b")
    watcher = hub.join(room, "W")
    label = "Rename\u0000 Joan"
    ack = a.edit([{"op": "set", "tag": 2, "field": "name", "value": "Jo\u0000an"}], label=label)
    assert watcher.take("ops")["label"] == label
    entry = a.timeline(limit=1)["entries"][0]
    assert (entry["rev"], entry["author"], entry.get("label")) == (ack["rev"], "a\u0000b", label), entry
    assert pg_server.psql(f"SELECT author || '|' || label FROM journal WHERE room = '{room}' AND revision = {ack['rev']}") \
        == "a\ufffdb|Rename\ufffd Joan"
    hub.restart()
    b = hub.join(room, "B")
    assert b.welcome["rev"] == ack["rev"]
    assert by_tag(b.welcome["people"], 2)["name"] == "Jo\u0000an"
    assert b.timeline(limit=1)["entries"][0].get("label") == label


# ----------------------------------------------------------------------------------------------------
# Backup: `peoplekeeper-hub backup` while the hub runs, and a hub restored from the copy
# ----------------------------------------------------------------------------------------------------

def run_backup(config_path, destination) -> subprocess.CompletedProcess:
    return subprocess.run([HUB_BIN, "backup", "--config", str(config_path), str(destination)],
                          cwd=str(REPO), capture_output=True, text=True, timeout=60)


def test_backup_while_the_hub_runs_restores_every_acked_revision(hub_factory, rooms, tmp_path):
    """`peoplekeeper-hub backup FILE` copies the live SQLite store (the hub keeps committing); a hub
    started on the copy serves each room at the revision it had, with its people and undo stacks. The
    command refuses to overwrite a file (exit 74), says to use pg_dump for PostgreSQL and that a memory
    store has nothing to copy (exit 64)."""
    hub = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"}})
    first, second = rooms("-1"), rooms("-2")
    a = hub.join(first, "A")
    for color in ("red", "gray", "black"):
        rev = a.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": color}], label="Change Hair Color")["rev"]
    b = hub.join(second, "B")
    b.edit([{"op": "set", "tag": 2, "field": "glasses", "value": True}], label="Toggle Glasses")
    copy_path = tmp_path / "copy.sqlite"
    r = run_backup(hub.config_path, copy_path)
    assert r.returncode == 0, r.stderr
    assert "2 rooms" in r.stdout and "integrity ok" in r.stdout, r.stdout
    # The hub goes on; what comes after the backup is not in the copy.
    a.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "white"}])

    again = run_backup(hub.config_path, copy_path)
    assert again.returncode == 74 and "exists already" in again.stderr, (again.returncode, again.stderr)
    memory = tmp_path / "memory.yaml"
    memory.write_text("storage:\n  kind: memory\n")
    wrong = run_backup(memory, tmp_path / "other.sqlite")
    assert wrong.returncode == 64 and "a memory store keeps nothing to copy" in wrong.stderr, (wrong.returncode, wrong.stderr)
    postgres = tmp_path / "postgres.yaml"
    postgres.write_text("storage:\n  kind: postgres\n  postgresURL: postgres://nobody@127.0.0.1:1/none\n")
    wrong = run_backup(postgres, tmp_path / "other.sqlite")
    assert wrong.returncode == 64 and "pg_dump" in wrong.stderr, (wrong.returncode, wrong.stderr)

    restored = hub_factory({"storage": {"kind": "embedded", "path": str(copy_path)}})
    c = restored.join(first, "A")
    assert c.welcome["rev"] == rev
    assert by_tag(c.welcome["people"], 1)["hairColor"] == "black"
    assert c.welcome["history"].get("undoLabel") == "Change Hair Color", c.welcome["history"]
    u = c.undo()
    assert u["rev"] == rev + 1 and u["ops"] == [{"op": "set", "tag": 1, "field": "hairColor", "value": "gray"}], u
    d = restored.join(second, "B")
    assert by_tag(d.welcome["people"], 2)["glasses"] is True


def test_a_session_resumed_while_its_ack_waits_for_the_commit_gets_its_welcome_first(hub_factory, room):
    """Found by the soak: a request's ack (or a broadcast) held until its commit is durable went to the
    session's *new* connection when the session resumed meanwhile, ahead of the welcome, and the same
    revision then came again in the catch-up. Held frames now go to the connection they were made for.
    120 cycles of: submit, drop the socket at once, resume with `since` on a new connection, resend
    (about 2% of cycles hit it before the fix)."""
    import socket
    hub = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"},
                       "limits": {"opsPerSecond": 100000}})
    rng = random.Random(1)
    c = hub.connect(room, name="ann")
    welcome = c.hello("ann")
    session, rev, glasses = c.session, welcome["rev"], False
    for seq in range(1, 121):
        glasses = not glasses
        submit = {"type": "submit", "seq": seq, "base": rev,
                  "ops": [{"op": "set", "tag": 1, "field": "glasses", "value": glasses}]}
        c.send(submit)
        time.sleep(rng.choice([0, 0, 0.0005, 0.001, 0.002]))
        c.ws.socket.shutdown(socket.SHUT_RDWR)
        c.close()
        n = hub.connect(room, name="ann")
        n.send({"type": "hello", "protocol": 1, "user": "ann", "resume": session, "since": rev})
        # Every frame up to the welcome (however long the commit it may wait behind takes: an fsync can
        # pass 150 ms on a busy disk), then whatever follows within 0.15 s of quiet.
        frames, deadline = [], time.monotonic() + 10
        while not any(f["type"] == "welcome" for f in frames) and time.monotonic() < deadline:
            try:
                frames.append(json.loads(n.ws.recv(timeout=max(0.01, deadline - time.monotonic()))))
            except TimeoutError:
                break
        while True:
            try:
                frames.append(json.loads(n.ws.recv(timeout=0.15)))
            except TimeoutError:
                break
        kinds = [f["type"] for f in frames if f["type"] not in ("presence", "history")]
        assert kinds and kinds[0] == "welcome", f"cycle {seq}: the first frame after hello was {kinds[:3]}"
        revs = [f["rev"] for f in frames if f["type"] in ("ops", "ack")]
        assert len(revs) == len(set(revs)), f"cycle {seq}: a revision came twice: {frames}"
        n.send(submit)  # the resend: answered once, from the kept reply or applied now
        acks = []
        deadline = time.monotonic() + 5
        while not acks and time.monotonic() < deadline:
            try:
                frame = json.loads(n.ws.recv(timeout=1))
            except TimeoutError:
                continue
            if frame["type"] == "ack":
                acks.append(frame)
        assert acks and acks[0]["seq"] == seq, f"cycle {seq}: no ack for the resend"
        rev = max([rev, acks[0]["rev"]] + revs)
        c = n


def test_a_client_away_when_its_room_was_deleted_is_told_so_after_a_restart_and_the_room_is_not_made_again(
        hub_factory, room):
    """A black-box pass (session 39): a client that was offline when an admin deleted its room came
    back with `since`, and its hello made the room again from the seed (undoing the delete), then
    told it the room had gone back. The store remembers the deletion (across a restart), and such a
    hello is closed with 1000 "room deleted", as the room's connections were; a hello naming no
    revision makes a new room of the name, and the client of the deleted room is still told it was
    deleted there (its queued edits went into the new room before)."""
    h = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"}})
    ann = h.join(room, "ann")
    ack = ann.edit([set_op(1, "hairColor", "red")])
    ann.close()
    assert h.http("DELETE", f"/v1/rooms/{room}")[0] == 204
    h.restart()
    back = h.connect(room, name="ann-back")
    back.hello("ann", expect_welcome=False, since=ack["rev"], sinceTime=ack["time"])
    assert back.wait_closed() == 1000 and back.close_reason == "room deleted", back.log[-4:]
    assert not [m for m in back.log if m.get("type") == "welcome"], back.log
    status, _, body = h.http("GET", f"/v1/rooms/{room}")
    assert status == 404, (status, body)
    bob = h.join(room, "bob")                      # names no revision: a new room of the name
    assert bob.welcome["rev"] == 0 and bob.welcome["people"], bob.welcome
    late = h.connect(room, name="ann-late")        # the room exists again, not hers
    late.hello("ann", expect_welcome=False, since=ack["rev"], sinceTime=ack["time"])
    assert late.wait_closed() == 1000 and late.close_reason == "room deleted", late.log[-4:]
    bob.close()
    h.restart()                                    # and after a restart, from the store
    again = h.connect(room, name="ann-again")
    again.hello("ann", expect_welcome=False, since=ack["rev"], sinceTime=ack["time"])
    assert again.wait_closed() == 1000 and again.close_reason == "room deleted", again.log[-4:]
    back_bob = h.connect(room, name="bob-back")   # bob's room is the new one: he comes back to it
    welcome = back_bob.hello("bob", since=0, sinceTime=bob.welcome["time"])
    assert welcome.get("reset") is not True and welcome["rev"] == 0, welcome

