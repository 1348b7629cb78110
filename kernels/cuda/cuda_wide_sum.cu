// SPDX-License-Identifier: BSD-3-Clause
// CUDA wide sums (kernels/wide_sum.h): float32 sums of bfloat16 / float16 values, rounded once,
// bit for bit the CPU kernels' results. One element per thread-step of a grid-stride loop:
// the work is two reads and a write per element, memory-bound at any unrolling, and the
// conversions are those of the reductions (half_types.cuh). Additions and the scaling use
// __fadd_rn / __fmul_rn, never fused.
#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"
#include "cuda/cuda_reduce.h"
#include "cuda/half_types.cuh"

namespace rd::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxWideSources = 64;

struct WideParams {
  const uint16_t* srcs[kMaxWideSources];
  const float* acc;
  void* dst;
  size_t count;
  float scale;
  int nsrcs;
  bool narrow_out;
};

template <class T>
__global__ void __launch_bounds__(kThreads) wideSumKernel(const __grid_constant__ WideParams p) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < p.count;
       i += stride) {
    int s = 0;
    float v = p.acc != nullptr ? p.acc[i] : Elem<T>::in(p.srcs[s++][i]);
    for (; s < p.nsrcs; ++s) v = __fadd_rn(v, Elem<T>::in(p.srcs[s][i]));
    if (p.scale != 1.0f) v = __fmul_rn(v, p.scale);
    if (p.narrow_out) {
      static_cast<uint16_t*>(p.dst)[i] = Elem<T>::out(v);
    } else {
      static_cast<float*>(p.dst)[i] = v;
    }
  }
}

bool aligned(const void* p, size_t to) {
  return reinterpret_cast<uintptr_t>(p) % to == 0;
}

}  // namespace

rdResult_t wideSum(const WideSumArgs& args, cudaStream_t stream) {
  rdResult_t status = validate(args);
  if (status != rdSuccess) return status;
  if (args.nsrcs > kMaxWideSources) {
    return setErrorf(rdUnsupported, "CUDA wide sum: %d sources, at most %d per call", args.nsrcs,
                     kMaxWideSources);
  }
  if (args.count == 0) return rdSuccess;
  WideParams p{};
  bool ok = aligned(args.dst, args.narrow_out ? 2 : 4) && aligned(args.acc, 4);
  for (int s = 0; s < args.nsrcs; ++s) {
    p.srcs[s] = static_cast<const uint16_t*>(args.srcs[s]);
    ok = ok && aligned(args.srcs[s], 2);
  }
  if (!ok) {
    return setError(rdInvalidArgument,
                    "CUDA wide sum: every pointer must be aligned to its element size");
  }
  p.acc = args.acc;
  p.dst = args.dst;
  p.count = args.count;
  p.scale = args.scale;
  p.nsrcs = args.nsrcs;
  p.narrow_out = args.narrow_out;
  const void* kernel = args.narrow == rdBfloat16
                           ? reinterpret_cast<const void*>(wideSumKernel<Bf16>)
                           : reinterpret_cast<const void*>(wideSumKernel<Fp16>);
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess) {
    // Enough blocks to fill the device a few times over; the grid-stride loop does the rest.
    const size_t want = (args.count + kThreads - 1) / kThreads;
    const size_t cap = static_cast<size_t>(sms) * 8;
    const auto blocks = static_cast<unsigned>(want < cap ? want : cap);
    void* kernel_args[] = {&p};
    err = cudaLaunchKernel(kernel, dim3(blocks), dim3(kThreads), kernel_args, 0, stream);
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    return setErrorf(rdCudaError, "CUDA wide sum: %s (%s)", cudaGetErrorString(err),
                     cudaGetErrorName(err));
  }
  return rdSuccess;
}

}  // namespace rd::kernels::cuda
