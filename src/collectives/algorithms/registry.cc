// SPDX-License-Identifier: BSD-3-Clause
#include "collectives/algorithms/registry.h"

#include "collectives/algorithms/ring_composite.h"
#include "common/algorithm.h"
#include "common/dtype.h"
#include "common/status.h"

namespace rd::coll {

// Operation factories, one file each.
std::shared_ptr<Operation> makeReductionServerOp(Communicator* comm, const OpDesc& desc,
                                                 uint64_t seq, std::shared_ptr<Request> request);
std::shared_ptr<Operation> makeRingOp(Communicator* comm, const OpDesc& desc, uint64_t seq,
                                      std::shared_ptr<Request> request);

namespace {

constexpr uint32_t kEveryCollective =
    collBit(Collective::kAllReduce) | collBit(Collective::kReduceScatter) |
    collBit(Collective::kAllGather) | collBit(Collective::kBroadcast) |
    collBit(Collective::kBarrier);

// Selection prefers earlier rows after the communicator's own algorithm.
constexpr AlgorithmEntry kRegistry[] = {
    {.id = rdAlgoReductionServer,
     .collectives = kEveryCollective,
     .min_bytes = 0,
     .make = &makeReductionServerOp,
     .rewrite = nullptr},
    // An empty ring all-reduce synchronizes nobody: barriers and empty all-reduces are rewritten
    // into a one-byte one.
    {.id = rdAlgoRing,
     .collectives = collBit(Collective::kAllReduce),
     .min_bytes = 1,
     .make = &makeRingOp,
     .rewrite = &asRingAllReduce},
};

bool canRun(const AlgorithmEntry& e, bool has_reducers) {
  return has_reducers || !algorithmInfo(e.id).needs_reducers;
}

bool runsNatively(const AlgorithmEntry& e, bool has_reducers, const OpDesc& d) {
  if (!canRun(e, has_reducers)) return false;
  uint64_t bytes = d.count * dtypeSize(d.dtype);
  return (e.collectives & collBit(d.coll)) != 0 && bytes >= e.min_bytes;
}

}  // namespace

std::span<const AlgorithmEntry> algorithmRegistry() {
  return kRegistry;
}

const AlgorithmEntry* findAlgorithm(rdAlgorithm_t id) {
  for (const AlgorithmEntry& e : kRegistry) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

rdResult_t resolveAlgorithm(rdAlgorithm_t requested, bool has_reducers, rdAlgorithm_t* out) {
  if (requested == rdAlgoDefault) {
    // With reducers auto stays auto: the communicator measures rs against ring per size.
    *out = has_reducers ? rdAlgoDefault : rdAlgoRing;
    return rdSuccess;
  }
  const AlgorithmEntry* e = findAlgorithm(requested);
  if (e == nullptr) {
    return setErrorf(rdInvalidArgument, "unknown algorithm %d: expected %s",
                     static_cast<int>(requested), algorithmChoiceText().c_str());
  }
  if (!canRun(*e, has_reducers)) {
    return setErrorf(rdInvalidArgument,
                     "algorithm %s needs reducers, and this communicator has none: give them in "
                     "LIBREDUCE_REDUCERS or the unique id",
                     algorithmName(requested));
  }
  *out = requested;
  return rdSuccess;
}

rdResult_t selectAlgorithm(rdAlgorithm_t configured, bool has_reducers, uint32_t rank,
                           uint32_t nranks, OpDesc* desc) {
  const AlgorithmEntry* own = findAlgorithm(configured);
  if (own != nullptr && runsNatively(*own, has_reducers, *desc)) {
    desc->algorithm = own->id;
    return rdSuccess;
  }
  for (const AlgorithmEntry& e : kRegistry) {
    if (runsNatively(e, has_reducers, *desc)) {
      desc->algorithm = e.id;
      return rdSuccess;
    }
  }
  for (const AlgorithmEntry& e : kRegistry) {
    if (e.rewrite == nullptr || !canRun(e, has_reducers)) continue;
    rdResult_t st = e.rewrite(desc, rank, nranks);
    if (st != rdSuccess) return st;
    desc->algorithm = e.id;
    return rdSuccess;
  }
  return setError(rdUnsupported, "no algorithm runs this collective on this communicator");
}

}  // namespace rd::coll
