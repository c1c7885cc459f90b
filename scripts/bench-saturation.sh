#!/usr/bin/env bash
# One room flat out, hub against hub: alternating runs of `peoplekeeper-bench load` (100 clients, 10
# writers as fast as their acks come, mix 80/10/10, 10 s) against release hubs, each started from its
# own checkout (its binary, its Config/peoplekeeper.yaml) with the settings given for it. For telling
# a change of the code from a change of this VM's speed: the runs alternate, on the same machine.
#
#   scripts/bench-saturation.sh ROUNDS NAME=CHECKOUT[:ENV=VALUE,...] ...
#
#   # session 6's hub against this one with its defaults, one service thread, and one thread on poll():
#   git worktree add /tmp/s6 12b0b35 && (cd /tmp/s6 && swift build -c release --product peoplekeeper-hub)
#   swift build -c release --product peoplekeeper-hub --product peoplekeeper-bench
#   scripts/bench-saturation.sh 2 s6=/tmp/s6 now=. \
#     now-1=.:PEOPLEKEEPER_TRANSPORT_SERVICE_THREADS=1 \
#     now-1-poll=.:PEOPLEKEEPER_TRANSPORT_SERVICE_THREADS=1,PEOPLEKEEPER_TRANSPORT_EVENT_LOOP=poll
#
# The load generator is this checkout's release `peoplekeeper-bench`. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-lib.sh
ROUNDS=${1:?usage: scripts/bench-saturation.sh ROUNDS NAME=CHECKOUT[:ENV=VALUE,...] ...}
shift
BENCH=$PWD/.build/release/peoplekeeper-bench
[ -x "$BENCH" ] || { echo "bench-saturation: build the release peoplekeeper-bench first" >&2; exit 1; }
OUT=$PWD/.build/bench/saturation
mkdir -p "$OUT"
pids=()
trap kill_started EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq "$ROUNDS"); do
  for side in "$@"; do
    name=${side%%=*}
    rest=${side#*=}
    checkout=${rest%%:*}
    settings=()
    if [ "$rest" != "$checkout" ]; then IFS=',' read -r -a settings <<<"${rest#*:}"; fi
    read -r PID PORT < <(cd "$checkout" && start_server "$OUT/hub-$name.log" env PEOPLEKEEPER_LIMITS_OPS_PER_SECOND=1000000 \
      PEOPLEKEEPER_LIMITS_MAX_CONNECTIONS=20000 PEOPLEKEEPER_LOGGING_LEVEL=warning "${settings[@]}" \
      ./.build/release/peoplekeeper-hub --port 0 --storage memory --config Config/peoplekeeper.yaml)
    pids+=("$PID")
    echo "== $name, round $round"
    "$BENCH" load --url "ws://127.0.0.1:$PORT" --server-pid "$PID" --room-prefix "sat-$name-$round" --label "$name" \
      --seconds 10 --clients 100 --writers 10 --rate 0 --mix 80,10,10 --json "$OUT/$name-$round.json" \
      | grep -E '^(deliveries|latency|server CPU|checks)'
    stop_server "$PID"
  done
done
