#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs this build tree into a temporary prefix, then builds and runs small programs against
# it twice: through find_package(libreduce) and through pkg-config.
# usage: test_downstream.sh BUILD_DIR SOURCE_DIR [PYTHON]
#   PYTHON: the interpreter the build's Python package is for (default /usr/bin/python3)
set -euo pipefail
build=$1
src=$2
python=${3:-/usr/bin/python3}
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
# The C++ layer with the standard the package names (reduce.hpp needs C++20).
cxxflags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --variable=cxxflags libreduce)
[[ $cxxflags == "-std=c++20" ]] || { echo "pkg-config cxxflags: '$cxxflags'"; exit 1; }
# shellcheck disable=SC2086
c++ $cxxflags "$src/tests/package/downstream/main.cpp" -o "$work/pkgconfig_cpp" $flags
"$work/pkgconfig_cpp"
# grep reads the whole listing: with -q it could exit at the match while reduce-info is still
# writing, and pipefail would report the SIGPIPE that ends it.
"$work/prefix/bin/reduce-info" --settings | grep LIBREDUCE_CPU_ISA >/dev/null

# The Python package, where the build has one: imported from the installed tree only.
if [[ -d "$build/python/libreduce" ]]; then
  init=$(find "$work/prefix" -path '*/libreduce/__init__.py' | head -1)
  [[ -n $init ]] || { echo "the Python package was not installed"; exit 1; }
  (cd "$work" && PYTHONPATH="$(dirname "$(dirname "$init")")" "$python" - <<'EOF'
import os
import pathlib

import numpy as np

import libreduce

assert libreduce.__file__.startswith(os.getcwd()), libreduce.__file__
with libreduce.Communicator(0, 1, libreduce.unique_id(reducers="")) as comm:
    assert comm.all_reduce(np.arange(4.0)).tolist() == [0.0, 1.0, 2.0, 3.0]
if any(p.name.startswith("_torch") for p in pathlib.Path(libreduce.__file__).parent.iterdir()):
    import torch.distributed as dist

    import libreduce.torch  # noqa: F401
    assert "LIBREDUCE" in dist.Backend._plugins
print("python package imports from the install")
EOF
  )
fi
echo "package test passed"
