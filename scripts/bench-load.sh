#!/usr/bin/env bash
# The load grids of issue 8, with `peoplekeeper-bench load` against release builds of the hub:
#   1. one room of N = 10, 100, 1,000 clients: light load (one writer, 20 requests/s: latency) and
#      saturation (10 writers, each as fast as its answers come: throughput);
#   2. 10,000 idle connections across 100 rooms (join time, hub RSS per connection);
#   3. persistence: 100 clients in one room, 200 revisions/s and saturation, and durable revisions per
#      second (64 rooms of one writer, flat out), with the in-memory store, SQLite (embedded, the
#      default) and PostgreSQL 15 (a throwaway server on a free port).
# Every run checks that each client got every revision once and in order, and that the clients that
# keep the model end equal to the room. JSON per run in .build/bench/load/; a Markdown summary in
# .build/bench/load/summary.md (printed at the end).
#
#   scripts/bench-load.sh [SECONDS]        (default 10 seconds of load per run)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_=${1:-10}
BIN=.build/release
OUT=.build/bench/load
rm -rf "$OUT"
mkdir -p "$OUT"
source scripts/bench-lib.sh
build_release

PGBIN=/usr/lib/postgresql/15/bin
PGDIR=$(mktemp -d /tmp/pk-bench-pg-XXXXXX)
DATA=$(mktemp -d /tmp/pk-bench-data-XXXXXX)
RUN=()
if [ "$(id -u)" = 0 ]; then chown postgres: "$PGDIR"; RUN=(runuser -u postgres --); fi
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -f "$PGDIR/postmaster.pid" ]; then kill -INT "$(head -1 "$PGDIR/postmaster.pid")" 2>/dev/null || true; sleep 1; fi
  rm -rf "$PGDIR" "$DATA"
}
trap cleanup EXIT

# Starts the hub with the given storage (memory | embedded | postgres) and echoes "PID PORT".
start_hub() {
  local log="$OUT/hub-$1.log"
  local env=(PEOPLEKEEPER_LIMITS_OPS_PER_SECOND=1000000 PEOPLEKEEPER_LIMITS_MAX_CONNECTIONS=20000
             PEOPLEKEEPER_LOGGING_LEVEL=warning PEOPLEKEEPER_STORAGE_PATH="$DATA/hub-$1.sqlite")
  if [ "$1" = postgres ]; then env+=(PEOPLEKEEPER_STORAGE_POSTGRES_URL="$PG_URL"); fi
  start_server "$log" env "${env[@]}" "$BIN/peoplekeeper-hub" --port 0 --storage "$1" --config Config/peoplekeeper.yaml
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo

read -r PID PORT < <(start_hub memory)
pids+=("$PID")
for n in 10 100 1000; do
  load "light-$n" "$PID" "$PORT" --clients "$n" --writers 1 --rate 20
  load "saturation-$n" "$PID" "$PORT" --clients "$n" --writers 10 --rate 0
done
load "idle-10000" "$PID" "$PORT" --clients 10000 --rooms 100 --writers 0 --seconds 5
stop_server "$PID"

# Persistence: the same two workloads per store (a fresh hub each, so RSS figures are its own).
"${RUN[@]}" "$PGBIN/initdb" -D "$PGDIR" -U peoplekeeper --auth=trust -E UTF8 --no-locale >/dev/null
PGPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${RUN[@]}" "$PGBIN/postgres" -D "$PGDIR" -p "$PGPORT" -k "$PGDIR" -c listen_addresses=127.0.0.1 >"$PGDIR.log" 2>&1 &
for _ in $(seq 100); do "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PGPORT" && break; sleep 0.1; done
"$PGBIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U peoplekeeper peoplekeeper
PG_URL="postgres://peoplekeeper@127.0.0.1:$PGPORT/peoplekeeper"
for store in memory embedded postgres; do
  read -r PID PORT < <(start_hub "$store")
  pids+=("$PID")
  load "store-$store-200" "$PID" "$PORT" --clients 100 --writers 1 --rate 200
  load "store-$store-saturation" "$PID" "$PORT" --clients 100 --writers 10 --rate 0
  # Durable revisions per second: 64 rooms of one writer each, every writer as fast as its acks come
  # (each ack waits for its revision's commit: what arrives during a commit goes into the next one).
  load "store-$store-durable" "$PID" "$PORT" --clients 64 --rooms 64 --writers 64 --rate 0 --mix 100,0,0
  stop_server "$PID"
done

python3 - "$OUT" <<'PY' | tee "$OUT/summary.md"
import glob, json, os, sys
out = sys.argv[1]
runs = {os.path.basename(p)[:-5]: json.load(open(p)) for p in glob.glob(f"{out}/*.json")}
order = ["light-10", "light-100", "light-1000", "saturation-10", "saturation-100", "saturation-1000", "idle-10000",
         "store-memory-200", "store-embedded-200", "store-postgres-200",
         "store-memory-saturation", "store-embedded-saturation", "store-postgres-saturation",
         "store-memory-durable", "store-embedded-durable", "store-postgres-durable"]
print("| run | clients | writers × rate | revisions/s | deliveries/s | latency p50 / p99 / max (ms) | hub µs CPU / delivery | hub RSS / connection | checks |")
print("|---|---|---|---|---|---|---|---|---|")
for name in order:
    r = runs.get(name)
    if not r:
        continue
    lat = r["latencyMillis"]
    rate = "idle" if r["writers"] == 0 else f'{r["writers"]} × {"max" if r["rate"] == 0 else int(r["rate"])}'
    ok = "ok" if not r["problems"] and r["converged"] else "FAILED"
    revs = r["revisions"] / r["elapsedSeconds"]
    print(f'| {name} | {r["clients"]:,} | {rate} | {revs:,.0f} | {r["deliveriesPerSecond"]:,.0f} | '
          f'{lat["p50"]:.2f} / {lat["p99"]:.2f} / {lat["max"]:.1f} | {r.get("serverCPUMicrosPerDelivery", 0):.2f} | '
          f'{r.get("serverRSSKiBPerConnection", 0):.1f} KiB | {ok} |')
PY
