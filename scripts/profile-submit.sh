#!/usr/bin/env bash
# Instruction counts on the hub's submit path with valgrind's callgrind: a release hub (in-memory store)
# runs under callgrind, collecting only inside `Hub.receive` (a frame from a client to the actions it
# causes: parse, validate, rebase, apply, undo entry, encode the ack and the broadcast, queue them);
# `peoplekeeper-bench load` gives it WRITERS writers at RATE edits/s for SECONDS in a room of CLIENTS;
# then callgrind_annotate prints the functions with the most instructions, inclusive, per submit.
#
#   scripts/profile-submit.sh [CLIENTS] [WRITERS] [RATE] [SECONDS]      (defaults: 10 2 20 10)
#
# Output: .build/bench/callgrind.out (open with kcachegrind or callgrind_annotate) and the top of the
# annotation on stdout. Not part of `make bench` (valgrind runs the hub ~50x slower).
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=${1:-10}
WRITERS=${2:-2}
RATE=${3:-20}
SECONDS_=${4:-10}
OUT=.build/bench
mkdir -p "$OUT"
command -v valgrind >/dev/null || { echo "profile-submit: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
swift build -c release --product peoplekeeper-hub >/dev/null
swift build -c release --product peoplekeeper-bench >/dev/null
BIN=.build/release
LOG=$(mktemp)
rm -f "$OUT/callgrind.out"

# The mangled name of PeopleHub's Hub.receive(_:binary:on:peer:) starts with this (see `nm`).
ENTRY=$(nm "$BIN/peoplekeeper-hub" | sed -n 's/.* [tT] \($s9PeopleHub0B0C7receive[^ ]*binary[^ ]*\)$/\1/p' | grep -v 'TA$' | head -1)
[ -n "$ENTRY" ] || { echo "profile-submit: Hub.receive not found in $BIN/peoplekeeper-hub" >&2; exit 1; }

PEOPLEKEEPER_LIMITS_OPS_PER_SECOND=1000000 PEOPLEKEEPER_LOGGING_LEVEL=warning \
  valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" --toggle-collect="$ENTRY" \
  "$BIN/peoplekeeper-hub" --port 0 --storage memory --config Config/peoplekeeper.yaml >"$LOG" 2>&1 &
HUB=$!
trap 'kill $HUB 2>/dev/null || true; rm -f "$LOG"' EXIT
for _ in $(seq 600); do grep -q 'listening on' "$LOG" && break; sleep 0.1; done
PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$LOG" | head -1)
[ -n "$PORT" ] || { echo "profile-submit: the hub did not start:" >&2; cat "$LOG" >&2; exit 1; }

"$BIN/peoplekeeper-bench" load --url "ws://127.0.0.1:$PORT" --room-prefix profile --clients "$CLIENTS" \
  --writers "$WRITERS" --rate "$RATE" --seconds "$SECONDS_" --mix 80,10,10 --json "$OUT/profile-load.json" \
  | grep -E '^(run|requests)'
kill -TERM "$HUB"
wait "$HUB" 2>/dev/null || true
REQUESTS=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"])' "$OUT/profile-load.json")
echo
echo "instructions inside Hub.receive for $REQUESTS requests (plus the joins); inclusive, top 30:"
callgrind_annotate --inclusive=yes "$OUT/callgrind.out" 2>/dev/null | sed -n '1,/^-- Auto-annotated/p' \
  | grep -E '^ *[0-9,]+ ' | head -30 | python3 -c '
import re, sys
n = int(sys.argv[1])
for line in sys.stdin:
    m = re.match(r"\s*([0-9,]+)\s+\(\s*([0-9.]+)%\)\s+(.*)", line)
    if not m:
        continue
    count = int(m.group(1).replace(",", ""))
    name = m.group(3)
    name = name.split(":", 1)[1] if ":" in name and not name.startswith("$") else name
    print(f"{count / n:>12,.0f} per request  {m.group(2):>6}%  {name[:150]}")
' "$REQUESTS"
