#!/usr/bin/env python3
"""Round trips of `log` and `blame` against a running hub (scripts/bench-history.sh).

    history_rtt.py URL ROOM [SAMPLES]

Joins ROOM, then asks SAMPLES times for a page of 50 timeline entries at a random `before` (any page of
the room) and for `blame` of a random present person, one request at a time, timing each from send to
answer. Prints p50 / p99 per kind (milliseconds) and a JSON line. The client's own overhead (Python,
the websockets library) is in the figures: they are an upper bound of the hub's.
"""
import json, random, sys, time
from websockets.sync.client import connect

url, room = sys.argv[1], sys.argv[2]
samples = int(sys.argv[3]) if len(sys.argv) > 3 else 500
rng = random.Random(18)
with connect(f"{url}/v1/rooms/{room}", max_size=None) as ws:
    ws.send(json.dumps({"type": "hello", "protocol": 1, "user": "bench"}))
    welcome = json.loads(ws.recv())
    head, tags = welcome["rev"], [p["tag"] for p in welcome["people"]]

    def ask(message, kind):
        start = time.perf_counter()
        ws.send(json.dumps(message))
        while True:
            reply = json.loads(ws.recv())
            if reply["type"] in (kind, "error"):
                assert reply["type"] == kind, reply
                return time.perf_counter() - start, reply

    times = {"log": [], "blame": []}
    for k in range(samples):
        took, page = ask({"type": "log", "seq": k, "before": rng.randint(2, head + 1), "limit": 50}, "log")
        assert page["entries"], page
        times["log"].append(took)
        took, _ = ask({"type": "blame", "seq": k, "tag": rng.choice(tags)}, "blame")
        times["blame"].append(took)

out = {"room": room, "revisions": head, "samples": samples}
for kind, values in times.items():
    values.sort()
    p50, p99 = values[len(values) // 2] * 1e3, values[min(len(values) - 1, len(values) * 99 // 100)] * 1e3
    out[kind] = {"p50": round(p50, 3), "p99": round(p99, 3)}
    print(f"{kind:6} p50 {p50:.2f} ms  p99 {p99:.2f} ms  ({samples} requests, room of {head} revisions)")
print(json.dumps(out))
