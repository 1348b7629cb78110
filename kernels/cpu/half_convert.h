// SPDX-License-Identifier: BSD-3-Clause
// Portable float16 / bfloat16 <-> float32 conversions, bit-exact with x86 F16C and with the
// vectorized bfloat16 rounding in the kernels: round to nearest even, subnormals kept, NaN
// quietened with its payload truncated.
//
// The functions are `static` on purpose: this header is included by translation units built
// for different instruction sets, and internal linkage keeps the linker from sharing one
// ISA-specific copy between them.
#pragma once

#include <cstdint>
#include <cstring>

namespace rd::kernels {

static inline uint32_t floatBits(float f) {
  uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

static inline float bitsFloat(uint32_t u) {
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

static inline float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) {  // inf or NaN; a signalling NaN comes out quiet, as F16C does
    return bitsFloat(sign | 0x7F800000u | (mant << 13) | (mant != 0 ? 0x00400000u : 0u));
  }
  if (exp != 0) return bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return bitsFloat(sign);
  // Subnormal half: normalize into a float exponent.
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while ((mant & 0x400u) == 0);
  return bitsFloat(sign | static_cast<uint32_t>(112 - e) << 23 | ((mant & 0x3FFu) << 13));
}

static inline uint16_t floatToHalf(float f) {
  const uint32_t u = floatBits(f);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to inf
  if (abs >= 0x38800000u) {                                              // normal half
    const uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u) - (112u << 23);
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  if (abs < 0x33000000u) return sign;  // below half the smallest subnormal: +-0
  // Subnormal half: shift the full significand right, rounding to nearest even.
  const uint32_t exp = abs >> 23;
  const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - exp;  // 14..24
  uint32_t half = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t mid = 1u << (shift - 1u);
  if (rem > mid || (rem == mid && (half & 1u) != 0)) ++half;
  return static_cast<uint16_t>(sign | half);
}

static inline float bf16ToFloat(uint16_t b) {
  return bitsFloat(static_cast<uint32_t>(b) << 16);
}

static inline uint16_t floatToBf16(float f) {
  const uint32_t u = floatBits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace rd::kernels
