#!/usr/bin/env bash
# Big rooms and every core (issue 20): the same workloads against a release hub with 1 and with 2
# service threads (transport.serviceThreads), side by side in one run, and the bare relay
# (peoplekeeper-bench relay) with 1 and 2 threads on the relay workload:
#   1. one room of 1,000 clients, one writer at 20 revisions/s (latency p50 / p99, hub CPU per delivery);
#   2. the same at 100 revisions/s;
#   3. 100 rooms x 10 clients, one writer per room as fast as its answers come (deliveries/s: saturation);
#   4. hub vs relay: 100 clients, one writer at 200 messages/s (hub CPU per delivery over the relay's);
#   5. 10,000 idle connections over 100 rooms (hub RSS per connection; SQLite store, as deployed).
# Runs 1-4 keep rooms in memory (storage.kind memory: the figures are the transport's and the room's,
# not a disk's). The load generator runs as LOADGEN_PROCESSES processes (default 2) on the same 2 cores
# as the hub: the hub's CPU time comes from /proc, and the clients' own time is what the latency figures
# pay for the shared machine (PERFORMANCE.md says how much).
#
#   scripts/bench-threads.sh [SECONDS] [THREADS...]      (defaults: 10, then 1 2)
#
# JSON per run in .build/bench/threads/; a Markdown table in .build/bench/threads/summary.md (printed).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_=${1:-10}
shift || true
THREADS=("$@")
[ ${#THREADS[@]} -gt 0 ] || THREADS=(1 2)
PROCS=${LOADGEN_PROCESSES:-2}
BIN=.build/release
OUT=.build/bench/threads
rm -rf "$OUT"
mkdir -p "$OUT"
source scripts/bench-lib.sh
build_release

pids=()
trap kill_started EXIT

# start_hub THREADS [STORAGE]: memory (default) or embedded (see start_bench_hub).
start_hub() { PEOPLEKEEPER_TRANSPORT_SERVICE_THREADS="$1" start_bench_hub "$1" "${2:-memory}"; }

# load_hub NAME PID PORT ARGS...: `load`, and the hub's CPU seconds per thread over the run (busiest
# first) in $OUT/NAME.threads.json: how evenly the work spreads over the service threads.
load_hub() {
  local name=$1 pid=$2 before
  before=$(thread_ticks "$pid")
  load "$@"
  busiest_threads "$before" "$(thread_ticks "$pid")" >"$OUT/$name.threads.json"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg); load generator: $PROCS processes"
echo
for t in "${THREADS[@]}"; do
  read -r PID PORT < <(start_hub "$t")
  pids+=("$PID")
  load_hub "t$t-room1000-20" "$PID" "$PORT" --processes "$PROCS" --clients 1000 --writers 1 --rate 20
  load_hub "t$t-room1000-100" "$PID" "$PORT" --processes "$PROCS" --clients 1000 --writers 1 --rate 100
  load_hub "t$t-rooms100x10-saturation" "$PID" "$PORT" --processes "$PROCS" --clients 1000 --rooms 100 --writers 100 --rate 0
  load_hub "t$t-hub-fanout" "$PID" "$PORT" --processes "$PROCS" --clients 100 --writers 1 --rate 200 --mix 100,0,0
  stop_server "$PID"
  read -r PID PORT < <(start_hub "$t" embedded)
  pids+=("$PID")
  load "t$t-idle10000" "$PID" "$PORT" --processes "$PROCS" --clients 10000 --rooms 100 --writers 0 --seconds 5
  stop_server "$PID"
  read -r RPID RPORT < <(start_server "$OUT/relay-$t.log" "$BIN/peoplekeeper-bench" relay --port 0 --service-threads "$t")
  pids+=("$RPID")
  load "t$t-relay-fanout" "$RPID" "$RPORT" --processes "$PROCS" --target relay --clients 100 --writers 1 --rate 200 --mix 100,0,0
  stop_server "$RPID"
done

python3 - "$OUT" "${THREADS[@]}" <<'PY' | tee "$OUT/summary.md"
import sys
sys.path.insert(0, "scripts")
from bench_table import load, print_ratio, print_table
out, threads = sys.argv[1], sys.argv[2:]
def busiest(t, key):
    spread = load(out, f"t{t}-{key}.threads")
    return " / ".join(f"{s:.2f}" for s in spread[:int(t)]) if spread else ""
print_table(out, [("room1000-20", "1,000 clients, 1 writer × 20/s"), ("room1000-100", "1,000 clients, 1 writer × 100/s"),
                  ("rooms100x10-saturation", "100 rooms × 10, 100 writers × max"), ("hub-fanout", "hub: 100 clients, 1 × 200/s"),
                  ("relay-fanout", "relay: 100 clients, 1 × 200/s"), ("idle10000", "10,000 idle, 100 rooms")],
            threads, "threads", extra=("busiest hub threads (CPU s)", busiest), prefix="t")
if len(threads) >= 2:
    a, b = threads[0], threads[-1]
    for key, field, what in [("rooms100x10-saturation", "deliveriesPerSecond", "saturation deliveries/s"),
                             ("room1000-20", "serverCPUMicrosPerDelivery", "CPU per delivery, 1,000-client room at 20/s"),
                             ("room1000-100", "serverCPUMicrosPerDelivery", "CPU per delivery, 1,000-client room at 100/s")]:
        print_ratio(out, key, field, what, a, b, prefix="t", unit=" threads")
    for t in threads:
        h, r = load(out, f"t{t}-hub-fanout"), load(out, f"t{t}-relay-fanout")
        if h and r and r.get("serverCPUMicrosPerDelivery"):
            print(f"\nhub / relay CPU per delivery with {t} thread(s): {h['serverCPUMicrosPerDelivery'] / r['serverCPUMicrosPerDelivery']:.2f}x", end="")
    print()
PY
