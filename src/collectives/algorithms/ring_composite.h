// SPDX-License-Identifier: BSD-3-Clause
// Collectives other than all-reduce on a communicator without reducers, run as one ring
// all-reduce each: correct for every dtype and exact (data movement is a uint8 sum with
// zeros), though not bandwidth-optimal (all-gather and broadcast move n times the bytes of a
// dedicated ring algorithm). This keeps every collective available where frameworks need them
// (DDP's start-up broadcast and all-gather) without reducers.
#pragma once

#include <cstdint>

#include "collectives/operation.h"
#include "libreduce/reduce.h"

namespace rd::coll {

/**
 * Rewrites @p desc (a reduce-scatter, all-gather, broadcast, barrier or empty all-reduce of rank
 * @p rank of @p nranks) into the ring all-reduce that computes it, preparing the caller's receive
 * buffer or a scratch buffer the operation owns. The caller's buffers are checked already. The
 * ring algorithm's rewrite in the registry.
 */
rdResult_t asRingAllReduce(OpDesc* desc, uint32_t rank, uint32_t nranks);

}  // namespace rd::coll
