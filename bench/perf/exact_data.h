// SPDX-License-Identifier: BSD-3-Clause
// Inputs whose reductions are exact in any order (small integers; 1 or 2 for products), and the
// check of a result against them. Shared by the perf programs and the multi-process tests: every
// rank can regenerate every other rank's input, so no rank needs the others' data to verify.
#pragma once

#include <cstddef>
#include <cstdint>

#include "perf/exact_values.h"

namespace rd::perf {

/**
 * Fills @p count elements of @p buf with @p rank's exact input under @p salt, element indices
 * starting at @p first (so a rank's slice of a larger logical buffer gets the same values).
 */
void fillExact(void* buf, size_t count, int rank, size_t first, rdDataType_t d, rdRedOp_t op,
               uint64_t salt = 0);

/**
 * Counts elements of @p got (elements first .. first+count of the logical buffer) that differ
 * from the reduction of all @p nranks ranks' exact inputs. Exact comparison; avg on floating
 * types allows 2 ULP of @p precision (the type the result was last rounded to: @p d, or the
 * wire type of a compressed operation). Works block by block: memory stays small for huge
 * buffers.
 */
size_t countWrongReduction(const void* got, size_t count, size_t first, int nranks, rdDataType_t d,
                           rdRedOp_t op, rdDataType_t precision = rdNumDataTypes,
                           uint64_t salt = 0);

/** Counts elements of @p got that differ from @p rank's exact input (all-gather, broadcast). */
size_t countWrongCopy(const void* got, size_t count, int rank, size_t first, rdDataType_t d,
                      rdRedOp_t op, uint64_t salt = 0);

}  // namespace rd::perf
