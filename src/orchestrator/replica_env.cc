// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/replica_env.h"

#include <string>
#include <utility>
#include <vector>

#include "common/json_text.h"

namespace rd::orch {
namespace {

using EnvList = std::vector<std::pair<std::string, std::string>>;

int replicaCount(const JobSpec& spec, PoolKind kind) {
  return spec.pool(kind).replica_count;
}

bool hasPool(const JobSpec& spec, PoolKind kind) {
  return replicaCount(spec, kind) > 0;
}

const std::vector<std::string>& poolAddresses(const JobLayout& layout, PoolKind kind) {
  return layout.addresses[static_cast<int>(kind)];
}

// The built-in reduce-server is not a TensorFlow server; only a custom reducer program is one.
bool reducersAreTfServers(const JobSpec& spec) {
  return hasPool(spec, PoolKind::kReducers) && !spec.pool(PoolKind::kReducers).command.empty();
}

std::string joinComma(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ',';
    out += item;
  }
  return out;
}

// "host:port" or "[v6]:port" into host and port; no colon leaves the port empty.
std::pair<std::string, std::string> splitHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return {address, ""};
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return {host, address.substr(colon + 1)};
}

std::string clusterSpecJson(const JobSpec& spec, const JobLayout& layout,
                            const ReplicaId& replica) {
  std::string cluster;
  std::string pool_specs;
  int last_present = -1;
  for (int i = 0; i < kPoolCount; ++i) {
    if (spec.pools[i].replica_count > 0) last_present = i;
  }
  for (int i = 0; i < kPoolCount; ++i) {
    const auto kind = static_cast<PoolKind>(i);
    const int count = replicaCount(spec, kind);
    if (count > 0) {
      if (!cluster.empty()) cluster += ", ";
      cluster += jsonString("workerpool" + std::to_string(i)) + ": " +
                 jsonStringArray(poolAddresses(layout, kind));
    }
    // workerPoolSpecs keeps pool positions (an absent pool is {}), up to the last present one.
    if (i <= last_present) {
      if (i > 0) pool_specs += ", ";
      pool_specs += count > 0 ? "{\"replicaCount\": " + std::to_string(count) + "}" : "{}";
    }
  }
  const std::string task_type = "workerpool" + std::to_string(static_cast<int>(replica.pool));
  return "{\"cluster\": {" + cluster +
         "}, \"environment\": \"cloud\", \"task\": {\"type\": " + jsonString(task_type) +
         ", \"index\": " + std::to_string(replica.index) +
         ", \"trial\": " + jsonString(layout.trial_id) +
         "}, \"job\": {\"displayName\": " + jsonString(spec.name) +
         ", \"jobId\": " + jsonString(layout.job_id) + ", \"workerPoolSpecs\": [" + pool_specs +
         "]}}";
}

const char* tfTaskType(PoolKind kind) {
  switch (kind) {
    case PoolKind::kPrimary: return "chief";
    case PoolKind::kWorkers: return "worker";
    case PoolKind::kReducers: return "ps";
    case PoolKind::kEvaluators: return "evaluator";
  }
  return "worker";
}

// A built-in reducer still gets task "ps" (its pool's role), though the cluster leaves it out.
std::string tfConfigJson(const JobSpec& spec, const JobLayout& layout, const ReplicaId& replica) {
  // TensorFlow keeps the evaluator out of "worker": it is its own key, as in the pool layout.
  std::string cluster;
  for (int i = 0; i < kPoolCount; ++i) {
    const auto kind = static_cast<PoolKind>(i);
    if (!hasPool(spec, kind)) continue;
    if (kind == PoolKind::kReducers && !reducersAreTfServers(spec)) continue;
    if (!cluster.empty()) cluster += ", ";
    cluster += jsonString(tfTaskType(kind)) + ": " + jsonStringArray(poolAddresses(layout, kind));
  }
  return "{\"cluster\": {" + cluster +
         "}, \"task\": {\"type\": " + jsonString(tfTaskType(replica.pool)) +
         ", \"index\": " + std::to_string(replica.index) + "}, \"environment\": \"cloud\"}";
}

// torchrun's variables: the primary is rank 0 and the workers follow it.
void addTorchVariables(const JobSpec& spec, const JobLayout& layout, const ReplicaId& replica,
                       EnvList* env) {
  const bool has_primary = hasPool(spec, PoolKind::kPrimary);
  // The primary pool has one replica; its index is its rank.
  const int rank = (replica.pool == PoolKind::kWorkers && has_primary ? 1 : 0) + replica.index;
  const int world = replicaCount(spec, PoolKind::kPrimary) + replicaCount(spec, PoolKind::kWorkers);
  const auto& rank0_pool = poolAddresses(layout, rankZeroPool(spec));
  const auto [master_addr, master_port] =
      rank0_pool.empty() ? std::pair<std::string, std::string>() : splitHostPort(rank0_pool[0]);
  const bool one_host = replica.local_rank < 0;
  env->emplace_back("RANK", std::to_string(rank));
  env->emplace_back("WORLD_SIZE", std::to_string(world));
  env->emplace_back("LOCAL_RANK", std::to_string(one_host ? rank : replica.local_rank));
  env->emplace_back("LOCAL_WORLD_SIZE",
                    std::to_string(one_host ? world : replica.local_world_size));
  env->emplace_back("NODE_RANK", std::to_string(one_host ? 0 : replica.node_rank));
  env->emplace_back("MASTER_ADDR", master_addr);
  env->emplace_back("MASTER_PORT", master_port);
  env->emplace_back("TORCHELASTIC_RESTART_COUNT",
                    std::to_string(replica.restarts + layout.attempt));
}

// The settings that join a rank to the reducers; reducers need only the secret's file.
void addLibreduceVariables(const JobSpec& spec, const JobLayout& layout, const ReplicaId& replica,
                           EnvList* env) {
  const ReducerPoolRef& shared = spec.reducer_pool;
  if (isRankPool(replica.pool) && shared.attached()) {
    // The one communicator the job key admits, in every attempt: a restarted one joins once
    // the reducers dropped the last (docs/reducectl.md).
    env->emplace_back("LIBREDUCE_REDUCERS", joinComma(shared.addresses));
    env->emplace_back("LIBREDUCE_COMM_ID", shared.comm_id);
    env->emplace_back("LIBREDUCE_SECRET_FILE", layout.pool_key_file);
  } else if (isRankPool(replica.pool)) {
    env->emplace_back("LIBREDUCE_REDUCERS", joinComma(poolAddresses(layout, PoolKind::kReducers)));
    // A fresh communicator per gang attempt, so a restarted job never meets stale state.
    env->emplace_back("LIBREDUCE_COMM_ID",
                      layout.job_id + (layout.trial_id.empty() ? "" : "-trial" + layout.trial_id) +
                          "-attempt" + std::to_string(layout.attempt));
  }
  if (!isRankPool(replica.pool) || !shared.attached()) {
    env->emplace_back("LIBREDUCE_SECRET_FILE", layout.secret_file);
  }
  for (const auto& entry : spec.libreduce_env) env->push_back(entry);
}

// output_dir without trailing slashes, so the AIP_* paths have exactly one between parts.
std::string trimmedDir(const std::string& dir) {
  size_t end = dir.size();
  while (end > 1 && dir[end - 1] == '/') --end;
  return dir.substr(0, end);
}

void addVertexVariables(const JobLayout& layout, EnvList* env) {
  const std::string base = trimmedDir(layout.output_dir);
  const std::string sep = base.empty() || base == "/" ? "" : "/";
  // Vertex gives these directories with a trailing slash; programs append file names to them.
  env->emplace_back("AIP_MODEL_DIR", base + sep + "model/");
  env->emplace_back("AIP_CHECKPOINT_DIR", base + sep + "checkpoints/");
  env->emplace_back("AIP_TENSORBOARD_LOG_DIR", base + sep + "logs/");
  env->emplace_back("CLOUD_ML_JOB_ID", layout.job_id);
  env->emplace_back("CLOUD_ML_TRIAL_ID", layout.trial_id);
  if (!layout.hp_metric_file.empty()) {
    env->emplace_back("CLOUD_ML_HP_METRIC_FILE", layout.hp_metric_file);
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> replicaEnvironment(const JobSpec& spec,
                                                                    const JobLayout& layout,
                                                                    const ReplicaId& replica) {
  EnvList env;
  env.emplace_back("CLUSTER_SPEC", clusterSpecJson(spec, layout, replica));
  env.emplace_back("TF_CONFIG", tfConfigJson(spec, layout, replica));
  if (isRankPool(replica.pool)) addTorchVariables(spec, layout, replica, &env);
  if (replica.pool != PoolKind::kEvaluators) addLibreduceVariables(spec, layout, replica, &env);
  addVertexVariables(layout, &env);
  return env;
}

}  // namespace rd::orch
