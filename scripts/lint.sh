#!/usr/bin/env bash
# Style checks the code follows.
#   scripts/lint.sh format           clang-format --dry-run over every C/C++/CUDA file
#   scripts/lint.sh format --fix     rewrite files in place
#   scripts/lint.sh tidy BUILD_DIR   clang-tidy over the library sources (needs compile_commands.json)
set -euo pipefail
cd "$(dirname "$0")/.."

sources() { git ls-files '*.h' '*.hpp' '*.cc' '*.cpp' '*.c' '*.cu' '*.cuh' '*.inl'; }

case "${1:-}" in
  format)
    if [[ "${2:-}" == "--fix" ]]; then
      sources | xargs clang-format -i
    else
      sources | xargs clang-format --dry-run -Werror
      echo "clang-format: $(sources | wc -l) files clean"
    fi
    ;;
  tidy)
    build=${2:?usage: lint.sh tidy BUILD_DIR}
    # Library code only: tests and benchmarks follow GoogleTest / Google Benchmark idioms.
    files=$(git ls-files 'src/*.cc' 'kernels/*.cc')
    # shellcheck disable=SC2086
    clang-tidy -p "$build" --quiet --warnings-as-errors='*' $files 2>&1 \
      | grep -v -E '^[0-9]+ warnings? generated' || true
    # clang-tidy's exit status is lost in the pipe above; run again for it, output suppressed.
    # shellcheck disable=SC2086
    clang-tidy -p "$build" --quiet --warnings-as-errors='*' $files >/dev/null 2>&1
    echo "clang-tidy: $(echo "$files" | wc -w) files clean"
    ;;
  *)
    echo "usage: $0 format [--fix] | tidy BUILD_DIR" >&2
    exit 2
    ;;
esac
