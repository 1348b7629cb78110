// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/job_spec_writer.h"

#include <cstdio>
#include <string>

#include "common/json_text.h"
#include "common/settings.h"

namespace rd::orch {
namespace {

// The spec names settings by their short name; the parsed spec keeps the variable's.
std::string settingShortName(const std::string& env) {
  for (const settings::Setting& s : settings::all()) {
    if (env == s.env) return s.name;
  }
  return env;  // not reached for a parsed spec: every entry was checked against the table
}

std::string poolDocument(const PoolSpec& pool) {
  if (pool.replica_count == 0) return "{}";
  std::string out = "{\"replicaCount\": " + std::to_string(pool.replica_count);
  if (!pool.command.empty()) out += ", \"command\": " + jsonStringArray(pool.command);
  if (!pool.env.empty()) {
    out += ", \"env\": [";
    for (size_t i = 0; i < pool.env.size(); ++i) {
      out += std::string(i > 0 ? ", " : "") + "{\"name\": " + jsonString(pool.env[i].first) +
             ", \"value\": " + jsonString(pool.env[i].second) + "}";
    }
    out += "]";
  }
  if (!pool.container.image_uri.empty()) {
    const ContainerSpec& c = pool.container;
    out += ", \"containerSpec\": {\"imageUri\": " + jsonString(c.image_uri);
    if (!c.command.empty()) out += ", \"command\": " + jsonStringArray(c.command);
    if (!c.args.empty()) out += ", \"args\": " + jsonStringArray(c.args);
    out += "}";
  }
  if (!pool.working_dir.empty()) out += ", \"workingDir\": " + jsonString(pool.working_dir);
  if (pool.nic_gbps > 0) {
    char gbps[32];
    std::snprintf(gbps, sizeof gbps, "%.17g", pool.nic_gbps);
    out += std::string(", \"resources\": {\"nicGbps\": ") + gbps + "}";
  }
  return out + "}";
}

}  // namespace

std::string jobSpecDocument(const JobSpec& spec) {
  std::string out = "{\"displayName\": " + jsonString(spec.name);
  if (!spec.base_output_dir.empty()) {
    out += ", \"baseOutputDirectory\": " + jsonString(spec.base_output_dir);
  }
  out += ", \"workerPoolSpecs\": [";
  for (int p = 0; p < kPoolCount; ++p) out += (p > 0 ? ", " : "") + poolDocument(spec.pools[p]);
  const Scheduling& s = spec.scheduling;
  out += "], \"scheduling\": {\"restartJobOnWorkerRestart\": " +
         std::string(s.restart_job_on_worker_restart ? "true" : "false") +
         ", \"maxRestarts\": " + std::to_string(s.max_restarts);
  if (s.disable_retries) out += ", \"disableRetries\": true";
  if (s.timeout_s > 0) out += ", \"timeout\": " + std::to_string(s.timeout_s);
  out += "}";
  if (!spec.libreduce_env.empty()) {
    out += ", \"libreduce\": {";
    for (size_t i = 0; i < spec.libreduce_env.size(); ++i) {
      out += std::string(i > 0 ? ", " : "") +
             jsonString(settingShortName(spec.libreduce_env[i].first)) + ": " +
             jsonString(spec.libreduce_env[i].second);
    }
    out += "}";
  }
  const ReducerPoolRef& shared = spec.reducer_pool;
  if (shared.attached()) {
    out += ", \"reducerPool\": {\"addresses\": " + jsonStringArray(shared.addresses) +
           ", \"keyFile\": " + jsonString(shared.key_file) +
           ", \"commId\": " + jsonString(shared.comm_id) + "}";
  }
  return out + "}\n";
}

}  // namespace rd::orch
