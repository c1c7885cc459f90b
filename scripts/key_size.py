"""What one HTTP caller's idempotency keys cost in a room's snapshot (docs/CONFIG.md, `rooms.keysKept`).

    key_size.py HUB_BINARY [WRITES]

Starts the hub on a temporary SQLite file (port 18555, `limits.opsPerSecond` raised so the writes are
not refused), creates a room of one person with `PUT`, makes WRITES (default 2,000) keyed writes as
one user, each a `set` of the name with a UUID key, stops the hub (its drain writes the snapshot) and
prints how many keys the snapshot holds and their mean size as stored (compact JSON: the key, its time
and the first answer). Standard library only.
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


def main() -> None:
    binary, writes = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    with tempfile.TemporaryDirectory() as directory:
        config = f"{directory}/hub.yaml"
        with open(config, "w") as f:
            f.write(f"listen:\n  port: 18555\nstorage:\n  kind: embedded\n  path: {directory}/pk.sqlite\n"
                    "limits:\n  opsPerSecond: 1000000\n")
        hub = subprocess.Popen([binary, "--config", config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    urllib.request.urlopen("http://127.0.0.1:18555/healthz").close()
                    break
                except OSError:
                    time.sleep(0.1)
            person = {"tag": 1, "name": "Bob", "hairColor": "black", "hairLength": "short", "eyeColor": "brown",
                      "glasses": False, "facialHair": [], "likes": [], "dislikes": []}
            assert request("PUT", "/v1/rooms/k", {"people": [person]})[0] == 201
            for n in range(writes):
                status, answer = request("POST", "/v1/rooms/k/batches?user=ann", {
                    "base": n, "key": str(uuid.uuid4()),
                    "ops": [{"op": "set", "tag": 1, "field": "name", "value": f"Bob {n}"}]})
                assert status == 200, (status, answer)
        finally:
            hub.terminate()
            hub.wait()
        state = sqlite3.connect(f"{directory}/pk.sqlite").execute("SELECT state FROM snapshots WHERE room = 'k'").fetchone()[0]
        keys = [k for s in json.loads(state)["sessions"] for k in (s.get("keys") or [])]
        size = sum(len(json.dumps(k, separators=(",", ":"))) for k in keys)
        print(f"{len(keys)} keys in the snapshot ({len(state)} bytes): {size / max(1, len(keys)):.0f} bytes a key")


def request(method: str, path: str, body: object) -> tuple[int, object]:
    r = urllib.request.Request("http://127.0.0.1:18555" + path, method=method, data=json.dumps(body).encode(),
                               headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(r) as f:
            return f.status, json.loads(f.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


if __name__ == "__main__":
    main()
