"""Rooms owned by different service threads (transport.serviceThreads 2), seen from outside.

With several service threads every room has one owner thread, picked by a stable hash of its name
(docs/ARCHITECTURE.md, "Threads"); a connection or HTTP request for a room is handled there whichever
thread reads its socket. What a user or an operator sees must not depend on which thread owns which
room: the limits are the hub's (maxRooms, the HTTP rate per caller), the room list shows every loaded
room's live state, `/metrics` counts every room, and rooms on both threads work side by side.

The room names are picked so that each test has rooms on both threads (the same FNV-1a hash as the hub);
the hash itself is not what is tested: each test also passes with one thread.
"""
from __future__ import annotations

import time

import pytest

from conftest import merge, unique_room
from pkhttp import HubHTTP, expect

THREADS = 2


def owner(name: str, threads: int = THREADS) -> int:
    """The service thread that owns room `name` (FNV-1a 64 of its UTF-8 bytes, modulo the threads)."""
    h = 0xcbf29ce484222325
    for byte in name.encode():
        h ^= byte
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h % threads


def rooms_on(thread: int, count: int, hint: str) -> list[str]:
    """`count` fresh room names owned by `thread`."""
    found: list[str] = []
    while len(found) < count:
        name = unique_room(hint)
        if owner(name) == thread:
            found.append(name)
    return found


@pytest.fixture
def two_threads(hub_factory, monkeypatch):
    """A hub with two service threads (the environment would override the file: set it there)."""
    monkeypatch.setenv("PEOPLEKEEPER_TRANSPORT_SERVICE_THREADS", str(THREADS))

    def make(config: dict | None = None):
        h = hub_factory(merge(config or {}, {"logging": {"level": "info"}}))
        # The "listening" log line follows the banner on stdout that the hub fixture waited for.
        deadline = time.monotonic() + 5
        while "serviceThreads=" not in h.stderr() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "serviceThreads=2" in h.stderr(), h.stderr()[-2000:]
        return h
    return make


def test_max_rooms_counts_the_rooms_of_every_thread(two_threads):
    h = two_threads({"limits": {"maxRooms": 2}})
    (a,) = rooms_on(0, 1, "own-a")
    b, c = rooms_on(1, 2, "own-b")
    (d,) = rooms_on(0, 1, "own-d")
    ann = h.join(a, "ann")
    bob = h.join(b, "bob")
    for name in (c, d):           # a third room, on either thread, is one too many for the hub
        x = h.connect(name)
        x.send({"type": "hello", "protocol": 1, "user": "X"})
        err = x.take("error")
        assert err["code"] == "room-full", err
    # the two rooms still take edits and new users
    assert ann.edit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])["rev"] == 1
    assert bob.edit([{"op": "set", "tag": 2, "field": "glasses", "value": True}])["rev"] == 1
    assert h.join(b, "carl").welcome["rev"] == 1


def test_the_room_list_shows_live_rooms_of_every_thread(two_threads):
    h = two_threads()
    on0 = rooms_on(0, 2, "list-0")
    on1 = rooms_on(1, 2, "list-1")
    clients = {}
    for k, name in enumerate(on0 + on1):
        c = h.join(name, f"u{k}")
        for i in range(k + 1):      # a different revision in each room: k + 1
            c.edit([{"op": "set", "tag": 1, "field": "glasses", "value": i % 2 == 0}])
        clients[name] = c
    h.join(on1[0], "second")       # two connected in one room of thread 1
    admin = HubHTTP(h.port)
    listed = {r["name"]: r for r in expect(admin.request("GET", "/v1/rooms", query={"limit": 1000}), 200)["rooms"]}
    for k, name in enumerate(on0 + on1):
        assert name in listed, (name, sorted(listed))
        r = listed[name]
        assert r["rev"] == k + 1, (owner(name), r)
        assert r["connected"] == (2 if name == on1[0] else 1), (owner(name), r)
        assert r["people"] == 3, r
    admin.close()


def test_metrics_count_every_thread_s_rooms_and_connections(two_threads):
    h = two_threads()
    names = rooms_on(0, 2, "m0") + rooms_on(1, 3, "m1")
    for k, name in enumerate(names):
        h.join(name, f"u{k}")

    def gauge(name: str) -> float:
        for line in h.metrics().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
        raise AssertionError(f"no {name} in /metrics")
    deadline = time.monotonic() + 5
    while gauge("peoplekeeper_rooms") != 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gauge("peoplekeeper_rooms") == 5
    assert gauge("peoplekeeper_connections") == 5


def test_the_http_rate_is_per_caller_not_per_thread(two_threads):
    # One request a second with a burst of two: quick reads alternating between rooms of the two threads
    # get two answers, and one more per second that passes. Per-thread buckets would answer four at once.
    h = two_threads({"limits": {"opsPerSecond": 1}})
    (a,) = rooms_on(0, 1, "rate-0")
    (b,) = rooms_on(1, 1, "rate-1")
    h.join(a, "ann")
    h.join(b, "bob")
    api = HubHTTP(h.port, user="ann")
    t0 = time.monotonic()
    statuses = [api.request("GET", f"/v1/rooms/{(a, b)[k % 2]}").status for k in range(12)]
    elapsed = time.monotonic() - t0
    api.close()
    assert all(s in (200, 429) for s in statuses), statuses
    assert statuses[:2] == [200, 200], statuses
    assert statuses.count(200) <= 2 + int(elapsed) + 1, (statuses, elapsed)


def test_rooms_on_both_threads_edit_side_by_side(two_threads):
    h = two_threads()
    (a,) = rooms_on(0, 1, "side-0")
    (b,) = rooms_on(1, 1, "side-1")
    writers = [h.join(a, "ann"), h.join(b, "bob")]
    watchers = [h.join(a, "amy"), h.join(b, "ben")]
    for i in range(30):
        for w in writers:
            assert w.edit([{"op": "set", "tag": 1, "field": "glasses", "value": i % 2 == 0}])["rev"] == i + 1
    for room, watcher in zip((a, b), watchers):
        watcher.sync(30)
        revs = [m["rev"] for m in watcher.log if m["type"] == "ops"]
        assert revs == list(range(1, 31)), (room, revs)
        assert watcher.people[0]["glasses"] is False
