// SPDX-License-Identifier: BSD-3-Clause
// The registry of algorithms: for each rdAlgorithm_t (named and described in
// common/algorithm.h), the collectives and sizes it runs, what it needs, and the factory of its
// operations. The communicator resolves its algorithm once (resolveAlgorithm) and picks the one
// that runs each operation here (selectAlgorithm). Adding an algorithm is one file with its
// operation and one row in registry.cc (and its name in common/algorithm.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "collectives/operation.h"
#include "libreduce/reduce.h"

namespace rd::coll {

class Communicator;

using OperationFactory = std::shared_ptr<Operation> (*)(Communicator* comm, const OpDesc& desc,
                                                        uint64_t seq,
                                                        std::shared_ptr<Request> request);

/**
 * Rewrites an operation this algorithm does not run natively into one it does (the ring runs
 * reduce-scatter, all-gather, broadcast and barrier as one all-reduce); null when none.
 */
using Rewrite = rdResult_t (*)(OpDesc* desc, uint32_t rank, uint32_t nranks);

/** One bit per collective in AlgorithmEntry::collectives. */
constexpr uint32_t collBit(Collective c) {
  return 1u << static_cast<uint32_t>(c);
}

struct AlgorithmEntry {
  rdAlgorithm_t id;      // its name, description and needs: common/algorithm.h
  uint32_t collectives;  // collBit()s it runs natively
  uint64_t min_bytes;    // smallest operation it runs natively (a barrier is 0 bytes)
  OperationFactory make;
  Rewrite rewrite;  // for the collectives it does not run natively, or null
};

/** Every algorithm but auto, in the order selection prefers them. */
std::span<const AlgorithmEntry> algorithmRegistry();

/** The entry of @p id; null for rdAlgoDefault or an unknown value. */
const AlgorithmEntry* findAlgorithm(rdAlgorithm_t id);

/**
 * The communicator's algorithm from what was asked for: auto stays auto with reducers (the
 * communicator's tuner picks rs or ring for each all-reduce; other collectives run rs) and
 * becomes ring without; rs without reducers is an error.
 */
rdResult_t resolveAlgorithm(rdAlgorithm_t requested, bool has_reducers, rdAlgorithm_t* out);

/**
 * The algorithm that runs @p desc on a communicator resolved to @p configured: the first, the
 * configured one then the others in registry order, that runs it natively and has what it
 * needs; else the first that can rewrite it (applied to @p desc). Sets desc->algorithm.
 */
rdResult_t selectAlgorithm(rdAlgorithm_t configured, bool has_reducers, uint32_t rank,
                           uint32_t nranks, OpDesc* desc);

}  // namespace rd::coll
