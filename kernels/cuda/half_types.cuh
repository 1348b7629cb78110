// SPDX-License-Identifier: BSD-3-Clause
// The element types of the CUDA kernels: storage in memory, the type arithmetic runs in, and
// the conversions, shared by the reductions (cuda_reduce.cu) and the wide sums
// (cuda_wide_sum.cu) so that both round exactly as the CPU kernels do.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace rd::kernels::cuda {

struct Fp16 {};
struct Bf16 {};

template <class T>
struct Elem {
  using Storage = T;
  using Compute = T;
  __device__ static T in(T v) { return v; }
  __device__ static T out(T v) { return v; }
};
template <>
struct Elem<Fp16> {  // hardware conversions: exact widening; RNE narrowing with subnormals
  using Storage = uint16_t;
  using Compute = float;
  __device__ static float in(uint16_t h) { return __half2float(__ushort_as_half(h)); }
  __device__ static uint16_t out(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
template <>
struct Elem<Bf16> {  // the CPU kernels' own rounding, so that the bits agree by construction
  using Storage = uint16_t;
  using Compute = float;
  __device__ static float in(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }
  __device__ static uint16_t out(float f) {
    const uint32_t u = __float_as_uint(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  }
};

}  // namespace rd::kernels::cuda
