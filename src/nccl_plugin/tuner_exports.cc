// SPDX-License-Identifier: BSD-3-Clause
// The exported ncclTunerPlugin_v4 .. _v7 structs, each version's signatures adapted to
// tuner.h. NCCL finds them in this library (its net plugin) when NCCL_TUNER_PLUGIN is unset, or
// through NCCL_TUNER_PLUGIN=libreduce.
#include "nccl_plugin/tuner.h"

namespace tuner = rd::nccl::tuner;

namespace {

ncclResult_t initV4(size_t n_ranks, size_t n_nodes, ncclDebugLogger_t logger, void** context) {
  return tuner::init(n_ranks, n_nodes, 0, logger, context);
}

template <typename Constants>
ncclResult_t initV5(void** context, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
                    ncclDebugLogger_t logger, ncclNvlDomainInfo_v5_t* /*nvl_domains*/,
                    Constants* /*constants*/) {
  return tuner::init(n_ranks, n_nodes, comm_id, logger, context);
}

}  // namespace

#define RD_NCCL_EXPORT __attribute__((visibility("default")))

extern "C" {

// NCCL 2.24 - 2.27 (and later ones, which try newer versions first).
RD_NCCL_EXPORT ncclTuner_v4_t ncclTunerPlugin_v4 = {
    .name = "libreduce",
    .init = initV4,
    .getCollInfo = tuner::getCollInfo,
    .destroy = tuner::finalize,
};

// NCCL 2.28 - 2.29.
RD_NCCL_EXPORT ncclTuner_v5_t ncclTunerPlugin_v5 = {
    .name = "libreduce",
    .init = initV5<ncclTunerConstants_v5_t>,
    .getCollInfo = tuner::getCollInfo,
    .finalize = tuner::finalize,
};

// NCCL 2.30 - 2.31.
RD_NCCL_EXPORT ncclTuner_v6_t ncclTunerPlugin_v6 = {
    .name = "libreduce",
    .init = initV5<ncclTunerConstants_v5_t>,
    .getCollInfo = tuner::getCollInfo,
    .finalize = tuner::finalize,
    .getChunkSize = tuner::getChunkSize,
};

// NCCL 2.32.
RD_NCCL_EXPORT ncclTuner_v7_t ncclTunerPlugin_v7 = {
    .name = "libreduce",
    .init = initV5<ncclTunerConstants_v7_t>,
    .getCollInfo = tuner::getCollInfo,
    .finalize = tuner::finalize,
    .getChunkSize = tuner::getChunkSize,
};

}  // extern "C"
