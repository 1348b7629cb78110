// SPDX-License-Identifier: BSD-3-Clause
// CUDA reductions: the interface and semantics of the CPU kernels (kernels/reduce_kernel.h) on
// memory the current device can access, enqueued on a stream. Used by GPU reducers and by the
// worker's on-GPU steps (scaling, casting). This header compiles without nvcc and without the
// CUDA headers, so that plain C++ callers need only the CUDA runtime library to link.
#pragma once

#include <string>

#include "reduce_kernel.h"
#include "wide_sum.h"

// The runtime's own spelling of a stream handle (cuda_runtime_api.h declares the same type).
struct CUstream_st;

namespace rd::kernels::cuda {

using cudaStream_t = ::CUstream_st*;

/** Most sources one call takes: the pointers travel by value in the kernel's parameters. */
inline constexpr int kMaxSources = 128;

/**
 * Enqueues dst = srcs[0] op srcs[1] op ... on @p stream (nullptr = the legacy default stream),
 * on the current device, with exactly the results of rd::kernels::cpu::reduce (NaN payloads
 * aside). Pointers may have any alignment; dst may equal a source exactly. The call returns
 * once the work is enqueued; faults inside the kernel (a host pointer, say) surface as a CUDA
 * error at the next synchronization, not here.
 *
 * @return rdSuccess; rdInvalidArgument (see validate()); rdUnsupported (more than kMaxSources
 *         sources); rdCudaError with the CUDA message (no device, launch failure).
 */
rdResult_t reduce(const ReduceArgs& args, cudaStream_t stream);

/**
 * Enqueues a wide sum (kernels/wide_sum.h: float32 sums of bfloat16 / float16 values, rounded
 * once; wire compression on a GPU) on @p stream, with exactly the bits of
 * rd::kernels::cpu::wideSum. Pointers must be aligned to their element size; at most 64
 * sources. Errors as reduce().
 */
rdResult_t wideSum(const WideSumArgs& args, cudaStream_t stream);

/** Number of usable CUDA devices; 0 when there is no driver or device. Never fails. */
int deviceCount();

/** One line per device ("0: NVIDIA H200, sm_90, 139 GiB"), or "no CUDA device (<reason>)". */
std::string describeDevices();

}  // namespace rd::kernels::cuda
