#!/usr/bin/env bash
# Undo and redo in the hub, in a room with a short history and in one with a long one (issue 8:
# "undo / redo p99 in the hub flat (within 2x) from 100 to 1,000,000 revisions in a room").
#
#   scripts/bench-undo-history.sh [HISTORY] [SECONDS]       (defaults: 1000000 10)
#
# `peoplekeeper-bench store` writes two rooms into one SQLite file, as the hub journals them: `short-0`
# with 100 revisions and `long-0` with HISTORY. A release hub serves that file, and
# `peoplekeeper-bench load` runs the same workload in each room (4 writers at 50 requests/s each,
# 40% edits, 30% undos, 30% redos; 10 clients): the time from each request to its answer at the
# writer, per kind, is what the hub's undo work adds to. JSON in .build/bench/undo-*.json.
set -euo pipefail
cd "$(dirname "$0")/.."
HISTORY=${1:-1000000}
SECONDS_=${2:-10}
BIN=.build/release
OUT=.build/bench
mkdir -p "$OUT"
source scripts/bench-lib.sh
build_release
DATA=$(mktemp -d /tmp/pk-bench-undo-XXXXXX)
HUB_PID=
cleanup() { [ -n "$HUB_PID" ] && kill "$HUB_PID" 2>/dev/null; rm -rf "$DATA"; }
trap cleanup EXIT

"$BIN/peoplekeeper-bench" store --kind sqlite --path "$DATA/hub.sqlite" --seconds 0 --history 100 --history-room short-0 >/dev/null
"$BIN/peoplekeeper-bench" store --kind sqlite --path "$DATA/hub.sqlite" --seconds 0 --history "$HISTORY" --history-room long-0 | head -1

read -r HUB_PID PORT < <(PEOPLEKEEPER_LIMITS_OPS_PER_SECOND=1000000 PEOPLEKEEPER_LOGGING_LEVEL=warning \
  PEOPLEKEEPER_STORAGE_PATH="$DATA/hub.sqlite" \
  start_server "$DATA/hub.log" "$BIN/peoplekeeper-hub" --port 0 --storage embedded --config Config/peoplekeeper.yaml)

for room in short long; do
  echo "== room $room-0"
  "$BIN/peoplekeeper-bench" load --url "ws://127.0.0.1:$PORT" --room-prefix "$room" --label "undo-$room" \
    --clients 10 --writers 4 --rate 50 --mix 40,30,30 --seconds "$SECONDS_" --server-pid "$HUB_PID" \
    --json "$OUT/undo-$room.json"
  echo
done

python3 - "$OUT/undo-short.json" "$OUT/undo-long.json" <<'PY'
import json, sys
short, long_ = (json.load(open(p)) for p in sys.argv[1:3])
for kind in ("undo", "redo", "edit"):
    s, l = short["answerMillis"][kind], long_["answerMillis"][kind]
    print(f"{kind}: p50 {s['p50']:.2f} -> {l['p50']:.2f} ms, p99 {s['p99']:.2f} -> {l['p99']:.2f} ms "
          f"(long / short p99 = {l['p99'] / s['p99']:.2f}x; {s['count']} and {l['count']} answered)")
PY
