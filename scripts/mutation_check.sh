#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Mutation check: builds the library, the reducer and the tests with one deliberate fault at a
# time (tests/mutants/*.patch, applied to src/ only) and runs the C++ suite against each. Every
# mutant must make some test fail; one that survives is a test missing. Prints a table of the
# mutants and the tests that killed each (the first to fail: the suite stops there).
#
#   scripts/mutation_check.sh [--tests REV] [--only NAME] [--out FILE] [--keep DIR]
#
#   --tests REV   take tests/ and bench/ from REV (the suite as it was), src/ from HEAD
#   --only NAME   one mutant (its file name without .patch); repeatable
#   --out FILE    also write the table there (Markdown)
#   --keep DIR    work in DIR and keep it (a second run there rebuilds only what a patch touches)
#
# The suite is CTest's, without the orchestrator, packaging and example tests (they do not reach
# the data path). About 5 minutes per surviving mutant on 2 cores, less for one killed early.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

tests_rev=""
only=()
out=""
work=""
while (($#)); do
  case "$1" in
    --tests) tests_rev=$2; shift 2 ;;
    --only) only+=("$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --keep) work=$2; shift 2 ;;
    *) echo "mutation_check: unknown argument $1" >&2; exit 2 ;;
  esac
done

# What the suite runs: every CTest test that exercises the library, the reducer or the plugin.
suite_exclude='^(orchestrator|package|example|docs|fuzz)\.|^reduce_info\.'

keep=1
if [[ -z "$work" ]]; then
  work=$(mktemp -d)
  keep=0
fi
tree="$work/tree"
build="$work/build"
cleanup() {
  if [[ -d "$tree" ]]; then git -C "$tree" checkout -q -- src 2>/dev/null || true; fi
  if ((!keep)); then
    git -C "$root" worktree remove --force "$tree" 2>/dev/null || true
    rm -rf "$work"
  fi
}
trap cleanup EXIT

if [[ ! -d "$tree" ]]; then git -C "$root" worktree add -q --detach "$tree" HEAD; fi
git -C "$tree" checkout -q -f --detach "$(git -C "$root" rev-parse HEAD)"
if [[ -n "$tests_rev" ]]; then git -C "$tree" checkout -q "$tests_rev" -- tests bench; fi
# The mutants and this script come from the working copy, whatever REV the tests are from.
mutants=()
if ((${#only[@]})); then
  for name in "${only[@]}"; do mutants+=("$root/tests/mutants/$name.patch"); done
else
  mutants=("$root"/tests/mutants/*.patch)
fi

cmake -S "$tree" -B "$build" -G Ninja >/dev/null

# run_suite LOG: CTest until the first failure; the status is CTest's.
run_suite() {
  ctest --test-dir "$build" -j "$(nproc)" --timeout 300 --stop-on-failure --output-on-failure \
    -E "$suite_exclude" >"$1" 2>&1
}

failed_tests() {  # the names CTest lists as failed, comma-separated
  sed -n '/^The following tests FAILED:/,$p' "$1" | sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\).*/\1/p' |
    paste -sd, - | sed 's/,/, /g'
}

echo "== mutation check: tests from ${tests_rev:-HEAD}, src from $(git -C "$root" rev-parse --short HEAD)"
echo "== baseline (no mutant): the suite must pass"
cmake --build "$build" -j "$(nproc)" >"$work/build.log" 2>&1 || {
  tail -20 "$work/build.log"
  echo "mutation_check: the unmutated tree does not build" >&2
  exit 1
}
if ! run_suite "$work/baseline.log"; then
  tail -20 "$work/baseline.log"
  echo "mutation_check: the suite fails without a mutant: $(failed_tests "$work/baseline.log")" >&2
  exit 1
fi

rows=("| mutant | outcome | killed by | seconds |" "|---|---|---|---|")
survivors=0
for patch in "${mutants[@]}"; do
  name=$(basename "$patch" .patch)
  start=$(date +%s)
  git -C "$tree" apply "$patch"
  if ! cmake --build "$build" -j "$(nproc)" >"$work/build.log" 2>&1; then
    outcome="did not build"
    by="-"
    survivors=$((survivors + 1))
  elif run_suite "$work/$name.log"; then
    outcome="**survived**"
    by="-"
    survivors=$((survivors + 1))
  else
    outcome="killed"
    by=$(failed_tests "$work/$name.log")
    [[ -n "$by" ]] || by="(CTest failed: $(tail -1 "$work/$name.log"))"
  fi
  git -C "$tree" apply -R "$patch"
  row="| $name | $outcome | $by | $(($(date +%s) - start)) |"
  echo "$row"
  rows+=("$row")
done

# Leave the build matching the unmutated tree for a later --keep run.
cmake --build "$build" -j "$(nproc)" >"$work/build.log" 2>&1 || true
printf '%s\n' "${rows[@]}"
if [[ -n "$out" ]]; then printf '%s\n' "${rows[@]}" >"$out"; fi
echo "== $((${#mutants[@]} - survivors)) of ${#mutants[@]} mutants killed"
((survivors == 0))
