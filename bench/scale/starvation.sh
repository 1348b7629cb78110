#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Liveness on a starved host: N ranks and 2 reducers on this machine (reducectl launch), beside a
# CPU hog, heartbeats at their default period (LIBREDUCE_HEARTBEAT_MS 5000).
#
#   --stop none     each run is a whole rd_perf job (rs and ring in the same processes); a run
#                   passes when the job succeeds, 0 wrong, and nobody was called frozen
#   --stop rank     mid-job, one rank is SIGSTOPped: how long until the reducers name it
#   --stop reducer  mid-job, reducer 1 is SIGSTOPped: how long until the ranks name it
#
# Prints a line per run and writes them to OUT/runs.txt, with every job's logs under OUT/.
#   bench/scale/starvation.sh [--ranks N] [--runs R] [--hogs H] [--stop none|rank|reducer]
#                             [--out DIR] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."

ranks=128 runs=5 hogs=2 stop=none out=/tmp/libreduce-starvation build=build
while (($#)); do
  case $1 in
    --ranks) ranks=$2 ;;
    --runs) runs=$2 ;;
    --hogs) hogs=$2 ;;
    --stop) stop=$2 ;;
    --out) out=$2 ;;
    --build) build=$2 ;;
    *) echo "usage: $0 [--ranks N] [--runs R] [--hogs H] [--stop none|rank|reducer] [--out DIR]" >&2
       exit 2 ;;
  esac
  shift 2
done
case $stop in none | rank | reducer) ;; *) echo "--stop: none, rank or reducer" >&2; exit 2 ;; esac
[[ $build == /* ]] || build=$PWD/$build
reducectl=$build/src/reducectl
rd_perf=$build/bench/rd_perf
mkdir -p "$out"

hog_pids=()
job_pid=
cleanup() {
  if ((${#hog_pids[@]})); then kill "${hog_pids[@]}" 2>/dev/null || true; fi
  hog_pids=()
  if [[ -n $job_pid ]]; then kill -INT "$job_pid" 2>/dev/null || true; wait "$job_pid" 2>/dev/null || true; fi
  job_pid=
}
trap cleanup EXIT

start_hogs() {
  for ((h = 0; h < hogs; ++h)); do
    (while :; do :; done) &
    hog_pids+=($!)
  done
}

# The pid of the process of job $1 whose environment has RANK=$2.
rank_pid() {
  local p
  for p in $(pgrep -f "$rd_perf" || true); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "CLOUD_ML_JOB_ID=$1" &&
       tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "RANK=$2"; then
      echo "$p"
      return
    fi
  done
}

# Waits up to $2 s for a line matching $3 in the files $1 (a glob); prints the first match.
wait_for_line() {
  local glob=$1 limit=$2 pattern=$3 t0=$SECONDS line
  while ((SECONDS - t0 < limit)); do
    # shellcheck disable=SC2086
    line=$(grep -h -m1 -E "$pattern" $glob 2>/dev/null | head -1 || true)
    [[ -n $line ]] && { echo "$line"; return 0; }
    sleep 0.2
  done
  return 1
}

whole_job() {  # run $1: a job from start to end
  local log=$out/run$1.log
  local t0=$SECONDS rc=0
  timeout 2400 "$reducectl" launch --workers "$ranks" --reducers 2 --timeout 1800 -- \
    "$rd_perf" --algo rs,ring -b 4K -e 1M -f 16 >"$log" 2>&1 || rc=$?
  local dir verdicts wrong
  dir=$(grep -o -m1 'logs in [^ ]*' "$log" | cut -d' ' -f3)
  verdicts=$(cat "$dir"/*.log | grep -c "sent nothing for" || true)
  wrong=$(awk '$1 ~ /^[0-9]+$/ && NF >= 10 {w += $7 + $10} END {print w + 0}' "$dir/primary-0.log")
  echo "run $1: n=$ranks hogs=$hogs exit $rc in $((SECONDS - t0)) s, frozen verdicts $verdicts, wrong $wrong, logs $dir"
}

stopped_peer() {  # run $1: SIGSTOP a rank or reducer 1 once the job is timing
  local log=$out/run$1.log
  "$reducectl" launch --workers "$ranks" --reducers 2 -- \
    "$rd_perf" --algo rs -b 64K -e 64K -n 1000000 >"$log" 2>&1 &
  job_pid=$!
  local dir job victim pid pattern files
  wait_for_line "$log" 120 'logs in ' >/dev/null
  dir=$(grep -o -m1 'logs in [^ ]*' "$log" | cut -d' ' -f3)
  job=$(basename "$(dirname "$dir")")
  wait_for_line "$dir/primary-0.log" 600 '^# +size|#wrong' >/dev/null
  if [[ $stop == rank ]]; then
    victim=$((ranks / 2 + 1))
    pid=$(rank_pid "$job" "$victim")
    pattern="rank $victim sent nothing for"
    files="$dir/reducer-*.log"
  else
    victim=reducer-1
    pid=$(grep -o -m1 'reducer-1\] LIBREDUCE_REDUCER_READY address=[^ ]* pid=[0-9]*' "$log" |
          sed 's/.*pid=//')
    local address
    address=$(grep -o -m1 'reducer-1\] LIBREDUCE_REDUCER_READY address=[^ ]*' "$log" |
              sed 's/.*address=//')
    pattern="$address.*sent nothing for"
    files="$dir/worker-*.log $dir/primary-0.log"
  fi
  [[ -n $pid ]] || { echo "run $1: no pid for $victim" >&2; return 1; }
  local t0 line
  t0=$(date +%s.%N)
  kill -STOP "$pid"
  line=$(wait_for_line "$files" 60 "$pattern") || line="not named within 60 s"
  local took silent
  took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  silent=$(grep -o 'sent nothing for [0-9]* ms' <<<"$line" | grep -o '[0-9]*' || echo "?")
  kill -KILL "$pid" 2>/dev/null || true
  kill -INT "$job_pid" 2>/dev/null || true
  wait "$job_pid" 2>/dev/null || true
  job_pid=
  printf 'run %s: n=%s hogs=%s SIGSTOP %s: named after %.1f s (polled every 0.2 s), silent %s ms at the verdict, logs %s\n' \
    "$1" "$ranks" "$hogs" "$victim" "$took" "$silent" "$dir"
}

for ((run = 1; run <= runs; ++run)); do
  start_hogs
  if [[ $stop == none ]]; then whole_job "$run"; else stopped_peer "$run"; fi | tee -a "$out/runs.txt"
  cleanup
done
