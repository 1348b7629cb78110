// SPDX-License-Identifier: BSD-3-Clause
// Exact test data: values whose reductions are exact in any order (small integers; 1 or 2 for
// products), drawn from a hash of the element, the rank and a salt that differs from one
// operation to the next. Depends on libreduce's public header only (its dtype and operator
// numbers, which are NCCL's), so programs that do not link libreduce (the NCCL plugin harness)
// draw the same data.
#pragma once

#include <cstddef>
#include <cstdint>

#include "libreduce/reduce.h"

namespace rd::perf {

bool isFloat(rdDataType_t d);

/** splitmix64's finalizer: every bit of @p key moves about half of the result's. */
uint64_t mix(uint64_t key);

/** Salts span [0, kSaltSpan): a cache of expected results covers that many elements more. */
inline constexpr uint64_t kSaltSpan = 4096;

/**
 * The salt of operation @p seq of a communicator salted @p comm_salt (any number every rank of
 * it agrees on): the data of two consecutive operations always differ (977 and kSaltSpan are
 * coprime), so a result left from the operation before, or put at another chunk's offset, is
 * wrong. A salt shifts the element index: salted data are the unsalted data further along.
 */
inline uint64_t opSalt(uint64_t comm_salt, uint64_t seq) {
  return (comm_salt + seq * 977) % kSaltSpan;
}

/**
 * Element @p i of @p rank's exact input for @p op under @p salt. Values come from a hash of the
 * index and the rank, so no two chunks of a buffer look alike, in every dtype.
 */
double exactValue(int rank, size_t i, rdDataType_t d, rdRedOp_t op, uint64_t salt = 0);

/** Stores / loads element @p i of a buffer of dtype @p d (values exactly representable). */
void store(void* buf, size_t i, double v, rdDataType_t d);
double load(const void* buf, size_t i, rdDataType_t d);

}  // namespace rd::perf
