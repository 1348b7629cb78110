#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The GPU check, for a machine with an NVIDIA GPU (CI has none): builds only the CUDA kernels,
# their tests and their benchmark, runs them, and keeps every log. Device time is scarce, so
# the whole run fits a budget (GPU_CHECK_BUDGET_S, default 540 s) and each step gets what is
# left; nothing is installed. What is missing is said up front; without CMake >= 3.25 or
# without Google Benchmark the same programs are built directly with nvcc and g++.
#
#   scripts/gpu_check.sh        logs go to $OUT when set, else build-gpu/logs
#
# Exit status 0 only when a GPU was used, every CUDA kernel test passed and the benchmark
# verified its results.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

budget=${GPU_CHECK_BUDGET_S:-540}
build="build-gpu"
logs=${OUT:-$build/logs}
mkdir -p "$logs"
jobs=$(nproc 2>/dev/null || echo 4)
export PATH="$PATH:/usr/local/cuda/bin"

# Seconds for a step: at most $1, never past the budget (10 s kept for the summary).
allow() {
  local left=$((budget - SECONDS - 10))
  ((left < $1)) && echo $((left > 5 ? left : 5)) || echo "$1"
}
have() { command -v "$1" >/dev/null 2>&1; }
header_lib() {  # header_lib HEADER LIBNAME: both the header and the library are installed
  [[ -f /usr/include/$1 || -f /usr/local/include/$1 ]] &&
    [[ -n $(find /usr/lib /usr/lib64 /usr/local/lib -maxdepth 2 -name "lib$2.*" -print -quit 2>/dev/null) ]]
}

check_tools() {
  echo "== machine"
  if have nvidia-smi; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,temperature.gpu,power.draw,clocks.max.sm,clocks.max.mem \
      --format=csv 2>&1 | tee "$logs/nvidia-smi.csv"
  else
    echo "nvidia-smi: not found"
  fi
  missing=()
  have nvcc && nvcc --version | tail -2 || missing+=("nvcc (/usr/local/cuda/bin)")
  have g++ && g++ --version | head -1 || missing+=("g++")
  use_cmake=0
  if [[ -n ${GPU_CHECK_DIRECT:-} ]]; then
    echo "GPU_CHECK_DIRECT set: building without CMake"
  elif have cmake; then
    local v
    v=$(cmake --version | head -1 | awk '{print $3}')
    echo "cmake $v"
    if printf '3.25\n%s\n' "$v" | sort -V -C; then use_cmake=1; else missing+=("cmake >= 3.25 (found $v)"); fi
  else
    missing+=("cmake")
  fi
  generator=Ninja
  if ! have ninja; then
    missing+=("ninja (using Unix Makefiles)")
    generator="Unix Makefiles"
    have make || { missing+=("make"); use_cmake=0; }
  fi
  have_gtest=0
  header_lib gtest/gtest.h gtest && have_gtest=1 || missing+=("GoogleTest (libgtest-dev): the tests cannot run")
  have_bench=0
  header_lib benchmark/benchmark.h benchmark && have_bench=1 ||
    missing+=("Google Benchmark (libbenchmark-dev): the CUDA benchmark is built directly")
  ((${#missing[@]})) && printf 'missing: %s\n' "${missing[@]}"
  have nvcc && have g++
}

# CMake: only the targets the check needs; optional parts that it does not need are off.
build_cmake() {
  local tests=OFF bench=OFF targets=(reduce-info rd_common rd_kernels_cpu rd_kernels_cuda)
  if ((have_gtest)); then tests=ON; targets+=(rd_cuda_kernel_tests); fi
  if ((have_bench)); then bench=ON; targets+=(rd_cuda_kernel_bench); fi
  echo "== configure ($build, $generator)"
  timeout "$(allow 120)" cmake -S . -B "$build" -G "$generator" -DLIBREDUCE_WITH_CUDA=ON \
    -DLIBREDUCE_BUILD_BENCH=$bench -DLIBREDUCE_BUILD_TESTS=$tests -DLIBREDUCE_WITH_UCX=OFF \
    -DLIBREDUCE_WITH_HWLOC=OFF -DLIBREDUCE_WITH_TORCH=OFF -DLIBREDUCE_WITH_BASELINES=OFF \
    >"$logs/configure.log" 2>&1 || { tail -30 "$logs/configure.log"; return 1; }
  echo "== build: ${targets[*]}"
  timeout "$(allow 300)" cmake --build "$build" -j "$jobs" --target "${targets[@]}" \
    >"$logs/build.log" 2>&1 || { tail -40 "$logs/build.log"; return 1; }
  tests_bin=$build/tests/rd_cuda_kernel_tests
  bench_bin=$build/bench/rd_cuda_kernel_bench
  info_bin=$build/src/tools/reduce-info
  ((have_bench)) || build_bench_direct
}

# Without CMake's help: the configuration header, the library objects, then the programs.
cflags=(-std=c++20 -O2 -pthread -I kernels -I src -I include -I "$build/direct/include" -I "$build/include" -I tests/kernels
        -isystem /usr/local/cuda/include)
cudalibs=(-L/usr/local/cuda/lib64 -L/usr/local/cuda/lib64/stubs -lcudart_static -ldl -lrt -pthread)
build_objects_direct() {
  local o=$build/direct
  mkdir -p "$o" "$o/include/libreduce"
  sed -e 's/@PROJECT_VERSION_MAJOR@/0/g; s/@PROJECT_VERSION_MINOR@/1/g; s/@PROJECT_VERSION_PATCH@/0/g' \
    -e 's/@PROJECT_VERSION@/0.1.0/g; s/@LIBREDUCE_WITH_CUDA_REASON@/found/; s/@[A-Z_]*@/off/g' \
    -e 's/#cmakedefine01 LIBREDUCE_WITH_CUDA_ENABLED/#define LIBREDUCE_WITH_CUDA_ENABLED 1/' \
    -e 's/#cmakedefine01 \([A-Z_]*\)/#define \1 0/' cmake/config.h.in >"$o/include/libreduce/config.h"
  echo "#define LIBREDUCE_CUDA_ARCHITECTURES \"90\"" >>"$o/include/libreduce/config.h"
  local pids=() f
  for f in src/common/*.cc kernels/reduce_kernel.cc kernels/cpu/cpu_reduce.cc kernels/cpu/isa_scalar.cc; do
    g++ "${cflags[@]}" -fPIC -c "$f" -o "$o/$(basename "$f").o" & pids+=($!)
  done
  g++ "${cflags[@]}" -O3 -ffp-contract=off -mavx2 -mf16c -c kernels/cpu/isa_avx2.cc -o "$o/isa_avx2.o" & pids+=($!)
  g++ "${cflags[@]}" -O3 -ffp-contract=off -mavx512f -mavx512bw -mavx512vl -mavx512dq -mf16c \
    -mprefer-vector-width=512 -c kernels/cpu/isa_avx512.cc -o "$o/isa_avx512.o" & pids+=($!)
  nvcc -std=c++17 -O3 -arch=sm_90 -fmad=false -I kernels -I src -I include -I "$o/include" \
    -c kernels/cuda/cuda_reduce.cu -o "$o/cuda_reduce.o" & pids+=($!)
  local rc=0
  for f in "${pids[@]}"; do wait "$f" || rc=1; done
  objects=("$o"/*.o)
  return $rc
}
build_bench_direct() {
  echo "== build rd_cuda_kernel_bench directly"
  [[ -f $build/direct/cuda_reduce.o ]] || build_objects_direct || return 1
  bench_bin=$build/direct/rd_cuda_kernel_bench
  g++ "${cflags[@]}" bench/kernels/cuda_reduce_bench.cc "${objects[@]}" "${cudalibs[@]}" -o "$bench_bin"
}
build_direct() {
  echo "== build directly with nvcc and g++ (no usable CMake)"
  build_objects_direct >"$logs/build.log" 2>&1 || { tail -40 "$logs/build.log"; return 1; }
  if ((have_gtest)); then
    tests_bin=$build/direct/rd_cuda_kernel_tests
    g++ "${cflags[@]}" tests/kernels/cuda_reduce_test.cc "${objects[@]}" -lgtest_main -lgtest \
      "${cudalibs[@]}" -o "$tests_bin" >>"$logs/build.log" 2>&1 || { tail -40 "$logs/build.log"; return 1; }
  fi
  build_bench_direct >>"$logs/build.log" 2>&1 || { tail -40 "$logs/build.log"; return 1; }
  info_bin=""
}

main() {
  local status=0 tests_result="not run" bench_result="not run" sanitizer_result="not run"
  tests_bin="" bench_bin="" info_bin=""
  check_tools || { echo "gpu_check: FAILED (no CUDA compiler or no g++)"; return 1; }
  if ((use_cmake)); then build_cmake; else build_direct; fi || {
    echo "gpu_check: FAILED (build; see $logs/build.log)"
    return 1
  }
  [[ -n $info_bin && -x $info_bin ]] && "$info_bin" | sed -n '/^GPU/,/^$/p'

  if [[ -n $tests_bin && -x $tests_bin ]]; then
    echo "== CUDA kernel tests"
    GTEST_COLOR=no timeout "$(allow 300)" "$tests_bin" --gtest_output="xml:$logs/cuda_kernel_tests.xml" \
      >"$logs/cuda_kernel_tests.log" 2>&1
    local rc=$?
    grep -A4 -E ": Failure$" "$logs/cuda_kernel_tests.log" | head -60
    grep -E "^\[==========\]|^\[  PASSED  \]|^\[  SKIPPED \] [0-9]+ test|^\[  FAILED  \]" \
      "$logs/cuda_kernel_tests.log" | tail -25
    if ((rc != 0)); then
      tests_result="FAILED (exit $rc$( ((rc == 124)) && echo ", timed out"))"
      status=1
    elif grep -q "no CUDA device" "$logs/cuda_kernel_tests.log"; then
      tests_result="SKIPPED: no usable CUDA device"
      status=1
    else
      tests_result="PASSED"
    fi
  fi

  if [[ -n $bench_bin && -x $bench_bin ]]; then
    echo "== CUDA kernel benchmark"
    timeout "$(allow 240)" "$bench_bin" --mib-per-source 256 --iters 20 2>&1 | tee "$logs/cuda_kernel_bench.txt"
    local rc=${PIPESTATUS[0]}
    if ((rc != 0)); then
      bench_result="FAILED (exit $rc)"
      status=1
    elif grep -q "no CUDA device" "$logs/cuda_kernel_bench.txt"; then
      bench_result="not measured: no usable CUDA device"
      status=1
    else
      bench_result="VERIFIED"
    fi
  fi

  # Out-of-bounds reads leave no trace in the guard bytes: a slice of the tests under
  # compute-sanitizer, when it is installed and time is left.
  if [[ $tests_result == PASSED ]] && have compute-sanitizer && ((budget - SECONDS > 120)); then
    echo "== compute-sanitizer memcheck (a slice of the tests)"
    timeout "$(allow 150)" compute-sanitizer --tool memcheck --error-exitcode 3 "$tests_bin" \
      --gtest_filter='*Misaligned*/float16:*DestinationMayBeASource/int8:*MaxSources*/float32' \
      >"$logs/memcheck.log" 2>&1
    local rc=$?
    tail -5 "$logs/memcheck.log"
    case $rc in
      0) sanitizer_result="clean" ;;
      124) sanitizer_result="timed out (not a failure)" ;;
      *) sanitizer_result="FAILED (exit $rc)"; status=1 ;;
    esac
  fi

  echo
  echo "tests:     $tests_result"
  echo "benchmark: $bench_result"
  echo "memcheck:  $sanitizer_result"
  echo "logs:      $logs ($SECONDS s of a $budget s budget)"
  echo "gpu_check: $([[ $status -eq 0 ]] && echo PASSED || echo FAILED)"
  return $status
}

main 2>&1 | tee "$logs/gpu_check.log"
exit "${PIPESTATUS[0]}"
