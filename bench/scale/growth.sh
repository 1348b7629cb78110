#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What a job costs as it grows, on this machine (reducectl launch, the reducers local):
#
#   --mode ranks  for each n of --ranks, one job of n ranks through --reducers reducers, one
#                 communicator (rd_perf --algo rs): each rank's join time, peak memory, open
#                 files, sockets and threads (rd_perf --footprint), and each reducer's
#   --mode comms  for each k of --comms, one job of 4 ranks holding k+2 communicators at once on
#                 the same reducers (rd_perf --algo rs,rs,... : k measured, each verified, plus
#                 the one that hands out ids and the one that lines ranks up): the reducers'
#                 memory, files and CPU time against the communicators they hold
#
# Every job's result is verified (its table's wrong count must be 0). Ranks report their own
# cost (rd_perf --footprint), reducers theirs at exit (peak memory, CPU time, operations served);
# the reducers' open files, sockets and threads are sampled from /proc every 0.1 s while the job
# runs, the largest kept. Prints one row per job and writes them to OUT/growth-MODE.txt.
#   bench/scale/growth.sh [--mode ranks|comms] [--ranks "8 16 ..."] [--comms "2 8 ..."]
#                         [--reducers M] [--size BYTES] [--out DIR] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."

mode=ranks ranks_list="8 16 32 64 128" comms_list="2 8 16 32 64" reducers=2 size=64K
out=/tmp/libreduce-growth build=build
while (($#)); do
  case $1 in
    --mode) mode=$2 ;;
    --ranks) ranks_list=$2 ;;
    --comms) comms_list=$2 ;;
    --reducers) reducers=$2 ;;
    --size) size=$2 ;;
    --out) out=$2 ;;
    --build) build=$2 ;;
    *) echo "usage: $0 [--mode ranks|comms] [--ranks LIST] [--comms LIST] [--reducers M]" \
            "[--size BYTES] [--out DIR] [--build DIR]" >&2
       exit 2 ;;
  esac
  shift 2
done
case $mode in ranks | comms) ;; *) echo "--mode: ranks or comms" >&2; exit 2 ;; esac
[[ $build == /* ]] || build=$PWD/$build
reducectl=$build/src/reducectl
rd_perf=$build/bench/rd_perf
mkdir -p "$out"

# One /proc sample of process $1: "files sockets threads".
sample() {
  local p=$1 threads files=0 sockets=0 f link
  threads=$(awk '/^Threads:/ {print $2}' "/proc/$p/status" 2>/dev/null) || return 1
  for f in /proc/"$p"/fd/*; do
    link=$(readlink "$f" 2>/dev/null) || continue
    files=$((files + 1))
    [[ $link == socket:* ]] && sockets=$((sockets + 1))
  done
  echo "$files $sockets ${threads:-0}"
}

# Runs the job "$@" (reducectl launch arguments), sampling its reducers until it ends. Sets
# job_rc, job_dir, and reducer_cost: a line per reducer, "peak_rss_mib files sockets threads
# cpu_s operations": its largest sampled files, sockets and threads, and what it said at exit
# (LIBREDUCE_REDUCER_MEMORY, _CPU, _SERVED).
run_job() {
  local log=$1 id
  shift
  id=growth-$(basename "$log" .log)-$$
  job_dir=$out/jobs/$id/reducectl
  job_rc=0
  "$reducectl" launch --job-id "$id" --output-dir "$out/jobs" "$@" >"$log" 2>&1 &
  local job=$! pids=() p s f k t
  declare -A most=()
  while kill -0 "$job" 2>/dev/null; do
    if ((${#pids[@]} < reducers)); then
      # The reducers' own logs: reducectl's output to $log is buffered until it ends.
      mapfile -t pids < <(cat "$job_dir"/reducer-*.log 2>/dev/null |
                          grep -o 'LIBREDUCE_REDUCER_READY address=[^ ]* pid=[0-9]*' |
                          sed 's/.*pid=//' | sort -u)
    fi
    for p in "${pids[@]}"; do
      s=$(sample "$p") || continue
      read -r f k t <<<"$s"
      read -r mf mk mt <<<"${most[$p]:-0 0 0}"
      most[$p]="$((f > mf ? f : mf)) $((k > mk ? k : mk)) $((t > mt ? t : mt))"
    done
    sleep 0.1
  done
  wait "$job" || job_rc=$?
  reducer_cost=""
  local r pid
  for r in "$job_dir"/reducer-*.log; do
    [[ -f $r ]] || continue
    pid=$(grep -o -m1 'LIBREDUCE_REDUCER_READY address=[^ ]* pid=[0-9]*' "$r" | sed 's/.*pid=//' ||
          true)
    reducer_cost+=$(awk -v m="${most[${pid:-none}]:-? ? ?}" '
      /^LIBREDUCE_REDUCER_MEMORY/ {split($2, a, "="); rss = a[2] / 1024}
      /^LIBREDUCE_REDUCER_CPU/ {split($2, u, "="); split($3, y, "="); cpu = u[2] + y[2]}
      /^LIBREDUCE_REDUCER_SERVED/ {split($4, o, "="); ops += o[2]}
      END {printf "%.1f %s %.3f %d\n", rss, m, cpu, ops}' "$r")$'\n'
  done
}

# The job's wrong results, from its table's "Out of bounds values" line, or "?" without one.
wrong_in() {
  [[ -f $1 ]] || { echo "?"; return; }
  awk -F: '/^# Out of bounds values/ {w += $2; seen = 1} END {print seen ? w + 0 : "?"}' "$1"
}

# Median and max of column $2 (key=value field name) of the footprint file $1.
column_of() {
  tr ' ' '\n' <"$1" | awk -F= -v k="$2" '$1 == k {print $2}' | sort -g |
    awk '{v[NR] = $1} END {if (!NR) {print "? ?"; exit} printf "%s %s\n", v[int((NR + 1) / 2)], v[NR]}'
}

# The reducers' figures summed ("total") or as the largest ("max") over the reducers.
reducers_sum() { awk -v c="$1" 'NF {s += $c} END {printf "%.3f\n", s}' <<<"$reducer_cost"; }
reducers_max() {  # reducers never sampled ("?") are left out
  awk -v c="$1" 'NF && $c != "?" && (!n++ || $c + 0 > m) {m = $c + 0} END {print n ? m : "?"}' \
    <<<"$reducer_cost"
}

if [[ $mode == ranks ]]; then
  header="n reducers exit wrong join_ms(median,max) rank_rss_mib(median) rank_files rank_sockets rank_threads reducer_rss_mib(max) reducer_files(max) reducer_sockets(max) reducer_threads(max)"
else
  header="k comms_per_process exit wrong reducer_rss_mib(max) reducer_files(max) reducer_sockets(max) reducer_threads(max) reducer_cpu_s(total) reducer_operations(total) reducer_cpu_us_per_operation rank_rss_mib(median) join_ms_all(median)"
fi
echo "# $header" | tee "$out/growth-$mode.txt"
list=$ranks_list
[[ $mode == comms ]] && list=$comms_list
for x in $list; do
  footprint=$out/$mode-$x.footprint
  rm -f "$footprint"
  if [[ $mode == ranks ]]; then
    run_job "$out/$mode-$x.log" --workers "$x" --reducers "$reducers" --timeout 1800 -- \
      "$rd_perf" --algo rs -b "$size" -e "$size" -n 500 -w 20 --footprint "$footprint"
  else
    algos=$(printf 'rs,%.0s' $(seq "$x"))
    run_job "$out/$mode-$x.log" --workers 4 --reducers "$reducers" --timeout 1800 -- \
      "$rd_perf" --algo "${algos%,}" -b "$size" -e "$size" --rounds 5 -n 50 --footprint "$footprint"
  fi
  wrong=$(wrong_in "$job_dir/primary-0.log")
  read -r join_med join_max <<<"$(column_of "$footprint" join_ms)"
  read -r rss_med _ <<<"$(column_of "$footprint" peak_rss_kib)"
  rss_mib=$(awk -v k="$rss_med" 'BEGIN { if (k == "?") print "?"; else printf "%.1f", k / 1024 }')
  if [[ $mode == ranks ]]; then
    read -r files _ <<<"$(column_of "$footprint" open_files)"
    read -r sockets _ <<<"$(column_of "$footprint" sockets)"
    read -r threads _ <<<"$(column_of "$footprint" threads)"
    row="$x $reducers $job_rc $wrong $join_med,$join_max $rss_mib $files $sockets $threads $(reducers_max 1) $(reducers_max 2) $(reducers_max 3) $(reducers_max 4)"
  else
    read -r comms _ <<<"$(column_of "$footprint" communicators)"
    cpu=$(reducers_sum 5)
    ops=$(reducers_sum 6)
    per_op=$(awk -v c="$cpu" -v o="$ops" 'BEGIN { if (o > 0) printf "%.1f", 1e6 * c / o; else print "?" }')
    row="$x $comms $job_rc $wrong $(reducers_max 1) $(reducers_max 2) $(reducers_max 3) $(reducers_max 4) $cpu ${ops%.*} $per_op $rss_mib $join_med"
  fi
  echo "$row" | tee -a "$out/growth-$mode.txt"
done
