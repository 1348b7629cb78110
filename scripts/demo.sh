#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job on this machine: sets up, builds, and runs the quickstart job with reducectl
# (examples/jobs/quickstart.yaml): 2 reducers (reduce-server), the primary and 3 workers
# (build/examples/allreduce_demo) all-reduce float32 buffers from 1 KiB to 16 MiB through the
# reducers. Every element of every result is checked; the primary prints a table of size, time
# and algorithm bandwidth and ends with "PASSED: 0 wrong", and reducectl ends with the job's
# summary. Exit status 0 only when the job succeeded.
#
#   scripts/demo.sh [REDUCECTL RUN OPTIONS...]   e.g. --quiet
set -euo pipefail
cd "$(dirname "$0")/.."

# The build's own output is only worth seeing when it fails (ninja prints compiler errors on
# standard output, so that is kept too).
build() {
  local log
  log=$(mktemp)
  if ! { cmake -S . -B build -G Ninja &&
          cmake --build build --target allreduce_demo reduce-server reducectl; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "demo: the build failed (output above)" >&2
    exit 1
  fi
  rm -f "$log"
}

main() {
  scripts/setup.sh --debian >/dev/null
  build
  echo "== build/src/reducectl run examples/jobs/quickstart.yaml $*"
  echo
  build/src/reducectl run examples/jobs/quickstart.yaml "$@"
}

main "$@"
