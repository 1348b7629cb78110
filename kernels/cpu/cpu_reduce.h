// SPDX-License-Identifier: BSD-3-Clause
// CPU reductions: picks the instruction set at run time (by what the running CPU supports, or
// LIBREDUCE_CPU_ISA), splits large reductions across threads, and uses non-temporal stores for
// destinations too large to stay in cache.
#pragma once

#include <cstddef>
#include <string>

#include "reduce_kernel.h"
#include "wide_sum.h"

namespace rd::kernels::cpu {

enum class Isa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };
inline constexpr int kNumIsas = 3;

/** "scalar", "avx2", "avx512". */
const char* isaName(Isa isa);

/** Parses an ISA name (not "auto"); false when unknown. */
bool parseIsa(const std::string& name, Isa* out);

/** True when the running CPU (and OS) can execute kernels built for @p isa. */
bool isaSupported(Isa isa);

/** The fastest ISA the running CPU supports. */
Isa bestIsa();

/** How one reduction runs. */
struct Options {
  Isa isa = Isa::kScalar;
  int threads = 1;                // parts run in parallel, the caller included (>= 1)
  size_t split_bytes = 1 << 20;   // minimum destination bytes per part
  size_t stream_bytes = 4 << 20;  // destinations this large use non-temporal stores; 0 = never
};

/**
 * Options from the settings table (LIBREDUCE_CPU_ISA, LIBREDUCE_KERNEL_*), read once per process.
 * Fails with the setting's error when a value is malformed or names an ISA this CPU lacks.
 */
rdResult_t configuredOptions(Options* out);

/** Reduces with the configured options. */
rdResult_t reduce(const ReduceArgs& args);

/** Reduces with explicit options (tests and benchmarks compare ISAs and thread counts). */
rdResult_t reduce(const ReduceArgs& args, const Options& options);

/** A wide sum (kernels/wide_sum.h) with the configured options (no streaming stores). */
rdResult_t wideSum(const WideSumArgs& args);

/** A wide sum with explicit options. */
rdResult_t wideSum(const WideSumArgs& args, const Options& options);

/** Rounds @p count float32 values to @p narrow (rdBfloat16 / rdFloat16), nearest even. */
rdResult_t narrowFloats(const float* src, void* dst, size_t count, rdDataType_t narrow);

/** Widens @p count values of @p narrow to float32 (exact). */
rdResult_t widenToFloats(const void* src, float* dst, size_t count, rdDataType_t narrow);

}  // namespace rd::kernels::cpu
