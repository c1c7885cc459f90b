#!/usr/bin/env python3
"""Webhook lag under load (scripts/bench-http.sh, part 2): drives the load, waits for the deliveries,
stops the receiver (scripts/webhook_receiver.py) and reports.

    webhook_lag.py HUB_PORT HUB_PID RECEIVER_PID RECORDS_FILE SECRET_FILE PORTS_FILE BENCH_BIN \
        RATE SECONDS ROOMS NAME JSON_OUT
    webhook_lag.py --compare JSON...       (a table of runs written by the above)

The load is `peoplekeeper-bench load`: 5 writers per room (edits only: --mix 100,0,0), paced to RATE
revisions a second in all, each waiting for its ack, plus one verifier per room, for SECONDS; rooms
are hook-0 … hook-(ROOMS-1), created by the load's hellos, so every endpoint is owed every revision
from 1. After the load, waits (up to 60 s) until the hub's `GET /v1/webhooks` shows no backlog on the
fast endpoints, reads /metrics, and has the receiver write down what it got (SIGUSR1).

Per endpoint: requests, revisions after dropping duplicates by `id`, whether each room's revisions
came exactly as 1, 2, …, head in arrival order, signatures checked with the secret, and the lag =
time the request was whole at the receiver − the body's `time` (the commit time, milliseconds since
the epoch; so 1 ms resolution), over the first delivery of each revision. The CPU of the hub, the
receiver and the load client over the run (load + drain) is user + system time from /proc.
"""
import hashlib, hmac, json, os, re, signal, subprocess, sys, time, urllib.request

from bench_common import cpu_seconds, machine_cpu_since, process_times, summary, table


def compare(files):
    rows = []
    for name in files:
        run = json.load(open(name))
        ack, fast = run["ackMillis"] or {}, [e for e in run["endpoints"] if e["endpoint"].startswith("fast")]
        worst = lambda key: max(e["lagMs"][key] for e in fast) if fast and all(e["lagMs"] for e in fast) else None
        rows.append([run["name"], len(run["endpoints"]), run["revisionsPerSecond"],
                     worst("p50") if fast else "-", worst("p99") if fast else "-", worst("max") if fast else "-",
                     f'{ack.get("p50", 0):.2f} / {ack.get("p99", 0):.2f}',
                     f'{run["cpuSeconds"]["hub"]:.1f} s ({run["cpuPercent"]["hub"]}%)',
                     f'{run["hubCPUMicrosPerRevision"]:.0f}',
                     f'{run["cpuPercent"]["receiver"]}% / {run["cpuPercent"]["load client"]}%',
                     f'{run["cpuPercent"]["machine (all processes)"]}%'])
    print(table(["run", "endpoints", "revisions/s", "fast lag p50 ms (worst)", "fast p99 ms (worst)", "fast max ms",
                 "ack p50 / p99 ms", "hub CPU", "hub CPU µs / revision", "receiver / load CPU",
                 "machine CPU (of 200%)"], rows))


if sys.argv[1] == "--compare":
    compare(sys.argv[2:])
    sys.exit(0)
(port, hub_pid, receiver_pid, records_file, secret_file, ports_file, bench, rate, seconds, rooms,
 name, json_out) = sys.argv[1:13]
port, hub_pid, receiver_pid, rooms = int(port), int(hub_pid), int(receiver_pid), int(rooms)
rate, seconds = float(rate), float(seconds)
ports = [line.split() for line in open(ports_file).read().splitlines()]
fast_count = sum(kind == "fast" for _, kind in ports)
urls = [f"http://127.0.0.1:{p}/hook" for p, _ in ports]
names = [f"fast-{i + 1}" for i in range(fast_count)] + [f"slow-{i + 1}" for i in range(len(ports) - fast_count)]
secret = open(secret_file, "rb").read().rstrip(b"\n")
base = f"http://127.0.0.1:{port}"


def get(path):
    with urllib.request.urlopen(base + path, timeout=30) as answer:
        return answer.read().decode()


writers = 5 * rooms
load_json = json_out.replace(".json", "-load.json")
command = [bench, "load", "--url", f"ws://127.0.0.1:{port}", "--clients", str(writers + rooms), "--rooms", str(rooms),
           "--writers", str(writers), "--verifiers", "1", "--rate", str(rate / writers), "--seconds", str(seconds),
           "--mix", "100,0,0", "--room-prefix", "hook", "--server-pid", str(hub_pid), "--json", load_json,
           "--label", f"webhooks {name}"]
print("load:", " ".join(command[1:]), flush=True)
cpu0 = {"hub": cpu_seconds(hub_pid), "receiver": cpu_seconds(receiver_pid), "machine": process_times()}
start = time.time()
load = subprocess.run(command, stdout=subprocess.PIPE, text=True)
load_end = time.time()
print(load.stdout, end="", flush=True)
children = os.times()
load_cpu = children.children_user + children.children_system
heads = {f"hook-{r}": json.loads(get(f"/v1/rooms/hook-{r}"))["rev"] for r in range(rooms)}

# Drain: the fast endpoints' backlog to 0 (the slow one's grows by RATE a second and never drains).
drained = None
while time.time() - load_end < 60:
    status = {w["url"]: w for w in json.loads(get("/v1/webhooks"))["webhooks"]}
    if all(status[u]["backlog"] == 0 for u in urls[:fast_count]):
        drained = round(time.time() - load_end, 2)
        break
    time.sleep(0.2)
status = {w["url"]: w for w in json.loads(get("/v1/webhooks"))["webhooks"]}
wall = time.time() - start
cpu = {"hub": cpu_seconds(hub_pid) - cpu0["hub"], "receiver": cpu_seconds(receiver_pid) - cpu0["receiver"],
       "load client": load_cpu}
cpu["machine (all processes)"] = machine_cpu_since(cpu0["machine"])
metrics = get("/metrics")
os.kill(receiver_pid, signal.SIGUSR1)
while not os.path.exists(records_file):
    time.sleep(0.1)


def lag_metric(url):
    """The hub's own peoplekeeper_webhook_lag_seconds for this endpoint: count, mean, and the bucket
    bound at or above which the 50th and 99th percentile lie."""
    label = re.escape(f'endpoint="{url}"')
    buckets = [(float(le), float(v)) for le, v in re.findall(
        r'peoplekeeper_webhook_lag_seconds_bucket\{[^}]*?' + label + r'[^}]*?le="([^"]+)"[^}]*\} (\S+)', metrics)
        + re.findall(r'peoplekeeper_webhook_lag_seconds_bucket\{[^}]*?le="([^"]+)"[^}]*?' + label + r'[^}]*\} (\S+)', metrics)]
    count = re.search(r'peoplekeeper_webhook_lag_seconds_count\{[^}]*' + label + r'[^}]*\} (\S+)', metrics)
    total = re.search(r'peoplekeeper_webhook_lag_seconds_sum\{[^}]*' + label + r'[^}]*\} (\S+)', metrics)
    if not count or float(count.group(1)) == 0:
        return None
    n = float(count.group(1))
    buckets.sort()
    bound = lambda q: next((le for le, v in buckets if v >= q * n), None)
    return {"count": int(n), "meanMs": round(float(total.group(1)) / n * 1000, 2),
            "p50BucketMs": bound(0.5) and bound(0.5) * 1000, "p99BucketMs": bound(0.99) and bound(0.99) * 1000}


windows = {}   # the fast endpoints' lags by 5-second window of commit time since the load began
per = [{"requests": 0, "lags": [], "seen": set(), "revs": {}, "events": [], "badSignatures": 0} for _ in ports]
for line in open(records_file):
    index, received, signature, body = json.loads(line)
    e = per[index]
    e["requests"] += 1
    t, v1 = (part.split("=", 1)[1] for part in signature.split(","))
    expected = hmac.new(secret, f"{t}.".encode() + body.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, v1):
        e["badSignatures"] += 1
    event = json.loads(body)
    if event["id"] in e["seen"]:
        continue
    e["seen"].add(event["id"])
    if event["event"] == "revision":
        e["revs"].setdefault(event["room"], []).append(event["rev"])
        e["lags"].append(received - event["time"])
        if index < fast_count:
            windows.setdefault(int((event["time"] / 1000 - start) // 5), []).append(received - event["time"])
    else:
        e["events"].append(event["event"])

rows, out_endpoints = [], []
for index, e in enumerate(per):
    fast = index < fast_count
    in_order = all(e["revs"].get(room, []) == list(range(1, heads[room] + 1)) for room in heads)
    prefix_in_order = all(e["revs"].get(room, []) == list(range(1, len(e["revs"].get(room, [])) + 1)) for room in heads)
    s = summary(e["lags"])
    delivered = sum(len(v) for v in e["revs"].values())
    hub_side = lag_metric(urls[index])
    entry = {"endpoint": names[index], "url": urls[index], "requests": e["requests"], "revisions": delivered,
             "duplicates": e["requests"] - len(e["seen"]), "roomEvents": e["events"], "lagMs": s,
             "everyRevisionInOrder": in_order, "inOrderSoFar": prefix_in_order, "badSignatures": e["badSignatures"],
             "hubBacklogAtEnd": status[urls[index]]["backlog"], "hubLagMetric": hub_side}
    out_endpoints.append(entry)
    check = ("yes" if in_order else "NO") if fast else ("prefix ok" if prefix_in_order else "NO")
    rows.append([names[index], delivered, entry["duplicates"], f'{s["p50"]:.0f}' if s else "-", f'{s["p99"]:.0f}' if s else "-",
                 f'{s["max"]:.0f}' if s else "-", check, e["badSignatures"], entry["hubBacklogAtEnd"],
                 f'{hub_side["meanMs"]:.1f} / ≤{hub_side["p99BucketMs"]:g}' if hub_side and hub_side["p99BucketMs"] else "-"])

load_result = json.load(open(load_json)) if os.path.exists(load_json) else {}
revisions = sum(heads.values())
out = {"name": name, "rate": rate, "seconds": seconds, "rooms": rooms, "writers": writers, "heads": heads,
       "revisionsPerSecond": round(revisions / load_result.get("elapsedSeconds", seconds)),
       "loadExitCode": load.returncode, "drainSecondsAfterLoad": drained, "wallSeconds": round(wall, 1),
       "cpuSeconds": {k: round(v, 2) for k, v in cpu.items()},
       "cpuPercent": {k: round(100 * v / wall) for k, v in cpu.items()},
       "ackMillis": load_result.get("answerMillis", {}).get("edit"), "deliveryMillis": load_result.get("latencyMillis"),
       "fastLagP99ByFiveSecondsMs": [summary(windows[k])["p99"] for k in sorted(windows)],
       "hubCPUMicrosPerRevision": round(cpu["hub"] * 1e6 / max(revisions, 1)), "endpoints": out_endpoints}
print(f'{revisions} revisions in {rooms} room(s) at {out["revisionsPerSecond"]}/s over the load '
      f'(target rate {rate:g}/s); fast endpoints drained {drained} s after the load ended '
      f'(None: not within 60 s); run {wall:.1f} s')
if rows:
    print(table(["endpoint", "revisions", "dups", "lag p50 ms", "lag p99 ms", "lag max ms", "1..head in order", "bad sig",
                 "hub backlog", "hub metric mean / p99 bucket ms"], rows))
if windows:
    print("fast endpoints' lag p99 by 5 s of the load (ms): " + " ".join(f"{v:.0f}" for v in out["fastLagP99ByFiveSecondsMs"]))
print("CPU over load + drain: " + ", ".join(f"{k} {v:.1f} s ({out['cpuPercent'][k]}% of one core)" for k, v in cpu.items()))
fast_p99 = max((e["lagMs"]["p99"] for e in out_endpoints[:fast_count] if e["lagMs"]), default=None)
out["fastP99Ms"] = fast_p99
if fast_count:
    ok = fast_p99 is not None and fast_p99 <= 250 and all(e["everyRevisionInOrder"] for e in out_endpoints[:fast_count])
    print(f"{name}: fast endpoints' worst p99 {fast_p99} ms (target ≤ 250 ms, every revision once, in order): "
          f"{'met' if ok else 'NOT met'}")
with open(json_out, "w") as f:
    json.dump(out, f, indent=1)
