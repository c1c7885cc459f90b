#!/usr/bin/env bash
# The Python venv of the side-by-side benchmarks (issue 8): pycrdt-websocket, the Yjs server the hub is
# measured against (scripts/pycrdt_server.py, scripts/pycrdt_load.py), and matplotlib for the latency
# plot (scripts/plot_latency.py). Idempotent and quiet: does nothing when .build/bench-venv is already
# installed with these pins (a stamp file holds them); prints the venv's python on stdout.
#
#   scripts/bench-venv.sh
#
# pycrdt-websocket 0.16.5 needs pycrdt < 0.15 and does not depend on websockets itself; websockets 17.4
# (the project's test pin) works through the adapter in scripts/pycrdt_server.py.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.build/bench-venv
PACKAGES="pycrdt-websocket==0.16.5 pycrdt==0.14.13 websockets==17.4 matplotlib==3.11.2"
STAMP=$VENV/.installed
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$PACKAGES" ]; then
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  # shellcheck disable=SC2086  # one word per package
  "$VENV/bin/pip" install --quiet --disable-pip-version-check $PACKAGES
  echo "$PACKAGES" >"$STAMP"
fi
echo "$VENV/bin/python"
