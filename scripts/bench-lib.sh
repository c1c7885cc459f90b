# Shared by the bench scripts (sourced, not run).
#
# build_release: the release hub and bench binaries the scripts run (quiet; a build error still shows).
build_release() {
  swift build -c release --product peoplekeeper-hub >/dev/null
  swift build -c release --product peoplekeeper-bench >/dev/null
}

# kill_started: stops every server the script recorded in its `pids` array (its EXIT trap:
# `pids=()`, `trap kill_started EXIT`, then `pids+=("$PID")` for each server it starts).
kill_started() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }

# start_server LOG COMMAND...: starts COMMAND in the background (stdout and stderr in LOG), waits up to
# 10 s for its "listening on ws://|http://127.0.0.1:PORT/" line and echoes "PID PORT"; exits 1 with the
# log when no port appears. Call it as `read -r PID PORT < <(start_server ...)`: it runs in a subshell,
# so the caller records the PID (for its cleanup trap). Environment for COMMAND goes in front of the
# call (`VAR=value start_server ...`) or through `env` in COMMAND.
start_server() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 200); do
    if grep -q 'listening on' "$log"; then break; fi
    sleep 0.05
  done
  local port
  port=$(sed -n 's/.*listening on [a-z]*:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' "$log" | head -1)
  if [ -z "$port" ]; then
    echo "$(basename "$0"): $1 did not start:" >&2
    cat "$log" >&2
    kill "$pid" 2>/dev/null
    exit 1
  fi
  echo "$pid $port"
}

# start_bench_hub NAME [STORAGE]: the release hub ($BIN) for a load run: no rate limit, 20,000 connections,
# warnings only; rooms in memory (the default) or, with `embedded`, in a fresh SQLite file
# $OUT/hub-NAME.sqlite (an idle-memory run, where the in-memory store's journal would count as the
# connections' memory). Its log is $OUT/hub-NAME.log; echoes "PID PORT" as start_server does. Settings
# for the run go in front of the call as environment.
start_bench_hub() {
  local storage=${2:-memory}
  rm -f "$OUT/hub-$1.sqlite"*
  PEOPLEKEEPER_LIMITS_OPS_PER_SECOND=1000000 PEOPLEKEEPER_LIMITS_MAX_CONNECTIONS=20000 \
    PEOPLEKEEPER_LOGGING_LEVEL=warning PEOPLEKEEPER_STORAGE_PATH="$OUT/hub-$1.sqlite" \
    start_server "$OUT/hub-$1.log" "$BIN/peoplekeeper-hub" --port 0 --storage "$storage" --config Config/peoplekeeper.yaml
}

# stop_server PID: stops a server started with start_server and waits for it.
stop_server() { kill "$1"; wait "$1" 2>/dev/null || true; }

# load NAME PID PORT ARGS...: one `peoplekeeper-bench load` run against the server PID listening on
# PORT, rooms named after NAME, SECONDS_ of load (ARGS may override); its table on stdout, its JSON in
# $OUT/NAME.json. Uses the caller's BIN, OUT and SECONDS_.
load() {
  local name=$1 pid=$2 port=$3
  shift 3
  echo "== $name"
  "$BIN/peoplekeeper-bench" load --url "ws://127.0.0.1:$port" --server-pid "$pid" --room-prefix "$name" \
    --label "$name" --seconds "$SECONDS_" --json "$OUT/$name.json" "$@"
  echo
}

# thread_ticks PID: one "TID TICKS" line per thread of PID (user + system CPU, in clock ticks).
thread_ticks() {
  local t st
  for t in /proc/"$1"/task/*; do
    st=$(cut -d')' -f2- "$t/stat" 2>/dev/null) || continue
    # shellcheck disable=SC2086
    set -- $st
    echo "${t##*/} $(( ${12} + ${13} ))"
  done
}

# busiest_threads BEFORE AFTER: from two thread_ticks outputs, the CPU seconds of each thread that ran
# in between, busiest first, as a JSON list.
busiest_threads() {
  python3 - "$1" "$2" "$(getconf CLK_TCK)" <<'PY'
import json, sys
def parse(text):
    return {t: int(v) for t, v in (line.split() for line in text.splitlines() if line.strip())}
before, after, tick = parse(sys.argv[1]), parse(sys.argv[2]), int(sys.argv[3])
spent = sorted(((after[t] - before.get(t, 0)) / tick for t in after), reverse=True)
print(json.dumps([round(s, 2) for s in spent if s > 0]))
PY
}
