#!/usr/bin/env bash
# The hub vs pycrdt-websocket (the Yjs sync server from PyPI), same machine, same run, same workload
# shape: 100 clients in one room, writers at a paced rate; the hub's writers make PeopleKeeper edits
# (`peoplekeeper-bench load --mix 100,0,0`: sets of every field, renames, moves; no undos), the Yjs
# writers make Map sets (scripts/pycrdt_load.py against scripts/pycrdt_server.py).
#   1. the fan-out point: 1 writer at 200/s for SECONDS; prints deliveries per server-CPU-second of
#      each, their ratio (hub / pycrdt) and both latency p99s;
#   2. saturation: WRITERS writers, the hub's flat out, pycrdt-websocket's past its capacity; prints
#      each server's deliveries per server-CPU-second at capacity and their ratio;
#   3. a sweep of offered load: WRITERS writers sharing each total rate in RATES (edits/s in all);
#   4. scripts/plot_latency.py: p50 and p99 latency vs offered load, both servers, into
#      docs/images/latency-vs-load.png.
# Every run checks exactly-once delivery and that the clients end equal. JSON per run in
# .build/bench/peers/ (fanout-{hub,pycrdt}.json, sweep-RATE-{hub,pycrdt}.json, summary.md).
#
#   scripts/bench-peers.sh [SECONDS] [RATES] [WRITERS] [CLIENTS]
#                          (defaults: 10 "50 100 200 400 800 1600" 4 100; RATES "" runs only steps 1 and 2)
#
# Uses the binaries already built (release ones when .build/release has them, with `load` in the
# bench tool, else debug; this script does not build) and the bench venv (scripts/bench-venv.sh).
# The hub runs with the in-memory store and limits.opsPerSecond raised; pycrdt-websocket with no store.
# Neither side compresses. Both servers are started once and serve every run; each hub run uses fresh
# rooms (the hub keeps them), pycrdt-websocket drops a room when its last client leaves.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_=${1:-10}
RATES=${2-50 100 200 400 800 1600}
WRITERS=${3:-4}
CLIENTS=${4:-100}
OUT=.build/bench/peers
PLOT=docs/images/latency-vs-load.png
rm -rf "$OUT"
mkdir -p "$OUT"
PY=$(scripts/bench-venv.sh)

HUB=.build/release/peoplekeeper-hub
[ -x "$HUB" ] || HUB=.build/debug/peoplekeeper-hub
BENCH=.build/release/peoplekeeper-bench
"$BENCH" load --help >/dev/null 2>&1 || BENCH=.build/debug/peoplekeeper-bench
for b in "$HUB" "$BENCH"; do
  [ -x "$b" ] || { echo "bench-peers: $b is missing; build it first (swift build [-c release])" >&2; exit 1; }
done

source scripts/bench-lib.sh
pids=()
trap kill_started EXIT

read -r PY_PID PY_PORT < <(start_server "$OUT/pycrdt-server.log" "$PY" scripts/pycrdt_server.py --port 0)
pids+=("$PY_PID")
read -r HUB_PID HUB_PORT < <(PEOPLEKEEPER_LIMITS_OPS_PER_SECOND=1000000 PEOPLEKEEPER_LOGGING_LEVEL=warning \
  start_server "$OUT/hub.log" "$HUB" --port 0 --storage memory --config Config/peoplekeeper.yaml)
pids+=("$HUB_PID")

# run NAME WRITERS RATE-PER-WRITER [PYCRDT-RATE-PER-WRITER]: the workload against both servers
# (pycrdt-websocket at its own rate when given); tables on stdout, JSON in $OUT. A run whose checks
# fail still leaves its JSON (marked in the summary and the plot); the script goes on.
RUN_ID=peers-$$-$(date +%s)
run() {
  local name=$1 writers=$2 rate=$3 pyrate=${4:-$3}
  echo "== $name: hub"
  "$BENCH" load --url "ws://127.0.0.1:$HUB_PORT" --server-pid "$HUB_PID" --room-prefix "$RUN_ID-$name" \
    --clients "$CLIENTS" --writers "$writers" --rate "$rate" --seconds "$SECONDS_" --mix 100,0,0 \
    --label "hub" --json "$OUT/$name-hub.json" || echo "(hub: checks failed or the run did not finish)"
  echo "== $name: pycrdt-websocket"
  "$PY" scripts/pycrdt_load.py --url "ws://127.0.0.1:$PY_PORT" --server-pid "$PY_PID" --room "$RUN_ID-$name" \
    --clients "$CLIENTS" --writers "$writers" --rate "$pyrate" --seconds "$SECONDS_" \
    --label "pycrdt-websocket" --json "$OUT/$name-pycrdt.json" || echo "(pycrdt: checks failed or the run did not finish)"
  echo
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
built() { date -r "$1" '+%Y-%m-%d %H:%M'; }
echo "hub: $HUB ($(built "$HUB")), bench: $BENCH ($(built "$BENCH")); pycrdt-websocket $("$PY" -c 'import importlib.metadata as m; print(m.version("pycrdt-websocket"), "/ pycrdt", m.version("pycrdt"), "/ websockets", m.version("websockets"))')"
echo

run fanout 1 200
"$PY" - "$OUT/fanout-hub.json" "$OUT/fanout-pycrdt.json" <<'PY'
import json, sys
hub, yjs = (json.load(open(p)) for p in sys.argv[1:3])
h, y = hub["deliveriesPerServerCPUSecond"], yjs["deliveriesPerServerCPUSecond"]
print(f"deliveries per server-CPU-second: hub {h:,.0f} / pycrdt-websocket {y:,.0f} = {h / y:.1f}x")
print(f"latency p99: hub {hub['latencyMillis']['p99']:.2f} ms, pycrdt-websocket {yjs['latencyMillis']['p99']:.2f} ms")
print()
PY

# Saturation: each server as busy as it gets, for its deliveries per CPU-second at capacity. The hub's
# writers go as fast as their acks come (--rate 0: one request in flight each); pycrdt-websocket has no
# acks, so its writers are paced at 4 x 400 edits/s, past what it can deliver (its queue grows and its
# one thread stays busy; flat out, the backlog would take minutes to drain).
run saturation "$WRITERS" 0 "$(awk -v w="$WRITERS" 'BEGIN { print 1600 / w }')"
"$PY" - "$OUT/saturation-hub.json" "$OUT/saturation-pycrdt.json" <<'PY'
import json, sys
hub, yjs = (json.load(open(p)) for p in sys.argv[1:3])
h, y = hub["deliveriesPerServerCPUSecond"], yjs["deliveriesPerServerCPUSecond"]
print(f"at saturation, deliveries per server-CPU-second: hub {h:,.0f} / pycrdt-websocket {y:,.0f} = {h / y:.1f}x")
print()
PY

for total in $RATES; do
  run "sweep-$total" "$WRITERS" "$(awk -v t="$total" -v w="$WRITERS" 'BEGIN { print t / w }')"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

"$PY" - "$OUT" $RATES <<'PY' | tee "$OUT/summary.md"
import json, os, sys
out, rates = sys.argv[1], sys.argv[2:]
print("| offered edits/s | server | deliveries/s | latency p50 / p99 / max (ms) | server µs CPU / delivery | deliveries per CPU-s, hub / pycrdt | client CPU s | checks |")
print("|---|---|---|---|---|---|---|---|")
for name in ["fanout", "saturation"] + [f"sweep-{r}" for r in rates]:
    both = [f"{out}/{name}-{server}.json" for server in ("hub", "pycrdt")]
    ratio = ""
    if all(os.path.exists(path) for path in both):
        h, y = (json.load(open(path)).get("deliveriesPerServerCPUSecond") or 0 for path in both)
        ratio = f"{h / y:.1f}x" if h and y else ""
    for server in ("hub", "pycrdt"):
        path = f"{out}/{name}-{server}.json"
        if not os.path.exists(path):
            print(f"| {name.removeprefix('sweep-')} | {'hub' if server == 'hub' else 'pycrdt-websocket'} | | | | | no result |")
            continue
        r = json.load(open(path))
        lat = r["latencyMillis"]
        ok = "ok" if not r["problems"] and r["converged"] else "FAILED"
        offered = r["rate"] * r["writers"]
        client = f'{r["clientCPUSeconds"]:.1f}' if "clientCPUSeconds" in r else ""
        offered = "flat out" if name == "saturation" and server == "hub" else f"{offered:,.0f}"
        print(f'| {offered}{" (fan-out)" if name == "fanout" else " (saturation)" if name == "saturation" else ""} | {r["label"]} | {r["deliveriesPerSecond"]:,.0f} | '
              f'{lat["p50"]:.2f} / {lat["p99"]:.2f} / {lat["max"]:.1f} | {r.get("serverCPUMicrosPerDelivery", 0):.2f} | '
              f'{ratio if server == "hub" else ""} | {client} | {ok} |')
PY

if [ -n "$RATES" ]; then
  "$PY" scripts/plot_latency.py "$OUT" "$PLOT"
  echo "plot: $PLOT"
fi
