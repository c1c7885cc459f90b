#!/usr/bin/env bash
# The HTTP API (issue 19): three figures, each from a release hub of its own on 127.0.0.1, each printed
# as a table and written as JSON under .build/bench/.
#
#   scripts/bench-http.sh [ROUNDTRIPS] [WEBHOOK_SECONDS] [HISTORY]     (defaults: 3000 30 1000000)
#
# 1. HTTP batch vs WebSocket submit (scripts/http_vs_ws.py): one room, one client process, ROUNDTRIPS
#    of each kind alternating, then ROUNDTRIPS of each in turn for CPU per request; SQLite, then memory.
#    Target: HTTP p50 ≤ 2x WebSocket p50.                     -> http-vs-ws-sqlite.json, -memory.json
# 2. Webhook lag (scripts/webhook_receiver.py, scripts/webhook_lag.py): endpoints in one receiver
#    process (fast ones answer at once, slow ones after 2 s), WEBHOOK_RATE (1,000) revisions/s in one
#    room for WEBHOOK_SECONDS from `peoplekeeper-bench load` (5 writers, each waiting for its ack);
#    lag = receipt − the body's `time` (commit). Three runs, each with a fresh hub, store and receiver:
#    3 fast + 1 slow (the target: fast p99 ≤ 250 ms, every revision once, in order), 3 fast only (is the
#    slow one felt?), none (the hub's own CPU and ack latency at that load), then a table of the three.
#                                                             -> webhook-{lag,fast-only,none}[-load].json
# 3. Change-feed replay (scripts/feed_replay.py): a room of HISTORY revisions on SQLite written by
#    `peoplekeeper-bench store --history`, read from 0 to the head in pages of 1,000 on one keep-alive
#    connection. Target: ≥ 20,000 revisions/s.               -> feed-replay.json
# 4. Imports (scripts/import_stall.py): exports of 7,000 revisions (about 1 MB, under the default
#    limits.maxMessageBytes) and of 100,000 (14 MB; the limit raised) PUT into a SQLite hub with one
#    service thread while two probes ask for /healthz and another room: the PUT's time, the probes'
#    slowest answer meanwhile, and GET ?at= half-way into the imported history.  -> import-stall.json
#
# The machine has 2 cores and the clients run beside the hub: each part prints the hub's CPU, the
# clients' and the whole machine's (every process, /proc/*/stat; more than the sum of the benchmark's
# means something else was running). The Python helpers use the standard library only. About 3.5 min.
# Environment: PARTS (default 123), WEBHOOK_RATE (1000), WEBHOOK_STORAGE (embedded; or memory), PYTHON.
#
# (This bench found that the embedded store's commits were not flushed — GRDB's WAL set-up reset
# `synchronous` to NORMAL — by counting fdatasync calls; fixed the same day, so the SQLite figures in
# docs/PERFORMANCE.md from 2026-11-25 on are with a flush per commit.)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
ROUNDTRIPS=${1:-3000}
WEBHOOK_SECONDS=${2:-30}
HISTORY=${3:-1000000}
BIN=.build/release
OUT=.build/bench
mkdir -p "$OUT"
source scripts/bench-lib.sh
build_release
PY=${PYTHON:-python3}
PARTS=${PARTS:-1234}                       # which parts to run, e.g. PARTS=2
WEBHOOK_RATE=${WEBHOOK_RATE:-1000}         # revisions a second in all
WEBHOOK_STORAGE=${WEBHOOK_STORAGE:-embedded}

DATA=$(mktemp -d /tmp/pk-bench-http-XXXXXX)
HUB_PID=
RECEIVER_PID=
cleanup() {
  [ -n "$HUB_PID" ] && kill "$HUB_PID" 2>/dev/null || true
  [ -n "$RECEIVER_PID" ] && kill "$RECEIVER_PID" 2>/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT
# The hub is not this shell's child (start_server ran in a subshell): wait for it to be gone.
stop_hub() { kill "$HUB_PID"; timeout 20 tail --pid="$HUB_PID" -f /dev/null || true; HUB_PID=; }

# hub LOG STORAGE CONFIG [VAR=value ...]: a release hub on a free port (HUB_PID, PORT), rate limit raised.
hub() {
  local log=$1 storage=$2 config=$3
  shift 3
  read -r HUB_PID PORT < <(export PEOPLEKEEPER_LIMITS_OPS_PER_SECOND=1000000 PEOPLEKEEPER_LOGGING_LEVEL=warning "$@"
    start_server "$DATA/$log" "$BIN/peoplekeeper-hub" --port 0 --config "$config" --storage "$storage")
}

part1() {
  echo "== 1. HTTP batch vs WebSocket submit: $ROUNDTRIPS round trips of each, alternating, then in turn"
  for storage in embedded memory; do
    local label
    label=$([ "$storage" = embedded ] && echo sqlite || echo memory)
    hub "hub-rtt-$label.log" "$storage" Config/peoplekeeper.yaml PEOPLEKEEPER_STORAGE_PATH="$DATA/rtt.sqlite"
    (cd scripts && "$PY" http_vs_ws.py "$PORT" "rtt-$label" "$ROUNDTRIPS" "$HUB_PID" "$label" "../$OUT/http-vs-ws-$label.json")
    stop_hub
  done
}

# hooks NAME FAST SLOW: one webhook run (its own receiver, hub, store and room) -> webhook-NAME.json
hooks() {
  local name=$1 fast=$2 slow=$3 dir=$DATA/hooks-$1
  mkdir -p "$dir"
  echo "-- $name: $fast fast endpoint(s), $slow slow (2 s per answer), storage $WEBHOOK_STORAGE"
  "$PY" scripts/webhook_receiver.py "$dir/ports" "$dir/records.jsonl" 2 "$fast" "$slow" >"$dir/receiver.log" 2>&1 &
  RECEIVER_PID=$!
  for _ in $(seq 100); do [ -f "$dir/ports" ] && break; sleep 0.05; done
  [ -f "$dir/ports" ] || { echo "the webhook receiver did not start:" >&2; cat "$dir/receiver.log" >&2; exit 1; }
  head -c 32 /dev/urandom | base64 >"$dir/hook.secret"
  {
    echo "webhooks:"
    [ -s "$dir/ports" ] || echo "  []"
    while read -r hook_port _; do
      printf '  - url: http://127.0.0.1:%s/hook\n    secretFile: hook.secret\n' "$hook_port"
    done <"$dir/ports"
  } >"$dir/hooks.yaml"
  hub "hooks-$name/hub.log" "$WEBHOOK_STORAGE" "$dir/hooks.yaml" PEOPLEKEEPER_STORAGE_PATH="$dir/hub.sqlite"
  (cd scripts && "$PY" webhook_lag.py "$PORT" "$HUB_PID" "$RECEIVER_PID" "$dir/records.jsonl" "$dir/hook.secret" \
    "$dir/ports" "../$BIN/peoplekeeper-bench" "$WEBHOOK_RATE" "$WEBHOOK_SECONDS" 1 "$name" "../$OUT/webhook-$name.json")
  stop_hub   # before the receiver, so the slow endpoint's open POST is not logged as a failure
  kill "$RECEIVER_PID"; wait "$RECEIVER_PID" 2>/dev/null || true; RECEIVER_PID=
  if grep -q -i -E 'warning|error' "$dir/hub.log"; then echo "hub log:"; grep -i -E 'warning|error' "$dir/hub.log" | head -5; fi
}

part2() {
  echo "== 2. Webhook lag at $WEBHOOK_RATE revisions/s for $WEBHOOK_SECONDS s in one room, storage $WEBHOOK_STORAGE:"
  echo "   the target run (3 fast endpoints + 1 slow), then 3 fast only (is the slow one felt?), then none (the hub's own cost)"
  hooks lag 3 1
  hooks fast-only 3 0
  hooks none 0 0
  (cd scripts && "$PY" webhook_lag.py --compare "../$OUT/webhook-lag.json" "../$OUT/webhook-fast-only.json" "../$OUT/webhook-none.json")
}

part3() {
  echo "== 3. Change-feed replay from revision 0 of a room of $HISTORY revisions, SQLite"
  local start
  start=$(date +%s)
  "$BIN/peoplekeeper-bench" store --kind sqlite --path "$DATA/feed.sqlite" --seconds 0 --history "$HISTORY" \
    --history-room long-0 >"$DATA/store.txt"
  echo "$(head -1 "$DATA/store.txt") ($(( $(date +%s) - start )) s with the restart timing)"
  hub hub-feed.log embedded Config/peoplekeeper.yaml PEOPLEKEEPER_STORAGE_PATH="$DATA/feed.sqlite"
  (cd scripts && "$PY" feed_replay.py "$PORT" long-0 "$HUB_PID" "../$OUT/feed-replay.json")
  stop_hub
}

case $PARTS in *1*) part1; echo ;; esac
case $PARTS in *2*) part2; echo ;; esac
part4() {
  echo "== 4. Imports of a long history, one service thread, SQLite: what the rest of the hub feels meanwhile"
  hub hub-import.log embedded Config/peoplekeeper.yaml PEOPLEKEEPER_STORAGE_PATH="$DATA/import.sqlite" \
    PEOPLEKEEPER_TRANSPORT_SERVICE_THREADS=1 PEOPLEKEEPER_LIMITS_MAX_MESSAGE_BYTES=67108864
  "$PY" scripts/import_stall.py "$PORT" "$OUT/import-stall.json" 7000 100000
  stop_hub
}

case $PARTS in *3*) part3; echo ;; esac
case $PARTS in *4*) part4 ;; esac
