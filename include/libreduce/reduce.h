/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file reduce.h
 * @brief libreduce C API: status codes, data types, reduction operators and local reductions.
 *
 * All functions return an ::rdResult_t: 0 is success, positive values mean "still in progress"
 * and negative values are errors. ::rdGetErrorString turns any of them into text, and
 * ::rdGetLastError gives the detailed message of the last failure on the calling thread.
 *
 * The data type and operator numbering matches NCCL's (ncclDataType_t, ncclRedOp_t), so values
 * can be passed between the two without a table.
 */
#ifndef LIBREDUCE_REDUCE_H
#define LIBREDUCE_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "libreduce/config.h"

#if defined(_WIN32)
#define RD_API
#else
#define RD_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** Status of a call. 0 = success, > 0 = in progress, < 0 = error. */
typedef enum rdResult {
  rdSuccess = 0,
  rdInProgress = 1,       /**< Asynchronous operation not finished yet: test again. */
  rdInvalidArgument = -1, /**< A caller-supplied argument is wrong (null, out of range). */
  rdInvalidUsage = -2,    /**< Call not allowed in the current state. */
  rdUnsupported = -3,     /**< Valid request that this build or machine cannot serve. */
  rdSystemError = -4,     /**< An operating-system call failed (see the error text). */
  rdOutOfMemory = -5,     /**< An allocation failed or a configured memory limit was hit. */
  rdInternalError = -6,   /**< An invariant of libreduce itself was broken: a bug. */
  rdTimeout = -7,         /**< A wait ran past its configured timeout. */
  rdRemoteError = -8,     /**< A peer (worker or reducer) failed or reported an error. */
  rdConnectionError = -9, /**< A connection could not be made or was lost. */
  rdAuthFailed = -10,     /**< Authentication with the job secret was refused. */
  rdAborted = -11,        /**< The communicator was aborted; recreate it. */
  rdProtocolError = -12,  /**< A malformed or unexpected message arrived from the network. */
  rdCudaError = -13       /**< A CUDA runtime call failed. */
} rdResult_t;

/** Element types. Values equal NCCL's ncclDataType_t. */
typedef enum rdDataType {
  rdInt8 = 0,
  rdUint8 = 1,
  rdInt32 = 2,
  rdUint32 = 3,
  rdInt64 = 4,
  rdUint64 = 5,
  rdFloat16 = 6, /**< IEEE 754 binary16. */
  rdFloat32 = 7,
  rdFloat64 = 8,
  rdBfloat16 = 9, /**< bfloat16: the upper half of an IEEE binary32. */
  rdNumDataTypes = 10
} rdDataType_t;

/** Reduction operators. Values equal NCCL's ncclRedOp_t. */
typedef enum rdRedOp {
  rdSum = 0,
  rdProd = 1,
  rdMax = 2,
  rdMin = 3,
  rdAvg = 4, /**< Sum divided by the number of contributions. */
  rdNumRedOps = 5
} rdRedOp_t;

/** Text for a status code ("success", "timeout", ...); never NULL. */
RD_API const char* rdGetErrorString(rdResult_t result);

/**
 * Detailed message of the most recent error on the calling thread, or "" if none.
 * Valid until the next libreduce call on this thread.
 */
RD_API const char* rdGetLastError(void);

/** Library version as LIBREDUCE_VERSION_CODE (major * 10000 + minor * 100 + patch). */
RD_API rdResult_t rdGetVersion(int* version);

/** Size in bytes of one element of @p dtype, or 0 when @p dtype is not valid. */
RD_API size_t rdDataTypeSize(rdDataType_t dtype);

/** Name of a data type ("float32", "bfloat16", ...) or "invalid". */
RD_API const char* rdDataTypeName(rdDataType_t dtype);

/** Name of an operator ("sum", "avg", ...) or "invalid". */
RD_API const char* rdRedOpName(rdRedOp_t op);

/**
 * Reduces @p nsrcs host buffers element-wise into @p dst with the CPU kernels.
 *
 * Semantics shared by every kernel (CPU and CUDA), identical on every instruction set:
 * - Sources are combined in index order, one element at a time: dst[i] = s0[i] op s1[i] op ...
 *   Results are therefore deterministic and bit-identical across ISAs and thread counts.
 * - float16 and bfloat16 are widened to float32, reduced in float32 and rounded once
 *   (round to nearest even) at the end.
 * - Integer sum and prod wrap modulo 2^bits; avg divides the wrapped sum, truncating to zero.
 * - Floating avg multiplies the sum by (1 / nsrcs), computed in the accumulation type.
 * - NaN propagates through every operator: min and max return NaN when any input is NaN
 *   (unlike fmin/fmax); sum, prod and avg follow IEEE 754.
 * - min/max of +0.0 and -0.0 (equal values) return the later source's zero.
 *
 * @param srcs   array of @p nsrcs source pointers (nsrcs >= 1); no alignment required.
 * @param dst    destination; may be exactly equal to any source but must not partially
 *               overlap one.
 * @param count  number of elements; 0 is allowed and does nothing.
 * @return rdSuccess, rdInvalidArgument (null pointer, bad dtype/op, partial overlap) or
 *         rdUnsupported (LIBREDUCE_CPU_ISA names an instruction set this CPU lacks).
 */
RD_API rdResult_t rdLocalReduce(const void* const* srcs, int nsrcs, void* dst, size_t count,
                                rdDataType_t dtype, rdRedOp_t op);

#ifdef __cplusplus
} /* extern "C" */
#endif

#include "libreduce/comm.h" /* communicators and collectives */

#endif /* LIBREDUCE_REDUCE_H */
