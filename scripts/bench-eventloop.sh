#!/usr/bin/env bash
# The service threads' event loop (transport.eventLoop): the same workloads against a release hub with
# lws's own poll() and with an epoll loop (libev), side by side in one run, 2 service threads each:
#   1. one room of 1,000 clients, one writer at 20 revisions/s (latency p50 / p99, hub CPU per delivery);
#   2. the same at 100 revisions/s;
#   3. 100 rooms x 10 clients, one writer per room as fast as its answers come (deliveries/s: saturation);
#   4. 10,000 idle connections over 100 rooms (hub RSS per connection; SQLite store, as deployed);
#   5. 10,000 idle connections as in 4, and once they have all joined, one room of 10 clients with one
#      writer at 200 revisions/s (the hub's CPU per delivery of that room, everything else idle);
#   6. the bare relay (peoplekeeper-bench relay): 100 clients, one writer at 200 messages/s.
# poll() walks every connection of its thread each round, epoll only the ready ones: the difference
# grows with the connections a thread serves. Rooms in memory but for run 4, as in bench-threads.sh;
# the load generator (itself on epoll) runs as LOADGEN_PROCESSES processes on the same cores.
#
#   scripts/bench-eventloop.sh [SECONDS] [LOOPS...]      (defaults: 10, then poll epoll)
#
# JSON per run in .build/bench/eventloop/; a Markdown table in .build/bench/eventloop/summary.md (printed).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_=${1:-10}
shift || true
LOOPS=("$@")
[ ${#LOOPS[@]} -gt 0 ] || LOOPS=(poll epoll)
PROCS=${LOADGEN_PROCESSES:-2}
THREADS=${SERVICE_THREADS:-2}
BIN=.build/release
OUT=.build/bench/eventloop
rm -rf "$OUT"
mkdir -p "$OUT"
source scripts/bench-lib.sh
build_release

pids=()
trap kill_started EXIT

# start_hub LOOP [STORAGE]: memory (default) or embedded (see start_bench_hub).
start_hub() {
  PEOPLEKEEPER_TRANSPORT_SERVICE_THREADS="$THREADS" PEOPLEKEEPER_TRANSPORT_EVENT_LOOP="$1" start_bench_hub "$1" "${2:-memory}"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg); $THREADS service threads; load generator: $PROCS processes"
echo
for loop in "${LOOPS[@]}"; do
  read -r PID PORT < <(start_hub "$loop")
  pids+=("$PID")
  load "$loop-room1000-20" "$PID" "$PORT" --processes "$PROCS" --clients 1000 --writers 1 --rate 20
  load "$loop-room1000-100" "$PID" "$PORT" --processes "$PROCS" --clients 1000 --writers 1 --rate 100
  load "$loop-rooms100x10-saturation" "$PID" "$PORT" --processes "$PROCS" --clients 1000 --rooms 100 --writers 100 --rate 0
  stop_server "$PID"
  read -r PID PORT < <(start_hub "$loop" embedded)
  pids+=("$PID")
  load "$loop-idle10000" "$PID" "$PORT" --processes "$PROCS" --clients 10000 --rooms 100 --writers 0 --seconds 5
  stop_server "$PID"
  read -r PID PORT < <(start_hub "$loop")
  pids+=("$PID")
  # The idle clients stay connected for the whole run; the active room starts once they have joined.
  "$BIN/peoplekeeper-bench" load --url "ws://127.0.0.1:$PORT" --room-prefix "$loop-idle" --clients 10000 --rooms 100 \
    --writers 0 --seconds $((SECONDS_ + 30)) --processes "$PROCS" >"$OUT/$loop-idle-background.txt" 2>&1 &
  idle=$!
  for _ in $(seq 600); do
    joined=$(curl -s "http://127.0.0.1:$PORT/metrics" | sed -n 's/^peoplekeeper_connections \([0-9]*\).*/\1/p')
    [ "${joined:-0}" -ge 10000 ] && break
    sleep 0.1
  done
  load "$loop-idle10000-active10" "$PID" "$PORT" --processes 1 --clients 10 --writers 1 --rate 200
  kill "$idle" 2>/dev/null || true
  wait "$idle" 2>/dev/null || true
  stop_server "$PID"
  read -r RPID RPORT < <(start_server "$OUT/relay-$loop.log" "$BIN/peoplekeeper-bench" relay --port 0 \
    --service-threads "$THREADS" --event-loop "$loop")
  pids+=("$RPID")
  load "$loop-relay-fanout" "$RPID" "$RPORT" --processes "$PROCS" --target relay --clients 100 --writers 1 --rate 200 --mix 100,0,0
  stop_server "$RPID"
done

python3 - "$OUT" "${LOOPS[@]}" <<'PY' | tee "$OUT/summary.md"
import sys
sys.path.insert(0, "scripts")
from bench_table import print_ratio, print_table
out, loops = sys.argv[1], sys.argv[2:]
print_table(out, [("room1000-20", "1,000 clients, 1 writer × 20/s"), ("room1000-100", "1,000 clients, 1 writer × 100/s"),
                  ("rooms100x10-saturation", "100 rooms × 10, 100 writers × max"), ("idle10000", "10,000 idle, 100 rooms"),
                  ("idle10000-active10", "10,000 idle + 1 room of 10, 1 × 200/s"),
                  ("relay-fanout", "relay: 100 clients, 1 × 200/s")], loops, "event loop")
if len(loops) >= 2:
    for key, field, what in [("room1000-20", "serverCPUMicrosPerDelivery", "CPU per delivery, 1,000-client room at 20/s"),
                             ("room1000-100", "serverCPUMicrosPerDelivery", "CPU per delivery, 1,000-client room at 100/s"),
                             ("idle10000-active10", "serverCPUMicrosPerDelivery", "CPU per delivery, one active room beside 10,000 idle connections"),
                             ("relay-fanout", "serverCPUMicrosPerDelivery", "CPU per delivery, the relay"),
                             ("rooms100x10-saturation", "deliveriesPerSecond", "saturation deliveries/s")]:
        print_ratio(out, key, field, what, loops[0], loops[-1])
    print()
PY
