#!/usr/bin/env bash
# The main job on this machine: sets up, builds, and runs a local libreduce job twice with
# scripts/local_job.sh: 4 workers (build/examples/allreduce_demo) all-reduce through 2 reducers,
# then among themselves with ring all-reduce for comparison. Every element of every result is
# checked; rank 0 prints a table of size, time and algorithm bandwidth and ends with
# "PASSED: 0 wrong". Exit status 0 only when both jobs passed.
#
#   scripts/demo.sh [ARGS...]   ARGS go to allreduce_demo, e.g. --max-bytes 16M --iters 10
set -euo pipefail
cd "$(dirname "$0")/.."

readonly workers=4 reducers=2

# The build's own output is only worth seeing when it fails (ninja prints compiler errors on
# standard output, so that is kept too).
build() {
  local log
  log=$(mktemp)
  if ! { cmake -S . -B build -G Ninja &&
          cmake --build build --target allreduce_demo reduce-server; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "demo: the build failed (output above)" >&2
    exit 1
  fi
  rm -f "$log"
}

# run_job TITLE LOCAL_JOB_ARGS...: one job, introduced by a note on what runs; its status is
# returned, not fatal, so that the second job runs even when the first fails.
run_job() {
  local title=$1
  shift
  echo "== $title"
  echo "   scripts/local_job.sh $* -- build/examples/allreduce_demo${demo_args:+ $demo_args}"
  echo
  local status=0
  scripts/local_job.sh "$@" -- build/examples/allreduce_demo "${demo_argv[@]}" || status=$?
  echo
  return "$status"
}

main() {
  demo_argv=("$@")
  demo_args="$*"
  scripts/setup.sh >/dev/null
  build

  local failed=()
  run_job "reduction server: $workers workers push chunks to $reducers reducers, which sum them" \
    --workers "$workers" --reducers "$reducers" || failed+=(rs)
  run_job "ring all-reduce between the same $workers workers, for comparison" \
    --workers "$workers" --reducers "$reducers" --algo ring || failed+=(ring)

  if ((${#failed[@]})); then
    echo "demo: FAILED (${failed[*]}); see the messages above" >&2
    return 1
  fi
  echo "demo: both jobs passed (rs and ring)"
}

main "$@"
