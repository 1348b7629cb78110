#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Style checks the code follows.
#   scripts/lint.sh format           clang-format --dry-run over every C/C++/CUDA file
#   scripts/lint.sh format --fix     rewrite files in place
#   scripts/lint.sh tidy BUILD_DIR   clang-tidy over the library sources (needs compile_commands.json)
#   scripts/lint.sh license [--fix]  every source file names its license (SPDX) near the top
set -euo pipefail
cd "$(dirname "$0")/.."

sources() { git ls-files '*.h' '*.hpp' '*.cc' '*.cpp' '*.c' '*.cu' '*.cuh' '*.inl'; }

readonly spdx='SPDX-License-Identifier: BSD-3-Clause'
# Every file a person edits as code, with its comment marker; generated and data files are not.
licensed_files() {
  # The public C headers stay valid C90 for their users: a /* */ comment there.
  git ls-files 'include/*.h' '*.h.in' | sed 's|$| /*|'
  git ls-files '*.h' '*.hpp' '*.cc' '*.cpp' '*.c' '*.cu' '*.cuh' '*.inl' |
    grep -v '^include/.*\.h$' | sed 's|$| //|'
  git ls-files '*.py' '*.sh' '*.cmake' '*CMakeLists.txt' '*.cmake.in' '*.pc.in' '*Containerfile' \
    '*.toml' | sed 's|$| #|'
}

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
  license)
    # The identifier sits in the first 3 lines (after a #! line where there is one).
    missing=0
    while read -r file marker; do
      head -n 3 "$file" | grep -q "$spdx" && continue
      if [[ "${2:-}" == "--fix" ]]; then
        line="$marker $spdx"
        [[ $marker == "/*" ]] && line="$line */"
        if head -n 1 "$file" | grep -q '^#!'; then
          sed -i "1a $line" "$file"
        else
          sed -i "1i $line" "$file"
        fi
      else
        echo "$file: no '$spdx' in its first 3 lines (scripts/lint.sh license --fix adds it)" >&2
        missing=$((missing + 1))
      fi
    done < <(licensed_files)
    [[ $missing -eq 0 ]] || exit 1
    echo "license: $(licensed_files | wc -l) files carry the SPDX identifier"
    ;;
  *)
    echo "usage: $0 format [--fix] | tidy BUILD_DIR | license [--fix]" >&2
    exit 2
    ;;
esac
