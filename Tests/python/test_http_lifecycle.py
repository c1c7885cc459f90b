"""HTTP endpoints, refused upgrades, SIGTERM drain, and bad config files."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import signal
import socket
import threading
import time

import pytest
import websockets.exceptions
import websockets.sync.client

from pkclient import HubClient, upgrade_answer


def set_op(tag, field, value):
    return {"op": "set", "tag": tag, "field": field, "value": value}


def metric(text: str, name: str, labels: str = "") -> float | None:
    pat = re.compile(r"^" + re.escape(name + labels) + r" ([0-9.eE+-]+|NaN|\+Inf)$", re.M)
    m = pat.search(text)
    return float(m.group(1)) if m else None


# -- HTTP ---------------------------------------------------------------------------------------------

def test_healthz(hub):
    status, headers, body = hub.http("GET", "/healthz")
    assert status == 200, (status, body)


def test_metrics_is_prometheus_text_and_counts_skips(hub, room):
    status, headers, body = hub.http("GET", "/metrics")
    assert status == 200
    assert headers.get("content-type", "").startswith("text/plain"), headers
    text = body.decode()
    assert "# TYPE peoplekeeper_connections gauge" in text
    assert metric(text, "peoplekeeper_connections") is not None
    for line in text.splitlines():         # every sample line is NAME{labels} VALUE
        if line and not line.startswith("#"):
            assert re.match(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? \S+$", line), line
    before = metric(text, "peoplekeeper_undo_skips_total", '{reason="overwritten"}') or 0.0

    a = hub.join(room, "A")
    b = hub.join(room, "B")
    a.edit([set_op(1, "hairColor", "red")])
    b.sync(1)
    b.edit([set_op(1, "hairColor", "blonde")])
    a.sync(2)
    u = a.undo()
    assert u["skipped"] and u["skipped"][0]["reason"] == "overwritten", u

    after = metric(hub.metrics(), "peoplekeeper_undo_skips_total", '{reason="overwritten"}')
    assert after is not None and after > 0
    assert after == before + 1


def test_errors_are_counted_by_code(hub, room):
    name = "peoplekeeper_errors_total"
    before = metric(hub.metrics(), name, '{code="bad-json"}') or 0.0
    x = hub.join(room, "X")
    x.send_raw("{oops")
    assert x.take_error()["code"] == "bad-json"
    assert metric(hub.metrics(), name, '{code="bad-json"}') == before + 1


def test_connections_gauge(hub_factory, room):
    h = hub_factory()
    assert metric(h.metrics(), "peoplekeeper_connections") == 0
    a = h.join(room, "A")
    b = h.join(room, "B")
    assert metric(h.metrics(), "peoplekeeper_connections") == 2
    a.close()
    b.close()
    deadline = time.monotonic() + 5
    while metric(h.metrics(), "peoplekeeper_connections") != 0:
        assert time.monotonic() < deadline, "the gauge did not go back to 0"
        time.sleep(0.05)


def test_room_path_without_upgrade_is_not_200(hub):
    status, _, _ = hub.http("GET", "/v1/rooms/x")
    assert status != 200
    assert 400 <= status < 500, status


def test_web_client_is_served_at_root(hub):
    status, headers, body = hub.http("GET", "/")
    assert status == 200, status
    assert b"<html" in body.lower() or b"<!doctype html" in body.lower()


@pytest.mark.parametrize("path", [
    "bad%20name", "bad!name", "x" * 65, "", "a/b", "%C3%A9t%C3%A9",
], ids=["space", "bang", "65-chars", "empty", "slash", "non-ascii"])
def test_websocket_to_a_bad_room_name_is_refused(hub, path):
    with pytest.raises(Exception) as info:
        c = HubClient(f"ws://127.0.0.1:{hub.port}/v1/rooms/{path}", open_timeout=5)
        # if the upgrade went through, the room must at least refuse to work
        c.hello("X")
    assert "TimeoutError" not in type(info.value).__name__
    assert hub.http("GET", "/healthz")[0] == 200


def test_websocket_to_a_64_char_room_name_works(hub):
    name = "A-z_0.9" + "x" * 57
    assert len(name) == 64
    c = hub.join(name, "A")
    assert c.welcome["rev"] == 0
    c.close()


def test_websocket_outside_rooms_is_refused(hub):
    for path in ("/", "/v1/rooms", "/v2/rooms/x", "/healthz"):
        with pytest.raises(Exception):
            c = HubClient(f"ws://127.0.0.1:{hub.port}{path}", open_timeout=5)
            c.hello("X")


def test_max_connections_refuses_upgrades_beyond(hub_factory, room):
    h = hub_factory({"limits": {"maxConnections": 2}})
    a = h.join(room, "A")
    b = h.join(room, "B")
    with pytest.raises(Exception):
        c = HubClient(h.url(room), open_timeout=5)
        c.hello("C")
    a.edit([set_op(1, "glasses", True)])       # the open ones are unaffected
    b.sync(1)
    b.close()
    deadline = time.monotonic() + 5
    while True:                                 # once one has gone, a new one is accepted
        try:
            d = h.join(room, "D")
            break
        except Exception:
            assert time.monotonic() < deadline, "no connection accepted after one closed"
            time.sleep(0.1)
    assert d.welcome["rev"] == 1


def test_hello_timeout_closes_a_silent_connection_with_1008(hub_factory, room):
    """A connection without a hello within limits.helloTimeoutSeconds is closed with 1008 and a reason
    saying so (a close frame, not a dropped socket: the client can tell why)."""
    h = hub_factory({"limits": {"helloTimeoutSeconds": 1}})
    a = h.join(room, "A")
    silent = h.connect(room, "silent")
    t0 = time.monotonic()
    code = silent.wait_closed(timeout=9)
    assert time.monotonic() - t0 < 8          # well before the default 10 s (slack for a loaded machine)
    assert code == 1008, code
    assert silent.ws.close_reason == "no hello within 1 s", silent.ws.close_reason
    assert a.is_open()                          # a connection that said hello stays


# -- SIGTERM ------------------------------------------------------------------------------------------

def test_sigterm_drains_with_1001_and_exit_0(hub_factory, rooms):
    h = hub_factory()
    assert h.http("GET", "/healthz")[0] == 200
    r1, r2 = rooms("1"), rooms("2")
    a = h.join(r1, "A")
    b = h.join(r1, "B")
    c = h.join(r2, "C")
    d = h.connect(r2, "D")                     # connected, no hello yet
    a.edit([set_op(1, "hairColor", "red")])
    b.sync(1)

    h.proc.send_signal(signal.SIGTERM)
    codes = {}
    for x in (a, b, c, d):
        codes[x.name] = x.wait_closed(timeout=10)
    assert codes == {"A": 1001, "B": 1001, "C": 1001, "D": 1001}, codes
    assert h.terminate() == 0


def _long_export(count: int) -> bytes:
    """An export whose import takes a while: one person renamed `count` times."""
    person = {"tag": 1, "name": "P", "hairColor": "black", "hairLength": "short", "eyeColor": "brown",
              "glasses": False, "facialHair": [], "likes": [], "dislikes": []}
    revisions = [{"rev": rev, "time": 1_700_000_000_000 + rev, "author": "ann", "kind": "edit",
                  "ops": [{"op": "set", "tag": 1, "field": "name", "value": f"n{rev}"}]}
                 for rev in range(1, count + 1)]
    return json.dumps({"people": [dict(person, name=f"n{count}")], "initial": [person],
                       "revisions": revisions}).encode()


def test_a_deleted_room_s_people_are_not_left_readable_in_the_sqlite_files(hub_factory, room):
    """A privacy reviewer found a deleted room's people still readable in the store's `-wal` file after
    the DELETE, after a clean stop and after a restart (session 24): the write-ahead log was never
    emptied into the file. Now a deletion (and a clean stop) checkpoints it with TRUNCATE, and the
    file's deleted pages are zeroed (`secure_delete`). Another room's people stay."""
    secret_name, kept_name = "Zephyrine Quaxley", "Ottoline Brackwater"
    h = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"}})
    files = lambda: [p for p in (h.workdir / "data").iterdir() if p.name.startswith("pk.sqlite")]  # noqa: E731

    def holding(name: str) -> list[str]:
        return [p.name for p in files() if name.encode() in p.read_bytes()]
    other = room[:50] + "-kept"
    for name, in_room in ((secret_name, room), (kept_name, other)):
        c = h.join(in_room, "ann")
        c.edit([{"op": "insert", "at": 0, "person": {"tag": 4, "name": name, "hairColor": "brown", "hairLength": "short",
                 "eyeColor": "brown", "glasses": False, "facialHair": [], "likes": [], "dislikes": []}}])
        c.close()
    assert holding(secret_name), f"the name is in the store before the deletion: {[p.name for p in files()]}"
    conn = http.client.HTTPConnection("127.0.0.1", h.port, timeout=10)
    conn.request("DELETE", f"/v1/rooms/{room}", headers={"Host": "localhost"})
    assert conn.getresponse().status == 204
    conn.close()
    assert holding(secret_name) == [], f"{secret_name} is still readable in {holding(secret_name)} after the DELETE"
    assert h.terminate() == 0, h.stderr()[-2000:]
    assert holding(secret_name) == [], f"{secret_name} is readable in {holding(secret_name)} after a clean stop"
    assert holding(kept_name), "the other room's people are kept"


def test_a_deletion_beside_an_open_sqlite_reader_holds_up_no_other_room(hub_factory, room):
    """A deletion empties the write-ahead log into the file (the test above), and that checkpoint
    waited for every open read transaction, up to the store's 30 s busy timeout, on the connection
    every commit goes through: with an operator's `sqlite3` read open (or a long export), a batch in
    another room waited 29.6 s and a stop 30 s (a review, session 43). Now it does not wait: the other
    room's batch is acknowledged at once, the log says the write-ahead log was not emptied, and once
    the reader is gone a store check (every 5 s) empties it: the deleted room's people are then
    readable in neither file."""
    import sqlite3
    secret_name = "Zephyrine Quaxley"
    h = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"}})
    data = h.workdir / "data"
    other = room[:50] + "-other"
    c = h.join(room, "ann")
    c.edit([{"op": "insert", "at": 0, "person": {"tag": 4, "name": secret_name, "hairColor": "brown", "hairLength": "short",
             "eyeColor": "brown", "glasses": False, "facialHair": [], "likes": [], "dislikes": []}}])
    c.close()
    b = h.join(other, "bob")
    reader = sqlite3.connect(str(data / "pk.sqlite"), isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM journal").fetchall()
        started = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", h.port, timeout=60)
        conn.request("DELETE", f"/v1/rooms/{room}", headers={"Host": "localhost"})
        assert conn.getresponse().status == 204
        conn.close()
        b.edit([{"op": "set", "tag": 1, "field": "hairColor", "value": "red"}])
        took = time.monotonic() - started
        assert took < 10, f"the DELETE and another room's edit took {took:.1f} s beside an open reader"
        assert "the write-ahead log was not emptied (a reader was busy)" in h.stderr(), h.stderr()[-2000:]
    finally:
        reader.close()
    holding = lambda: [p.name for p in data.iterdir()  # noqa: E731
                       if p.name.startswith("pk.sqlite") and secret_name.encode() in p.read_bytes()]
    deadline = time.monotonic() + 15
    while holding():
        assert time.monotonic() < deadline, f"{secret_name} still readable in {holding()} after the reader ended"
        time.sleep(0.2)


def test_sigterm_answers_http_requests_already_taken(hub_factory, room):
    """A drain answers the HTTP requests it has taken before it closes their connections: an import
    in progress when SIGTERM comes gets its 201 (before, its connection was closed unanswered although
    the import was kept, and a retry got 409). The drain waits at most 10 s for them: 12,000 revisions
    take about 2 s alone in a debug build, so a SIGTERM a second into the import leaves room for a
    busy machine (20,000, 3.5 s alone, ran past the 10 s in a fresh-clone run beside other tests). On a
    machine fast enough to import them before the test sees the import under way (session 25: in
    under a second), the import is made again with twice as many revisions, up to 48,000."""
    h = hub_factory({"storage": {"kind": "embedded", "path": "{workdir}/data/pk.sqlite"},
                     "limits": {"maxMessageBytes": 8 * 1024 * 1024}})
    too_fast = []
    for count in (12_000, 24_000, 48_000):
        name = f"{room[:50]}-{count}"
        body = _long_export(count)
        answer: dict = {}

        def put() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", h.port, timeout=60)
            try:
                conn.request("PUT", f"/v1/rooms/{name}", body, {"Content-Type": "application/json", "Host": "localhost"})
                reply = conn.getresponse()
                answer["status"], answer["body"] = reply.status, reply.read()
            except (OSError, http.client.HTTPException) as e:
                answer["error"] = repr(e)

        def importing() -> bool:
            """Whether the hub has taken the PUT: a read of the room then waits for the import (before,
            it is answered 404 at once). A fixed half second was not always enough on a busy machine:
            the SIGTERM came before the request was taken, and its 503 is right for a request not taken."""
            conn = http.client.HTTPConnection("127.0.0.1", h.port, timeout=1.0)
            try:
                conn.request("GET", f"/v1/rooms/{name}", headers={"Host": "localhost"})
                conn.getresponse().read()
                return False
            except TimeoutError:
                return True
            finally:
                conn.close()

        worker = threading.Thread(target=put)
        worker.start()
        deadline = time.monotonic() + 20
        while not answer and not importing():
            assert time.monotonic() < deadline, "the hub never took the PUT"
            time.sleep(0.05)
        if answer:
            worker.join(30)
            assert answer.get("status") == 201, answer
            too_fast.append(count)
            continue
        h.proc.send_signal(signal.SIGTERM)
        worker.join(30)
        assert answer.get("status") == 201, answer
        assert json.loads(answer["body"]) == {"room": name, "rev": count}
        assert h.terminate() == 0
        h.restart()
        # The first read loads the room (its snapshot and the history memory keeps): seconds on a busy machine.
        status, _, text = h.http("GET", f"/v1/rooms/{name}", timeout=30)
        assert status == 200 and json.loads(text)["rev"] == count
        return
    raise AssertionError(f"every import was done before the test saw it under way: {too_fast} revisions")


# -- bad config ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("yaml_text,key", [
    ("rooms:\n  bogusKey: 1\n", "bogusKey"),
    ("bogus:\n  x: 1\n", "bogus"),
    ("limits:\n  maxRooms: lots\n", "maxRooms"),
    ("undo:\n  cascade: sometimes\n", "cascade"),
    ("limits:\n  opsPerSecond: -5\n", "opsPerSecond"),
    ("limits:\n  maxMessageBytes: 0\n", "maxMessageBytes"),
    ("listen:\n  port: 70000\n", "port"),
    ("undo:\n  conflicts: sometimes\n", "conflicts"),
    ("logging:\n  level: loud\n", "level"),
    # A mapping where a value goes was read as the key unset (found by a tester, session 23).
    ("metrics:\n  tokenFile: {path: /x/token}\n", "metrics.tokenFile"),
    ("auth:\n  mode: {a: token}\n", "auth.mode"),
    ("limits:\n  maxRooms:\n    a: 5\n", "limits.maxRooms"),
], ids=["unknown-key", "unknown-section", "wrong-type-int", "wrong-type-bool", "negative",
        "zero-bytes", "port-range", "bad-enum", "bad-log-level", "mapping-for-a-path", "mapping-for-a-choice",
        "mapping-for-a-number"])
def test_bad_config_exits_78_naming_the_key(start_hub_raw, yaml_text, key):
    r = start_hub_raw(yaml_text)
    assert r.returncode == 78, (r.returncode, r.stdout, r.stderr[-2000:])
    assert key in r.stderr, r.stderr[-2000:]
    assert "listening" not in r.stdout
    if key.count(".") == 1:
        assert "must be a value, not a mapping" in r.stderr, r.stderr[-2000:]
    if key == "bogus":
        # The sections a file may have, every one of them (webhooks, a list, among them).
        assert "unknown section (known: auth, cluster, limits, listen, logging, metrics, rooms, storage, tls, " \
               "transport, undo, web, webhooks)" in r.stderr, r.stderr[-2000:]


# -- slow consumers -----------------------------------------------------------------------------------

def _raw_upgrade(port: int, path: str) -> "socket.socket":
    """A WebSocket handshake on a plain socket with a tiny receive buffer, that then never reads."""
    import os
    from pkclient import raw_upgrade
    s = raw_upgrade(port, path, rcvbuf=4096)
    s.settimeout(None)
    hello = b'{"type":"hello","protocol":1,"user":"sloth"}'
    mask = os.urandom(4)
    s.sendall(bytes([0x81, 0x80 | len(hello)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(hello)))
    return s


def test_a_slow_consumer_is_closed_and_the_room_goes_on(hub_factory, room):
    """A receiver that stops reading is closed once more than limits.sendQueueMessages wait for it; the
    others keep working, and peoplekeeper_send_queue_drops_total counts it."""
    h = hub_factory({"limits": {"sendQueueMessages": 16, "sendQueueBytes": 65536, "opsPerSecond": 100000}})
    writer = h.join(room, "W")
    watcher = h.join(room, "V")
    sloth = _raw_upgrade(h.port, f"/v1/rooms/{room}")
    name = "x" * 190
    closed = False
    for i in range(400):
        # 200 sets in one batch: an ops frame of about 50 KB for every receiver.
        writer.edit([{"op": "set", "tag": 1, "field": "name", "value": f"{name}{i % 10}{k % 10}"} for k in range(200)])
        if i % 10 == 9 and "peoplekeeper_send_queue_drops_total 1" in h.metrics():
            closed = True
            break
    assert closed, "the slow consumer was never closed"
    # The close frame cannot reach a reader that never reads: the socket goes when lws's close timeout
    # (5 s) ends, and the gauge drops to the two working users.
    deadline = time.monotonic() + 10
    while not re.search(r"peoplekeeper_connections 2(\.0)?\b", h.metrics()):
        assert time.monotonic() < deadline, "the slow consumer's socket was never released"
        time.sleep(0.2)
    ack = writer.edit([{"op": "set", "tag": 2, "field": "glasses", "value": True}])
    watcher.sync(ack["rev"])
    assert next(p for p in watcher.people if p["tag"] == 2)["glasses"] is True
    sloth.close()


def test_json_logs_are_one_object_per_line(hub_factory, room):
    """logging.format: json writes every record as one JSON object with ts, level, label and msg."""
    import json
    h = hub_factory({"logging": {"format": "json", "level": "info"}})
    h.join(room, "A")
    deadline = time.monotonic() + 5
    while "room created" not in h.stderr():
        assert time.monotonic() < deadline, h.stderr()
        time.sleep(0.05)
    records = [json.loads(line) for line in h.stderr().splitlines() if line.startswith("{")]
    assert records, h.stderr()
    for record in records:
        assert {"ts", "level", "label", "msg"} <= record.keys(), record
        assert record["ts"].endswith("Z"), record
    created = next(r for r in records if r["msg"] == "room created")
    assert created["room"] == room and created["level"] == "info"


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_hub_whose_log_cannot_be_written_keeps_serving(log_format, room):
    """stderr on a full disk (or a log reader that went away): with JSON logs the hub died at its first
    line (exit 132, Foundation's FileHandle.write traps on a failed write). It serves as before, and a
    room's edits are answered; lines it cannot write are lost, not the hub."""
    import os
    import subprocess
    from conftest import HUB_BIN, REPO
    with open("/dev/full", "w") as full:
        proc = subprocess.Popen([HUB_BIN, "serve", "--port", "0", "--storage", "memory", "--log-format", log_format,
                                 "--log-level", "debug"], cwd=str(REPO), stdout=subprocess.PIPE, stderr=full, text=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert m, f"no listening line: {line!r} (exit {proc.poll()})"
        port = int(m.group(1))
        c = HubClient(f"ws://127.0.0.1:{port}/v1/rooms/{room}")
        c.hello("ann")
        c.send({"type": "submit", "seq": 1, "base": c.rev, "ops": [set_op(1, "glasses", True)], "label": "Toggle Glasses"})
        assert c.take("ack")["seq"] == 1
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/healthz")
        assert conn.getresponse().status == 200
        assert proc.poll() is None, f"the hub exited {proc.returncode}"
        c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0, proc.returncode


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _refusing_port():
    """A loopback port where nothing listens, for as long as the `with` lasts: a socket bound to it and
    never listening holds it, so a connection there is refused and no hub started meanwhile (with
    `--port 0`) is given it (a port only said to be free was: a cluster test's "dead" node address was
    the very port the kernel then gave the node redirecting there, which redirected to itself)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def _wait_for_healthz(proc, port: int, timeout: float = 15) -> None:
    """Polls the hub `proc` started on `port` until /healthz answers 200; fails if it exits first."""
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"the hub exited {proc.returncode}"
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            assert conn.getresponse().status == 200
            return
        except OSError:
            assert time.monotonic() < deadline, "the hub never answered /healthz"
            time.sleep(0.1)

def test_a_hub_whose_stdout_cannot_be_written_serves_all_the_same():
    """The `listening` line was written with Foundation's FileHandle, which traps on a failed write: a
    hub started with stdout on a full disk (or closed) died before serving anything (exit 132)."""
    import subprocess
    from conftest import HUB_BIN, REPO
    port = _free_port()
    with open("/dev/full", "w") as full:
        proc = subprocess.Popen([HUB_BIN, "serve", "--port", str(port), "--storage", "memory"], cwd=str(REPO),
                                stdout=full, stderr=full)
    try:
        _wait_for_healthz(proc, port)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0, proc.returncode

def test_a_hub_started_without_stdout_keeps_its_files_and_sockets_off_it(tmp_path):
    """Started with stdout closed (`>&-`), the next file or socket the hub opened took descriptor 1, and
    the `listening` line went into it (an epoll descriptor here, by luck; a store's file or a client's
    socket by another order). The hub opens /dev/null there first."""
    import os
    import subprocess
    from conftest import HUB_BIN, REPO
    port = _free_port()
    proc = subprocess.Popen(["bash", "-c", f"exec {HUB_BIN} serve --port {port} --storage memory >&- 2>/dev/null"],
                            cwd=str(REPO))
    try:
        _wait_for_healthz(proc, port)
        assert os.readlink(f"/proc/{proc.pid}/fd/1") == "/dev/null", os.readlink(f"/proc/{proc.pid}/fd/1")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0, proc.returncode

def test_sighup_and_sigusr_are_logged_and_ignored_and_sigterm_still_drains(hub_factory, room):
    """SIGHUP (a terminal closing, a log rotation's `kill -HUP`), SIGUSR1 and SIGUSR2 ended the hub at
    once: no drain, clients saw 1006 (an SRE's pass). Each is logged and ignored: the client stays
    connected and its edit is acknowledged; SIGTERM then drains with 1001 and exit 0."""
    h = hub_factory({"logging": {"level": "info"}})
    c = h.join(room, "A")
    for sig in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        h.proc.send_signal(sig)
    deadline = time.monotonic() + 5
    while h.stderr().count(" ignored: the hub has nothing to reload") < 3:
        assert time.monotonic() < deadline and h.proc.poll() is None, (h.proc.poll(), h.stderr()[-2000:])
        time.sleep(0.05)
    for name in ("SIGHUP", "SIGUSR1", "SIGUSR2"):
        assert f"{name} ignored" in h.stderr(), h.stderr()[-2000:]
    assert c.edit([set_op(1, "glasses", True)])["rev"] == 1
    h.proc.send_signal(signal.SIGTERM)
    assert c.wait_closed() == 1001
    assert h.proc.wait(timeout=15) == 0

def test_a_hub_with_fewer_descriptors_than_connections_refuses_the_rest_and_says_so(room, tmp_path):
    """An SRE's pass: under a low open-file limit, connections past it hung in the handshake with
    nothing logged, and /healthz went unanswered. The hub raises its soft limit to the hard one, says
    at start that limits.maxConnections is above what it allows, and refuses connections past it at the
    handshake (503), so /healthz and the connections it has go on."""
    import re
    import subprocess
    from conftest import HUB_BIN, REPO
    from pkclient import raw_upgrade, upgrade_answer
    port = _free_port()
    log = tmp_path / "hub.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(["prlimit", "--nofile=150:300", "--", HUB_BIN, "serve", "--port", str(port),
                                 "--storage", "memory"], cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=err)
    sockets = []
    try:
        _wait_for_healthz(proc, port)
        limits = open(f"/proc/{proc.pid}/limits").read()
        assert re.search(r"Max open files\s+300\s+300", limits), limits
        assert "the open-file limit (ulimit -n) is 300: connections past 172 are refused (503)" in log.read_text(), \
            log.read_text()[-2000:]
        sockets = [raw_upgrade(port, f"/v1/rooms/{room}") for _ in range(172)]
        # A connection is counted by the service thread that owns its room, a moment after its 101
        # (with two threads, an upgrade served by the other one can come before that count): once all
        # 172 are counted, the next is refused. (It got 101 once in a parallel run, session 42.)
        deadline = time.monotonic() + 10
        while True:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/metrics")
            counted = metric(conn.getresponse().read().decode(), "peoplekeeper_connections")
            conn.close()
            if counted == 172:
                break
            assert time.monotonic() < deadline, f"{counted} connections counted, not 172"
            time.sleep(0.05)
        status, body = upgrade_answer(port, f"/v1/rooms/{room}")
        assert status == 503, (status, body)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/healthz")
        assert conn.getresponse().status == 200
    finally:
        for s in sockets:
            s.close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0, proc.returncode

def test_refused_upgrades_are_answered_with_a_status_and_the_reason(hub_factory, room):
    """A refused WebSocket upgrade gets an HTTP status and a sentence naming the setting, not just a
    closed socket: a tool or a person can tell a wrong path from a full hub from a foreign page."""
    h = hub_factory({"limits": {"maxConnections": 3, "maxConnectionsPerIP": 2}})
    status, body = upgrade_answer(h.port, "/v1/nope")
    assert status == 404 and "/v1/rooms/ROOM" in body, (status, body)
    # A WebSocket library reads the status too (the answer is HTTP/1.1, as the request was).
    with pytest.raises(websockets.exceptions.InvalidStatus) as refused:
        websockets.sync.client.connect(f"ws://127.0.0.1:{h.port}/v1/nope", open_timeout=5)
    assert refused.value.response.status_code == 404, refused.value
    status, body = upgrade_answer(h.port, f"/v1/rooms/{room}", origin="http://evil.example")
    assert status == 403 and "auth.allowedOrigins" in body, (status, body)
    a = h.join(room, "A")
    h.join(room, "B")
    status, body = upgrade_answer(h.port, f"/v1/rooms/{room}")
    assert status == 429 and "limits.maxConnectionsPerIP" in body, (status, body)
    a.close()
    deadline = time.monotonic() + 5
    while (result := upgrade_answer(h.port, f"/v1/rooms/{room}"))[0] != 101:
        assert time.monotonic() < deadline, result
        time.sleep(0.1)
    refused = re.search(r"^peoplekeeper_refused_connections_total (\d+)", h.metrics(), re.M)
    assert refused and int(refused.group(1)) >= 1, "the per-IP refusal is counted"


def test_a_full_hub_answers_503_naming_max_connections(hub_factory, room):
    h = hub_factory({"limits": {"maxConnections": 2}})
    h.join(room, "A")
    h.join(room, "B")
    status, body = upgrade_answer(h.port, f"/v1/rooms/{room}")
    assert status == 503 and "limits.maxConnections" in body, (status, body)


def _put_room(port: int, room: str, people: list) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("PUT", f"/v1/rooms/{room}", body=json.dumps({"people": people}),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, json.loads(r.read() or b"{}")
    finally:
        conn.close()


def test_a_hub_short_of_memory_opens_no_room_unloads_idle_ones_and_recovers(hub_factory, room):
    """An SRE's pass: nothing bounded the hub's memory but the counts of rooms, people and connections,
    whose defaults allow more than a small container has, and a hub past its container's limit is
    killed with every room. With `limits.maxMemoryMB`, a heap at the bound opens no other room
    (`room-full`, 503) and unloads the idle ones at once; the rooms in use go on; under 90 % of the
    bound rooms open again. Rooms of 1,000 people (about 0.8 MB each) are made by `PUT` until one is
    refused."""
    h = hub_factory({"limits": {"maxMemoryMB": 24, "maxPeoplePerRoom": 0}, "logging": {"level": "info"},
                     "storage": {"kind": "embedded", "path": "{workdir}/pk.sqlite"}})
    ann = h.join(room, "ann")
    people = [{"tag": i + 1, "name": f"Person {i}", "hairColor": "red", "hairLength": "long", "eyeColor": "blue",
               "glasses": False, "facialHair": [], "likes": [], "dislikes": []} for i in range(1000)]
    refused = None
    for n in range(200):
        status, body = _put_room(h.port, f"big{n}", people)
        if status == 503:
            refused = body
            break
        assert status == 201, (n, status, body)
    assert refused is not None, "200 rooms of 1,000 people never reached 24 MB"
    assert refused["error"]["code"] == "room-full" and "limits.maxMemoryMB, 24 MB" in refused["error"]["message"], refused

    # The room in use goes on while memory is short.
    ack = ann.edit([set_op(1, "hairColor", "red")])
    assert ack["rev"] == 1, ack
    # The idle rooms are unloaded at once, and then rooms open again (a hello for a new one is welcomed).
    deadline = time.monotonic() + 20
    while "memory back under 90 % of limits.maxMemoryMB" not in h.stderr():
        assert time.monotonic() < deadline, h.stderr()[-3000:]
        time.sleep(0.1)
    log = h.stderr()
    assert "memory short (limits.maxMemoryMB): no other room is opened, idle rooms are unloaded" in log
    assert "room unloaded (memory short)" in log
    assert "room=" + room + " [PeopleHub] room unloaded" not in log, "a room in use was unloaded"
    bob = h.join(room[:40] + "-after", "bob")
    assert bob.welcome["rev"] == 0
    text = h.metrics()
    assert metric(text, "peoplekeeper_memory_short") == 0.0
    assert 0 < metric(text, "peoplekeeper_heap_bytes") < 24 << 20, text
    assert metric(text, "peoplekeeper_resident_memory_bytes") > metric(text, "peoplekeeper_heap_bytes")


def test_an_h2c_upgrade_is_ignored_and_the_request_answered_in_http_1_1(hub_factory):
    """A review of session 38's TLS fix: a plain-HTTP request with `Upgrade: h2c` (curl --http2 sends
    one) was switched to HTTP/2, over which the page's files came back empty (`101`, then nothing).
    The hub ignores that upgrade, as HTTP/1.1 lets a server do, and answers the request itself."""
    hub = hub_factory()
    with socket.create_connection(("127.0.0.1", hub.port), timeout=5) as s:
        s.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{hub.port}\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                  "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n".encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = s.recv(65536)
            assert chunk, f"closed after {answer!r}"
            answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
        while len(body) < length:
            chunk = s.recv(65536)
            assert chunk, f"closed after {len(body)} of {length} bytes"
            body += chunk
    assert b"<title>PeopleKeeper" in body, body[:200]
