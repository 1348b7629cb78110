// SPDX-License-Identifier: BSD-3-Clause
// Time per byte of an all-reduce buffer, relative to one worker's link, for ring and for the
// reduction server: the bandwidth model behind `reducectl plan` and the NCCL tuner's choice.
#pragma once

#include <algorithm>

namespace rd::cost {

/** Ring: each worker sends and receives 2(n-1)/n of the buffer over its link. */
inline double ringPerByte(double workers) {
  return workers <= 1 ? 0 : 2 * (workers - 1) / workers;
}

/**
 * Reduction server: each worker sends and receives the buffer once; the @p reducers together
 * carry n buffers each way, so reducer links slower in sum than the workers' are the limit.
 */
inline double reductionServerPerByte(double workers, double worker_gbps, double reducers,
                                     double reducer_gbps) {
  if (workers <= 1) return 0;
  return std::max(1.0, workers * worker_gbps / (reducers * reducer_gbps));
}

}  // namespace rd::cost
