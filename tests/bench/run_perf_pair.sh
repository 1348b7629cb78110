#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs one of the perf programs with 2 ranks on this machine, small sizes, for the test suite:
#
#   tests/bench/run_perf_pair.sh rd|gloo|mpi BUILD_DIR [PERF FLAGS...]
#
# rd goes through reducectl launch (1 reducer), gloo through a fresh file-store directory,
# mpi through mpirun. Rank 0's table is printed; the exit status is 0 only when every rank
# exited 0 and the table reports no wrong value. Every wait is bounded.
set -euo pipefail

system=${1:?usage: run_perf_pair.sh rd|gloo|mpi BUILD_DIR [FLAGS...]}
build=${2:?usage: run_perf_pair.sh rd|gloo|mpi BUILD_DIR [FLAGS...]}
shift 2
flags=(-b 4K -e 1M -f 16 -n 3 -w 1 "$@")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case $system in
  rd)
    "$build/src/reducectl" launch --workers 2 --reducers 1 --timeout 120 --output-dir "$work" \
      -- "$build/bench/rd_perf" "${flags[@]}" | grep '^\[primary-0\]' | tee "$work/rank0.txt"
    ;;
  gloo)
    pids=()
    for rank in 0 1; do
      RANK=$rank WORLD_SIZE=2 GLOO_STORE_DIR="$work" timeout 120 \
        "$build/bench/gloo_perf" "${flags[@]}" > "$work/rank$rank.txt" 2>&1 &
      pids+=($!)
    done
    status=0
    for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
    cat "$work/rank0.txt"
    [[ $status -eq 0 ]] || { cat "$work/rank1.txt"; exit "$status"; }
    ;;
  mpi)
    timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,tcp \
      "$build/bench/mpi_perf" "${flags[@]}" | tee "$work/rank0.txt"
    ;;
  *) echo "run_perf_pair.sh: unknown system '$system' (rd, gloo or mpi)" >&2; exit 2 ;;
esac
grep -q "Out of bounds values : 0 OK" "$work/rank0.txt" || {
  echo "run_perf_pair.sh: $system reported wrong values or no table" >&2
  exit 1
}
