#!/usr/bin/env bash
# History (issue 18): selective undo vs plain undo, log and blame, restore, in the core
# (peoplekeeper-bench history); then log and blame through a release hub in a room of HISTORY
# revisions on SQLite and on PostgreSQL (scripts/history_rtt.py times the round trips); then restore
# and ?at= end to end through a release hub over HTTP, in a SQLite room of RESTORE_PEOPLE people and
# RESTORE_HISTORY revisions, with the store's checkpoints, without them (scripts/restore_rtt.py), and
# with them built again by `peoplekeeper-hub checkpoints` (timed).
#
#   scripts/bench-history.sh [HISTORY] [SAMPLES]       (defaults: 1000000 500)
#   PARTS="restore" RESTORE_SAMPLES=9 scripts/bench-history.sh     (parts: core sqlite postgres restore)
#
# The rooms are written by `peoplekeeper-bench store --history` as the hub journals them; the hub keeps
# rooms.keptRevisions (10,000) in memory, so most `log` pages, and restores far back, are read from the
# store. PostgreSQL 15 runs from a throwaway data directory on a free loopback port, as in
# bench-store.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
HISTORY=${1:-1000000}
SAMPLES=${2:-500}
PARTS=" ${PARTS:-core sqlite postgres restore} "
RESTORE_HISTORY=${RESTORE_HISTORY:-100000}
RESTORE_PEOPLE=${RESTORE_PEOPLE:-1000}
RESTORE_SAMPLES=${RESTORE_SAMPLES:-5}
BIN=.build/release
OUT=.build/bench
mkdir -p "$OUT"
source scripts/bench-lib.sh
build_release
PY=${PYTHON:-.venv/bin/python}
part() { [[ "$PARTS" == *" $1 "* ]]; }

if part core; then
echo "== in the core"
"$BIN/peoplekeeper-bench" history
fi

DATA=$(mktemp -d /tmp/pk-bench-history-XXXXXX)
PGBIN=/usr/lib/postgresql/15/bin
PGDIR=$DATA/pg
HUB_PID=
cleanup() {
  [ -n "$HUB_PID" ] && kill "$HUB_PID" 2>/dev/null || true
  if [ -f "$PGDIR/postmaster.pid" ]; then kill -INT "$(head -1 "$PGDIR/postmaster.pid")" 2>/dev/null || true; sleep 1; fi
  # The hub stops even when its database stopped under its drain (before session 29's fix it waited
  # for good, and every run left one behind): a hub still there after 30 s fails the run.
  local stuck=
  if [ -n "$HUB_PID" ]; then
    for _ in $(seq 300); do kill -0 "$HUB_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$HUB_PID" 2>/dev/null; then
      echo "$(basename "$0"): the hub (pid $HUB_PID) did not stop within 30 s of SIGTERM; killed" >&2
      kill -9 "$HUB_PID" 2>/dev/null || true
      stuck=1
    fi
  fi
  rm -rf "$DATA"
  [ -z "$stuck" ] || exit 1
}
trap cleanup EXIT

if part sqlite; then
echo "== log and blame through the hub, SQLite, a room of $HISTORY revisions"
"$BIN/peoplekeeper-bench" store --kind sqlite --path "$DATA/hub.sqlite" --seconds 0 --history "$HISTORY" \
  --history-room long-0 | head -1
read -r HUB_PID PORT < <(PEOPLEKEEPER_LIMITS_OPS_PER_SECOND=1000000 PEOPLEKEEPER_LOGGING_LEVEL=warning \
  PEOPLEKEEPER_STORAGE_PATH="$DATA/hub.sqlite" \
  start_server "$DATA/hub.log" "$BIN/peoplekeeper-hub" --port 0 --storage embedded --config Config/peoplekeeper.yaml)
"$PY" scripts/history_rtt.py "ws://127.0.0.1:$PORT" long-0 "$SAMPLES" | tee "$OUT/history-sqlite.txt"
kill "$HUB_PID"; wait "$HUB_PID" 2>/dev/null || true; HUB_PID=
fi

if part restore; then
# A restore is answered once durable (HTTP API); each is followed by an undo. Then the same on the same
# file with its checkpoints deleted: a room stored before checkpoints were kept (the old path: every
# revision from the target up to the hub's memory read from the store).
echo "== restore and ?at= through the hub over HTTP, SQLite, $RESTORE_PEOPLE people, $RESTORE_HISTORY revisions"
"$BIN/peoplekeeper-bench" store --kind sqlite --path "$DATA/restore.sqlite" --seconds 0 --history "$RESTORE_HISTORY" \
  --people "$RESTORE_PEOPLE" --history-room big-0 | head -1
for variant in checkpoints without-checkpoints rebuilt-checkpoints; do
  if [ "$variant" = without-checkpoints ]; then
    python3 -c 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute("DELETE FROM checkpoints"); db.commit()' \
      "$DATA/restore.sqlite"
  fi
  if [ "$variant" = rebuilt-checkpoints ]; then
    # What an upgrade from a hub older than checkpoints runs once (OPERATIONS.md "Upgrade").
    printf 'storage:\n  kind: embedded\n  path: %s\n' "$DATA/restore.sqlite" > "$DATA/checkpoints.yaml"
    /usr/bin/time -f "peoplekeeper-hub checkpoints big-0: %e s wall, %U s user, %M KiB max RSS" \
      "$BIN/peoplekeeper-hub" checkpoints --config "$DATA/checkpoints.yaml" big-0 2>&1 | tee "$OUT/checkpoints-command.txt"
  fi
  echo "-- $variant"
  read -r HUB_PID PORT < <(PEOPLEKEEPER_LIMITS_OPS_PER_SECOND=1000000 PEOPLEKEEPER_LOGGING_LEVEL=warning \
    PEOPLEKEEPER_STORAGE_PATH="$DATA/restore.sqlite" \
    start_server "$DATA/hub-restore.log" "$BIN/peoplekeeper-hub" --port 0 --storage embedded --config Config/peoplekeeper.yaml)
  python3 scripts/restore_rtt.py "http://127.0.0.1:$PORT" big-0 "$RESTORE_SAMPLES" | tee "$OUT/restore-$variant.txt"
  kill "$HUB_PID"; wait "$HUB_PID" 2>/dev/null || true; HUB_PID=
done
fi

part postgres || exit 0
echo "== log and blame through the hub, PostgreSQL, a room of $HISTORY revisions"
mkdir -p "$PGDIR"
RUN=()
if [ "$(id -u)" = 0 ]; then chown postgres: "$DATA" "$PGDIR"; RUN=(runuser -u postgres --); fi
PGPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${RUN[@]}" "$PGBIN/initdb" -D "$PGDIR" -U peoplekeeper --auth=trust -E UTF8 --no-locale >/dev/null
"${RUN[@]}" "$PGBIN/postgres" -D "$PGDIR" -p "$PGPORT" -k "$PGDIR" -c listen_addresses=127.0.0.1 >"$DATA/pg.log" 2>&1 &
for _ in $(seq 100); do "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PGPORT" && break; sleep 0.1; done
"$PGBIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U peoplekeeper peoplekeeper
URL="postgres://peoplekeeper@127.0.0.1:$PGPORT/peoplekeeper"
"$BIN/peoplekeeper-bench" store --kind postgres --url "$URL" --seconds 0 --history "$HISTORY" --history-room long-0 | head -1
# A journal that grew one revision at a time has been vacuumed and analysed along the way; one written
# in bulk a moment ago has not (autovacuum would be busy with it during the measurement).
"$PGBIN/vacuumdb" -q -h 127.0.0.1 -p "$PGPORT" -U peoplekeeper --analyze peoplekeeper
read -r HUB_PID PORT < <(PEOPLEKEEPER_LIMITS_OPS_PER_SECOND=1000000 PEOPLEKEEPER_LOGGING_LEVEL=warning \
  PEOPLEKEEPER_STORAGE_POSTGRES_URL="$URL" \
  start_server "$DATA/hub-pg.log" "$BIN/peoplekeeper-hub" --port 0 --storage postgres --config Config/peoplekeeper.yaml)
"$PY" scripts/history_rtt.py "ws://127.0.0.1:$PORT" long-0 "$SAMPLES" | tee "$OUT/history-postgres.txt"
