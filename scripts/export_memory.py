"""What an export of a long history costs the hub in memory (docs/PERFORMANCE.md, "Exports of a long history").

    export_memory.py HUB_BIN REVISIONS [REVISIONS ...]

For each REVISIONS: a room of that many revisions (import_stall.py's export: the tutorial's three
people, every revision a rename) is imported into a fresh SQLite store with `peoplekeeper-hub import`,
a hub is started on it (`serve`, one service thread), the room is opened (a state read), and its export
with history is read once (`GET /v1/rooms/ROOM/export?history=true`) while the hub's resident size is
sampled every 20 ms; then the same export is `PUT` as another room (when it fits the 64 MiB body
limit). Printed: the export's size and time, the hub's resident size before, at its peak during the
export, 3 s after it, and 3 s after the `PUT`. Standard library only; the hub and its files are
removed after.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from import_stall import export  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(hub_bin: str, count: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="pk-export-memory-"))
    try:
        port = free_port()
        config = work / "hub.yaml"
        config.write_text(f"listen:\n  host: 127.0.0.1\n  port: {port}\nstorage:\n  kind: embedded\n"
                          f"  path: {work}/pk.sqlite\nlimits:\n  maxMessageBytes: 67108864\n  opsPerSecond: 1000000\ntransport:\n  serviceThreads: 1\n")
        source = work / "export.json"
        source.write_bytes(export(count))
        imported = subprocess.run([hub_bin, "import", "--config", str(config), "long", str(source)],
                                  capture_output=True, text=True, timeout=1800)
        assert imported.returncode == 0, imported.stderr
        source.unlink()
        hub = subprocess.Popen([hub_bin, "serve", "--config", str(config)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            for _ in range(200):
                try:
                    conn.request("GET", "/healthz")
                    conn.getresponse().read()
                    break
                except OSError:
                    time.sleep(0.05)
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            conn.request("GET", "/v1/rooms/long")
            state = conn.getresponse()
            assert state.status == 200 and json.loads(state.read())["rev"] == count
            time.sleep(1)
            before = rss_mb(hub.pid)
            peak, done = [before], threading.Event()

            def sample() -> None:
                while not done.is_set():
                    peak[0] = max(peak[0], rss_mb(hub.pid))
                    time.sleep(0.02)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            t0 = time.monotonic()
            conn.request("GET", "/v1/rooms/long/export?history=true")
            answer = conn.getresponse()
            size = 0
            while chunk := answer.read(1 << 20):
                size += len(chunk)
            took = time.monotonic() - t0
            assert answer.status == 200, answer.status
            time.sleep(3)
            done.set()
            sampler.join()
            after = rss_mb(hub.pid)
            # The export imported again as another room, over HTTP (if it fits the body limit).
            body = export(count)
            put_status, put_after = None, None
            if len(body) <= 64 * 1024 * 1024:
                conn.request("PUT", "/v1/rooms/copy", body, {"Content-Type": "application/json"})
                answer = conn.getresponse()
                answer.read()
                put_status = answer.status
                del body
                time.sleep(3)
                put_after = round(rss_mb(hub.pid))
            return {"revisions": count, "export_mb": round(size / 1e6, 1), "seconds": round(took, 2),
                    "rss_before_mb": round(before), "rss_peak_mb": round(peak[0]), "rss_after_mb": round(after),
                    "put_status": put_status, "rss_after_put_mb": put_after}
        finally:
            hub.terminate()
            hub.wait(timeout=60)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    hub_bin = os.path.abspath(sys.argv[1])
    for count in [int(n) for n in sys.argv[2:]]:
        print(json.dumps(measure(hub_bin, count)), flush=True)


if __name__ == "__main__":
    main()
