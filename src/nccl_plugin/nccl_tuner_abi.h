/* SPDX-License-Identifier: BSD-3-Clause */
// NCCL's tuner plugin ABI, declared here as nccl_net_abi.h declares the Net one. NCCL looks up
// ncclTunerPlugin_vN newest first; read from libnccl.so.2 of each release
// (scripts/nccl_abi_table.sh), it loads _v4 in 2.24 - 2.27, _v5 in 2.28 - 2.29, _v6 (adds
// getChunkSize) in 2.30 - 2.31 and _v7 (v6's calls, a larger constants table) in 2.32.
// Only what this plugin uses is declared; the constants tables are never touched, so they stay
// incomplete types.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "nccl_plugin/nccl_net_abi.h"

// NCCL's collective numbering (ncclFunc_t), unchanged since 2.19.
enum ncclFunc_t : int {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
};

// Rows and columns of the cost table NCCL hands getCollInfo (float[numAlgo][numProto], in
// microseconds; NCCL_ALGO_PROTO_IGNORE (-1) marks what it may not choose). NCCL picks the
// cheapest entry the tuner leaves.
constexpr int kNcclAlgoTree = 0;
constexpr int kNcclAlgoRing = 1;
constexpr int kNcclAlgoCollNetDirect = 2;
constexpr int kNcclAlgoCollNetChain = 3;
constexpr int kNcclProtoSimple = 2;
constexpr float kNcclAlgoProtoIgnore = -1.0f;
constexpr unsigned long kNcclLogTuning = 0x40;  // NCCL_TUNING

struct ncclNvlDomainInfo_v5_t;   // NVLink domains: not used
struct ncclTunerConstants_v5_t;  // v5, v6: NCCL's latency and bandwidth constants: not used
struct ncclTunerConstants_v7_t;  // v7: the same with one more compute capability

using ncclTunerGetCollInfo_t = ncclResult_t (*)(void* context, ncclFunc_t coll_type, size_t bytes,
                                                int num_pipe_ops, float** coll_cost_table,
                                                int num_algo, int num_proto, int reg_buff,
                                                int* n_channels);
using ncclTunerGetChunkSize_t = ncclResult_t (*)(void* context, ncclFunc_t coll_type, size_t bytes,
                                                 int algo, int proto, int n_channels,
                                                 size_t* chunk_size);

struct ncclTuner_v4_t {
  const char* name;
  ncclResult_t (*init)(size_t n_ranks, size_t n_nodes, ncclDebugLogger_t logger, void** context);
  ncclTunerGetCollInfo_t getCollInfo;
  ncclResult_t (*destroy)(void* context);
};

struct ncclTuner_v5_t {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
                       ncclDebugLogger_t logger, ncclNvlDomainInfo_v5_t* nvl_domains,
                       ncclTunerConstants_v5_t* constants);
  ncclTunerGetCollInfo_t getCollInfo;
  ncclResult_t (*finalize)(void* context);
};

// v6 and v7 differ only in the constants table init may adjust.
template <typename Constants>
struct ncclTuner_v6_layout {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
                       ncclDebugLogger_t logger, ncclNvlDomainInfo_v5_t* nvl_domains,
                       Constants* constants);
  ncclTunerGetCollInfo_t getCollInfo;
  ncclResult_t (*finalize)(void* context);
  ncclTunerGetChunkSize_t getChunkSize;  // optional for NCCL; this plugin always sets it
};
using ncclTuner_v6_t = ncclTuner_v6_layout<ncclTunerConstants_v5_t>;
using ncclTuner_v7_t = ncclTuner_v6_layout<ncclTunerConstants_v7_t>;
