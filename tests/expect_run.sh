#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# expect_run.sh STATUS PATTERN... -- COMMAND [ARGS...]: runs COMMAND, shows its output, and
# passes only when it exits with STATUS, every PATTERN (grep -E) matches a line of its output
# and no sanitizer reported an error. CTest's PASS_REGULAR_EXPRESSION alone passes on the text
# even when the process crashes or a sanitizer aborts after printing it.
want=$1
shift
patterns=""
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  patterns="$patterns$1
"
  shift
done
[ "$#" -gt 0 ] && shift
out=$(mktemp)
"$@" >"$out" 2>&1
rc=$?
cat "$out"
verdict=""
if [ "$rc" -ne "$want" ]; then
  verdict="exited with status $rc, expected $want"
elif grep -Eq 'ERROR: (Address|Leak|Thread)Sanitizer|runtime error:' "$out"; then
  verdict="a sanitizer reported an error"
else
  while IFS= read -r pattern; do
    [ -z "$pattern" ] && continue
    if ! grep -Eq -- "$pattern" "$out"; then
      verdict="no line of the output matches: $pattern"
      break
    fi
  done <<PATTERNS
$patterns
PATTERNS
fi
rm -f "$out"
if [ -n "$verdict" ]; then
  echo "expect_run: FAILED: $*: $verdict"
  exit 1
fi
echo "expect_run: passed (status $rc, every pattern matched)"
