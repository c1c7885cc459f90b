#!/usr/bin/env python3
"""Change-feed replay from revision 0 (scripts/bench-http.sh, part 3).

    feed_replay.py PORT ROOM HUB_PID JSON_OUT [LIMIT]

Reads `GET /v1/rooms/ROOM/revisions?after=N&limit=LIMIT` (default 1000, the most the hub serves) from
0 to the head on one keep-alive connection (http.client), `after` always the last `rev` received,
and checks that every revision arrives exactly once and in order (rev = previous + 1, up to `head`).
Reports revisions a second over the whole replay (request to last byte, JSON parsing and the checks
included), per-page round trips, and the CPU of the client (this process), of the hub (user + system
from /proc, 10 ms ticks) and of every process on the machine together (/proc/*/stat) over the replay.
"""
import http.client, json, socket, sys, time

from bench_common import cpu_seconds, machine_cpu_since, process_times, summary, table

port, room, hub_pid, json_out = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
limit = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
conn.connect()
conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def page(after):
    conn.request("GET", f"/v1/rooms/{room}/revisions?after={after}&limit={limit}")
    answer = conn.getresponse()
    body = answer.read()
    assert answer.status == 200, (answer.status, body[:300])
    return body


head = json.loads(page(0))["head"]   # also warms the connection; not timed
after, pages, problems, page_ms, size = 0, 0, [], [], 0
hub0, client0, wall0, procs0 = cpu_seconds(hub_pid), time.process_time(), time.perf_counter(), process_times()
while after < head:
    t0 = time.perf_counter()
    body = page(after)
    page_ms.append((time.perf_counter() - t0) * 1000)
    size += len(body)
    data = json.loads(body)
    revisions = data["revisions"]
    if not revisions:
        problems.append(f"empty page after {after} (head {data['head']})")
        break
    for revision in revisions:
        if revision["rev"] != after + 1:
            problems.append(f"rev {revision['rev']} after {after}")
            if len(problems) > 10:
                break
        after = revision["rev"]
    pages += 1
wall = time.perf_counter() - wall0
hub, client = cpu_seconds(hub_pid) - hub0, time.process_time() - client0
machine = machine_cpu_since(procs0)
conn.close()

s = summary(page_ms)
out = {"room": room, "head": head, "received": after, "pages": pages, "limit": limit, "seconds": round(wall, 2),
       "revisionsPerSecond": round(after / wall), "bytes": size, "pageMs": s, "problems": problems,
       "everyRevisionOnceInOrder": not problems and after == head,
       "cpuSeconds": {"client": round(client, 2), "hub": round(hub, 2), "machine": round(machine, 2)},
       "cpuPercent": {"client": round(100 * client / wall), "hub": round(100 * hub / wall), "machine": round(100 * machine / wall)}}
print(table(["room", "revisions", "pages", "seconds", "revisions/s", "MB", "page p50 ms", "page p99 ms", "page max ms",
             "client CPU", "hub CPU", "machine CPU (of 200%)", "once, in order"],
            [[room, after, pages, f"{wall:.2f}", out["revisionsPerSecond"], f"{size / 1e6:.0f}", f'{s["p50"]:.2f}',
              f'{s["p99"]:.2f}', f'{s["max"]:.1f}', f'{client:.1f} s ({out["cpuPercent"]["client"]}%)',
              f'{hub:.1f} s ({out["cpuPercent"]["hub"]}%)', f'{out["cpuPercent"]["machine"]}%', "yes" if out["everyRevisionOnceInOrder"] else "NO"]]))
print(f'replay from 0: {out["revisionsPerSecond"]} revisions/s (target ≥ 20,000/s): '
      f'{"met" if out["revisionsPerSecond"] >= 20000 and out["everyRevisionOnceInOrder"] else "NOT met"}')
if problems:
    print("problems:", problems[:10])
with open(json_out, "w") as f:
    json.dump(out, f, indent=1)
