#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Measures the CPU kernels against memcpy and writes the figures, with the command, the date and
# the machine, to bench/results/kernels-cpu-<date>.{json,md}.
#   bench/kernels/run_cpu_kernel_bench.sh [BUILD_DIR]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
cmake --build "$build" --target rd_cpu_kernel_bench >/dev/null
day=$(date -u +%Y-%m-%d)
json=bench/results/kernels-cpu-$day.json
md=bench/results/kernels-cpu-$day.md
cmd=("$build/bench/rd_cpu_kernel_bench" --benchmark_repetitions=5
     --benchmark_enable_random_interleaving=true --benchmark_out="$json" --benchmark_out_format=json)
"${cmd[@]}" >/dev/null
{
  echo "# CPU reduction kernels vs memcpy, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "Command: \`bench/kernels/run_cpu_kernel_bench.sh\` which runs \`${cmd[*]}\`"
  echo "and \`bench/kernels/kernel_report.py $json\`."
  echo
  echo "Machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs," \
       "$(free -g | awk '/Mem:/ {print $2}') GiB; ISA $("$build/src/tools/reduce-info" | sed -n 's/^ *selected *//p')."
  echo "64 MiB per source; bytes moved = (N + 1) x 64 MiB per reduction, 2 x 64 MiB per memcpy;"
  echo "medians of 5 repetitions interleaved at random with the memcpy runs."
  echo
  /usr/bin/python3 bench/kernels/kernel_report.py "$json"
} > "$md"
cat "$md"
