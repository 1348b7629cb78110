// SPDX-License-Identifier: BSD-3-Clause
// The tuner half of the plugin: makes NCCL choose CollNet (the reducers) for the all-reduces
// where the reduction server wins, and leaves every other choice to NCCL.
//
// NCCL sets up CollNet for a communicator but, by its own cost model, rarely picks it over ring
// and tree. For each all-reduce on two or more nodes, where NCCL's cost table offers CollNet
// (so every node joined the same reducers), the tuner predicts the time through the reducers:
//
//   LIBREDUCE_NCCL_COLLNET_LATENCY_US + NCCL's ring estimate x (rs / ring cost per byte)
//
// with the per-byte costs of common/cost_model.h (n = nodes, k = the reducers of
// LIBREDUCE_REDUCERS, links of one speed), and when that beats NCCL's cheapest other entry it
// writes the prediction into the CollNet entry, which NCCL then picks. The inputs are the same
// on every rank (NCCL's table, the node count, the reducer list CollNet's connect checked to be
// the same everywhere), so every rank makes the same choice, as NCCL requires.
//
// getChunkSize (v6+) raises CollNet's chunk (each chunk is one all-reduce through the reducers,
// a round trip of its own) to LIBREDUCE_NCCL_CHUNK_BYTES, by default the bytes per channel;
// NCCL clamps it to its buffer. LIBREDUCE_NCCL_TUNER=0 turns both off. Version-neutral; the
// exported structs are in tuner_exports.cc.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl_plugin/nccl_tuner_abi.h"

namespace rd::nccl::tuner {

/** A context per NCCL communicator; null @p logger keeps the one NCCL gave before. */
ncclResult_t init(size_t n_ranks, size_t n_nodes, uint64_t comm_id, ncclDebugLogger_t logger,
                  void** context);
ncclResult_t getCollInfo(void* context, ncclFunc_t coll_type, size_t bytes, int num_pipe_ops,
                         float** coll_cost_table, int num_algo, int num_proto, int reg_buff,
                         int* n_channels);
ncclResult_t getChunkSize(void* context, ncclFunc_t coll_type, size_t bytes, int algo, int proto,
                          int n_channels, size_t* chunk_size);
ncclResult_t finalize(void* context);

}  // namespace rd::nccl::tuner
