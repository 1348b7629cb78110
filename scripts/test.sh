#!/usr/bin/env bash
# The project's test command: installs what is missing, checks formatting and lint, builds,
# runs the C++ tests (CTest), then builds with ASan + UBSan and runs them again.
#
#   scripts/test.sh            everything (what CI runs)
#   scripts/test.sh --fast     skip the sanitizer build and clang-tidy
set -euo pipefail
cd "$(dirname "$0")/.."

fast=0
[[ "${1:-}" == "--fast" ]] && fast=1
jobs=$(nproc)

scripts/setup.sh

echo "== format check (clang-format)"
scripts/lint.sh format

echo "== build (build/)"
cmake -S . -B build -G Ninja -DLIBREDUCE_WERROR=ON >/dev/null
cmake --build build -j "$jobs"

if ((!fast)); then
  echo "== lint (clang-tidy)"
  scripts/lint.sh tidy build
fi

summaries=()
run_ctest() {  # run_ctest LABEL BUILD_DIR [ctest args...]
  local label=$1 dir=$2
  shift 2
  echo "== tests: $label"
  local log
  log=$(mktemp)
  set +e
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 900 "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  set -e
  local skipped
  skipped=$(grep -c -E '^[[:space:]]*[0-9]+ - .*\(Skipped\)$' "$log" || true)
  summaries+=("$label: $(grep -E 'tests passed|tests failed' "$log" | tail -1) ($skipped skipped)")
  rm -f "$log"
  return "$rc"
}

status=0
run_ctest "default build" build || status=1

if ((!fast)); then
  echo "== build with ASan + UBSan (build-asan/)"
  cmake -S . -B build-asan -G Ninja -DLIBREDUCE_SANITIZE=address,undefined \
        -DLIBREDUCE_WITH_CUDA=OFF -DLIBREDUCE_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null
  cmake --build build-asan -j "$jobs"
  # The package test installs and links outside the sanitizer runtime; it ran above.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_ctest "ASan + UBSan build" build-asan -E '^(package|integration|fuzz)\.' || status=1
fi

echo
printf '%s\n' "${summaries[@]}"
# One closing line with the totals of every CTest run above.
passed=0
failed=0
skipped=0
for line in "${summaries[@]}"; do
  if [[ $line =~ ([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+)\ \(([0-9]+)\ skipped ]]; then
    failed=$((failed + BASH_REMATCH[1]))
    skipped=$((skipped + BASH_REMATCH[3]))
    passed=$((passed + BASH_REMATCH[2] - BASH_REMATCH[1] - BASH_REMATCH[3]))
  else
    status=1  # a CTest run that printed no summary did not finish
  fi
done
echo "test.sh: $passed passed, $failed failed, $skipped skipped"
exit "$status"
