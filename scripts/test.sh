#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The project's test command: installs what is missing, checks formatting and lint, builds,
# runs the C++ tests (CTest) and the Python tests (pytest), then builds with ASan + UBSan and
# runs the C++ tests again, and builds the in-process tests with TSan and runs them.
#
#   scripts/test.sh            everything (what CI runs)
#   scripts/test.sh --fast     skip the sanitizer build and clang-tidy
set -euo pipefail
cd "$(dirname "$0")/.."

fast=0
[[ "${1:-}" == "--fast" ]] && fast=1
jobs=$(nproc)

scripts/setup.sh
# shellcheck source=scripts/python_env.sh
source scripts/python_env.sh
python=$(venv_python "$LIBREDUCE_VENV")
python_torch2_11=$(venv_python "$LIBREDUCE_VENV_TORCH2_11")

echo "== format check (clang-format), license identifiers"
scripts/lint.sh format
scripts/lint.sh license

echo "== build (build/), the torch backend against $("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
cmake -S . -B build -G Ninja -DLIBREDUCE_WERROR=ON -DLIBREDUCE_WITH_TORCH=ON \
      -DLIBREDUCE_PYTHON="$python" >/dev/null
cmake --build build -j "$jobs"

if ((!fast)); then
  echo "== lint (clang-tidy)"
  scripts/lint.sh tidy build
fi

summaries=()
failures=()  # the names of what failed, printed last (where a log's tail shows them)
# capture LOG COMMAND...: runs COMMAND with its output on the terminal and in LOG; its status.
capture() {
  local log=$1
  shift
  set +e
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  set -e
  return "$rc"
}

# Skipped CTest tests by cause. Only what no setup can provide may be skipped in CI (CI=true):
# a CUDA device, an instruction set the CPU lacks, a part this build is configured without (the
# orchestrator's tests judge their own skips: in CI they fail on any other cause); any other
# skip fails the run there.
skip_causes() {  # skip_causes LABEL LOG
  local label=$1 log=$2 name cause bad=0
  declare -A count=()
  while read -r name; do
    case "$name" in
      *Cuda*) cause="no CUDA device" ;;
      *avx512*|*avx2*|*neon*|*sve*) cause="the CPU lacks the instruction set" ;;
      orchestrator.*) cause="not in this build (the test's own check)" ;;
      *) cause="other (setup provides it): $name"; bad=1 ;;
    esac
    count[$cause]=$((${count[$cause]:-0} + 1))
  done < <(sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\).*(Skipped)$/\1/p' "$log")
  for cause in "${!count[@]}"; do echo "$label: skipped ${count[$cause]}: $cause"; done
  if ((bad)) && [[ "${CI:-}" == "true" ]]; then
    failures+=("$label: a test skipped in CI for want of something setup installs")
    return 1
  fi
  return 0
}

run_ctest() {  # run_ctest LABEL BUILD_DIR [ctest args...]
  local label=$1 dir=$2 log rc=0
  shift 2
  echo "== tests: $label"
  log=$(mktemp)
  capture "$log" ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 900 "$@" || rc=$?
  local skipped
  skipped=$(grep -c -E '^[[:space:]]*[0-9]+ - .*\(Skipped\)$' "$log" || true)
  summaries+=("$label: $(grep -E 'tests passed|tests failed' "$log" | tail -1) ($skipped skipped)")
  skip_causes "$label" "$log" || rc=1
  # CTest lists what failed after "The following tests FAILED:", one per line.
  while read -r line; do failures+=("$label: $line"); done < <(
    sed -n '/^The following tests FAILED:/,$p' "$log" | grep -E '^[[:space:]]+[0-9]+ - ' || true)
  rm -f "$log"
  return "$rc"
}

# run_gtest LABEL BINARY [args...]: one GoogleTest binary run directly, its counts in CTest's
# shape (for the totals below).
run_gtest() {
  local label=$1 binary=$2 log rc=0
  shift 2
  echo "== tests: $label"
  log=$(mktemp)
  capture "$log" "$binary" "$@" || rc=$?
  local ran passed skipped
  ran=$(grep -oE '^\[==========\] [0-9]+ tests? from .* ran' "$log" | grep -oE '[0-9]+' | head -1)
  passed=$(grep -oE '^\[  PASSED  \] [0-9]+' "$log" | grep -oE '[0-9]+$' || true)
  skipped=$(grep -oE '^\[  SKIPPED \] [0-9]+' "$log" | grep -oE '[0-9]+$' || true)
  ran=${ran:-0} passed=${passed:-0} skipped=${skipped:-0}
  summaries+=("$label: $((ran - passed - skipped)) tests failed out of $ran ($skipped skipped)")
  while read -r line; do failures+=("$label: $line"); done < <(
    grep -E '^\[  FAILED  \] [A-Za-z_0-9/.]+' "$log" | grep -v ' listed below' |
      sed -E 's/ \([0-9]+ ms\)$//' | sort -u || true)
  if [[ $ran -eq 0 ]]; then  # it stopped before the end: say in which test, and why if it said
    failures+=("$label: did not finish; last started: $(grep -E '^\[ RUN      \]' "$log" | tail -1)")
    failures+=("$label: $(grep -m1 -E 'ThreadSanitizer|AddressSanitizer|runtime error|Segmentation' "$log" || true)")
  fi
  rm -f "$log"
  [[ $ran -gt 0 ]] || return 1
  return "$rc"
}

# run_pytest LABEL BUILD_DIR PYTHON [pytest args...]: the Python suite (tests/python) against
# the package in BUILD_DIR/python, in PYTHON's environment (first on PATH, so that `python3` in
# a job spec is that environment's too); pytest's own counts.
run_pytest() {
  local label=$1 dir=$2 interpreter=$3
  shift 3
  echo "== tests: $label"
  local log rc=0
  log=$(mktemp)
  capture "$log" env LIBREDUCE_BUILD_DIR="$dir" PATH="$(dirname "$interpreter"):$PATH" \
    "$interpreter" -m pytest -p no:cacheprovider -rfEs "$@" || rc=$?
  local last count p=0 f=0 s=0
  last=$(grep -E '^=+ .*(passed|failed|error|skipped).* in [0-9.]+s' "$log" | tail -1 || true)
  for kind in passed failed error skipped; do
    count=$(grep -oE "[0-9]+ $kind" <<<"$last" | grep -oE '[0-9]+' || true)
    case $kind in
      passed) p=${count:-0} ;;
      failed | error) f=$((f + ${count:-0})) ;;
      skipped) s=${count:-0} ;;
    esac
  done
  # Same shape as CTest's line, so the totals below add both suites.
  summaries+=("$label: $p passed; $f tests failed out of $((p + f + s)) ($s skipped)")
  while read -r line; do failures+=("$label: ${line:0:300}"); done < <(
    grep -E '^(FAILED|ERROR) ' "$log" || true)
  rm -f "$log"
  [[ -n $last ]] || return 1
  return "$rc"
}

status=0
run_ctest "default build" build || status=1
run_pytest "python (pytest, torch $("$python" -c 'import torch; print(torch.__version__)'))" \
  build "$python" tests/python || status=1

# The backend built against torch 2.11 (the GPU machines') and its torch tests run there: the
# library as above, the extension against that torch.
echo "== build (build-torch2.11/): the torch backend against torch 2.11"
cmake -S . -B build-torch2.11 -G Ninja -DLIBREDUCE_WERROR=ON -DLIBREDUCE_WITH_TORCH=ON \
      -DLIBREDUCE_PYTHON="$python_torch2_11" -DLIBREDUCE_WITH_CUDA=OFF -DLIBREDUCE_BUILD_TESTS=OFF \
      -DLIBREDUCE_BUILD_BENCH=OFF -DLIBREDUCE_WITH_NCCL_PLUGIN=OFF >/dev/null
cmake --build build-torch2.11 -j "$jobs" --target rd_python_core rd_python_torch reduce-server \
  reducectl
run_pytest "python (pytest, torch 2.11)" build-torch2.11 "$python_torch2_11" \
  -m torch_compat tests/python || status=1

if ((!fast)); then
  echo "== build with ASan + UBSan (build-asan/)"
  # The Python modules load into an interpreter without the sanitizer runtime: tested above.
  cmake -S . -B build-asan -G Ninja -DLIBREDUCE_SANITIZE=address,undefined \
        -DLIBREDUCE_WITH_CUDA=OFF -DLIBREDUCE_BUILD_BENCH=OFF -DLIBREDUCE_WITH_PYTHON=OFF \
        -DCMAKE_BUILD_TYPE=Debug >/dev/null
  cmake --build build-asan -j "$jobs"
  # Everything runs again, the multi-process integration suite (real UCX between real
  # processes) included, but for: the package test (it installs and links outside the
  # sanitizer runtime; it ran above), the fuzzer (built with its own sanitizers), and the
  # integration cases that only move and verify volume (the collective matrices, random and
  # deterministic floats, the soak): ASan makes their verification about 4x slower, and the
  # same worker and reducer code runs every collective, count and dtype under ASan in
  # tests/loopback.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_ctest "ASan + UBSan build" build-asan \
    -E '^(package|fuzz)\.|^integration\.(WorkersReducers/|Collectives\.|Reducer\.Soak)' ||
    status=1
  # The hostile-network suite against the ASan + UBSan reducer (the workers are build/'s: the
  # sanitizer build has no benchmarks). Its peak RSS is ASan's quarantine, so it is not checked.
  echo "== tests: hostile network, ASan + UBSan reducer"
  log=$(mktemp)
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    capture "$log" /usr/bin/python3 tests/hostile/hostile_network.py --build-dir build \
    --reduce-server build-asan/src/reduce-server --skip-memory-check || status=1
  summaries+=("hostile network (ASan + UBSan reducer): $(grep -oE '[0-9]+ tests failed out of .*' "$log" | tail -1 || true)")
  rm -f "$log"

  echo "== build with TSan (build-tsan/): the in-process tests"
  # Ranks, reducers and the progress engine in one process over the loopback transport, and the
  # bootstrap over TCP, where every thread is ours. UCX's own threads and memory hooks are not TSan-instrumented, so the
  # multi-process suites are not run under it (they run under ASan above).
  cmake -S . -B build-tsan -G Ninja -DLIBREDUCE_SANITIZE=thread \
        -DLIBREDUCE_WITH_CUDA=OFF -DLIBREDUCE_BUILD_BENCH=OFF -DLIBREDUCE_WITH_PYTHON=OFF \
        -DLIBREDUCE_WITH_NCCL_PLUGIN=OFF >/dev/null
  cmake --build build-tsan -j "$jobs" --target rd_loopback_tests rd_unit_tests rd_bootstrap_tests
  # UCX is linked in (the transport factory knows it): its memory hooks, which patch madvise of
  # every thread's stack, crash inside TSan's interceptors, and these tests never use UCX.
  export UCX_MEM_MMAP_HOOK_MODE=none
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    run_gtest "TSan: in-process tests" build-tsan/tests/rd_loopback_tests || status=1
  TSAN_OPTIONS=halt_on_error=1 run_gtest "TSan: unit tests" build-tsan/tests/rd_unit_tests || status=1
  # The bootstrap's listener and connector on the engine thread, over TCP on 127.0.0.1.
  TSAN_OPTIONS=halt_on_error=1 run_gtest "TSan: bootstrap tests" build-tsan/tests/rd_bootstrap_tests ||
    status=1
  unset UCX_MEM_MMAP_HOOK_MODE
fi

echo
printf '%s\n' "${summaries[@]}"
# One closing line with the totals of every suite above.
passed=0
failed=0
skipped=0
for line in "${summaries[@]}"; do
  if [[ $line =~ ([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+)\ \(([0-9]+)\ skipped ]]; then
    failed=$((failed + BASH_REMATCH[1]))
    skipped=$((skipped + BASH_REMATCH[3]))
    passed=$((passed + BASH_REMATCH[2] - BASH_REMATCH[1] - BASH_REMATCH[3]))
  else
    status=1  # a run that printed no summary did not finish
  fi
done
((${#failures[@]} == 0)) || printf 'failed: %s\n' "${failures[@]}"
echo "test.sh: $passed passed, $failed failed, $skipped skipped"
exit "$status"
