#!/usr/bin/env bash
# Failover time in cluster mode: two release-build hub nodes on one throwaway PostgreSQL 15, clients
# editing a room under load; the owner is SIGKILLed and the time to the first ack from the survivor is
# measured. This is the failover test of Tests/python/test_durability.py (which also checks that
# nothing acked was lost), run RUNS times against the release binary.
#
#   scripts/bench-failover.sh [RUNS]        (default 3; needs the venv: make venv)
#
# Each run's figures go to .build/bench/failover-N.json.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
OUT=.build/bench
mkdir -p "$OUT"
swift build -c release --product peoplekeeper-hub >/dev/null
for n in $(seq "$RUNS"); do
  PEOPLEKEEPER_HUB_BIN="$PWD/.build/release/peoplekeeper-hub" .venv/bin/python -m pytest -q -s \
    Tests/python/test_durability.py -k failover 2>&1 | grep '^\[failover\] kill' || { echo "run $n failed"; exit 1; }
  cp "$OUT/failover.json" "$OUT/failover-$n.json"
done
