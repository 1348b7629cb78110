// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/managed_env.h"

#include <iterator>

namespace rd::orch {

namespace {

struct ManagedVariable {
  const char* name;      // a plain variable, or null for a libreduce setting
  settings::Id setting;  // when name is null
  const char* reason;
};

constexpr const char* kPerReplica = "reducectl sets it for each replica";

constexpr ManagedVariable kManaged[] = {
    {"CLUSTER_SPEC", {}, kPerReplica},
    {"TF_CONFIG", {}, kPerReplica},
    {"RANK", {}, kPerReplica},
    {"WORLD_SIZE", {}, kPerReplica},
    {"LOCAL_RANK", {}, kPerReplica},
    {"LOCAL_WORLD_SIZE", {}, kPerReplica},
    {"NODE_RANK", {}, kPerReplica},
    {"MASTER_ADDR", {}, kPerReplica},
    {"MASTER_PORT", {}, kPerReplica},
    {"TORCHELASTIC_RESTART_COUNT", {}, kPerReplica},
    {"CLOUD_ML_JOB_ID", {}, kPerReplica},
    {"CLOUD_ML_TRIAL_ID", {}, kPerReplica},
    {"CLOUD_ML_HP_METRIC_FILE", {}, "reducectl gives each trial of a tuning job its own file"},
    {"AIP_MODEL_DIR", {}, kPerReplica},
    {"AIP_CHECKPOINT_DIR", {}, kPerReplica},
    {"AIP_TENSORBOARD_LOG_DIR", {}, kPerReplica},
    {nullptr, settings::Id::kReducers,
     "reducectl points the workers at the reducer pool (workerPoolSpecs[2])"},
    {nullptr, settings::Id::kSecret,
     "reducectl makes the job secret and gives it to every replica"},
    {nullptr, settings::Id::kSecretFile,
     "reducectl makes the job secret and gives it to every replica"},
    {nullptr, settings::Id::kCommId, "reducectl gives each run of the job its own communicator id"},
    // Never set by reducectl, but an inherited value would override RANK / WORLD_SIZE.
    {nullptr, settings::Id::kRank, "reducectl sets RANK for each replica"},
    {nullptr, settings::Id::kWorldSize, "reducectl sets WORLD_SIZE from the pools' replica counts"},
};

const char* nameOf(const ManagedVariable& m) {
  return m.name != nullptr ? m.name : settings::info(m.setting).env;
}

}  // namespace

const std::vector<std::string>& managedVariables() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const ManagedVariable& m : kManaged) all.emplace_back(nameOf(m));
    return all;
  }();
  return names;
}

const char* managedVariableReason(const std::string& name) {
  for (const ManagedVariable& m : kManaged) {
    if (name == nameOf(m)) return m.reason;
  }
  return nullptr;
}

const char* managedSettingReason(settings::Id id) {
  for (const ManagedVariable& m : kManaged) {
    if (m.name == nullptr && m.setting == id) return m.reason;
  }
  return nullptr;
}

}  // namespace rd::orch
