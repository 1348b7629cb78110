// SPDX-License-Identifier: BSD-3-Clause
// The entry points each per-ISA translation unit provides (isa_scalar.cc, isa_avx2.cc,
// isa_avx512.cc). Only cpu_reduce.cc calls these, after checking the CPU supports the ISA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "libreduce/reduce.h"

namespace rd::kernels::cpu {

/** One contiguous range [begin, end) of a validated reduction. */
struct ReduceRange {
  const void* const* srcs;
  int nsrcs;
  void* dst;
  size_t begin;
  size_t end;
  rdDataType_t dtype;
  rdRedOp_t op;          // rdAvg is run as rdSum plus the division below
  uint64_t avg_divisor;  // != 0: divide the sum by it (rdAvg); 0: no scaling
  bool stream;           // use non-temporal stores for the destination
};

/** One contiguous range [begin, end) of a validated wide sum (kernels/wide_sum.h). */
struct WideSumRange {
  const void* acc;  // float32 values, or nullptr
  const void* const* srcs;
  int nsrcs;
  rdDataType_t narrow;  // rdBfloat16 or rdFloat16
  void* dst;
  bool narrow_out;
  float scale;
  size_t begin;
  size_t end;
  bool stream;  // use non-temporal stores for the destination
};

namespace scalar {
void reduceRange(const ReduceRange& range);
void wideSumRange(const WideSumRange& range);
}  // namespace scalar
namespace avx2 {
void reduceRange(const ReduceRange& range);
void wideSumRange(const WideSumRange& range);
}  // namespace avx2
namespace avx512 {
void reduceRange(const ReduceRange& range);
void wideSumRange(const WideSumRange& range);
}  // namespace avx512

}  // namespace rd::kernels::cpu
