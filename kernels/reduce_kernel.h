// SPDX-License-Identifier: BSD-3-Clause
// The one reduction interface shared by the CPU and CUDA kernels: N sources reduced element-wise
// into one destination. The semantics (order, rounding, NaN, wrap-around) are documented on
// rdLocalReduce in include/libreduce/reduce.h and hold for every implementation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "libreduce/reduce.h"

namespace rd::kernels {

struct ReduceArgs {
  const void* const* srcs = nullptr;  // nsrcs pointers; any alignment
  int nsrcs = 0;                      // >= 1
  void* dst = nullptr;                // may equal a source exactly, never overlap one partially
  size_t count = 0;                   // elements
  rdDataType_t dtype = rdFloat32;
  rdRedOp_t op = rdSum;
  // rdAvg divides by this instead of nsrcs (0 = nsrcs). A reducer that sums contributions in
  // several steps passes the total number of contributions to the step that finishes.
  uint64_t avg_divisor = 0;
  // When false, rdAvg is computed as a plain sum: the scaling is left to a later step that sets
  // it (a reducer accumulating partial sums). Ignored for other operators.
  bool finalize_avg = true;
};

/** Checks the arguments (null pointers, dtype/op range, partial overlap); sets the last error. */
rdResult_t validate(const ReduceArgs& args);

/** The divisor rdAvg uses for these arguments. */
inline uint64_t avgDivisor(const ReduceArgs& args) {
  return args.avg_divisor != 0 ? args.avg_divisor : static_cast<uint64_t>(args.nsrcs);
}

}  // namespace rd::kernels
