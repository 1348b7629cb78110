#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU (not part of CI): builds the CUDA kernels,
# runs their tests and the throughput benchmark against cudaMemcpy, and keeps the logs in
# $OUT (or ./gpu-check-logs). Bounded in time; says clearly what is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check-logs}
mkdir -p "$out"
exec > >(tee "$out/gpu_check.log") 2>&1

missing=()
for tool in cmake ninja g++ /usr/local/cuda/bin/nvcc nvidia-smi; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[[ -f /usr/include/gtest/gtest.h ]] || missing+=("googletest headers (libgtest-dev)")
if ((${#missing[@]})); then
  echo "gpu_check: missing: ${missing[*]}"
  [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null && timeout 300 scripts/setup.sh
fi

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
timeout 900 cmake -S . -B build-gpu -G Ninja -DLIBREDUCE_WITH_CUDA=ON -DLIBREDUCE_BUILD_BENCH=ON \
  -DLIBREDUCE_WITH_UCX=OFF -DLIBREDUCE_WITH_HWLOC=OFF >/dev/null || { echo "configure failed"; exit 1; }
timeout 900 cmake --build build-gpu -j "$(nproc)" \
  --target rd_cuda_kernel_tests rd_cuda_kernel_bench reduce-info || { echo "build failed"; exit 1; }

build-gpu/src/tools/reduce-info | sed -n '/GPU/,/^$/p'
status=0
timeout 600 build-gpu/tests/rd_cuda_kernel_tests --gtest_brief=1 || status=1
timeout 600 build-gpu/bench/rd_cuda_kernel_bench --mib-per-source 256 --iters 20 | tee "$out/cuda_bench.txt" || status=1
echo "gpu_check: $([[ $status -eq 0 ]] && echo PASSED || echo FAILED)"
exit $status
