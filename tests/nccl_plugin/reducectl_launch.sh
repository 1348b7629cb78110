#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# reducectl_launch.sh REDUCECTL HARNESS PLUGIN: two plugin harness ranks under
# `reducectl launch` with two reducers, in a scratch directory removed afterwards; the status is
# reducectl's.
dir=$(mktemp -d) || exit 1
"$1" launch --workers 2 --reducers 2 --timeout 120 --output-dir "$dir/jobs" -- \
  "$2" --plugin "$3" --dir "$dir"
rc=$?
rm -rf "$dir"
exit "$rc"
