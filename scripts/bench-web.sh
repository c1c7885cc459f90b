#!/usr/bin/env bash
# The web page in a big room (session 20): a hub with an empty room filled with PEOPLE people over the
# HTTP API, then headless Chromium opens it (time to the list, the welcome's handler, long tasks,
# memory) and types a name while four simulated teammates edit other people at 6 edits/s in all
# (key-to-paint latency, script time per `ops` and `presence` frame); then watches a burst of them at
# 60 edits/s (session 31: script time per second and per message, frames drawn); then restores the room to
# revision 50 from the history panel (half the people go) and undoes that (session 26: how long the
# question, the restore and its undo take to show, and the long tasks). JSON lines per web root, so an
# older copy of Web/ can be measured beside the current one:
#   scripts/bench-web.sh [PEOPLE] [WEB_ROOT ...]       (default: 1000 Web)
# PHASES=burst (say) runs only those of web_measure.py's phases; TRACE=60 instead traces the page
# for 3 s while teammates edit at 60 edits/s (web_trace.py: where the main thread's time goes).
# The hub is the release build, or PEOPLEKEEPER_HUB_BIN. The browser shares the machine's cores with
# the hub and the teammates: the figures are the page's on this machine, not a browser's alone.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh

PEOPLE=${1:-1000}
shift || true
ROOTS=("$@")
[ ${#ROOTS[@]} -eq 0 ] && ROOTS=(Web)
HUB=${PEOPLEKEEPER_HUB_BIN:-}
if [ -z "$HUB" ]; then
  swift build -c release --product peoplekeeper-hub >/dev/null
  HUB=.build/release/peoplekeeper-hub
fi
OUT=.build/bench-web
mkdir -p "$OUT"
PY=.venv/bin/python
pids=()
trap kill_started EXIT

for root in "${ROOTS[@]}"; do
  printf 'listen:\n  host: 127.0.0.1\n  port: 0\nweb:\n  root: %s\nrooms:\n  seed: empty\nstorage:\n  kind: memory\nlogging:\n  level: warning\n' \
    "$(realpath "$root")" > "$OUT/hub.yaml"
  read -r PID PORT < <(start_server "$OUT/hub.log" "$HUB" --config "$OUT/hub.yaml")
  pids+=("$PID")
  $PY scripts/web-bigroom/fill.py big "$PEOPLE" "$PORT" >/dev/null
  echo "bench-web: web root $root, $PEOPLE people"
  if [ -n "${TRACE:-}" ]; then
    $PY scripts/web-bigroom/web_trace.py big zoe --select $((PEOPLE / 2)) --rate "$TRACE" --port "$PORT"
  else
    PEOPLEKEEPER_BENCH_OUT=$OUT $PY scripts/web-bigroom/web_measure.py big zoe --rows $((PEOPLE - 1)) \
      --select $((PEOPLE / 2)) --phases "${PHASES:-open,type,burst,restore}" --port "$PORT"
  fi
  kill "$PID"
  wait "$PID" 2>/dev/null || true
done
