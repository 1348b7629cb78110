// SPDX-License-Identifier: BSD-3-Clause
#include "nccl_plugin/tuner.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "common/cost_model.h"
#include "common/settings.h"
#include "nccl_plugin/plugin_log.h"

namespace rd::nccl::tuner {

namespace {

struct Context {
  size_t nodes = 0;
  bool enabled = false;  // the setting is on, the job has reducers, and it spans nodes
  size_t reducers = 0;
  double latency_us = 0;
  uint64_t chunk_bytes = 0;  // 0: auto
  std::atomic<bool> told_collnet{false};
  std::atomic<bool> told_nccl{false};
};

// The settings the tuner reads; a malformed one turns the tuner off with a warning (NCCL still
// runs, with its own choices).
bool readSettings(Context* ctx) {
  using settings::Id;
  int64_t on = 0, latency = 0;
  uint64_t chunk = 0;
  if (settings::readInt(Id::kNcclTuner, &on) != rdSuccess ||
      settings::readInt(Id::kNcclCollNetLatencyUs, &latency) != rdSuccess ||
      settings::readSize(Id::kNcclChunkBytes, &chunk) != rdSuccess) {
    RD_NCCL_WARN("tuner off: %s", rdGetLastError());
    return false;
  }
  if (on == 0) {
    RD_NCCL_INFO(kNcclLogInit | kNcclLogTuning, "tuner off: LIBREDUCE_NCCL_TUNER=0");
    return false;
  }
  std::vector<std::string> reducers;
  if (coll::parseReducerList(settings::rawValue(Id::kReducers), &reducers) != rdSuccess ||
      reducers.empty()) {
    RD_NCCL_INFO(kNcclLogInit | kNcclLogTuning, "tuner idle: LIBREDUCE_REDUCERS names no reducers");
    return false;
  }
  ctx->reducers = reducers.size();
  ctx->latency_us = static_cast<double>(latency);
  ctx->chunk_bytes = chunk;
  return true;
}

float entry(float** table, int num_proto, int algo, int proto) {
  return reinterpret_cast<float*>(table)[algo * num_proto + proto];
}

void setEntry(float** table, int num_proto, int algo, int proto, float value) {
  reinterpret_cast<float*>(table)[algo * num_proto + proto] = value;
}

bool isCollNet(int algo) {
  return algo == kNcclAlgoCollNetDirect || algo == kNcclAlgoCollNetChain;
}

// The CollNet algorithm NCCL offers at the lower cost, or -1 when it offers none.
int offeredCollNet(float** table, int num_algo, int num_proto) {
  int best = -1;
  if (num_proto <= kNcclProtoSimple) return best;
  for (int algo : {kNcclAlgoCollNetDirect, kNcclAlgoCollNetChain}) {
    if (algo >= num_algo) continue;
    float cost = entry(table, num_proto, algo, kNcclProtoSimple);
    if (cost < 0) continue;
    if (best < 0 || cost < entry(table, num_proto, best, kNcclProtoSimple)) best = algo;
  }
  return best;
}

// NCCL's cheapest entry that is not CollNet; negative when there is none.
float cheapestOther(float** table, int num_algo, int num_proto) {
  float best = -1;
  for (int algo = 0; algo < num_algo; ++algo) {
    if (isCollNet(algo)) continue;
    for (int proto = 0; proto < num_proto; ++proto) {
      float cost = entry(table, num_proto, algo, proto);
      if (cost >= 0 && (best < 0 || cost < best)) best = cost;
    }
  }
  return best;
}

// Microseconds the model predicts through the reducers, from NCCL's own ring estimate.
double predictedCollNetUs(const Context& ctx, float ring_us) {
  const auto nodes = static_cast<double>(ctx.nodes);
  const double ratio =
      cost::reductionServerPerByte(nodes, 1, static_cast<double>(ctx.reducers), 1) /
      cost::ringPerByte(nodes);
  return ctx.latency_us + ring_us * ratio;
}

}  // namespace

ncclResult_t init(size_t n_ranks, size_t n_nodes, uint64_t comm_id, ncclDebugLogger_t logger,
                  void** context) {
  if (context == nullptr) return ncclInvalidArgument;
  setLogger(logger);
  auto* ctx = new Context;
  ctx->nodes = n_nodes;
  ctx->enabled = n_nodes >= 2 && readSettings(ctx);
  if (ctx->enabled) {
    RD_NCCL_INFO(kNcclLogInit | kNcclLogTuning,
                 "tuner on for comm 0x%llx: %zu ranks on %zu nodes, %zu reducers; CollNet "
                 "preferred for all-reduces the model gives to the reducers",
                 static_cast<unsigned long long>(comm_id), n_ranks, n_nodes, ctx->reducers);
  }
  *context = ctx;
  return ncclSuccess;
}

ncclResult_t getCollInfo(void* context, ncclFunc_t coll_type, size_t bytes, int /*num_pipe_ops*/,
                         float** coll_cost_table, int num_algo, int num_proto, int /*reg_buff*/,
                         int* /*n_channels*/) {
  auto* ctx = static_cast<Context*>(context);
  if (ctx == nullptr || coll_cost_table == nullptr || num_algo < 0 || num_proto < 0) {
    return ncclInvalidArgument;
  }
  // All-gather and reduce-scatter through CollNet move a whole window per rank here
  // (coll_net.h): NCCL's own choice is better for them.
  if (!ctx->enabled || coll_type != ncclFuncAllReduce) return ncclSuccess;
  int collnet = offeredCollNet(coll_cost_table, num_algo, num_proto);
  if (collnet < 0) return ncclSuccess;  // CollNet not set up for this communicator
  float other = cheapestOther(coll_cost_table, num_algo, num_proto);
  float ring = num_algo > kNcclAlgoRing
                   ? entry(coll_cost_table, num_proto, kNcclAlgoRing, kNcclProtoSimple)
                   : -1.0f;
  if (ring < 0) ring = other;
  double predicted = ring < 0 ? ctx->latency_us : predictedCollNetUs(*ctx, ring);
  if (other >= 0 && predicted >= other) {
    if (!ctx->told_nccl.exchange(true)) {
      RD_NCCL_INFO(kNcclLogTuning,
                   "tuner: all-reduce of %zu bytes left to NCCL (reducers %.1f us predicted, "
                   "NCCL's best %.1f us)",
                   bytes, predicted, static_cast<double>(other));
    }
    return ncclSuccess;
  }
  setEntry(coll_cost_table, num_proto, collnet, kNcclProtoSimple, static_cast<float>(predicted));
  if (!ctx->told_collnet.exchange(true)) {
    RD_NCCL_INFO(kNcclLogTuning,
                 "tuner: all-reduce of %zu bytes through CollNet%s (reducers %.1f us predicted, "
                 "NCCL's best other %.1f us)",
                 bytes, collnet == kNcclAlgoCollNetDirect ? "Direct" : "Chain", predicted,
                 static_cast<double>(other));
  }
  return ncclSuccess;
}

ncclResult_t getChunkSize(void* context, ncclFunc_t coll_type, size_t bytes, int algo,
                          int /*proto*/, int n_channels, size_t* chunk_size) {
  auto* ctx = static_cast<Context*>(context);
  if (ctx == nullptr || chunk_size == nullptr) return ncclInvalidArgument;
  if (!ctx->enabled || coll_type != ncclFuncAllReduce || !isCollNet(algo)) return ncclSuccess;
  size_t want = ctx->chunk_bytes;
  if (want == 0) {  // auto: one chunk per channel, as far as NCCL's buffer allows
    constexpr size_t kAlign = 4096;
    size_t per_channel = bytes / static_cast<size_t>(std::max(1, n_channels));
    want = (per_channel + kAlign - 1) / kAlign * kAlign;
  }
  *chunk_size = std::max(*chunk_size, want);
  return ncclSuccess;
}

ncclResult_t finalize(void* context) {
  delete static_cast<Context*>(context);
  return ncclSuccess;
}

}  // namespace rd::nccl::tuner
