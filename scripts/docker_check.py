#!/usr/bin/env python3
"""The checks of `make docker-test` (scripts/docker-test.sh starts the engine, builds the images and the
containers; this talks to them). Real processes, real HTTP and WebSockets on 127.0.0.1, through the
suite's independent client (Tests/python/pkclient.py).

  docker_check.py single --port P --container NAME
      the single-node image, started by the caller with a volume at /app/data and listening on
      127.0.0.1:P: the hub runs as uid 10001 (peoplekeeper), /healthz, the web page, /metrics, the
      image's HEALTHCHECK, edits; `docker stop` drains (every client sees 1001, exit 0); `docker start`
      on the same volume has every acknowledged revision.

  docker_check.py compose --a PA --b PB --container-a NAME
      docker-compose.yml's two nodes on PostgreSQL (hub-a at PA, hub-b at PB): a room owned by hub-a
      is redirected at hub-b (WebSocket and HTTP 307); a client edits at hub-a while hub-a is stopped,
      reconnects to hub-b and edits on; every acknowledged revision is in the room at hub-b, in the
      change feed as it was acknowledged.

The docker client is $DOCKER (default: docker). Exits 0 when every check passes; prints one line per check.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "Tests" / "python"))

from pkclient import HubClient, person  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402

DOCKER = shlex.split(os.environ.get("DOCKER", "docker"))
HUB_UID = 10001
IMAGE = "peoplekeeper-hub:local"


def ok(what: str) -> None:
    print(f"  ok  {what}", flush=True)


def docker(*args: str, timeout: float = 60, check: bool = True) -> str:
    r = subprocess.run(DOCKER + list(args), capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout.strip()


def http_get(port: int, path: str, timeout: float = 5) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def wait_healthy(port: int, timeout: float = 60) -> float:
    """Until /healthz answers 200; returns the seconds it took."""
    start = time.monotonic()
    last = None
    while time.monotonic() - start < timeout:
        try:
            status, _, body = http_get(port, "/healthz", timeout=2)
            if status == 200:
                return time.monotonic() - start
            last = (status, body)
        except OSError as e:
            last = e
        time.sleep(0.2)
    raise AssertionError(f"/healthz at 127.0.0.1:{port} not 200 within {timeout}s (last: {last})")


def url(port: int, room: str) -> str:
    return f"ws://127.0.0.1:{port}/v1/rooms/{room}"


def feed(port: int, room: str) -> list[dict]:
    """Every revision of the room from the change feed, oldest first."""
    revs, after = [], 0
    while True:
        status, _, body = http_get(port, f"/v1/rooms/{room}/revisions?after={after}&limit=1000")
        assert status == 200, (status, body[:300])
        page = json.loads(body)
        revs += page["revisions"]
        if not page["revisions"] or revs[-1]["rev"] >= page["head"]:
            return revs
        after = revs[-1]["rev"]


def insert(client: HubClient, name: str) -> dict:
    """One acknowledged insert of a person called `name` at the end; returns the ack."""
    tag = client.new_tag()
    return client.edit([{"op": "insert", "at": len(client.people), "person": person(tag, name)}],
                       label=f"Add {name}")


def stop_in_background(argv: list[str]) -> tuple[threading.Thread, dict]:
    """Run a command (a stop) on a thread; the result lands in the dict."""
    result: dict = {}

    def run():
        t0 = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        result.update(code=r.returncode, err=r.stderr.strip(), seconds=time.monotonic() - t0)

    t = threading.Thread(target=run)
    t.start()
    return t, result


# ------------------------------------------------------------------------------------------------------
# single node
# ------------------------------------------------------------------------------------------------------

def check_single(port: int, container: str) -> None:
    room = "docker-single"
    took = wait_healthy(port)
    ok(f"/healthz 200 'ok' {took:.1f} s after `docker run`")

    # Who runs the hub: the container's PID 1, seen from the host and from inside.
    pid = int(docker("inspect", "-f", "{{.State.Pid}}", container))
    status = Path(f"/proc/{pid}/status").read_text()
    uids = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
    gids = next(line.split()[1:] for line in status.splitlines() if line.startswith("Gid:"))
    assert all(int(g) == HUB_UID for g in gids), f"hub's gids {gids}, expected {HUB_UID}"
    comm = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    assert comm == "/usr/local/bin/peoplekeeper-hub", comm
    assert all(int(u) == HUB_UID for u in uids), f"hub's uids {uids}, expected {HUB_UID}"
    inside = docker("exec", container, "id")
    assert inside.startswith(f"uid={HUB_UID}(peoplekeeper) gid={HUB_UID}(peoplekeeper)"), inside
    ok(f"the hub is the container's PID 1 ({comm}, host pid {pid}) with uid {uids[0]} and gid {gids[0]}; `docker exec id`: {inside}")

    status, headers, body = http_get(port, "/")
    assert status == 200 and headers.get("content-type", "").startswith("text/html"), (status, headers)
    assert b"<title>PeopleKeeper</title>" in body, body[:200]
    kind = headers.get("content-type")
    status, headers, script = http_get(port, "/js/app.js")
    assert status == 200 and b"import" in script, (status, script[:200])
    ok(f"GET / 200 {kind} ({len(body)} bytes, <title>PeopleKeeper</title>), GET /js/app.js 200: the web client is served")
    status, _, body = http_get(port, "/metrics")
    assert status == 200 and b"peoplekeeper_connections" in body, (status, body[:200])
    ok("GET /metrics 200 (Prometheus text)")

    # Which binary runs, and the memory bound the container's limit gives (`docker run --memory 512m`).
    version = subprocess.run(DOCKER + ["run", "--rm", "--network", "host", IMAGE, "--version"],
                             capture_output=True, text=True, check=True).stdout.strip()
    found = re.fullmatch(r"peoplekeeper-hub (\d+\.\d+\.\d+) \(build ([0-9a-f]{40})\)", version)
    assert found, version
    text = body.decode()
    assert f'peoplekeeper_build_info{{version="{found[1]}",build="{found[2]}"}} 1' in text, \
        [line for line in text.splitlines() if "build_info" in line]
    logs = subprocess.run(DOCKER + ["logs", container], capture_output=True, text=True).stderr
    assert f"build={found[2]}" in logs.splitlines()[0] and "starting" in logs.splitlines()[0], logs[:500]
    bound = re.search(r"limits\.maxMemoryMB is (\d+) MB: 80 % of this container's memory limit \(512 MB\) "
                      r"less the hub's own (\d+) MB", logs)
    assert bound, logs[-2000:]
    ok(f"`--version`: {version}; the first log line and peoplekeeper_build_info name that build; "
       f"with --memory 512m the hub bounds its heap at {bound[1]} MB (its own {bound[2]} MB besides)")

    # The image's HEALTHCHECK (curl in the image, every 10 s after a 15 s start period).
    deadline = time.monotonic() + 60
    while (health := docker("inspect", "-f", "{{.State.Health.Status}}", container)) != "healthy":
        assert health in ("starting",) and time.monotonic() < deadline, f"health {health!r}"
        time.sleep(1)
    ok("docker inspect: State.Health.Status healthy (the image's HEALTHCHECK)")

    # Acknowledged edits, and a second user watching.
    ann = HubClient(url(port, room), name="ann")
    ann.hello("ann")
    names = [f"Single {i}" for i in range(1, 21)]
    acked = [insert(ann, n)["rev"] for n in names]
    bob = HubClient(url(port, room), name="bob")
    bob.hello("bob")
    assert bob.rev == acked[-1] and bob.people == ann.people
    ok(f"20 inserts acknowledged (revisions {acked[0]}..{acked[-1]}); a second client sees them")
    expected_people, expected_rev = ann.people, ann.rev

    # docker stop: SIGTERM to PID 1, the drain.
    thread, result = stop_in_background(DOCKER + ["stop", "-t", "30", container])
    codes = {c.name: c.wait_closed(timeout=30) for c in (ann, bob)}
    thread.join()
    assert result["code"] == 0, result
    assert codes == {"ann": 1001, "bob": 1001}, codes
    exit_code = int(docker("inspect", "-f", "{{.State.ExitCode}}", container))
    assert exit_code == 0, f"exit code {exit_code}"
    logs = docker("logs", container) + "\n"
    logs += subprocess.run(DOCKER + ["logs", container], capture_output=True, text=True).stderr
    assert "shutdown requested" in logs and "stopped" in logs, logs[-2000:]
    ok(f"`docker stop` took {result['seconds']:.2f} s: both clients saw close 1001, the container exited 0, "
       f"the log says 'shutdown requested' ... 'stopped'")

    docker("start", container)
    took = wait_healthy(port)
    carol = HubClient(url(port, room), name="carol")
    carol.hello("carol")
    assert carol.rev == expected_rev, (carol.rev, expected_rev)
    assert carol.people == expected_people, (carol.people, expected_people)
    assert [p["name"] for p in carol.people][-20:] == names
    revs = feed(port, room)
    assert [r["rev"] for r in revs] == list(range(1, expected_rev + 1)), [r["rev"] for r in revs]
    assert [r["rev"] for r in revs if r["author"] == "ann"] == acked
    carol.close()
    ok(f"`docker start` on the same volume: healthy in {took:.1f} s, room at revision {carol.rev} with "
       f"every acknowledged insert; the change feed has revisions 1..{expected_rev}")

    listing = docker("exec", container, "ls", "-ln", "/app/data")
    owners = {line.split()[2] for line in listing.splitlines()[1:]}
    assert owners == {str(HUB_UID)} and "peoplekeeper.sqlite" in listing, listing
    ok("/app/data in the volume: peoplekeeper.sqlite (+ -wal, -shm) owned by uid 10001")
    print("    " + "\n    ".join(listing.splitlines()))

    # OPERATIONS.md's online backup of the image's store, as written there.
    out = docker("exec", container, "peoplekeeper-hub", "backup", "--config", "/app/Config/peoplekeeper.yaml",
                 "/app/data/backup.sqlite")
    assert "integrity ok" in out, out
    docker("exec", container, "rm", "/app/data/backup.sqlite")
    ok(f"docker exec ... peoplekeeper-hub backup: {out}")


# ------------------------------------------------------------------------------------------------------
# the compose cluster
# ------------------------------------------------------------------------------------------------------

def check_compose(pa: int, pb: int, container_a: str, stop_cmd: list[str]) -> None:
    room = "compose-demo"
    for name, port in (("hub-a", pa), ("hub-b", pb)):
        took = wait_healthy(port, timeout=90)
        ok(f"{name} /healthz 200 on 127.0.0.1:{port}")

    ann = HubClient(url(pa, room), name="ann")
    ann.hello("ann")
    first = insert(ann, "Before 1")
    ok(f"ann joined {room} at hub-a (it leases the room) and edited: revision {first['rev']}")

    bob = HubClient(url(pb, room), name="bob")
    bob.hello("bob", expect_welcome=False)
    redirect = bob.take("redirect")
    code = bob.wait_closed()
    assert redirect["url"] == url(pa, room), redirect
    assert code == 1000, code
    ok(f"bob's hello at hub-b: {json.dumps(redirect)}, then close {code}")

    status, headers, body = http_get(pb, f"/v1/rooms/{room}")
    assert status == 307, (status, body[:300])
    assert headers["location"] == f"http://127.0.0.1:{pa}/v1/rooms/{room}", headers
    status_a, _, body_a = http_get(pa, f"/v1/rooms/{room}")
    assert status_a == 200 and json.loads(body_a)["rev"] == first["rev"], (status_a, body_a[:300])
    ok(f"GET /v1/rooms/{room} at hub-b: 307 Location {headers['location']} (200 there)")

    # A writer that keeps editing while hub-a is stopped under it.
    acked: list[tuple[int, str, int]] = [(first["rev"], "Before 1", pa)]
    unacked: list[str] = []
    closed: list[int | None] = []
    for i in range(2, 11):
        acked.append((insert(ann, f"Before {i}")["rev"], f"Before {i}", pa))
    stop_thread, stop_result = stop_in_background(stop_cmd)
    # Keep submitting until the hub closes us: the drain refuses new messages, then closes with 1001. At
    # about 50 edits a second, under limits.opsPerSecond (100), so no edit is refused for its rate.
    n = 0
    while True:
        n += 1
        name = f"During {n}"
        try:
            acked.append((insert(ann, name)["rev"], name, pa))
        except ConnectionClosed as e:
            unacked.append(name)
            closed.append(e.rcvd.code if e.rcvd else None)
            break
        except AssertionError as e:   # no ack within the wait: the drain dropped it
            assert "error" not in str(e), f"an edit was refused, not dropped by the drain: {e}"
            unacked.append(name)
            closed.append(ann.wait_closed(timeout=30))
            break
        time.sleep(0.02)
    stop_thread.join()
    assert stop_result["code"] == 0, stop_result
    assert closed == [1001], closed
    exit_a = int(docker("inspect", "-f", "{{.State.ExitCode}}", container_a))
    assert exit_a == 0, exit_a
    ok(f"`stop hub-a` ({stop_result['seconds']:.2f} s) while ann edited: {len(acked)} acknowledged at hub-a "
       f"({n - 1} of them while the stop ran), then close {closed[0]}; hub-a exited {exit_a}")

    # ann reconnects at hub-b: PostgreSQL freed hub-a's lease when its connection closed.
    t0 = time.monotonic()
    while True:
        ann = HubClient(url(pb, room), name="ann")
        ann.hello("ann", expect_welcome=False)
        msg = ann._read(5)
        while msg["type"] not in ("welcome", "redirect", "error"):
            msg = ann._read(5)
        if msg["type"] == "welcome":
            break
        ann.close()
        assert time.monotonic() - t0 < 15, f"hub-b still answers {msg} after 15 s"
        time.sleep(0.2)
    ok(f"ann's hello at hub-b got a welcome at revision {ann.rev} "
       f"({time.monotonic() - t0:.2f} s after hub-a was down)")
    for i in range(1, 11):
        acked.append((insert(ann, f"After {i}")["rev"], f"After {i}", pb))

    names = [p["name"] for p in ann.people]
    missing = [(rev, name) for rev, name, _ in acked if name not in names]
    assert not missing, f"acknowledged but lost: {missing}"
    revs = feed(pb, room)
    by_rev = {r["rev"]: r for r in revs}
    assert [r["rev"] for r in revs] == list(range(1, revs[-1]["rev"] + 1))
    for rev, name, _ in acked:
        ops = by_rev[rev]["ops"]
        assert by_rev[rev]["author"] == "ann" and ops[0]["person"]["name"] == name, (rev, name, by_rev[rev])
    unacked_present = [n for n in unacked if n in names]
    ok(f"every one of the {len(acked)} acknowledged revisions ({sum(1 for a in acked if a[2] == pa)} at "
       f"hub-a, {sum(1 for a in acked if a[2] == pb)} at hub-b) is in the room at hub-b and in its change "
       f"feed as acknowledged; unacknowledged at the stop: {unacked} (in the room: {unacked_present})")
    status, _, body = http_get(pb, "/metrics")
    loads = [line for line in body.decode().splitlines()
             if line.startswith("peoplekeeper_room_loads_total") and 'outcome="loaded"' in line]
    assert loads and float(loads[0].split()[-1]) >= 1, loads
    ok(f"hub-b's metrics: {loads[0]}")
    ann.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("single")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--container", required=True)
    c = sub.add_parser("compose")
    c.add_argument("--a", type=int, required=True)
    c.add_argument("--b", type=int, required=True)
    c.add_argument("--container-a", required=True)
    c.add_argument("--stop-a", required=True, help="the command that stops hub-a (shell words)")
    args = ap.parse_args()
    if args.what == "single":
        check_single(args.port, args.container)
    else:
        check_compose(args.a, args.b, args.container_a, shlex.split(args.stop_a))


if __name__ == "__main__":
    main()
