#!/usr/bin/env bash
# Server CPU per delivered message: the hub vs a bare libwebsockets broadcast relay built from the same
# transport (peoplekeeper-bench relay), same machine, same run, same workload: one writer and N-1
# receivers in one room at a fixed offered rate. Prints one line per server and the ratio.
#
#   scripts/bench-fanout.sh [CLIENTS] [RATE] [SECONDS]      (defaults: 100 200 10)
#
# Release build; `peoplekeeper-bench load` drives both. The hub runs with the in-memory store and
# limits.opsPerSecond raised so the single writer is not rate-limited; neither side compresses.
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=${1:-100}
RATE=${2:-200}
SECONDS_=${3:-10}
BIN=.build/release
OUT=.build/bench
mkdir -p "$OUT"
source scripts/bench-lib.sh
build_release

pids=()
trap kill_started EXIT

read -r RELAY_PID RELAY_PORT < <(start_server "$OUT/relay.log" "$BIN/peoplekeeper-bench" relay --port 0)
pids+=("$RELAY_PID")
read -r HUB_PID HUB_PORT < <(PEOPLEKEEPER_LIMITS_OPS_PER_SECOND=1000000 PEOPLEKEEPER_LOGGING_LEVEL=warning \
  start_server "$OUT/fanout-hub.log" "$BIN/peoplekeeper-hub" --port 0 --storage memory --config Config/peoplekeeper.yaml)
pids+=("$HUB_PID")

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $CLIENTS clients, $RATE msg/s, ${SECONDS_} s"
# The same workload against both: one writer at RATE a second, the other CLIENTS-1 receive.
"$BIN/peoplekeeper-bench" load --target relay --label relay --url "ws://127.0.0.1:$RELAY_PORT" --room-prefix bench \
  --clients "$CLIENTS" --writers 1 --rate "$RATE" --mix 100,0,0 --seconds "$SECONDS_" --server-pid "$RELAY_PID" \
  --json "$OUT/fanout-relay.json"
echo
"$BIN/peoplekeeper-bench" load --target hub --label hub --url "ws://127.0.0.1:$HUB_PORT" --room-prefix bench \
  --clients "$CLIENTS" --writers 1 --rate "$RATE" --mix 100,0,0 --seconds "$SECONDS_" --server-pid "$HUB_PID" \
  --json "$OUT/fanout-hub.json"
echo
python3 - "$OUT/fanout-relay.json" "$OUT/fanout-hub.json" <<'PY'
import json, sys
relay, hub = (json.load(open(p)) for p in sys.argv[1:3])
r, h = relay["serverCPUMicrosPerDelivery"], hub["serverCPUMicrosPerDelivery"]
print(f"hub / relay server CPU per delivery: {h:.2f} / {r:.2f} µs = {h / r:.2f}x")
PY
