#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Failover at scale: N ranks and K reducers on this machine (reducectl launch), rd_perf through
# the reducers from 64 KiB to 4 MiB; once the first size's row is out, reducer 1 is SIGKILLed.
# The job must go on through a replacement and succeed, every result verified. Prints the job's
# exit, its failovers (from its record: when the loss was seen, how long the ranks stalled) and
# the wrong count, and writes them to OUT/lost-reducer.txt.
#   bench/scale/lost_reducer.sh [--ranks N] [--reducers K] [--out DIR] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."

ranks=256 reducers=3 out=/tmp/libreduce-lost-reducer build=build
while (($#)); do
  case $1 in
    --ranks) ranks=$2 ;;
    --reducers) reducers=$2 ;;
    --out) out=$2 ;;
    --build) build=$2 ;;
    *) echo "usage: $0 [--ranks N] [--reducers K] [--out DIR] [--build DIR]" >&2; exit 2 ;;
  esac
  shift 2
done
[[ $build == /* ]] || build=$PWD/$build
mkdir -p "$out/jobs"
id=lost-reducer-n$ranks-$$
dir=$out/jobs/$id/reducectl
job_pid=
cleanup() {
  if [[ -n $job_pid ]]; then kill -INT "$job_pid" 2>/dev/null || true; wait "$job_pid" || true; fi
}
trap cleanup EXIT

# Waits up to $2 s for a line matching $3 in file $1.
wait_for() {
  local t0=$SECONDS
  while ((SECONDS - t0 < $2)); do
    grep -q -E "$3" "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "no line matching '$3' in $1 within $2 s" >&2
  return 1
}

t0=$SECONDS
"$build/src/reducectl" launch --workers "$ranks" --reducers "$reducers" --job-id "$id" \
  --output-dir "$out/jobs" --timeout 1800 --quiet -- \
  "$build/bench/rd_perf" --algo rs -b 64K -e 4M -f 4 -n 40 -w 2 >"$out/$id.log" 2>&1 &
job_pid=$!
wait_for "$dir/primary-0.log" 900 '^ +65536 '
victim=$(grep -o -m1 'LIBREDUCE_REDUCER_READY address=[^ ]* pid=[0-9]*' "$dir/reducer-1.log" |
         sed 's/.*pid=//') || { echo "no ready line in $dir/reducer-1.log" >&2; exit 1; }
kill -KILL "$victim"
rc=0
wait "$job_pid" || rc=$?
job_pid=
wrong=$(awk -F: '/^# Out of bounds values/ {w += $2; seen = 1} END {print seen ? w + 0 : "?"}' \
        "$dir/primary-0.log")
# The record says -1 for what never happened (no replacement ready, no stall measured).
failovers=$(/usr/bin/python3 -c '
import json, sys
def ms(v):
    return "never" if v < 0 else "%s ms" % v
def ready(f):
    if f["replacementReadyAtSeconds"] < 0:
        return "no replacement ready"
    text = "replacement ready %.2f s after the loss" % (
        f["replacementReadyAtSeconds"] - f["lostAtSeconds"])
    if f.get("readmittedAtSeconds", -1) >= 0:
        text += ", serving from operation %d, %.2f s after the loss" % (
            f["readmittedFromOperation"], f["readmittedAtSeconds"] - f["lostAtSeconds"])
    return text
rec = json.load(open(sys.argv[1]))
print("; ".join("%s (%s): silent %s, stalled %s, %s"
                % (f["reducer"], f["cause"], ms(f["silentMs"]), ms(f["stalledMs"]), ready(f))
                for f in rec.get("failovers", [])) or "none")' "$dir/job.json") ||
  failovers="unknown (no readable $dir/job.json)"
echo "n=$ranks reducers=$reducers: exit $rc in $((SECONDS - t0)) s, wrong $wrong, failovers: $failovers, logs $dir" |
  tee -a "$out/lost-reducer.txt"
[[ $rc == 0 && $wrong == 0 ]]
