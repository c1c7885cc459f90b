#!/usr/bin/env bash
# Protocol conformance (issue 7): the Autobahn TestSuite fuzzing client (wstest) against the hub's echo
# test mode (`peoplekeeper-hub echo`: a WebSocket server on any path that echoes every message back).
#
#   scripts/conformance.sh [CASE-PATTERN ...]
#       default patterns: 1.* 2.* 3.* 4.* 5.* 6.* 7.* 9.1.* 9.2.* 9.3.* 9.4.* 12.1.*
#       (e.g. `scripts/conformance.sh 5.* 6.*` for a quick look at one area)
#
# Two passes: every case outside 12.x/13.x against `peoplekeeper-hub echo`, and the permessage-deflate
# cases (12.x/13.x) against `peoplekeeper-hub echo --deflate`. If the hub dies during a pass, the pass
# records it (exit status, the case it died in, the end of its log), starts a fresh hub and goes on with
# the cases not yet run, so one crash does not hide the results of the rest; the summary reports every
# crash. Prints a compact summary (scripts/autobahn-summary.py reads wstest's index.json) and exits
# non-zero if any case FAILED (see AUTOBAHN_KNOWN_FAILURES), any case could not be run, or the hub crashed.
#
# Needs Python 2.7 (wstest is Python 2 only): $PYTHON2, else pyenv's 2.7.x. On first use it installs
# autobahntestsuite (pinned) into a private virtualenv at .build/autobahn/venv (virtualenv 16.7 itself is
# pip-installed with --target into .build/autobahn/bootstrap), so pyenv's global 2.7 stays untouched.
#
# Environment:
#   PEOPLEKEEPER_HUB_BIN   the hub binary (default .build/debug/peoplekeeper-hub); not built here
#   PYTHON2                a Python 2.7 interpreter (default: pyenv's 2.7.x)
#   AUTOBAHN_PASS_TIMEOUT  seconds one wstest run may take before it is stopped (default 1800)
#   AUTOBAHN_MAX_RESTARTS  hub restarts allowed per pass after crashes (default 30)
#   AUTOBAHN_KNOWN_FAILURES  case ids (e.g. "2.10 2.11") whose FAILED verdict is still listed, marked
#                          known, but does not make the exit status non-zero (default: none)
#
# Output: .build/autobahn/reports/{echo,echo-deflate}/  — run-N/index.html (wstest's report; one run-N per
# hub start), hub-N.log, wstest-N.log, expected.json; .build/autobahn/reports/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

AUTOBAHNTESTSUITE_VERSION=25.10.1
VIRTUALENV_REQ='virtualenv==16.7.12'
ROOT=.build/autobahn
VENV=$ROOT/venv
REPORTS=$ROOT/reports
HUB_BIN=${PEOPLEKEEPER_HUB_BIN:-.build/debug/peoplekeeper-hub}
PASS_TIMEOUT=${AUTOBAHN_PASS_TIMEOUT:-1800}
MAX_RESTARTS=${AUTOBAHN_MAX_RESTARTS:-30}
DEFAULT_CASES=("1.*" "2.*" "3.*" "4.*" "5.*" "6.*" "7.*" "9.1.*" "9.2.*" "9.3.*" "9.4.*" "12.1.*")
if [ $# -gt 0 ]; then CASES=("$@"); else CASES=("${DEFAULT_CASES[@]}"); fi

say() { echo "conformance: $*"; }
die() { echo "conformance: $*" >&2; exit 2; }

# --- Python 2.7 and the private wstest install -------------------------------------------------------
find_python2() {
  if [ -n "${PYTHON2:-}" ]; then echo "$PYTHON2"; return; fi
  local root cand
  root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
  for cand in "$root"/versions/2.7.*/bin/python /root/.pyenv/versions/2.7.*/bin/python; do
    [ -x "$cand" ] && { echo "$cand"; return; }
  done
  command -v python2.7 || command -v python2 || true
}

install_wstest() {
  local stamp=$VENV/.autobahntestsuite-$AUTOBAHNTESTSUITE_VERSION
  [ -f "$stamp" ] && [ -x "$VENV/bin/wstest" ] && return 0
  local py2 log=$ROOT/install.log
  py2=$(find_python2)
  [ -n "$py2" ] && "$py2" -c 'import sys; sys.exit(sys.version_info[:2] != (2, 7))' 2>/dev/null \
    || die "no Python 2.7 found (set PYTHON2, or install it with pyenv: pyenv install 2.7.18)"
  say "installing autobahntestsuite $AUTOBAHNTESTSUITE_VERSION into $VENV (Python 2.7: $py2; log: $log)"
  mkdir -p "$ROOT"
  rm -rf "$VENV"
  {
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$py2" -m pip install -q --no-warn-script-location \
      --target "$ROOT/bootstrap" --upgrade "$VIRTUALENV_REQ" &&
    PYTHONPATH="$ROOT/bootstrap" "$py2" -m virtualenv --no-download -q "$VENV" &&
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install -q --no-warn-script-location \
      "autobahntestsuite==$AUTOBAHNTESTSUITE_VERSION" &&
    "$VENV/bin/wstest" -a
  } >"$log" 2>&1 || { tail -20 "$log" >&2; die "installing wstest failed (see $log)"; }
  touch "$stamp"
}

# --- the hub -------------------------------------------------------------------------------------------
HUB_PID= WSTEST_PID=
cleanup() {
  if [ -n "$WSTEST_PID" ]; then               # interrupted while wstest runs (timeout passes TERM on)
    kill "$WSTEST_PID" 2>/dev/null || true
    wait "$WSTEST_PID" 2>/dev/null || true
    WSTEST_PID=
  fi
  if [ -n "$HUB_PID" ] && kill -0 "$HUB_PID" 2>/dev/null; then
    kill "$HUB_PID" 2>/dev/null || true        # SIGTERM: the echo mode drains and exits
    local i
    for i in $(seq 100); do kill -0 "$HUB_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$HUB_PID" 2>/dev/null || true  # still there after 10 s
    wait "$HUB_PID" 2>/dev/null || true
  fi
  HUB_PID=
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

port_open() {
  python3 - "$1" <<'PY' 2>/dev/null
import socket, sys
s = socket.socket(); s.settimeout(0.5)
sys.exit(s.connect_ex(("127.0.0.1", int(sys.argv[1]))))
PY
}

# start_hub LOG DEFLATE(0|1): starts the echo hub on a free port; sets HUB_PID and HUB_PORT.
start_hub() {
  local log=$1 deflate=$2 tries
  for tries in 1 2 3; do
    HUB_PORT=$(free_port)
    local args=(echo --host 127.0.0.1 --port "$HUB_PORT")
    [ "$deflate" = 1 ] && args+=(--deflate)
    echo "# $HUB_BIN ${args[*]}" >"$log"
    "$HUB_BIN" "${args[@]}" >>"$log" 2>&1 &
    HUB_PID=$!
    local i
    for i in $(seq 200); do            # up to ~20 s (a debug build starts slowly)
      if ! kill -0 "$HUB_PID" 2>/dev/null; then break; fi
      if port_open "$HUB_PORT"; then return 0; fi
      sleep 0.1
    done
    if kill -0 "$HUB_PID" 2>/dev/null; then
      cleanup; tail -20 "$log" >&2; die "the hub did not listen on port $HUB_PORT within 20 s (log: $log)"
    fi
    wait "$HUB_PID" 2>/dev/null || true
    HUB_PID=
    # Lost the race for the port to another process? Try another; anything else is fatal.
    grep -qiE 'in use|EADDRINUSE|error on binding' "$log" || break
  done
  tail -20 "$log" >&2
  die "the hub's echo mode did not start: $HUB_BIN ${args[*]} (log: $log)"
}

# --- one pass: a set of cases against one hub configuration, restarting the hub after a crash ------------
# run_pass NAME DEFLATE PATTERN...
run_pass() {
  local name=$1 deflate=$2; shift 2
  local dir=$REPORTS/$name agent=peoplekeeper-hub-echo
  [ "$deflate" = 1 ] && agent=peoplekeeper-hub-echo-deflate
  mkdir -p "$dir"
  # The case ids the patterns select, in wstest's order (its own case set does the expansion).
  "$VENV/bin/python" - "$dir/expected.json" "$agent" "$@" <<'PY'
import json, sys
from autobahntestsuite.case import Cases, CaseCategories, CaseSubCategories, CaseSetname, CaseBasename
from autobahntestsuite.caseset import CaseSet
out, agent, patterns = sys.argv[1], sys.argv[2], sys.argv[3:]
cs = CaseSet(CaseSetname, CaseBasename, Cases, CaseCategories, CaseSubCategories)
ids = cs.parseSpecCases({"cases": patterns, "exclude-cases": []})
json.dump({"agent": agent, "patterns": patterns, "cases": ids}, open(out, "w"), indent=1)
PY
  local remaining attempt=0 started=$SECONDS total
  total=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["cases"]))' "$dir/expected.json")
  [ "$total" -gt 0 ] || return 0
  : >"$dir/crashes.tsv"
  while :; do
    attempt=$((attempt + 1))
    # Cases not yet reported by an earlier run of this pass (a crashed run's not-run.json excluded).
    remaining=$(python3 scripts/autobahn-summary.py --remaining "$dir")
    [ "$remaining" = "[]" ] && break
    start_hub "$dir/hub-$attempt.log" "$deflate"
    local url="ws://127.0.0.1:$HUB_PORT/conformance"
    local n
    n=$(python3 -c 'import json,sys; print(len(json.loads(sys.argv[1])))' "$remaining")
    if [ "$attempt" = 1 ]; then say "$name: $n cases against $url"
    else say "$name: the $n cases not yet run against a fresh hub at $url (hub start $attempt)"; fi
    python3 - "$dir/spec-$attempt.json" "$dir/run-$attempt" "$agent" "$url" "$remaining" <<'PY'
import json, sys
spec, outdir, agent, url, cases = sys.argv[1:6]
json.dump({"outdir": outdir, "servers": [{"agent": agent, "url": url}],
           "cases": json.loads(cases), "exclude-cases": [], "exclude-agent-cases": {}},
          open(spec, "w"), indent=1)
PY
    local rc=0
    # In the background and waited for, so that an INT / TERM to this script runs its trap at once.
    timeout "$PASS_TIMEOUT" "$VENV/bin/wstest" -m fuzzingclient -s "$dir/spec-$attempt.json" \
      >"$dir/wstest-$attempt.log" 2>&1 &
    WSTEST_PID=$!
    wait "$WSTEST_PID" || rc=$?
    WSTEST_PID=
    if [ "$rc" = 124 ]; then
      say "$name: wstest did not finish within $PASS_TIMEOUT s; stopped it (log: $dir/wstest-$attempt.log)"
    elif [ "$rc" != 0 ]; then
      say "$name: wstest exited with status $rc (log: $dir/wstest-$attempt.log)"; tail -5 "$dir/wstest-$attempt.log" >&2
    fi
    if kill -0 "$HUB_PID" 2>/dev/null; then
      cleanup
      break                               # the hub survived: whatever is still missing was not run
    fi
    local status=0
    wait "$HUB_PID" 2>/dev/null || status=$?
    HUB_PID=
    local died_in
    died_in=$(python3 scripts/autobahn-summary.py --crashed "$dir" "$attempt" "$status" "$dir/hub-$attempt.log")
    say "$name: the hub exited in case $died_in (status $status$([ "$status" -gt 128 ] && echo ", SIG$(kill -l $((status - 128)) 2>/dev/null || echo $((status - 128)))")); log: $dir/hub-$attempt.log"
    [ -f "$dir/run-$attempt/index.json" ] || { say "$name: wstest wrote no report after the crash; giving up on this pass"; break; }
    if [ "$attempt" -gt "$MAX_RESTARTS" ]; then say "$name: $MAX_RESTARTS restarts used; giving up on this pass"; break; fi
  done
  say "$name: done in $((SECONDS - started)) s"
}

# --- main ------------------------------------------------------------------------------------------------
[ -x "$HUB_BIN" ] || die "no hub binary at $HUB_BIN (build it first: swift build --product peoplekeeper-hub)"
install_wstest
rm -rf "$REPORTS"
mkdir -p "$REPORTS"

plain=() deflated=()
for p in "${CASES[@]}"; do
  case $p in 12.*|13.*) deflated+=("$p") ;; *) plain+=("$p") ;; esac
done
[ ${#plain[@]} -gt 0 ] && run_pass echo 0 "${plain[@]}"
[ ${#deflated[@]} -gt 0 ] && run_pass echo-deflate 1 "${deflated[@]}"

rc=0
python3 scripts/autobahn-summary.py "$REPORTS" | tee "$REPORTS/summary.txt" || rc=$?
exit "$rc"
