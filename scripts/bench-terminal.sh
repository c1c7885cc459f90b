#!/usr/bin/env bash
# The terminal client in a big room (session 30): a release hub with a room of PEOPLE people (filled over
# the HTTP API, scripts/web-bigroom/fill.py), the release client's interactive screen in a 120x40 tmux
# window, four simulated teammates editing other people at 6 edits/s in all (each with a presence
# update, scripts/web-bigroom/teammates.py). Prints the client's CPU (user + system, from
# /proc/PID/stat) for SECONDS s of watching the teammates, then for KEYS keys typed into the selected
# person's name at 10 keys/s, each a live edit the hub acknowledges and the screen redraws:
#   scripts/bench-terminal.sh [PEOPLE] [SECONDS] [KEYS]     (default: 1000 10 100)
# PEOPLEKEEPER_CLIENT_BIN picks another client (an older build beside this one). Needs tmux. Loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh

PEOPLE=${1:-1000}
SECONDS_=${2:-10}
KEYS=${3:-100}
OUT=.build/bench-terminal
mkdir -p "$OUT"
swift build -c release --product peoplekeeper-hub >/dev/null
CLIENT=${PEOPLEKEEPER_CLIENT_BIN:-}
if [ -z "$CLIENT" ]; then
  swift build -c release --product peoplekeeper >/dev/null
  CLIENT=.build/release/peoplekeeper
fi
PY=.venv/bin/python
SESSION=pk-bench-terminal-$$
pids=()
cleanup() { tmux kill-session -t "$SESSION" 2>/dev/null || true; kill_started; }
trap cleanup EXIT

read -r HUB_PID HUB_PORT < <(PEOPLEKEEPER_LIMITS_OPS_PER_SECOND=100000 PEOPLEKEEPER_LOGGING_LEVEL=warning \
  start_server "$OUT/hub.log" .build/release/peoplekeeper-hub --port 0 --storage memory --config Config/peoplekeeper.yaml)
pids+=("$HUB_PID")
"$PY" scripts/web-bigroom/fill.py big "$PEOPLE" "$HUB_PORT" >"$OUT/fill.log"

tmux new-session -d -s "$SESSION" -x 120 -y 40 "$CLIENT open big --user zed --url ws://127.0.0.1:$HUB_PORT"
CLIENT_PID=
for _ in $(seq 100); do
  CLIENT_PID=$(tmux list-panes -t "$SESSION" -F '#{pane_pid}' 2>/dev/null | head -1)
  # The pane's process is the client, or a shell whose child it is.
  if [ -n "$CLIENT_PID" ] && [ "$(cat "/proc/$CLIENT_PID/comm" 2>/dev/null)" != peoplekeeper ]; then
    CLIENT_PID=$(pgrep -P "$CLIENT_PID" -x peoplekeeper | head -1 || true)
  fi
  if [ -n "$CLIENT_PID" ] && tmux capture-pane -t "$SESSION" -p | grep -q "people"; then break; fi
  sleep 0.1
done
[ -n "$CLIENT_PID" ] || { echo "bench-terminal: the client did not start" >&2; exit 1; }
sleep 1

"$PY" scripts/web-bigroom/teammates.py big --n 4 --rate 6 --secs $((SECONDS_ + KEYS / 10 + 10)) --port "$HUB_PORT" \
  >"$OUT/teammates.log" 2>&1 &
pids+=("$!")
sleep 2

ticks() { awk '{ print $14 + $15 }' "/proc/$CLIENT_PID/stat"; }
hz=$(getconf CLK_TCK)
percent() { awk -v t="$1" -v s="$2" -v hz="$hz" 'BEGIN { printf "%.1f", 100 * t / hz / s }'; }

echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); client $CLIENT ($(date -r "$CLIENT" '+%Y-%m-%d %H:%M'))"
t0=$(ticks); start=$(date +%s.%N); sleep "$SECONDS_"; t1=$(ticks); end=$(date +%s.%N)
secs=$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')
echo "watching ($PEOPLE people, teammates at 6 edits/s): $(percent $((t1 - t0)) "$secs") % of a core"

# Tab to the details, Enter on the name: each key typed is one edit.
tmux send-keys -t "$SESSION" Tab
sleep 0.3
tmux send-keys -t "$SESSION" Enter
sleep 0.5
t0=$(ticks); start=$(date +%s.%N)
for _ in $(seq "$KEYS"); do tmux send-keys -t "$SESSION" -l x; sleep 0.1; done
t1=$(ticks); end=$(date +%s.%N)
secs=$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')
echo "typing a name ($KEYS keys at 10/s, teammates still editing): $(percent $((t1 - t0)) "$secs") % of a core"
tmux capture-pane -t "$SESSION" -p | grep -q "typing the name" \
  || { echo "bench-terminal: the screen was not typing a name at the end:" >&2; tmux capture-pane -t "$SESSION" -p >&2; exit 1; }
