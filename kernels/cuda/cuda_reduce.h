// CUDA reductions: the interface and semantics of the CPU kernels (kernels/reduce_kernel.h) on
// device memory, enqueued on a stream. Used by GPU reducers and the worker's on-GPU steps.
// This header compiles without nvcc.
#pragma once

#include <string>

#include "reduce_kernel.h"

struct CUstream_st;

namespace rd::kernels::cuda {

using Stream = CUstream_st*;  // cudaStream_t

/** Most sources one launch takes (they travel in the kernel's parameters). */
inline constexpr int kMaxSources = 128;

/**
 * Enqueues dst = reduce(srcs) on @p stream. Pointers must be accessible from the current device.
 * Returns rdInvalidArgument (see validate()), rdUnsupported (more than kMaxSources sources) or
 * rdCudaError with the CUDA message; the reduction itself completes asynchronously.
 */
rdResult_t reduce(const ReduceArgs& args, Stream stream);

/** Number of usable CUDA devices; 0 when there is no driver or device (never fails). */
int deviceCount();

/** One line per device ("0: NVIDIA H200, sm_90, 139.8 GiB"), or why there is none. */
std::string describeDevices();

}  // namespace rd::kernels::cuda
