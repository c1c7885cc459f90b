#!/usr/bin/env bash
# Durable revisions per second through group commit (SQLite and PostgreSQL, with the in-memory store
# for reference), and the restart time of a room with a long history. Release build.
#
#   scripts/bench-store.sh [SECONDS] [HISTORY]        (defaults: 5 1000000)
#
# PostgreSQL 15 runs from a throwaway data directory (as the postgres user when run as root), with
# its defaults (fsync and synchronous_commit on), on a free port; it is removed afterwards.
# JSON summaries go to .build/bench/store-*.json.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_=${1:-5}
HISTORY=${2:-1000000}
BIN=.build/release/peoplekeeper-bench
OUT=.build/bench
mkdir -p "$OUT"
swift build -c release --product peoplekeeper-bench >/dev/null

PGBIN=/usr/lib/postgresql/15/bin
PGDIR=$(mktemp -d /tmp/pk-bench-pg-XXXXXX)
RUN=()
if [ "$(id -u)" = 0 ]; then chown postgres: "$PGDIR"; RUN=(runuser -u postgres --); fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
  if [ -f "$PGDIR/postmaster.pid" ]; then kill -INT "$(head -1 "$PGDIR/postmaster.pid")" 2>/dev/null || true; sleep 1; fi
  rm -rf "$PGDIR" /tmp/pk-bench-store.sqlite* /tmp/pk-bench-long.sqlite*
}
trap cleanup EXIT
"${RUN[@]}" "$PGBIN/initdb" -D "$PGDIR" -U peoplekeeper --auth=trust -E UTF8 --no-locale >/dev/null
"${RUN[@]}" "$PGBIN/postgres" -D "$PGDIR" -p "$PORT" -k "$PGDIR" -c listen_addresses=127.0.0.1 >"$PGDIR.log" 2>&1 &
for _ in $(seq 100); do "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" && break; sleep 0.1; done
"$PGBIN/createdb" -h 127.0.0.1 -p "$PORT" -U peoplekeeper peoplekeeper
URL="postgres://peoplekeeper@127.0.0.1:$PORT/peoplekeeper"

echo "== durable appends through group commit (64 clients waiting for acks, 16 rooms, ${SECONDS_}s)"
"$BIN" store --kind memory --seconds "$SECONDS_" --json "$OUT/store-memory.json"
"$BIN" store --kind sqlite --path /tmp/pk-bench-store.sqlite --seconds "$SECONDS_" --json "$OUT/store-sqlite.json"
"$BIN" store --kind postgres --url "$URL" --seconds "$SECONDS_" --json "$OUT/store-postgres.json"
echo "== the same with one client: nothing to group, one commit per revision"
"$BIN" store --kind sqlite --path /tmp/pk-bench-store.sqlite --writers 1 --rooms 1 --seconds "$SECONDS_" --json "$OUT/store-sqlite-1.json"
"$BIN" store --kind postgres --url "$URL" --writers 1 --rooms 1 --seconds "$SECONDS_" --json "$OUT/store-postgres-1.json"
echo "== restart of a room with $HISTORY revisions"
"$BIN" store --kind sqlite --path /tmp/pk-bench-long.sqlite --seconds 0 --history "$HISTORY" --json "$OUT/store-restart-sqlite.json"
"$BIN" store --kind postgres --url "$URL" --seconds 0 --history "$HISTORY" --json "$OUT/store-restart-postgres.json"
