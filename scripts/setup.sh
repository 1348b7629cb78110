#!/usr/bin/env bash
# Installs every system package libreduce needs to build, test and benchmark.
# Idempotent: packages already present are left alone, so repeated runs are fast.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libucx-dev ucx-utils libhwloc-dev libssl-dev iproute2 procps gdb
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  clang clang-format clang-tidy libclang-rt-14-dev
  pybind11-dev python3-dev python3-numpy python3-pytest python3-torch libtorch-dev
  libgloo-dev libopenmpi-dev openmpi-bin python3-matplotlib libyaml-cpp-dev
  slurm-wlm munge podman runc catatonit python3-jsonschema python3-yaml
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
