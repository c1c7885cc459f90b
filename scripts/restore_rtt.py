#!/usr/bin/env python3
"""Restore and `?at=` far back through a running hub's HTTP API (scripts/bench-history.sh).

    restore_rtt.py BASE_URL ROOM [SAMPLES] [AT...]

On one keep-alive connection, in open mode (`?user=`): SAMPLES times `POST /v1/rooms/ROOM/restore` to
revision 0 (answered once durable), each followed by `POST .../undo` (so every restore starts from the
same room); then SAMPLES times a restore to revision 999 and its undo (the most revisions replayed
after a checkpoint when snapshots come every 1,000); then SAMPLES times `GET /v1/rooms/ROOM?at=AT` for
each AT (default 50000 and 50999). Each request is timed from send to its whole answer. Prints the
median and worst per kind (milliseconds) and a JSON line. Python's own time is in the figures.
"""
import http.client, json, sys, time
from urllib.parse import urlparse

base, room = urlparse(sys.argv[1]), sys.argv[2]
samples = int(sys.argv[3]) if len(sys.argv) > 3 else 5
ats = [int(a) for a in sys.argv[4:]] or [50000, 50999]
conn = http.client.HTTPConnection(base.hostname, base.port, timeout=120)
key = [0]


def call(method, path, body=None):
    start = time.perf_counter()
    data = None
    if body is not None:
        key[0] += 1
        data = json.dumps(dict(body, key=f"bench-{time.time_ns()}-{key[0]}"))
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
    response = conn.getresponse()
    payload = response.read()
    took = time.perf_counter() - start
    assert response.status == 200, (method, path, response.status, payload[:300])
    return took, json.loads(payload)


_, now = call("GET", f"/v1/rooms/{room}")
people, head = len(now["people"]), now["rev"]
out = {"room": room, "revisions": head, "people": people, "samples": samples}
times = {}
for target in (0, 999):
    kind = f"restore to {target}"
    times[kind] = []
    for _ in range(samples):
        took, answer = call("POST", f"/v1/rooms/{room}/restore?user=bench", {"rev": target})
        times[kind].append(took)
        assert answer.get("rev") and answer["ops"], answer
        out.setdefault("changes", {})[kind] = len(answer["ops"])
        call("POST", f"/v1/rooms/{room}/undo?user=bench", {})
for at in ats:
    kind = f"GET ?at={at}"
    times[kind] = []
    for _ in range(samples):
        took, state = call("GET", f"/v1/rooms/{room}?at={at}")
        assert state["rev"] == at and len(state["people"]) > 0, state
        times[kind].append(took)

for kind, values in times.items():
    values.sort()
    p50, worst = values[len(values) // 2] * 1e3, values[-1] * 1e3
    out[kind] = {"p50": round(p50, 1), "worst": round(worst, 1)}
    changes = f", {out['changes'][kind]} ops" if kind in out.get("changes", {}) else ""
    print(f"{kind:18} p50 {p50:8.1f} ms  worst {worst:8.1f} ms  ({samples} requests{changes}; "
          f"room of {people} people, {head} revisions)")
print(json.dumps(out))
