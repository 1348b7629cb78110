// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/replica_env.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/json_text.h"
#include "orchestrator/job_spec.h"

namespace rd::orch {
namespace {

using EnvList = std::vector<std::pair<std::string, std::string>>;

std::optional<std::string> lookup(const EnvList& env, const std::string& name) {
  for (const auto& [key, value] : env) {
    if (key == name) return value;
  }
  return std::nullopt;
}

std::string get(const EnvList& env, const std::string& name) {
  auto value = lookup(env, name);
  EXPECT_TRUE(value.has_value()) << name << " is not set";
  return value.value_or("<unset>");
}

// Primary 1, workers 3, built-in reducers 2, evaluator 1: the full Vertex layout.
JobSpec fullSpec() {
  JobSpec spec;
  spec.name = "demo";
  spec.pool(PoolKind::kPrimary).replica_count = 1;
  spec.pool(PoolKind::kPrimary).command = {"python3", "train.py"};
  spec.pool(PoolKind::kWorkers).replica_count = 3;
  spec.pool(PoolKind::kWorkers).command = {"python3", "train.py"};
  spec.pool(PoolKind::kReducers).replica_count = 2;
  spec.pool(PoolKind::kEvaluators).replica_count = 1;
  spec.pool(PoolKind::kEvaluators).command = {"python3", "eval.py"};
  spec.libreduce_env = {{"LIBREDUCE_CHUNK_BYTES", "1M"}};
  return spec;
}

JobLayout fullLayout() {
  JobLayout layout;
  layout.job_id = "demo-20240101";
  layout.attempt = 1;
  layout.output_dir = "/tmp/jobs/demo";
  layout.secret_file = "/tmp/jobs/demo/secret";
  layout.addresses[0] = {"127.0.0.1:29500"};
  layout.addresses[1] = {"127.0.0.1:29510", "127.0.0.1:29511", "127.0.0.1:29512"};
  layout.addresses[2] = {"127.0.0.1:40001", "127.0.0.1:40002"};
  layout.addresses[3] = {"127.0.0.1:29520"};
  return layout;
}

EnvList envFor(PoolKind pool, int index, int restarts = 0) {
  return replicaEnvironment(fullSpec(), fullLayout(), ReplicaId{pool, index, restarts});
}

TEST(ReplicaEnv, PrimaryIsRankZero) {
  const EnvList env = envFor(PoolKind::kPrimary, 0);
  EXPECT_EQ(get(env, "RANK"), "0");
  EXPECT_EQ(get(env, "WORLD_SIZE"), "4");
  EXPECT_EQ(get(env, "LOCAL_RANK"), "0");
  EXPECT_EQ(get(env, "LOCAL_WORLD_SIZE"), "4");
  EXPECT_EQ(get(env, "MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(get(env, "MASTER_PORT"), "29500");
  EXPECT_EQ(get(env, "TORCHELASTIC_RESTART_COUNT"), "1");
}

TEST(ReplicaEnv, WorkersFollowThePrimary) {
  const EnvList env = envFor(PoolKind::kWorkers, 2, /*restarts=*/2);
  EXPECT_EQ(get(env, "RANK"), "3");
  EXPECT_EQ(get(env, "WORLD_SIZE"), "4");
  EXPECT_EQ(get(env, "LOCAL_RANK"), "3");
  EXPECT_EQ(get(env, "LOCAL_WORLD_SIZE"), "4");
  EXPECT_EQ(get(env, "MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(get(env, "MASTER_PORT"), "29500");
  EXPECT_EQ(get(env, "TORCHELASTIC_RESTART_COUNT"), "3");  // own restarts + gang attempt
}

TEST(ReplicaEnv, LibreduceSettingsForRanks) {
  const EnvList env = envFor(PoolKind::kWorkers, 0);
  EXPECT_EQ(get(env, "LIBREDUCE_REDUCERS"), "127.0.0.1:40001,127.0.0.1:40002");
  EXPECT_EQ(get(env, "LIBREDUCE_COMM_ID"), "demo-20240101-attempt1");
  EXPECT_EQ(get(env, "LIBREDUCE_SECRET_FILE"), "/tmp/jobs/demo/secret");
  EXPECT_EQ(get(env, "LIBREDUCE_CHUNK_BYTES"), "1M");
  EXPECT_FALSE(lookup(env, "LIBREDUCE_SECRET").has_value());
  EXPECT_FALSE(lookup(env, "LIBREDUCE_RANK").has_value());
}

// Attached to a shared pool: the ranks get its reducers, the id their key admits (the same in
// every attempt) and the key's file instead of the job secret's; evaluators get none of it.
TEST(ReplicaEnv, RanksOfAJobOnASharedPoolHoldItsKey) {
  JobSpec spec = fullSpec();
  spec.pool(PoolKind::kReducers).replica_count = 0;
  spec.reducer_pool.addresses = {"pool-0:7000", "pool-1:7000"};
  spec.reducer_pool.key_file = "/keys/a.key";
  spec.reducer_pool.comm_id = "team-a";
  JobLayout layout = fullLayout();
  layout.addresses[2].clear();
  layout.pool_key_file = "/keys/a.key";
  const EnvList rank = replicaEnvironment(spec, layout, ReplicaId{PoolKind::kWorkers, 1, 0});
  EXPECT_EQ(get(rank, "LIBREDUCE_REDUCERS"), "pool-0:7000,pool-1:7000");
  EXPECT_EQ(get(rank, "LIBREDUCE_COMM_ID"), "team-a");
  EXPECT_EQ(get(rank, "LIBREDUCE_SECRET_FILE"), "/keys/a.key");
  const EnvList evaluator =
      replicaEnvironment(spec, layout, ReplicaId{PoolKind::kEvaluators, 0, 0});
  EXPECT_FALSE(lookup(evaluator, "LIBREDUCE_SECRET_FILE").has_value());
  EXPECT_FALSE(lookup(evaluator, "LIBREDUCE_REDUCERS").has_value());
}

TEST(ReplicaEnv, VertexDirectoriesForEveryReplica) {
  for (int pool = 0; pool < kPoolCount; ++pool) {
    const EnvList env = envFor(static_cast<PoolKind>(pool), 0);
    EXPECT_EQ(get(env, "AIP_MODEL_DIR"), "/tmp/jobs/demo/model/") << pool;
    EXPECT_EQ(get(env, "AIP_CHECKPOINT_DIR"), "/tmp/jobs/demo/checkpoints/") << pool;
    EXPECT_EQ(get(env, "AIP_TENSORBOARD_LOG_DIR"), "/tmp/jobs/demo/logs/") << pool;
    EXPECT_EQ(get(env, "CLOUD_ML_JOB_ID"), "demo-20240101") << pool;
    EXPECT_EQ(get(env, "CLOUD_ML_TRIAL_ID"), "") << pool;
    EXPECT_TRUE(lookup(env, "CLUSTER_SPEC").has_value()) << pool;
    EXPECT_TRUE(lookup(env, "TF_CONFIG").has_value()) << pool;
  }
}

TEST(ReplicaEnv, TrailingSlashInOutputDirIsNotDoubled) {
  JobLayout layout = fullLayout();
  layout.output_dir = "/tmp/jobs/demo/";
  const EnvList env = replicaEnvironment(fullSpec(), layout, ReplicaId{PoolKind::kWorkers, 0, 0});
  EXPECT_EQ(get(env, "AIP_MODEL_DIR"), "/tmp/jobs/demo/model/");
}

TEST(ReplicaEnv, EvaluatorIsNotARank) {
  const EnvList env = envFor(PoolKind::kEvaluators, 0);
  for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                           "MASTER_PORT", "LIBREDUCE_REDUCERS", "LIBREDUCE_COMM_ID"}) {
    EXPECT_FALSE(lookup(env, name).has_value()) << name;
  }
}

TEST(ReplicaEnv, ReducerGetsSecretFileAndSettingsOnly) {
  const EnvList env = envFor(PoolKind::kReducers, 1);
  for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "LIBREDUCE_REDUCERS",
                           "LIBREDUCE_COMM_ID"}) {
    EXPECT_FALSE(lookup(env, name).has_value()) << name;
  }
  EXPECT_EQ(get(env, "LIBREDUCE_SECRET_FILE"), "/tmp/jobs/demo/secret");
  EXPECT_EQ(get(env, "LIBREDUCE_CHUNK_BYTES"), "1M");
}

TEST(ReplicaEnv, ClusterSpecExactText) {
  const EnvList env = envFor(PoolKind::kWorkers, 1);
  EXPECT_EQ(get(env, "CLUSTER_SPEC"),
            "{\"cluster\": {\"workerpool0\": [\"127.0.0.1:29500\"], \"workerpool1\": "
            "[\"127.0.0.1:29510\", \"127.0.0.1:29511\", \"127.0.0.1:29512\"], \"workerpool2\": "
            "[\"127.0.0.1:40001\", \"127.0.0.1:40002\"], \"workerpool3\": [\"127.0.0.1:29520\"]}, "
            "\"environment\": \"cloud\", \"task\": {\"type\": \"workerpool1\", \"index\": 1, "
            "\"trial\": \"\"}, \"job\": {\"displayName\": \"demo\", \"jobId\": \"demo-20240101\", "
            "\"workerPoolSpecs\": [{\"replicaCount\": 1}, {\"replicaCount\": 3}, "
            "{\"replicaCount\": 2}, {\"replicaCount\": 1}]}}");
}

TEST(ReplicaEnv, TfConfigExactTextLeavesBuiltInReducersOut) {
  const EnvList env = envFor(PoolKind::kWorkers, 1);
  EXPECT_EQ(get(env, "TF_CONFIG"),
            "{\"cluster\": {\"chief\": [\"127.0.0.1:29500\"], \"worker\": [\"127.0.0.1:29510\", "
            "\"127.0.0.1:29511\", \"127.0.0.1:29512\"], \"evaluator\": [\"127.0.0.1:29520\"]}, "
            "\"task\": {\"type\": \"worker\", \"index\": 1}, \"environment\": \"cloud\"}");
}

TEST(ReplicaEnv, TaskTypesPerPool) {
  EXPECT_NE(get(envFor(PoolKind::kPrimary, 0), "TF_CONFIG")
                .find("\"task\": {\"type\": \"chief\", \"index\": 0}"),
            std::string::npos);
  EXPECT_NE(get(envFor(PoolKind::kEvaluators, 0), "TF_CONFIG")
                .find("\"task\": {\"type\": \"evaluator\", \"index\": 0}"),
            std::string::npos);
  EXPECT_NE(get(envFor(PoolKind::kReducers, 1), "CLUSTER_SPEC")
                .find("\"task\": {\"type\": \"workerpool2\", \"index\": 1, \"trial\": \"\"}"),
            std::string::npos);
}

TEST(ReplicaEnv, CustomReducersAreParameterServers) {
  JobSpec spec = fullSpec();
  spec.pool(PoolKind::kReducers).command = {"python3", "ps.py"};
  const EnvList env = replicaEnvironment(spec, fullLayout(), ReplicaId{PoolKind::kReducers, 0, 0});
  const std::string tf = get(env, "TF_CONFIG");
  EXPECT_NE(tf.find("\"ps\": [\"127.0.0.1:40001\", \"127.0.0.1:40002\"]"), std::string::npos) << tf;
  EXPECT_NE(tf.find("\"task\": {\"type\": \"ps\", \"index\": 0}"), std::string::npos) << tf;
}

TEST(ReplicaEnv, WithoutPrimaryWorkerZeroIsRankZero) {
  JobSpec spec = fullSpec();
  spec.pool(PoolKind::kPrimary) = PoolSpec{};
  JobLayout layout = fullLayout();
  layout.addresses[0].clear();
  const EnvList w0 = replicaEnvironment(spec, layout, ReplicaId{PoolKind::kWorkers, 0, 0});
  const EnvList w2 = replicaEnvironment(spec, layout, ReplicaId{PoolKind::kWorkers, 2, 0});
  EXPECT_EQ(get(w0, "RANK"), "0");
  EXPECT_EQ(get(w2, "RANK"), "2");
  EXPECT_EQ(get(w2, "WORLD_SIZE"), "3");
  EXPECT_EQ(get(w2, "MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(get(w2, "MASTER_PORT"), "29510");
  const std::string cluster = get(w2, "CLUSTER_SPEC");
  EXPECT_EQ(cluster.find("workerpool0"), std::string::npos) << cluster;
  // An absent pool keeps its position in workerPoolSpecs.
  EXPECT_NE(cluster.find("\"workerPoolSpecs\": [{}, {\"replicaCount\": 3}"), std::string::npos)
      << cluster;
  EXPECT_EQ(get(w2, "TF_CONFIG").find("chief"), std::string::npos);
}

TEST(ReplicaEnv, WithoutReducersTheListIsEmpty) {
  JobSpec spec = fullSpec();
  spec.pool(PoolKind::kReducers) = PoolSpec{};
  JobLayout layout = fullLayout();
  layout.addresses[2].clear();
  const EnvList env = replicaEnvironment(spec, layout, ReplicaId{PoolKind::kWorkers, 0, 0});
  EXPECT_EQ(get(env, "LIBREDUCE_REDUCERS"), "");
  EXPECT_EQ(get(env, "CLUSTER_SPEC").find("workerpool2"), std::string::npos);
}

TEST(ReplicaEnv, BracketedIpv6MasterAddress) {
  JobLayout layout = fullLayout();
  layout.addresses[0] = {"[::1]:29500"};
  const EnvList env = replicaEnvironment(fullSpec(), layout, ReplicaId{PoolKind::kWorkers, 0, 0});
  EXPECT_EQ(get(env, "MASTER_ADDR"), "::1");
  EXPECT_EQ(get(env, "MASTER_PORT"), "29500");
}

TEST(ReplicaEnv, SpecNameIsEscapedInJson) {
  JobSpec spec = fullSpec();
  spec.name = "a\"b";
  const EnvList env = replicaEnvironment(spec, fullLayout(), ReplicaId{PoolKind::kWorkers, 0, 0});
  EXPECT_NE(get(env, "CLUSTER_SPEC").find("\"displayName\": \"a\\\"b\""), std::string::npos);
}

TEST(ReplicaEnv, EveryNameIsManagedAndSetOnce) {
  const std::vector<std::string>& managed = managedVariables();
  const std::set<std::string> managed_set(managed.begin(), managed.end());
  EXPECT_EQ(managed_set.size(), managed.size()) << "duplicate names";
  for (const char* extra : {"LIBREDUCE_SECRET", "LIBREDUCE_RANK", "LIBREDUCE_WORLD_SIZE"}) {
    EXPECT_TRUE(managed_set.count(extra)) << extra;
  }
  JobSpec custom_ps = fullSpec();
  custom_ps.pool(PoolKind::kReducers).command = {"ps"};
  for (const JobSpec& spec : {fullSpec(), custom_ps}) {
    for (int pool = 0; pool < kPoolCount; ++pool) {
      const EnvList env =
          replicaEnvironment(spec, fullLayout(), ReplicaId{static_cast<PoolKind>(pool), 0, 0});
      std::set<std::string> seen;
      for (const auto& [name, value] : env) {
        EXPECT_TRUE(seen.insert(name).second) << name << " set twice";
        if (name == "LIBREDUCE_CHUNK_BYTES") continue;  // the spec's own setting
        EXPECT_TRUE(managed_set.count(name)) << name << " is not in managedVariables()";
      }
    }
  }
}

TEST(JsonText, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(jsonString("plain"), "\"plain\"");
  EXPECT_EQ(jsonString("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(jsonString("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(jsonString("l1\nl2\r\t"), "\"l1\\nl2\\r\\t\"");
  EXPECT_EQ(jsonString(std::string("\x01\x1f", 2)), "\"\\u0001\\u001f\"");
  EXPECT_EQ(jsonString(std::string("nul\0x", 5)), "\"nul\\u0000x\"");
  EXPECT_EQ(jsonString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 passes through
  EXPECT_EQ(jsonStringArray({}), "[]");
  EXPECT_EQ(jsonStringArray({"a", "b\"c"}), "[\"a\", \"b\\\"c\"]");
}

}  // namespace
}  // namespace rd::orch
