#!/usr/bin/env bash
# The fuzz targets of PeopleCore (issue 7), under libFuzzer; `make fuzz` runs this, `make test` does not.
#
#   scripts/fuzz.sh [SECONDS] [MODE...]   build, then fuzz each mode (decode, apply, sync; default all)
#                                         for SECONDS each (default 120); exits 1 if any input crashed
#   scripts/fuzz.sh merge [MODE...]       fold what earlier runs found into the committed corpus,
#                                         minimized: the fewest inputs that reach every edge reached
#                                         (libFuzzer -set_cover_merge=1 -use_counters=0)
#
# Modes: decode (wire frames: JSON parse, message decoding, round trips, a room fed the frames), apply
# (a model and concurrent batches: apply, inverses, TP1, the room's submit / undo / redo, restore) and
# sync (client state machines, a room and a network schedule: convergence); see
# Sources/PeopleFuzzing/FuzzHarness*.swift. Each run starts from Tests/Fuzz/corpus/MODE and
# Tests/Fuzz/regressions/MODE and writes what it finds to .build/fuzz/corpus/MODE (not committed; `merge`
# takes it in). Crashes go to .build/fuzz/artifacts/MODE-crash-*, and the script says how to replay one.
# The build has its own scratch path (.build/fuzz), so it never disturbs the normal .build. More libFuzzer
# flags for the runs go in PK_FUZZ_FLAGS (e.g. PK_FUZZ_FLAGS=-seed=1).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH
# The Swift runtime's backtracer installs its crash handlers first, and libFuzzer does not replace a handler
# that is already there: with it on, a crash kills the process before libFuzzer saves the input.
export SWIFT_BACKTRACE=enable=no

scratch=.build/fuzz
bin=$scratch/release/peoplekeeper-fuzz
artifacts=$scratch/artifacts
dict=Tests/Fuzz/protocol.dict

command=run
if [ "${1:-}" = merge ]; then command=merge; shift; fi
seconds=120
if [ "$command" = run ] && [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(decode apply sync)
for mode in "${modes[@]}"; do
  case $mode in decode|apply|sync) ;; *) echo "fuzz.sh: unknown mode '$mode' (decode, apply or sync)" >&2; exit 64 ;; esac
done

# Largest input each mode reads (a decode input is up to 16 frames; a program or a schedule needs far less).
max_len() { if [ "$1" = decode ]; then echo 4096; else echo 1024; fi; }
# The protocol's tokens help the decode mode; the others read bytes as small numbers.
dict_flag() { if [ "$1" = decode ]; then echo "-dict=$dict"; fi; }

echo "fuzz.sh: building peoplekeeper-fuzz with -sanitize=fuzzer (release, scratch path $scratch)"
mkdir -p "$artifacts"
start=$(date +%s)
if ! swift build -c release --scratch-path "$scratch" --product peoplekeeper-fuzz \
    -Xswiftc -sanitize=fuzzer -Xswiftc -DPK_FUZZ >"$scratch/build.log" 2>&1; then
  grep -vE '^\[[0-9]+/[0-9]+\] ' "$scratch/build.log" | tail -30 >&2
  echo "fuzz.sh: the build failed (log: $scratch/build.log)" >&2
  exit 1
fi
echo "fuzz.sh: built in $(( $(date +%s) - start )) s"

if [ "$command" = merge ]; then
  for mode in "${modes[@]}"; do
    committed=Tests/Fuzz/corpus/$mode
    merged=$scratch/merged-$mode
    rm -rf "$merged"; mkdir -p "$merged" "$committed" "$scratch/corpus/$mode"
    PK_FUZZ_MODE=$mode "$bin" -set_cover_merge=1 -use_counters=0 -max_len="$(max_len "$mode")" \
      -artifact_prefix="$artifacts/$mode-" "$merged" "$committed" "$scratch/corpus/$mode" >"$scratch/merge-$mode.log" 2>&1 \
      || { tail -20 "$scratch/merge-$mode.log" >&2; echo "fuzz.sh: merging $mode failed" >&2; exit 1; }
    rm -f "$committed"/*
    cp "$merged"/* "$committed"/
    echo "fuzz.sh: $committed now holds $(ls "$committed" | wc -l) inputs ($(cat "$committed"/* | wc -c) bytes)"
  done
  exit 0
fi

status=0
for mode in "${modes[@]}"; do
  work=$scratch/corpus/$mode
  log=$scratch/fuzz-$mode.log
  mkdir -p "$work" "Tests/Fuzz/corpus/$mode" "Tests/Fuzz/regressions/$mode"
  echo "fuzz.sh: $mode for $seconds s (log: $log)"
  set +e
  PK_FUZZ_MODE=$mode "$bin" -max_total_time="$seconds" -max_len="$(max_len "$mode")" $(dict_flag "$mode") \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/$mode-" ${PK_FUZZ_FLAGS:-} \
    "$work" "Tests/Fuzz/corpus/$mode" "Tests/Fuzz/regressions/$mode" >"$log" 2>&1
  result=$?
  set -e
  grep -E '^#[0-9]+[[:space:]]+DONE|stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$log" | sed "s/^/  /" || true
  if [ $result -ne 0 ]; then
    status=1
    unit=$(grep -oE 'Test unit written to [^ ]+' "$log" | tail -1 | sed 's/Test unit written to //' || true)
    echo "fuzz.sh: $mode CRASHED (exit $result); the report:"
    grep -E 'Fatal error|fuzz invariant broken|ERROR: libFuzzer|deadly signal|#[0-9]+ 0x' "$log" | head -30 | sed 's/^/  /'
    if [ -n "$unit" ]; then
      cat <<HELP
  input: $unit
  replay under libFuzzer:  SWIFT_BACKTRACE=enable=no PK_FUZZ_MODE=$mode $bin $unit
  replay without it:       swift build --product peoplekeeper-fuzz && .build/debug/peoplekeeper-fuzz $mode $unit
  minimize:                SWIFT_BACKTRACE=enable=no PK_FUZZ_MODE=$mode $bin -minimize_crash=1 -max_total_time=60 -artifact_prefix=$artifacts/$mode- $unit
  then make it a regression test: copy the (minimized) input to Tests/Fuzz/regressions/$mode/ and say what
  it found in Tests/Fuzz/regressions/README.md; PeopleFuzzingTests replays it in every swift test.
HELP
    else
      echo "  libFuzzer saved no input; the whole output is in $log"
    fi
  fi
done
exit $status
