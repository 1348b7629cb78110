#!/usr/bin/env bash
# Installs this build tree into a temporary prefix, then builds and runs small programs against
# it twice: through find_package(libreduce) and through pkg-config.
# usage: test_downstream.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
export LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}"

cmake -S "$src/tests/package/downstream" -B "$work/cmake-build" -G Ninja \
      -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/downstream_c"
"$work/cmake-build/downstream_cpp"

# pkg-config's prefix is the configured install prefix; point it at the temporary one.
pc_dir=$(dirname "$(find "$work/prefix" -name libreduce.pc)")
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --define-variable=prefix="$work/prefix" \
        --cflags --libs libreduce)
# shellcheck disable=SC2086
cc "$src/tests/package/downstream/main.c" -o "$work/pkgconfig_c" $flags
"$work/pkgconfig_c"
"$work/prefix/bin/reduce-info" --settings | grep -q LIBREDUCE_CPU_ISA
echo "package test passed"
