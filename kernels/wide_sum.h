// SPDX-License-Identifier: BSD-3-Clause
// Sums kept in float32 for values that travel narrower: wire compression sends float32 data as
// bfloat16 or float16, and every sum of such values is taken in float32 and rounded once.
//
//   dst[i] = round((acc ? acc[i] : 0) + srcs[0][i] + ... + srcs[nsrcs-1][i]) * scale
//
// in that order, each source widened exactly to float32, every addition and the scaling done in
// float32 (no fused multiply-add), and the result stored as float32 or rounded to the narrow type
// (round to nearest even; beyond the narrow type's range: infinity, as IEEE 754 says). Every
// instruction set computes the same bits. The same call narrows (acc only, narrow_out) and widens
// (one source, float32 out).
#pragma once

#include <cstddef>
#include <cstdint>

#include "libreduce/reduce.h"

namespace rd::kernels {

struct WideSumArgs {
  const float* acc = nullptr;         // float32 values the sum starts from; nullptr: none
  const void* const* srcs = nullptr;  // nsrcs buffers of `narrow` values; any alignment
  int nsrcs = 0;                      // >= 0; with no acc, >= 1
  rdDataType_t narrow = rdBfloat16;   // rdBfloat16 or rdFloat16
  void* dst = nullptr;                // float32 values, or `narrow` values when narrow_out
  bool narrow_out = false;
  size_t count = 0;    // elements
  float scale = 1.0f;  // multiplies the sum before it is stored (avg: 1/n); 1: nothing
};

/**
 * Checks the arguments (null pointers, types, partial overlap: dst may equal acc or a source
 * of its own type exactly, never overlap one partially); sets the last error.
 */
rdResult_t validate(const WideSumArgs& args);

/** True for the narrow types a float32 value can travel as. */
inline bool isWireNarrowType(rdDataType_t t) {
  return t == rdBfloat16 || t == rdFloat16;
}

}  // namespace rd::kernels
