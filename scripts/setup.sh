#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs what libreduce needs to build, test and benchmark: Debian's packages, then the
# project's Python environments (scripts/python_env.sh: virtual environments outside the clone
# with the pinned torch and test tools from PyPI).
# Idempotent: what is present is left alone, so repeated runs take a second.
#
#   scripts/setup.sh            everything (what scripts/test.sh runs)
#   scripts/setup.sh --debian   Debian's packages only (what scripts/demo.sh needs)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git
  libucx-dev ucx-utils libhwloc-dev libssl-dev iproute2 procps gdb
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  clang clang-format clang-tidy libclang-rt-14-dev
  pybind11-dev python3-dev python3-venv python3-numpy python3-pytest
  libgloo-dev libopenmpi-dev openmpi-bin python3-matplotlib libyaml-cpp-dev
  slurm-wlm munge podman runc catatonit python3-jsonschema python3-yaml prometheus
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all system packages present"
fi

[[ "${1:-}" == "--debian" ]] && exit 0

# shellcheck source=scripts/python_env.sh
source scripts/python_env.sh
venv_ensure "$LIBREDUCE_VENV" python/requirements/dev.txt
venv_ensure "$LIBREDUCE_VENV_TORCH2_11" python/requirements/torch-2.11.txt
