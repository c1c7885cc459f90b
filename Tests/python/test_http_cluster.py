"""The HTTP API in cluster mode (docs/HTTP.md): two nodes on one real PostgreSQL. A room owned by node A
is answered 307 at node B, with `Location` the same request at A (path and query kept); following it
works, and the write is durable and in A's change feed; an import (`PUT`) is sent to the owner too. (Webhooks in cluster mode:
test_webhooks_cluster.py.) Also: PostgreSQL is told to give up on a silent node's lease connection
within cluster.leaseTimeoutSeconds."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import threading
import time
from urllib.parse import urlsplit

from pkclient import HubClient, by_tag
from pkhttp import HubHTTP


def raw(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def cluster_node(pg_server, node_id: str, **limits) -> dict:
    """The config of a cluster node on `pg_server`, with these `limits` if any."""
    config = {"storage": {"kind": "postgres", "postgresURL": pg_server.url}, "cluster": {"nodeId": node_id}}
    if limits:
        config["limits"] = limits
    return config


def test_a_room_owned_by_another_node_is_redirected_with_307(hub_factory, pg_server, room):
    a = hub_factory(cluster_node(pg_server, "a"))
    b = hub_factory(cluster_node(pg_server, "b"))
    ann = a.join(room, "ann")                      # A loads the room and holds its lease
    path = f"/v1/rooms/{room}/batches?user=bob"
    status, headers, body = raw(b.port, "POST", path,
                                {"base": 0, "key": "k1", "ops": [{"op": "set", "tag": 1, "field": "glasses", "value": True}]})
    assert status == 307, (status, body)
    assert json.loads(body)["error"]["code"] == "elsewhere", body
    location = urlsplit(headers["location"])
    assert (location.hostname, location.port) == ("127.0.0.1", a.port), headers["location"]
    assert location.path == f"/v1/rooms/{room}/batches" and location.query == "user=bob", headers["location"]

    # following it (as an HTTP client does for 307: same method, same body) writes at the owner
    status, _, body = raw(a.port, "POST", location.path + "?" + location.query,
                          {"base": 0, "key": "k1", "ops": [{"op": "set", "tag": 1, "field": "glasses", "value": True}]})
    assert status == 200 and json.loads(body)["rev"] == 1, (status, body)
    ann.sync(1)
    feed = HubHTTP(a.port).feed(room, 0).json
    assert [r["rev"] for r in feed["revisions"]] == [1] and feed["revisions"][0]["author"] == "bob", feed
    status, headers, _ = raw(b.port, "GET", f"/v1/rooms/{room}/revisions?after=0")
    assert status == 307 and urlsplit(headers["location"]).query == "after=0", headers

    # An import (PUT) of a room A owns is sent to A too (where it is 409: the room exists); a new room
    # made at B is B's, and a PUT of it at A is sent to B.
    status, headers, body = raw(b.port, "PUT", f"/v1/rooms/{room}", {"people": []})
    assert status == 307 and urlsplit(headers["location"]).port == a.port, (status, headers, body)
    fresh = room[:50] + "-new"
    status, _, body = raw(b.port, "PUT", f"/v1/rooms/{fresh}", {"people": []})
    assert status == 201, (status, body)
    status, headers, body = raw(a.port, "PUT", f"/v1/rooms/{fresh}", {"people": []})
    assert status == 307 and urlsplit(headers["location"]).port == b.port, (status, headers, body)


def test_delete_of_a_stored_room_no_node_holds_needs_no_room_slot(hub_factory, pg_server, room):
    """A DELETE of a room no node has in memory takes the room's lease and deletes it in the store
    without loading it, so a node at limits.maxRooms can still do it (it was 503 room-full); a room
    another node holds is sent there (307)."""
    held, stored, busy = room[:50] + "-held", room[:50] + "-stored", room[:50] + "-busy"
    a = hub_factory(cluster_node(pg_server, "a"))
    c = hub_factory(cluster_node(pg_server, "c"))
    assert raw(a.port, "PUT", f"/v1/rooms/{held}", {"people": []})[0] == 201
    assert raw(c.port, "PUT", f"/v1/rooms/{stored}", {"people": []})[0] == 201
    assert c.terminate() == 0                      # drained: the room is stored, and nobody holds it

    b = hub_factory(cluster_node(pg_server, "b", maxRooms=1))
    b.join(busy, "bob")                            # b's one room
    status, headers, body = raw(b.port, "DELETE", f"/v1/rooms/{held}")
    assert status == 307 and urlsplit(headers["location"]).port == a.port, (status, headers, body)
    status, _, body = raw(b.port, "DELETE", f"/v1/rooms/{stored}")
    assert status == 204, (status, body)
    status, _, body = raw(a.port, "GET", f"/v1/rooms/{stored}")
    assert status == 404 and json.loads(body)["error"]["code"] == "no-room", (status, body)
    status, _, body = raw(b.port, "DELETE", f"/v1/rooms/{stored}")
    assert status == 404, (status, body)
    # The lease was given back: node a can make a room of that name again.
    assert raw(a.port, "PUT", f"/v1/rooms/{stored}", {"people": []})[0] == 201


def test_a_node_at_max_rooms_still_sends_a_room_another_node_serves_there(hub_factory, pg_server, room):
    """Node a holds its limits.maxRooms (1) rooms; node b serves room `g`. At a, a hello for `g` is
    redirected to b and an HTTP request for it is 307 to b, as below the limit (it was room-full /
    503: a full node cannot load the room, but it need not); a room nobody serves is still
    room-full (hello) and an absent one 404 (HTTP)."""
    busy, served, stored = room[:50] + "-busy", room[:50] + "-g", room[:50] + "-stored"
    a = hub_factory(cluster_node(pg_server, "a", maxRooms=1))
    b = hub_factory(cluster_node(pg_server, "b"))
    a.join(busy, "ann")                            # a is full
    b.join(served, "bob")                          # b serves g
    assert raw(b.port, "PUT", f"/v1/rooms/{stored}", {"people": []})[0] == 201

    c = HubClient(a.url(served), name="carl-probe")
    try:
        c.hello("carl", expect_welcome=False)
        m = c.take("redirect", timeout=5, allow_error=True)
        assert m == {"type": "redirect", "url": b.url(served)}, m
        assert c.wait_closed(timeout=5) == 1000
    finally:
        c.close()
    status, headers, body = raw(a.port, "GET", f"/v1/rooms/{served}")
    assert status == 307 and urlsplit(headers["location"]).port == b.port, (status, headers, body)

    status, _, body = raw(a.port, "GET", f"/v1/rooms/{room[:50]}-absent")
    assert status == 404, (status, body)
    # Once nobody serves the stored room (b drained), it is a's to load, and a is full.
    assert b.terminate() == 0
    status, _, body = raw(a.port, "GET", f"/v1/rooms/{stored}")
    assert status == 503 and json.loads(body)["error"]["code"] == "room-full", (status, body)
    d = HubClient(a.url(stored), name="dana-probe")
    try:
        d.hello("dana", expect_welcome=False)
        e = d.take("error", timeout=5)
        assert e["code"] == "room-full", e
    finally:
        d.close()


def test_http_requests_are_counted_by_route_and_status_in_metrics(hub_factory, room):
    """`peoplekeeper_http_requests_total{route,status}` and `peoplekeeper_http_request_duration_seconds`
    (docs/CONFIG.md, Metrics): a room read, a write, a missing room and an unknown path, each counted
    under its route pattern, not under the room's name."""
    import re

    hub = hub_factory({"metrics": {"enabled": True}})
    hub.join(room, "ann").close()
    web = HubHTTP(hub.port, user="bob")
    for _ in range(3):
        assert web.state(room).status == 200
    web.edit(room, [{"op": "set", "tag": 1, "field": "glasses", "value": True}])
    assert web.state(room[:50] + "-none").status == 404
    assert raw(hub.port, "GET", "/v1/nothing")[0] == 404
    text = hub.metrics()

    def count(route: str, status: int) -> int:
        m = re.search(r'^peoplekeeper_http_requests_total\{(?=[^}]*route="' + re.escape(route) + r'")(?=[^}]*status="'
                      + str(status) + r'")[^}]*\} (\d+)', text, re.MULTILINE)
        return int(m.group(1)) if m else 0

    assert count("GET /v1/rooms/:room", 200) >= 3 + 1, text   # the edit reads the head once more
    assert count("POST /v1/rooms/:room/batches", 200) == 1, text
    assert count("GET /v1/rooms/:room", 404) == 1, text
    assert count("GET (no route)", 404) == 1, text
    assert room not in "".join(l for l in text.splitlines() if l.startswith("peoplekeeper_http_")), \
        "room names must not become label values"
    assert re.search(r'^peoplekeeper_http_request_duration_seconds_count\{route="GET /v1/rooms/:room"\} \d+', text,
                     re.MULTILINE), text


def _keepalive_timers(pg_port: int, client_ports: set[int]) -> dict[int, float]:
    """PostgreSQL's side of the TCP connections from `client_ports`: client port → seconds left on the
    socket's keepalive timer (`ss -o`), for the sockets that have one."""
    out = subprocess.run(["ss", "-tnoH", "state", "established", f"( sport = :{pg_port} )"],
                         capture_output=True, text=True, check=True).stdout
    timers = {}
    for line in out.splitlines():
        m = re.search(r"127\.0\.0\.1:\d+\s+127\.0\.0\.1:(\d+).*timer:\(keepalive,([^,]+),", line)
        if m and int(m.group(1)) in client_ports:
            # ss writes what is left as e.g. 119min, 5.9sec or 3.060ms (iproute2 versions differ).
            scale = {"min": 60.0, "sec": 1.0, "ms": 0.001}
            timers[int(m.group(1))] = sum(float(n) * scale[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(min|sec|ms)", m.group(2)))
    return timers


def _hub_ports_to(pid: int, pg_port: int) -> set[int]:
    out = subprocess.run(["ss", "-tnpH", "state", "established", f"( dport = :{pg_port} )"],
                         capture_output=True, text=True, check=True).stdout
    return {int(m.group(1)) for line in out.splitlines() if f"pid={pid}," in line
            for m in [re.search(r"127\.0\.0\.1:(\d+)\s+127\.0\.0\.1:" + str(pg_port), line)] if m}


def test_postgres_frees_a_silent_node_s_rooms_within_cluster_lease_timeout(hub_factory, pg_server, room):
    """A node that loses power or its network sends no goodbye: PostgreSQL keeps its leases until TCP
    keepalive on that session gives up, over two hours by Linux's defaults. The node sets keepalives on
    the server's side of its lease connection from cluster.leaseTimeoutSeconds (here 12: probes after
    6 s idle): PostgreSQL's socket for that connection shows a keepalive timer of at most 6 s, where
    the server's default is 7,200 s. (A lost network itself is not simulated: loopback only.)"""
    hub = hub_factory({"storage": {"kind": "postgres", "postgresURL": pg_server.url},
                       "cluster": {"nodeId": "a", "leaseTimeoutSeconds": 12}})
    hub.join(room, "ann").close()                      # the lease is taken on the writer connection
    ports = _hub_ports_to(hub.proc.pid, pg_server.port)
    assert ports, "the hub has no connection to PostgreSQL that ss can see"
    # A socket with data just sent shows its retransmit timer instead (and the hub's other connections
    # the server's default keepalive): look again until the lease connection is idle.
    deadline = time.monotonic() + 5
    timers = _keepalive_timers(pg_server.port, ports)
    while (not timers or min(timers.values()) > 6.0) and time.monotonic() < deadline:
        time.sleep(0.2)
        timers = _keepalive_timers(pg_server.port, ports)
    seen = subprocess.run(["ss", "-tnoH", "state", "established", f"( sport = :{pg_server.port} )"],
                          capture_output=True, text=True).stdout
    assert timers and min(timers.values()) <= 6.0, (
        f"no server-side socket of the hub's connections {sorted(ports)} shows a keepalive timer of at most "
        f"6 s: {timers}\n{seen}")


def test_a_node_that_cannot_reach_postgresql_says_why_in_plain_words(tmp_path):
    """Nothing listens at the configured port: the node exits 1 saying where it tried and what the
    system said, in words, not the driver's types (a partition pass saw `/healthz` bodies and log
    lines naming `SingleConnectionFailure(target: [IPv4]127.0.0.1/…)` and "PSQLError – Generic
    description to prevent accidental leakage")."""
    from conftest import HUB_BIN, REPO
    from test_http_lifecycle import _refusing_port
    with _refusing_port() as port:
        path = tmp_path / "unreachable.yaml"
        path.write_text(f"storage:\n  kind: postgres\n  postgresURL: postgres://peoplekeeper@127.0.0.1:{port}/peoplekeeper\n")
        run = subprocess.run([HUB_BIN, "--config", str(path), "--port", "0"], cwd=str(REPO), capture_output=True,
                             text=True, timeout=60)
    assert run.returncode == 1, (run.returncode, run.stderr[-2000:])
    last = run.stderr.strip().splitlines()[-1]
    assert last == (f"peoplekeeper-hub: cannot open the PostgreSQL store at 127.0.0.1:{port} (sslmode prefer): "
                    f"cannot connect to 127.0.0.1:{port}: connection refused"), last


def test_a_second_node_with_the_same_node_id_waits_for_the_first_then_refuses_to_start(hub_factory, pg_server, room,
                                                                                      tmp_path):
    """A cluster pass: two nodes started with one `cluster.nodeId` both said they were healthy, and each
    could not serve the other's rooms (`room … is held by a node that does not say where it is`, 503),
    logged nothing about it. A serving node now holds its id in PostgreSQL: a second one waits (twice
    `cluster.leaseTimeoutSeconds`, and at least the silence after which a frozen holder is ended and 5 s:
    an earlier run of the same node whose session PostgreSQL has not ended yet) and exits 1 naming the
    setting. The commands beside the nodes do not claim it."""
    from conftest import HUB_BIN, REPO, merge, to_yaml
    a = hub_factory(cluster_node(pg_server, "same"))
    a.join(room, "ann").edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])
    path = tmp_path / "twin.yaml"
    path.write_text(to_yaml(merge(cluster_node(pg_server, "same"), {"cluster": {"leaseTimeoutSeconds": 2}})))
    twin = subprocess.run([HUB_BIN, "--config", str(path), "--port", "0"], cwd=str(REPO), capture_output=True,
                          text=True, timeout=60)
    assert twin.returncode == 1, (twin.returncode, twin.stderr[-2000:])
    assert "another session holds cluster.nodeId same in PostgreSQL" in twin.stderr, twin.stderr[-2000:]
    assert "waiting up to 20 s for it to end" in twin.stderr and "give each node its own cluster.nodeId" in twin.stderr
    assert "listening" not in twin.stdout, twin.stdout
    history = subprocess.run([HUB_BIN, "history", room, "--config", str(path), "--json"], cwd=str(REPO),
                             capture_output=True, text=True, timeout=60)
    assert history.returncode == 0 and len(history.stdout.splitlines()) == 1, (history.returncode, history.stderr)

    # Once the first node has stopped, its id is free at once (its session ended with it).
    a.stop()
    again = hub_factory(cluster_node(pg_server, "same"))
    assert again.join(room, "bob").welcome["rev"] == 1


def test_a_one_shot_command_sent_to_an_unreachable_owner_goes_back_then_names_the_redirect(
        hub_factory, pg_server, room):
    """Node b says it is at an address where nothing listens (`cluster.advertisedURL` wrong). A command
    at node a is redirected there, cannot connect, goes back to a (the product contract: a client
    goes back to an address it was given before; a node that died would have its rooms taken there),
    three times (since session 34; the second and third a second later), is sent to the same place,
    and exits 69 naming where the redirect came from (it said only `cannot reach the hub: ws://…:PORT/…`,
    which the user never gave, a cluster pass)."""
    from test_client_cli import CLIENT_BIN
    from test_http_lifecycle import _refusing_port
    with _refusing_port() as dead:
        a = hub_factory({**cluster_node(pg_server, "a"), "logging": {"level": "debug"}})
        b = hub_factory({**cluster_node(pg_server, "b"),
                         "cluster": {"nodeId": "b", "advertisedURL": f"ws://127.0.0.1:{dead}"}})
        b.join(room, "bob")
        run = subprocess.run([CLIENT_BIN, "list", "--room", room, "--url", f"ws://127.0.0.1:{a.port}", "--timeout", "5"],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 69, (run.returncode, run.stdout, run.stderr)
        assert f"ws://127.0.0.1:{dead}/v1/rooms/{room}" in run.stderr, run.stderr
        assert f"(where ws://127.0.0.1:{a.port}/v1/rooms/{room} sent this room: the node that holds it, at its " \
               f"cluster.advertisedURL)" in run.stderr, run.stderr
        redirects = [line for line in a.stderr().splitlines() if line.endswith("[PeopleHub] redirect")]
        assert len(redirects) == 4, redirects     # the first hello, and one after each return
        # b said at start that its advertised address is not where it listens.
        assert (f"cluster.advertisedURL ws://127.0.0.1:{dead} names port {dead} on this machine, but this node "
                f"listens on {b.port}: other nodes send clients there") in b.stderr(), b.stderr()[-2000:]


def test_a_one_shot_command_redirected_to_a_node_that_goes_away_is_served_once_its_room_is_free(
        hub_factory, pg_server, room):
    """An operator's pass (session 34): while a node drained, the others still sent its rooms' clients
    to it (it holds their leases until it exits) and a one-shot command exited 69 "unreachable": it
    went back to the node it was given once, at once, and was sent to the same place. It goes back
    three times now, the second and third a second later: the node holding the room (here one whose
    advertised address refuses, killed half a second in) has let it go by then, and the command is
    served by the node it was given."""
    from test_client_cli import CLIENT_BIN
    from test_http_lifecycle import _refusing_port
    with _refusing_port() as dead:
        a = hub_factory(cluster_node(pg_server, "a"))
        b = hub_factory({**cluster_node(pg_server, "b"),
                         "cluster": {"nodeId": "b", "advertisedURL": f"ws://127.0.0.1:{dead}"}})
        bob = b.join(room, "bob")
        bob.edit([{"op": "set", "tag": 1, "field": "glasses", "value": True}])
        bob.sync(1)
        run = subprocess.Popen([CLIENT_BIN, "list", "--json", "--room", room, "--url", f"ws://127.0.0.1:{a.port}",
                                "--timeout", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        b.kill()
        out, err = run.communicate(timeout=60)
        assert run.returncode == 0, (run.returncode, out, err)
        assert json.loads(out)["rev"] == 1, out


def test_a_node_on_sqlite_with_cluster_settings_says_it_is_in_no_cluster(hub_factory):
    """A cluster pass started a node with `storage.kind: embedded` and the cluster's settings: it said
    nothing, and served its own rooms under the cluster's names."""
    h = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/pk.sqlite"},
                     "cluster": {"nodeId": "c", "advertisedURL": "ws://127.0.0.1:1"}})
    assert ("cluster.nodeId and cluster.advertisedURL are set but storage.kind is embedded: this hub is in no "
            "cluster; its rooms are its own, not those of the nodes on PostgreSQL") in h.stderr(), h.stderr()
    assert "names port 1 on this machine" not in h.stderr(), "no leases, no redirects: the address is not used"


def first_answer(hub, room: str, user: str) -> dict:
    """What a hello for `room` at `hub` is answered first (a welcome, a redirect, an error)."""
    probe = HubClient(hub.url(room), name=f"{user}-probe")
    try:
        probe.hello(user, expect_welcome=False)
        return probe._read(timeout=15)
    finally:
        probe.close()


def test_a_frozen_node_s_rooms_move_once_it_has_been_silent(hub_factory, pg_server, room):
    """A frozen node (SIGSTOP, a paused VM) kept its rooms for good: its kernel answers the keepalives
    that free a vanished node's leases, and the other nodes redirected its rooms' clients to it, where
    they hung (a cluster pass). Each serving node now says it lives every 5 s; a node that wants a room
    whose holder has been silent for `cluster.leaseTimeoutSeconds` (15 s at least) ends the holder's
    session, and takes the room with every acknowledged edit. The frozen node, woken, drops its rooms
    and stops cleanly."""
    from conftest import merge
    config = {"cluster": {"leaseTimeoutSeconds": 2}}
    a = hub_factory(merge(cluster_node(pg_server, "a"), config))
    b = hub_factory(merge(cluster_node(pg_server, "b"), config))
    ann = a.join(room, "ann")
    acked = ann.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])["rev"]
    a.freeze()  # every thread stopped before the read below is sent
    stopped_at = time.monotonic()
    answers = []
    # A read sent to a while it is frozen waits in its socket, and is read when a wakes (a frozen
    # node's pass, session 42: it was answered 200 from a's old copy, after b had taken the room and
    # written to it).
    queued: list = []

    def read_at_a() -> None:
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=120)
        conn.request("GET", f"/v1/rooms/{room}")
        answer = conn.getresponse()
        queued.append((answer.status, answer.read()))

    reader = threading.Thread(target=read_at_a, daemon=True)
    reader.start()
    try:
        while True:
            first = first_answer(b, room, "bob")
            answers.append(first["type"])
            if first["type"] == "welcome":
                break
            assert first["type"] == "redirect" and first["url"] == a.url(room), first
            assert time.monotonic() - stopped_at < 60, f"the frozen node kept the room: {answers}"
            time.sleep(1)
        welcome = first
        bob = b.join(room, "bob")
        written = bob.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "blonde"}])["rev"]
    finally:
        a.thaw()
    assert answers[0] == "redirect", "while a has not been silent long, its room is sent there"
    assert welcome["rev"] == acked and by_tag(welcome["people"], 1)["hairColor"] == "red", welcome
    reader.join(60)
    assert queued, "the read queued at a got no answer"
    status, body = queued[0]
    assert status in (503, 307), f"the read queued at a was answered from a's old copy (b is at {written}): {status} {body[:200]!r}"
    assert "ended the PostgreSQL session of node a: silent for" in b.stderr(), b.stderr()[-2000:]
    # a, woken, finds its connection gone: it drops its rooms (ann is sent to reconnect) and goes on.
    assert ann.wait_closed(timeout=30) == 1012
    deadline = time.monotonic() + 30
    while "lost the PostgreSQL connection holding the room leases" not in a.stderr():
        assert time.monotonic() < deadline, a.stderr()[-2000:]
        time.sleep(0.2)
    # ... and is sure of its leases again: a room it makes now is served over HTTP (not 503 for good).
    fresh = room[:57] + "-after"  # a room name is at most 64 bytes
    a.join(fresh, "cat")
    deadline = time.monotonic() + 20
    while (status := a.http("GET", f"/v1/rooms/{fresh}")[0]) != 200:
        assert time.monotonic() < deadline, f"a still answers {status} for a room it holds"
        time.sleep(0.2)
    assert "this node was paused" in a.stderr(), a.stderr()[-2000:]


def test_a_node_restarted_while_its_earlier_run_is_frozen_ends_that_run_and_starts(hub_factory, pg_server, room):
    """A node's earlier run is frozen (its machine paused), and the node is started again elsewhere with
    its id: the frozen run holds the id. The new run waits, finds the holder silent and idle past the
    threshold as another node would, ends its session and starts, with the room's acknowledged edit
    (it used to wait and exit 1, a code review)."""
    from conftest import merge
    config = merge(cluster_node(pg_server, "a"), {"cluster": {"leaseTimeoutSeconds": 2}})
    first = hub_factory(config)
    first.join(room, "ann").edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])
    first.freeze()
    try:
        time.sleep(16)                          # the frozen run is silent past the 15 s threshold
        second = hub_factory(config)            # returns once it listens: after the frozen run was ended
        assert "ended the PostgreSQL session of node a: silent for" in second.stderr(), second.stderr()[-2000:]
        assert second.join(room, "bob").welcome["rev"] == 1
    finally:
        first.thaw()
        first.kill()


def test_a_busy_node_is_not_taken_for_a_frozen_one(hub_factory, pg_server, room):
    """A code review: a node in one long commit (an import's) writes no heartbeat meanwhile, and must not
    be ended as frozen. Node a's commit waits 20 s behind a lock another session holds on the journal:
    its heartbeat goes silent past the 15 s threshold, but its session is `active`. A hello for its room
    at node b is still sent to a, which acknowledges the edit once the lock goes."""
    import threading
    from conftest import merge
    config = {"cluster": {"leaseTimeoutSeconds": 2}}
    a = hub_factory(merge(cluster_node(pg_server, "a"), config))
    b = hub_factory(merge(cluster_node(pg_server, "b"), config))
    ann = a.join(room, "ann")
    held = threading.Thread(target=pg_server.psql, args=(
        "BEGIN; LOCK TABLE journal IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(22); COMMIT;",), kwargs={"timeout": 60})
    held.start()
    time.sleep(1)
    ann.send({"type": "submit", "seq": 1, "base": 0, "ops": [{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}]})
    time.sleep(18)                                  # a's heartbeat is now older than 15 s
    first = first_answer(b, room, "bob")
    assert first == {"type": "redirect", "url": a.url(room)}, first
    held.join()
    ack = ann.take("ack", timeout=20)
    assert ack["seq"] == 1 and ack["rev"] == 1, ack
    assert "ended the PostgreSQL session" not in b.stderr(), b.stderr()[-2000:]


def test_a_batch_queued_before_the_lease_connection_broke_is_not_written_after_it(hub_factory, pg_server, room):
    """A node's writer connection holds its room leases. When PostgreSQL ends it, the next commit
    reconnected and wrote the batch queued before on the new connection, without any lease: another
    node may own the room by then (or have deleted it; a code review). Now that batch fails, the
    room's clients are closed, and nothing is acknowledged that was not written under the lease; the
    client's edit is written once it has rejoined."""
    node = "lost-" + room[:20]
    hub = hub_factory(cluster_node(pg_server, node))
    ann = hub.join(room, "ann")
    first = ann.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])["rev"]
    pid = pg_server.psql(f"SELECT pid FROM nodes WHERE node = '{node}'")
    assert pg_server.psql(f"SELECT pg_terminate_backend({pid})") == "t"
    time.sleep(0.5)  # the driver sees the connection close; the next store check is seconds away
    seq = ann.submit([{"op": "set", "tag": 2, "field": "glasses", "value": True}])
    assert ann.wait_closed() in (1011, 1012)
    assert not any(f["type"] == "ack" and f.get("seq") == seq for f in ann.log), \
        f"acknowledged after the lease connection was lost: {ann.log[-4:]}"
    bob = hub.join(room, "bob")
    assert bob.welcome["rev"] == first
    assert by_tag(bob.welcome["people"], 2)["glasses"] is False


def test_a_wss_node_s_redirect_to_a_ws_node_is_not_followed(hub_factory, pg_server, room, tmp_path):
    """An operator's pass of a TLS cluster (session 38): node a speaks TLS; node b, holding the room,
    speaks none (or a TLS node says `ws://` in its `cluster.advertisedURL`). A terminal command opened
    with `wss://` at a followed a's redirect to `ws://` and sent its hello, access token included, in
    clear. Now it does not follow it: exit 69 with the reason, and b hears nothing from it. A TLS
    node whose advertised URL is `ws://` says so at start."""
    from test_client_cli import CLIENT_BIN
    from test_trust import self_signed
    cert, key = self_signed(tmp_path)
    a = hub_factory({**cluster_node(pg_server, "a"), "tls": {"certFile": cert, "keyFile": key}})
    b = hub_factory({**cluster_node(pg_server, "b"), "logging": {"level": "debug"}})
    b.join(room, "bob")
    run = subprocess.run([CLIENT_BIN, "show", "1", "--room", room, "--user", "carol", "--url", f"wss://127.0.0.1:{a.port}",
                          "--ca-file", cert, "--timeout", "5"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 69, (run.returncode, run.stdout, run.stderr)
    assert (f"wss://127.0.0.1:{a.port}/v1/rooms/{room} sent this room to ws://127.0.0.1:{b.port}/v1/rooms/{room}, "
            f"which is not encrypted: not followed") in run.stderr, run.stderr
    assert "carol" not in b.stderr(), "b heard from the client: " + b.stderr()[-2000:]

    # A TLS node advertising ws:// is told at start.
    c = hub_factory({**cluster_node(pg_server, "c"), "tls": {"certFile": cert, "keyFile": key},
                     "cluster": {"nodeId": "c", "advertisedURL": "ws://127.0.0.1:9"}})
    assert ("cluster.advertisedURL ws://127.0.0.1:9 is ws://, but this node speaks TLS (tls.certFile)"
            in c.stderr()), c.stderr()[-2000:]


def test_a_client_away_when_its_room_was_deleted_is_told_so_at_another_node(hub_factory, pg_server, room):
    """The deletion is remembered in the shared store: a client of the room deleted at node a, coming
    back at node b with `since`, is closed there with 1000 "room deleted" instead of making the room
    again from the seed (a contract-only client, without `sinceTime`, too); nothing is made."""
    a = hub_factory(cluster_node(pg_server, "a"))
    b = hub_factory(cluster_node(pg_server, "b"))
    ann = a.join(room, "ann")
    ack = ann.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])
    ann.close()
    assert raw(a.port, "DELETE", f"/v1/rooms/{room}")[0] == 204
    for name, extra in (("ann", {"sinceTime": ack["time"]}), ("bob", {})):
        back = b.connect(room, name=name)
        back.hello(name, expect_welcome=False, since=ack["rev"], **extra)
        assert back.wait_closed() == 1000 and back.close_reason == "room deleted", back.log[-4:]
    for node in (a, b):
        status, _, body = raw(node.port, "GET", f"/v1/rooms/{room}")
        assert status == 404, (node, status, body)

