"""What one HTTP caller's idempotency keys cost a room (docs/CONFIG.md, `rooms.keysKept`).

    key_size.py HUB_BINARY [WRITES]

Makes WRITES (default 2,000) keyed writes as one user in a room of one person, each a `set` of the
name with a UUID key, twice: with `rooms.keysKept` at its default (every key kept) and at 1 (about
none kept), each on a hub of its own on a temporary SQLite file (port 18555, `limits.opsPerSecond`
raised so the writes are not refused). Stops the hub (its drain writes the snapshot) and prints the
snapshot's size, the keys it holds (a snapshot of this version holds none: a load reads them back
from the journal, from the snapshot's `keysFrom` on) and the journal records the store's index of
keyed answers holds, and the hub's resident memory right after the writes. Then starts the hub
again, reads the room (`GET /v1/rooms/k`, which loads it) and prints how long that took and the
resident memory after it (which holds what the load parsed and freed, too). The differences between
the two runs are what the kept keys cost: memory after the writes, and time to load. Use a release
build (`swift build -c release --product peoplekeeper-hub`). Standard library only.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

PORT = 18555


def main() -> None:
    binary, writes = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    for kept in (100000, 1):
        run(binary, writes, kept)


def run(binary: str, writes: int, kept: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        config = f"{directory}/hub.yaml"
        with open(config, "w") as f:
            f.write(f"listen:\n  port: {PORT}\nstorage:\n  kind: embedded\n  path: {directory}/pk.sqlite\n"
                    f"limits:\n  opsPerSecond: 1000000\nrooms:\n  keysKept: {kept}\n")
        hub = start(binary, config)
        try:
            person = {"tag": 1, "name": "Bob", "hairColor": "black", "hairLength": "short", "eyeColor": "brown",
                      "glasses": False, "facialHair": [], "likes": [], "dislikes": []}
            assert request("PUT", "/v1/rooms/k", {"people": [person]})[0] == 201
            for n in range(writes):
                status, answer = request("POST", "/v1/rooms/k/batches?user=ann", {
                    "base": n, "key": str(uuid.uuid4()),
                    "ops": [{"op": "set", "tag": 1, "field": "name", "value": f"Bob {n}"}]})
                assert status == 200, (status, answer)
            with open(f"/proc/{hub.pid}/status") as f:
                written = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        finally:
            hub.terminate()
            hub.wait()
        db = sqlite3.connect(f"{directory}/pk.sqlite")
        state = db.execute("SELECT state FROM snapshots WHERE room = 'k'").fetchone()[0]
        keys = [k for s in json.loads(state)["sessions"] for k in (s.get("keys") or [])]
        indexed = db.execute("SELECT count(*) FROM journal INDEXED BY journal_keys WHERE room = 'k' "
                             "AND instr(record, '\"keyTime\":') > 0").fetchone()[0]
        db.close()
        hub = start(binary, config)
        try:
            began = time.monotonic()
            assert request("GET", "/v1/rooms/k", None)[0] == 200
            took = time.monotonic() - began
            with open(f"/proc/{hub.pid}/status") as f:
                rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        finally:
            hub.terminate()
            hub.wait()
        print(f"rooms.keysKept {kept}: snapshot {len(state)} bytes holding {len(keys)} keys, "
              f"{indexed} keyed answers in the journal's index; hub resident {written / 1024:.1f} MiB after the writes; "
              f"loaded again in {took * 1000:.0f} ms, hub resident {rss / 1024:.1f} MiB after")


def start(binary: str, config: str) -> subprocess.Popen[bytes]:
    hub = subprocess.Popen([binary, "--config", config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/healthz").close()
            return hub
        except OSError:
            time.sleep(0.1)
    hub.kill()
    raise SystemExit("the hub did not start")


def request(method: str, path: str, body: object) -> tuple[int, object]:
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(f"http://127.0.0.1:{PORT}" + path, method=method, data=data,
                               headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(r) as f:
            return f.status, json.loads(f.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


if __name__ == "__main__":
    main()
