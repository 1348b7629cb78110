#!/usr/bin/env bash
# The main job on this machine: sets up, builds, and runs the local reduction demo, which
# reduces N contributions per size with the CPU kernels, checks every element and prints a table.
# (The reduction-server job over the network replaces this as the core lands.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
cmake -S . -B build -G Ninja >/dev/null
cmake --build build --target local_reduce_demo reduce-info >/dev/null
build/src/tools/reduce-info | sed -n '/CPU kernels/,/threads/p'
echo
exec build/examples/local_reduce_demo "$@"
