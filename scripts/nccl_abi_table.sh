#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Which plugin structs each NCCL release looks up, read from the releases themselves: downloads
# PyPI's nvidia-nccl wheel of each release (cu12 up to 2.26, cu13 from 2.27), takes the
# ncclNetPlugin_vN / ncclCollNetPlugin_vN / ncclTunerPlugin_vN names out of libnccl.so.2, and
# prints a markdown table of them with the version NCCL loads from libnccl-net-libreduce.so (the
# newest it looks up that the plugin exports). Needs network access to PyPI; not part of the tests.
#
#   scripts/nccl_abi_table.sh [PLUGIN.so]     default build/src/nccl_plugin/libnccl-net-libreduce.so
set -euo pipefail
cd "$(dirname "$0")/.."
plugin=${1:-build/src/nccl_plugin/libnccl-net-libreduce.so}
cache=${NCCL_WHEEL_CACHE:-$HOME/.cache/libreduce/nccl-wheels}
python=${PYTHON:-$HOME/.cache/libreduce/venv/bin/python}
releases="cu12==2.19.3 cu12==2.20.5 cu12==2.21.5 cu12==2.22.3 cu12==2.23.4 cu12==2.24.3
cu12==2.25.1 cu12==2.26.5 cu13==2.27.7 cu13==2.28.9 cu13==2.29.7 cu13==2.30.7 cu13==2.31.2
cu13==2.32.6"
mkdir -p "$cache"
exported=$(nm -D --defined-only "$plugin" | awk '{print $3}' | grep -E '^nccl(Net|CollNet|Tuner)Plugin_v[0-9]+$')

# The versions of @kind NCCL looks up in @lib, newest first, and the one it loads from the plugin.
looked_up() { strings "$1" | grep -E "^nccl$2Plugin_v[0-9]+$" | sed 's/.*_v//' | sort -rn | uniq | tr '\n' ' '; }
loads() {
  for v in $2; do
    if grep -qx "nccl$1Plugin_v$v" <<<"$exported"; then echo "v$v"; return; fi
  done
  echo "none"
}

echo "| NCCL | Net looked up | loads | CollNet looked up | loads | Tuner looked up | loads |"
echo "|---|---|---|---|---|---|---|"
for spec in $releases; do
  version=${spec#*==}
  dir="$cache/$version"
  if [[ ! -f "$dir/libnccl.so.2" ]]; then
    "$python" -m pip download -q --no-deps "nvidia-nccl-$spec" -d "$cache/wheels" >&2
    mkdir -p "$dir"
    unzip -o -q -j "$cache"/wheels/nvidia_nccl_"${spec%%==*}"-"$version"-*.whl \
      'nvidia/nccl/lib/libnccl.so.2' -d "$dir"
  fi
  row="| $version"
  for kind in Net CollNet Tuner; do
    versions=$(looked_up "$dir/libnccl.so.2" "$kind")
    row+=" | ${versions% } | $(loads "$kind" "$versions")"
  done
  echo "$row |"
done
