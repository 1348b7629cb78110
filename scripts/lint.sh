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
    # The build passes GCC-only warning flags; clang must not turn them into errors.
    # The torch backend is checked where the build has it (its compile commands name torch 2.x's
    # headers, which clang 14 parses).
    files=$(git ls-files 'src/*.cc' 'kernels/*.cc' 'python/src/*.cc')
    if ! grep -q 'python/src/torch/' "$build/compile_commands.json" 2>/dev/null; then
      files=$(echo "$files" | grep -v '^python/src/torch/')
    fi
    # One clang-tidy per core, a few files each; a batch's findings print together when it fails.
    # shellcheck disable=SC2016
    if ! echo "$files" | xargs -P "$(nproc)" -n 4 sh -c '
         out=$(clang-tidy -p "$0" --quiet --warnings-as-errors="*" \
               --extra-arg=-Wno-unknown-warning-option "$@" 2>&1) && exit 0
         printf "%s\n" "$out" | grep -v -E "^[0-9]+ warnings? generated"
         exit 1' "$build"; then
      exit 1
    fi
    echo "clang-tidy: $(echo "$files" | wc -w) files clean"
    ;;
  *)
    echo "usage: $0 format [--fix] | tidy BUILD_DIR" >&2
    exit 2
    ;;
esac
