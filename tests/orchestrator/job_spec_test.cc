// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/job_spec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "common/settings.h"
#include "common/status.h"

namespace rd::orch {
namespace {

JobSpec parseOk(const std::string& text) {
  JobSpec spec;
  std::string error;
  EXPECT_TRUE(parseJobSpec(text, "job.yaml", &spec, &error)) << error;
  return spec;
}

std::string parseError(const std::string& text) {
  JobSpec spec;
  std::string error;
  EXPECT_FALSE(parseJobSpec(text, "job.yaml", &spec, &error)) << text;
  return error;
}

using Env = std::vector<std::pair<std::string, std::string>>;
using Words = std::vector<std::string>;

const char* const kFullYaml = R"(# every field
displayName: quickstart
baseOutputDirectory: ./reducectl-jobs
scheduling:
  timeout: 1h30m
  restartJobOnWorkerRestart: true
  maxRestarts: 2
  disableRetries: false
libreduce:
  chunk_bytes: 1M
  deterministic: true
  algo: rs
workerPoolSpecs:
  - replicaCount: 1
    command: [python3, train.py]
    args: ["--epochs", 3, true]
    env:
      - {name: FOO, value: bar}
      - name: EMPTY
    workingDir: /tmp
    resources: {nicGbps: 12.5}
  - replicaCount: 3
    command:
      - python3
      - train.py
    env:
      FOO: baz
      N: 7
  - replicaCount: 2
  - {}
)";

const char* const kFullJson = R"({
  "displayName": "quickstart",
  "baseOutputDirectory": "./reducectl-jobs",
  "scheduling": {"timeout": "5400s", "restartJobOnWorkerRestart": true, "maxRestarts": 2,
                 "disableRetries": false},
  "libreduce": {"chunk_bytes": "1M", "deterministic": true, "algo": "rs"},
  "workerPoolSpecs": [
    {"replicaCount": "1", "command": ["python3", "train.py"], "args": ["--epochs", 3, true],
     "env": [{"name": "FOO", "value": "bar"}, {"name": "EMPTY"}], "workingDir": "/tmp",
     "resources": {"nicGbps": 12.5}},
    {"replicaCount": 3, "command": ["python3", "train.py"], "env": {"FOO": "baz", "N": 7}},
    {"replicaCount": 2},
    {}
  ]
})";

void expectFullSpec(const JobSpec& spec) {
  EXPECT_EQ(spec.name, "quickstart");
  EXPECT_EQ(spec.base_output_dir, "./reducectl-jobs");
  EXPECT_EQ(spec.scheduling.timeout_s, 5400);
  EXPECT_TRUE(spec.scheduling.restart_job_on_worker_restart);
  EXPECT_EQ(spec.scheduling.max_restarts, 2);
  EXPECT_FALSE(spec.scheduling.disable_retries);
  EXPECT_EQ(spec.libreduce_env, (Env{{"LIBREDUCE_CHUNK_BYTES", "1M"},
                                     {"LIBREDUCE_DETERMINISTIC", "1"},
                                     {"LIBREDUCE_ALGO", "rs"}}));
  const PoolSpec& primary = spec.pool(PoolKind::kPrimary);
  EXPECT_EQ(primary.replica_count, 1);
  EXPECT_EQ(primary.command, (Words{"python3", "train.py", "--epochs", "3", "true"}));
  EXPECT_EQ(primary.env, (Env{{"FOO", "bar"}, {"EMPTY", ""}}));
  EXPECT_EQ(primary.working_dir, "/tmp");
  EXPECT_DOUBLE_EQ(primary.nic_gbps, 12.5);
  const PoolSpec& workers = spec.pool(PoolKind::kWorkers);
  EXPECT_EQ(workers.replica_count, 3);
  EXPECT_EQ(workers.command, (Words{"python3", "train.py"}));
  EXPECT_EQ(workers.env, (Env{{"FOO", "baz"}, {"N", "7"}}));
  EXPECT_TRUE(workers.working_dir.empty());
  EXPECT_EQ(workers.nic_gbps, 0);
  const PoolSpec& reducers = spec.pool(PoolKind::kReducers);
  EXPECT_EQ(reducers.replica_count, 2);
  EXPECT_TRUE(reducers.command.empty());  // the built-in reduce-server
  EXPECT_EQ(spec.pool(PoolKind::kEvaluators).replica_count, 0);
}

TEST(JobSpec, FullYamlSpec) {
  JobSpec spec = parseOk(kFullYaml);
  expectFullSpec(spec);
  EXPECT_EQ(spec.pool(PoolKind::kPrimary).line, 14);
  EXPECT_EQ(spec.pool(PoolKind::kWorkers).line, 22);
  EXPECT_EQ(spec.pool(PoolKind::kReducers).line, 29);
  EXPECT_EQ(spec.pool(PoolKind::kEvaluators).line, 30);
}

TEST(JobSpec, JsonGivesTheSameSpec) {
  JobSpec spec = parseOk(kFullJson);
  expectFullSpec(spec);
  EXPECT_EQ(spec.pool(PoolKind::kPrimary).line, 8);
}

// A CustomJob as `gcloud ai custom-jobs describe --format=json` prints it: string counts, the
// job's fields under jobSpec, what Vertex reports about the job beside them.
TEST(JobSpec, VertexCustomJobIsAcceptedAsPrinted) {
  JobSpec spec = parseOk(R"({
    "name": "projects/1/locations/us-central1/customJobs/2", "displayName": "vx",
    "state": "JOB_STATE_SUCCEEDED", "createTime": "2026-11-30T09:00:00Z", "labels": {"a": "b"},
    "jobSpec": {
      "workerPoolSpecs": [
        {"replicaCount": "1", "machineSpec": {"machineType": "n1-standard-8",
         "acceleratorType": "NVIDIA_TESLA_T4", "acceleratorCount": 1},
         "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100},
         "containerSpec": {"imageUri": "gcr.io/p/t:1", "command": ["python3", "-m", "t"],
                           "args": ["--lr", "0.1"], "env": [{"name": "A", "value": "1"}]}},
        {"replicaCount": "2", "containerSpec": {"imageUri": "gcr.io/p/t:1"}},
        {"replicaCount": "3", "containerSpec":
          {"imageUri": "us-docker.pkg.dev/vertex-ai-training/training/reductionserver:latest"}}],
      "scheduling": {"timeout": "3600s"},
      "baseOutputDirectory": {"outputUriPrefix": "/runs"},
      "serviceAccount": "sa@p.iam.gserviceaccount.com"}})");
  EXPECT_EQ(spec.name, "vx");
  EXPECT_EQ(spec.base_output_dir, "/runs");
  EXPECT_EQ(spec.scheduling.timeout_s, 3600);
  const PoolSpec& primary = spec.pool(PoolKind::kPrimary);
  EXPECT_EQ(primary.container.image_uri, "gcr.io/p/t:1");
  EXPECT_EQ(primary.container.command, (Words{"python3", "-m", "t"}));
  EXPECT_EQ(primary.container.args, (Words{"--lr", "0.1"}));
  EXPECT_TRUE(primary.command.empty());
  EXPECT_EQ(primary.env, (Env{{"A", "1"}}));
  EXPECT_EQ(primary.machine.accelerator_count, 1);
  EXPECT_EQ(primary.disk.boot_disk_size_gb, 100);
  EXPECT_EQ(spec.pool(PoolKind::kWorkers).replica_count, 2);
  EXPECT_TRUE(spec.pool(PoolKind::kWorkers).container.command.empty());  // the image's own
  const PoolSpec& reducers = spec.pool(PoolKind::kReducers);
  EXPECT_EQ(reducers.replica_count, 3);
  EXPECT_TRUE(reducers.container.image_uri.empty());  // Vertex's reducer: the built-in one
  EXPECT_NE(reducers.note.find("is Vertex AI's reduction server"), std::string::npos);
}

TEST(JobSpec, MinimalSpecHasDefaults) {
  JobSpec spec = parseOk(
      "displayName: a\nworkerPoolSpecs:\n  - replicaCount: 1\n"
      "    command: [python3, -c, 'print(1)']\n");
  EXPECT_EQ(spec.name, "a");
  EXPECT_TRUE(spec.base_output_dir.empty());
  EXPECT_EQ(spec.scheduling.timeout_s, 0);
  EXPECT_EQ(spec.scheduling.max_restarts, 0);
  EXPECT_FALSE(spec.scheduling.restart_job_on_worker_restart);
  EXPECT_TRUE(spec.libreduce_env.empty());
  for (int i = 1; i < kPoolCount; ++i) {
    EXPECT_EQ(spec.pools[i].replica_count, 0);
    EXPECT_EQ(spec.pools[i].line, 0);
  }
}

// Vertex's spellings and the ways users leave a pool out.
TEST(JobSpec, AcceptedForms) {
  JobSpec spec = parseOk(R"(
displayName: v-1.0_x
baseOutputDirectory: {outputUriPrefix: /data/out}
scheduling: {timeout: 7200s, disableRetries: true}
libreduce: {log_level: INFO, listen_host: 127.0.0.1, window: 8}
workerPoolSpecs:
  - replicaCount: 0
    command: [ignored]
  - replicaCount: "4"
    command: [./train]
  - replicaCount: 1
    command: [/opt/my-reducer]
    args: [--fast]
  -
)");
  EXPECT_EQ(spec.base_output_dir, "/data/out");
  EXPECT_EQ(spec.scheduling.timeout_s, 7200);
  EXPECT_TRUE(spec.scheduling.disable_retries);
  EXPECT_EQ(spec.libreduce_env, (Env{{"LIBREDUCE_LOG_LEVEL", "INFO"},
                                     {"LIBREDUCE_LISTEN_HOST", "127.0.0.1"},
                                     {"LIBREDUCE_WINDOW", "8"}}));
  EXPECT_EQ(spec.pool(PoolKind::kPrimary).replica_count, 0);
  EXPECT_EQ(spec.pool(PoolKind::kWorkers).replica_count, 4);
  EXPECT_EQ(spec.pool(PoolKind::kReducers).command, (Words{"/opt/my-reducer", "--fast"}));
  EXPECT_EQ(spec.pool(PoolKind::kEvaluators).replica_count, 0);
}

// A job attached to a shared reducer pool: its addresses, key file (relative to the spec, made
// absolute on load) and communicator id.
TEST(JobSpec, ReducerPoolAttachesToSharedReducers) {
  JobSpec spec = parseOk(R"(
displayName: shared
workerPoolSpecs: [{replicaCount: 1, command: [./train]}, {replicaCount: 3, command: [./train]}]
reducerPool:
  addresses: ["pool-0:7000", "pool-1:7000"]
  keyFile: /keys/shared.key
  commId: team-a-run-7
)");
  EXPECT_TRUE(spec.reducer_pool.attached());
  EXPECT_EQ(spec.reducer_pool.addresses, (Words{"pool-0:7000", "pool-1:7000"}));
  EXPECT_EQ(spec.reducer_pool.key_file, "/keys/shared.key");
  EXPECT_EQ(spec.reducer_pool.comm_id, "team-a-run-7");
  spec.reducer_pool.key_file = "job.key";
  resolveSpecPaths("/specs/job.yaml", &spec);
  EXPECT_EQ(spec.reducer_pool.key_file, "/specs/job.key");
  EXPECT_FALSE(parseOk(kFullYaml).reducer_pool.attached());
}

TEST(JobSpec, PoolNames) {
  EXPECT_STREQ(poolName(PoolKind::kPrimary), "primary");
  EXPECT_STREQ(poolName(PoolKind::kWorkers), "worker");
  EXPECT_STREQ(poolName(PoolKind::kReducers), "reducer");
  EXPECT_STREQ(poolName(PoolKind::kEvaluators), "evaluator");
}

TEST(JobSpec, LoadReadsAFileAndNamesItInErrors) {
  char path[] = "/tmp/job_spec_testXXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string text = "displayName: f\nworkerPoolSpecs: [{replicaCount: 1, command: [true]}]\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  JobSpec spec;
  std::string error;
  EXPECT_TRUE(loadJobSpec(path, &spec, &error)) << error;
  EXPECT_EQ(spec.pool(PoolKind::kPrimary).command, Words{"true"});

  std::FILE* file = std::fopen(path, "w");
  ASSERT_NE(file, nullptr);
  std::fputs("displayName: f\n", file);
  std::fclose(file);
  EXPECT_FALSE(loadJobSpec(path, &spec, &error));
  EXPECT_EQ(error.rfind(std::string(path) + ":1:1: workerPoolSpecs: required field missing", 0), 0u)
      << error;
  unlink(path);
}

TEST(JobSpec, LoadOfAMissingFileNamesThePath) {
  JobSpec spec;
  std::string error;
  EXPECT_FALSE(loadJobSpec("/nonexistent/dir/job.yaml", &spec, &error));
  EXPECT_NE(error.find("/nonexistent/dir/job.yaml"), std::string::npos) << error;
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
  EXPECT_FALSE(loadJobSpec("/tmp", &spec, &error));  // a directory cannot be read as a spec
  EXPECT_NE(error.find("/tmp: cannot read"), std::string::npos) << error;
}

// ---- malformed specs: one precise message each ----------------------------------------------

struct BadSpec {
  const char* name;
  std::string text;
  std::vector<std::string> expected;  // substrings of the error
};

std::ostream& operator<<(std::ostream& os, const BadSpec& bad) {
  return os << bad.name;
}

// A valid head for cases about later fields; the pools start on line 2.
const std::string kHead = "displayName: j\n";
const std::string kPools = "workerPoolSpecs:\n  - replicaCount: 1\n    command: [python3]\n";

const BadSpec kBadSpecs[] = {
    {"yaml_syntax", "displayName: a\nworkerPoolSpecs: [1\n", {"job.yaml:3:1: YAML syntax error"}},
    {"tab_indent", "displayName: a\nscheduling:\n\ttimeout: 1\n", {"job.yaml:3:", "YAML syntax"}},
    {"empty_file", "", {"job.yaml:1:1: the spec is empty"}},
    {"only_comments", "# nothing yet\n", {"job.yaml:1:1: the spec is empty"}},
    {"top_level_list", "- displayName: a\n", {"job.yaml:1:1: expected the job spec to be a map"}},
    {"two_documents",
     kHead + kPools + "---\ndisplayName: b\n",
     {"job.yaml:6:1: a second YAML document"}},
    {"missing_display_name", kPools, {"job.yaml:1:1: displayName: required field missing"}},
    {"display_name_chars",
     "displayName: my job\n" + kPools,
     {"job.yaml:1:14: displayName: 'my job' has characters other than"}},
    {"display_name_too_long",
     "displayName: " + std::string(129, 'x') + "\n" + kPools,
     {"job.yaml:1:14: displayName: the name is 129 characters long; at most 128"}},
    {"unknown_top_level",
     kHead + kPools + "shceduling: {}\n",
     {"job.yaml:5:1: shceduling: unknown field; did you mean 'scheduling'?",
      "Allowed: displayName, baseOutputDirectory, scheduling, libreduce, workerPoolSpecs"}},
    {"unknown_top_case", "DisplayName: a\n", {"job.yaml:1:1: DisplayName:", "'displayName'?"}},
    {"vertex_job_spec_empty",
     kHead + "jobSpec: {}\n",
     {"job.yaml:2:10: jobSpec.workerPoolSpecs: required field missing"}},
    {"vertex_job_spec_unknown_field",
     kHead + "jobSpec: {workerPoolSpecs: [{replicaCount: 1, command: [a]}], sheduling: {}}\n",
     {"jobSpec.sheduling: unknown field; did you mean 'scheduling'?"}},
    {"vertex_custom_job_unknown_field",
     kHead + "jobSpec: {workerPoolSpecs: [{replicaCount: 1, command: [a]}]}\nstatus: x\n",
     {"job.yaml:3:1: status: unknown field", "Allowed: displayName, jobSpec, name, state"}},
    {"pools_missing", kHead, {"job.yaml:1:1: workerPoolSpecs: required field missing"}},
    {"pools_not_list",
     kHead + "workerPoolSpecs:\n  replicaCount: 1\n",
     {"job.yaml:3:3: workerPoolSpecs: expected a list of 1 to 4 worker pools", "got a map"}},
    {"pools_empty",
     kHead + "workerPoolSpecs: []\n",
     {"job.yaml:2:18: workerPoolSpecs: expected a list", "got an empty list"}},
    {"five_pools",
     kHead + "workerPoolSpecs: [{replicaCount: 1, command: [a]}, {}, {}, {}, {}]\n",
     {"job.yaml:2:64: workerPoolSpecs[4]: there are at most 4 pools"}},
    {"pool_not_map",
     kHead + "workerPoolSpecs: [python3]\n",
     {"job.yaml:2:19: workerPoolSpecs[0]: expected a worker pool map (fields: replicaCount,"}},
    {"unknown_pool_field",
     kHead + "workerPoolSpecs:\n  - replicacount: 1\n",
     {"job.yaml:3:5: workerPoolSpecs[0].replicacount: unknown field; did you mean 'replicaCount'?",
      "Allowed: replicaCount, command, args, env, workingDir, resources"}},
    {"container_without_image",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n    containerSpec: {args: [x]}\n",
     {"job.yaml:4:20: workerPoolSpecs[0].containerSpec.imageUri: required field missing"}},
    {"container_and_pool_command",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n    command: [a]\n"
             "    containerSpec: {imageUri: x}\n",
     {"job.yaml:4:14: workerPoolSpecs[0].command: the pool has a containerSpec: give command "
      "there"}},
    {"container_bad_image",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n    containerSpec: {imageUri: '-x'}\n",
     {"containerSpec.imageUri: '-x' is not an image reference"}},
    {"container_empty_command",
     kHead +
         "workerPoolSpecs:\n  - replicaCount: 1\n    containerSpec: {imageUri: x, command: []}\n",
     {"containerSpec.command: the program (the first item) is missing"}},
    {"container_managed_env",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n"
             "    containerSpec: {imageUri: x, env: [{name: RANK, value: '3'}]}\n",
     {"containerSpec.env[0].name: RANK is set by reducectl for each replica"}},
    {"disk_too_small",
     kHead + kPools + "  - replicaCount: 1\n    command: [a]\n    diskSpec: {bootDiskSizeGb: 5}\n",
     {"workerPoolSpecs[1].diskSpec.bootDiskSizeGb: 5 is out of range: allowed 10..65536"}},
    {"slurm_unknown_pool_field",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n    command: [a]\n    slurm: {node: 1}\n",
     {"job.yaml:5:13: workerPoolSpecs[0].slurm.node: unknown field; did you mean 'nodes'?"}},
    {"slurm_more_nodes_than_replicas",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n    command: [a]\n    slurm: {nodes: 2}\n",
     {"job.yaml:5:20: workerPoolSpecs[0].slurm.nodes: 2 nodes for 1 replicas"}},
    {"slurm_tasks_do_not_add_up",
     kHead + kPools +
         "  - replicaCount: 4\n    command: [a]\n    slurm: {nodes: 2, tasksPerNode: 3}\n",
     {"workerPoolSpecs[1].slurm.tasksPerNode: 2 nodes x 3 tasks is not the pool's 4 replicas"}},
    {"slurm_bad_gpus",
     kHead + kPools + "  - replicaCount: 1\n    command: [a]\n    slurm: {gpus: 'a100:'}\n",
     {"workerPoolSpecs[1].slurm.gpus: expected a GPU count per task (2) or TYPE:COUNT"}},
    {"slurm_bad_memory",
     kHead + kPools + "  - replicaCount: 1\n    command: [a]\n    slurm: {memory: 8GB}\n",
     {"workerPoolSpecs[1].slurm.memory: expected memory per node as a number with K, M, G or T"}},
    {"slurm_own_sbatch_option",
     kHead + kPools + "slurm: {sbatchOptions: [--nodes=3]}\n",
     {"job.yaml:5:25: slurm.sbatchOptions[0]: --nodes is set by reducectl"}},
    {"slurm_abbreviated_own_sbatch_option",  // getopt_long reads --out= as --output=
     kHead + kPools + "slurm: {sbatchOptions: [--out=/tmp/x]}\n",
     {"slurm.sbatchOptions[0]: --out (sbatch reads it as --output) is set by reducectl"}},
    {"slurm_two_sbatch_options_in_one",
     kHead + kPools + "slurm: {sbatchOptions: ['--exclusive --output=/tmp/x']}\n",
     {"slurm.sbatchOptions[0]: '--exclusive --output=/tmp/x' is more than one word"}},
    {"slurm_short_sbatch_option",
     kHead + kPools + "slurm: {sbatchOptions: [-N3]}\n",
     {"slurm.sbatchOptions[0]: '-N3' is not a long sbatch option"}},
    {"slurm_bad_partition",
     kHead + kPools + "slurm: {partition: 'gpu nodes'}\n",
     {"slurm.partition: 'gpu nodes' is not a Slurm name"}},
    {"slurm_bad_time_limit",
     kHead + kPools + "slurm: {timeLimit: 2days}\n",
     {"slurm.timeLimit: expected a duration of up to a year"}},
    {"machine_count_without_type",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n    command: [a]\n"
             "    machineSpec: {acceleratorCount: 2}\n",
     {"workerPoolSpecs[0].machineSpec.acceleratorCount: acceleratorCount needs an "
      "acceleratorType"}},
    {"machine_type_spelling",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n    command: [a]\n"
             "    machineSpec: {machineType: N1_STANDARD_8}\n",
     {"machineSpec.machineType: 'N1_STANDARD_8' is not a machine type"}},
    {"machine_type_typo",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n    command: [a]\n"
             "    machineSpec: {machineType: n1-standrd-8}\n",
     {"job.yaml:5:32: workerPoolSpecs[0].machineSpec.machineType: machineType 'n1-standrd-8' is "
      "not one reducectl knows (did you mean n1-standard-8?)"}},
    {"output_dir_cloud_storage",
     kHead + kPools + "baseOutputDirectory: gs://b/out\n",
     {"job.yaml:5:22: baseOutputDirectory: 'gs://b/out' is a Cloud Storage URI; reducectl writes "
      "the job's files to a filesystem path"}},
    {"output_dir_uri_prefix_cloud_storage",
     kHead + kPools + "baseOutputDirectory: {outputUriPrefix: 'gs://b/out'}\n",
     {"baseOutputDirectory.outputUriPrefix: 'gs://b/out' is a Cloud Storage URI"}},
    {"machine_type_unknown",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n    command: [a]\n"
             "    machineSpec: {machineType: z9-mega-7}\n",
     {"machineType 'z9-mega-7' is not one reducectl knows; leave it out"}},
    {"replica_count_missing",
     kHead + "workerPoolSpecs:\n  - command: [a]\n",
     {"job.yaml:3:5: workerPoolSpecs[0].replicaCount: required field missing"}},
    {"replica_count_text",
     kHead + "workerPoolSpecs:\n  - replicaCount: three\n",
     {"job.yaml:3:19: workerPoolSpecs[0].replicaCount: expected a whole number in 0..4096, got "
      "'three'"}},
    {"replica_count_negative",
     kHead + kPools + "  - replicaCount: -1\n",
     {"job.yaml:5:19: workerPoolSpecs[1].replicaCount: -1 is out of range: allowed 0..4096"}},
    {"replica_count_huge",
     kHead + kPools + "  - replicaCount: 99999999999999999999\n",
     {"job.yaml:5:19: workerPoolSpecs[1].replicaCount:", "out of range: allowed 0..4096"}},
    {"replica_count_list",
     kHead + "workerPoolSpecs:\n  - replicaCount: [1]\n",
     {"job.yaml:3:19: workerPoolSpecs[0].replicaCount: expected a whole number", "got a list"}},
    {"primary_two",
     kHead + "workerPoolSpecs:\n  - replicaCount: 2\n    command: [a]\n",
     {"job.yaml:3:19: workerPoolSpecs[0].replicaCount: 2 is out of range", "(allowed 0..1)",
      "workerPoolSpecs[1]"}},
    {"reducers_too_many",
     kHead + kPools + "  - {}\n  - replicaCount: 1025\n",
     {"job.yaml:6:19: workerPoolSpecs[2].replicaCount: 1025 is out of range: allowed 0..1024"}},
    {"command_string",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n    command: python3 train.py\n",
     {"job.yaml:4:14: workerPoolSpecs[0].command: expected a list of strings, got a plain string",
      "write [python3, train.py]"}},
    {"command_missing",
     kHead + kPools + "  - replicaCount: 2\n    args: [--x]\n",
     {"job.yaml:5:5: workerPoolSpecs[1].command: required field missing; the worker pool "
      "has replicas, so it needs a command"}},
    {"command_empty",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n    command: []\n",
     {"job.yaml:4:14: workerPoolSpecs[0].command: the list is empty"}},
    {"command_item_map",
     kHead + "workerPoolSpecs:\n  - replicaCount: 1\n    command: [a, {b: c}]\n",
     {"job.yaml:4:18: workerPoolSpecs[0].command[1]: expected a string, got a map"}},
    {"reducer_args_alone",
     kHead + kPools + "  - {}\n  - replicaCount: 1\n    args: [--x]\n",
     {"job.yaml:7:11: workerPoolSpecs[2].args: args need a command"}},
    {"no_ranks",
     kHead + "workerPoolSpecs:\n  - replicaCount: 0\n  - replicaCount: 0\n",
     {"job.yaml:3:3: workerPoolSpecs: the job has no ranks"}},
    {"only_reducers",
     kHead + "workerPoolSpecs: [{}, {}, {replicaCount: 2}]\n",
     {"job.yaml:2:18: workerPoolSpecs: the job has no ranks"}},
    {"env_bad_name",
     kHead + kPools + "    env: [{name: 1FOO, value: x}]\n",
     {"job.yaml:5:18: workerPoolSpecs[0].env[0].name: '1FOO' is not a variable name"}},
    {"env_rank",
     kHead + kPools + "    env:\n      - name: RANK\n        value: '3'\n",
     {"job.yaml:6:15: workerPoolSpecs[0].env[0].name: RANK is set by reducectl"}},
    {"env_map_master_port",
     kHead + kPools + "    env: {MASTER_PORT: 1}\n",
     {"job.yaml:5:11: workerPoolSpecs[0].env.MASTER_PORT: MASTER_PORT is set by reducectl"}},
    {"env_libreduce",
     kHead + kPools + "    env: [{name: LIBREDUCE_ALGO, value: ring}]\n",
     {"job.yaml:5:18: workerPoolSpecs[0].env[0].name: LIBREDUCE_ALGO is set by reducectl",
      "put libreduce settings under libreduce: (algo: ...)"}},
    {"env_duplicate",
     kHead + kPools + "    env:\n      - {name: A, value: x}\n      - {name: A}\n",
     {"job.yaml:7:9: workerPoolSpecs[0].env[1]: A is given twice in this pool (first at line 6)"}},
    {"env_entry_unknown_field",
     kHead + kPools + "    env: [{name: A, valu: x}]\n",
     {"job.yaml:5:21: workerPoolSpecs[0].env[0].valu: unknown field; did you mean 'value'?"}},
    {"env_string",
     kHead + kPools + "    env: FOO=1\n",
     {"job.yaml:5:10: workerPoolSpecs[0].env: expected a list of {name: N, value: V} or a map"}},
    {"duplicate_key",
     kHead + kPools + "    replicaCount: 1\n",
     {"job.yaml:5:5: workerPoolSpecs[0].replicaCount: repeated key (first given at line 3)"}},
    {"key_not_a_name",
     kHead + kPools + "? [a, b]\n: 1\n",
     {"job.yaml:5:3: keys must be names, got a list"}},
    {"duplicate_json_key",
     R"({"displayName": "a", "displayName": "b"})",
     {"job.yaml:1:22: displayName: repeated key"}},
    {"working_dir_empty",
     kHead + kPools + "    workingDir: ''\n",
     {"job.yaml:5:17: workerPoolSpecs[0].workingDir: expected a directory path, got an empty"}},
    {"nic_negative",
     kHead + kPools + "    resources: {nicGbps: -1}\n",
     {"job.yaml:5:26: workerPoolSpecs[0].resources.nicGbps: must be more than 0"}},
    {"nic_text",
     kHead + kPools + "    resources: {nicGbps: fast}\n",
     {"job.yaml:5:26: workerPoolSpecs[0].resources.nicGbps: expected a number, got 'fast'"}},
    {"resources_unknown",
     kHead + kPools + "    resources: {cpus: 4}\n",
     {"job.yaml:5:17: workerPoolSpecs[0].resources.cpus: unknown field. Allowed: nicGbps"}},
    {"libreduce_unknown",
     kHead + kPools + "libreduce:\n  chunk_byte: 1M\n",
     {"job.yaml:6:3: libreduce.chunk_byte: unknown libreduce setting; did you mean 'chunk_bytes'?",
      "Allowed: log_level, cpu_isa,"}},
    {"libreduce_env_name",
     kHead + kPools + "libreduce: {LIBREDUCE_WINDOW: 8}\n",
     {"job.yaml:5:13: libreduce.LIBREDUCE_WINDOW:", "by their short name: 'window'"}},
    {"libreduce_out_of_range",
     kHead + kPools + "libreduce:\n  window: 65\n",
     {"job.yaml:6:11: libreduce.window: LIBREDUCE_WINDOW=65 is not valid: expected an integer in "
      "auto|1..64"}},
    {"libreduce_bad_size",
     kHead + kPools + "libreduce: {chunk_bytes: 1Q}\n",
     {"job.yaml:5:26: libreduce.chunk_bytes: LIBREDUCE_CHUNK_BYTES=1Q is not valid"}},
    {"libreduce_bad_choice",
     kHead + kPools + "libreduce: {algo: tree}\n",
     {"job.yaml:5:19: libreduce.algo: LIBREDUCE_ALGO=tree is not valid: expected one of "
      "auto|rs|ring"}},
    {"libreduce_reducers",
     kHead + kPools + "libreduce:\n  reducers: 'h:1'\n",
     {"job.yaml:6:3: libreduce.reducers: set by reducectl: reducectl points the workers"}},
    {"libreduce_rank",
     kHead + kPools + "libreduce: {rank: 0}\n",
     {"job.yaml:5:13: libreduce.rank: set by reducectl"}},
    {"libreduce_list",
     kHead + kPools + "libreduce: [window]\n",
     {"job.yaml:5:12: libreduce: expected a map of libreduce settings"}},
    {"libreduce_no_value",
     kHead + kPools + "libreduce:\n  window:\n",
     {"job.yaml:6:3: libreduce.window: expected a value for LIBREDUCE_WINDOW, got no value"}},
    {"scheduling_unknown",
     kHead + kPools + "scheduling: {maxRestart: 1}\n",
     {"job.yaml:5:14: scheduling.maxRestart: unknown field; did you mean 'maxRestarts'?"}},
    {"timeout_text",
     kHead + kPools + "scheduling:\n  timeout: ten minutes\n",
     {"job.yaml:6:12: scheduling.timeout: expected a duration", "got 'ten minutes'"}},
    {"timeout_zero",
     kHead + kPools + "scheduling:\n  timeout: 0\n",
     {"job.yaml:6:12: scheduling.timeout: must be more than 0 seconds"}},
    {"timeout_too_long",
     kHead + kPools + "scheduling: {timeout: 721h}\n",
     {"job.yaml:5:23: scheduling.timeout: 721h is too long: at most 30 days"}},
    {"restart_not_bool",
     kHead + kPools + "scheduling: {restartJobOnWorkerRestart: maybe}\n",
     {"job.yaml:5:41: scheduling.restartJobOnWorkerRestart: expected true or false, got 'maybe'"}},
    {"disable_retries_with_restarts",
     kHead + kPools + "scheduling:\n  maxRestarts: 2\n  disableRetries: true\n",
     {"job.yaml:7:19: scheduling.disableRetries: true contradicts maxRestarts: 2"}},
    {"max_restarts_too_many",
     kHead + kPools + "scheduling:\n  maxRestarts: 1000\n",
     {"job.yaml:6:16: scheduling.maxRestarts: 1000 is out of range: allowed 0..100"}},
    {"output_dir_list",
     kHead + kPools + "baseOutputDirectory: [a]\n",
     {"job.yaml:5:22: baseOutputDirectory: expected a directory path, got a list"}},
    {"reducer_pool_and_own_reducers",
     kHead + "workerPoolSpecs: [{replicaCount: 1, command: [x]}, {}, {replicaCount: 2}]\n" +
         "reducerPool: {addresses: ['r:1'], keyFile: k, commId: c}\n",
     {"job.yaml:3:14: reducerPool: the job starts reducers of its own (workerPoolSpecs[2]) and "
      "attaches to a shared pool: give one of the two"}},
    {"reducer_pool_bad_address",
     kHead + kPools + "reducerPool: {addresses: ['r1:70000'], keyFile: k, commId: c}\n",
     {"reducerPool.addresses[0]: 'r1:70000' is not host:port"}},
    {"reducer_pool_no_port",
     kHead + kPools + "reducerPool: {addresses: [r1], keyFile: k, commId: c}\n",
     {"reducerPool.addresses[0]: 'r1' is not host:port"}},
    {"reducer_pool_without_key",
     kHead + kPools + "reducerPool: {addresses: ['r:1'], commId: c}\n",
     {"reducerPool.keyFile: required field missing; the job's key to the pool"}},
    {"reducer_pool_empty",
     kHead + kPools + "reducerPool: {addresses: [], keyFile: k, commId: c}\n",
     {"reducerPool.addresses: the list is empty"}},
    {"reducer_pool_unknown_field",
     kHead + kPools + "reducerPool: {addresses: ['r:1'], keyFile: k, commId: c, secret: s}\n",
     {"reducerPool.secret: unknown field"}},
};

class JobSpecError : public testing::TestWithParam<BadSpec> {};

TEST_P(JobSpecError, IsReportedPrecisely) {
  const BadSpec& bad = GetParam();
  std::string error = parseError(bad.text);
  for (const std::string& part : bad.expected) {
    EXPECT_NE(error.find(part), std::string::npos) << "error: " << error << "\nwanted: " << part;
  }
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
}

INSTANTIATE_TEST_SUITE_P(Malformed, JobSpecError, testing::ValuesIn(kBadSpecs),
                         [](const testing::TestParamInfo<BadSpec>& param) {
                           return std::string(param.param.name);
                         });

// ---- durations ------------------------------------------------------------------------------

TEST(Duration, AcceptsSecondsAndUnits) {
  const std::pair<const char*, int64_t> good[] = {
      {"90", 90},      {"0", 0},         {"90s", 90},  {"10m", 600},  {"1h30m", 5400},
      {"7200s", 7200}, {"1h2m3s", 3723}, {"2h", 7200}, {"1m30s", 90}, {"0h5s", 5}};
  for (const auto& [text, want] : good) {
    int64_t got = -1;
    EXPECT_TRUE(parseDuration(text, &got)) << text;
    EXPECT_EQ(got, want) << text;
  }
}

TEST(Duration, RejectsMalformedText) {
  for (const char* text :
       {"", "s", "-5", "-5s", "1.5s", "10 m", " 10", "10x", "1h1h", "30m1h", "1h30", "ten minutes",
        "+5", "99999999999999999999s", "9223372036854775807h"}) {
    int64_t got = 0;
    EXPECT_FALSE(parseDuration(text, &got)) << text;
  }
}

// ---- settings::checkValue -------------------------------------------------------------------

TEST(CheckValue, AcceptsWhatTheEnvironmentReadersAccept) {
  using settings::Id;
  EXPECT_EQ(settings::checkValue(Id::kWindow, "64"), rdSuccess);
  EXPECT_EQ(settings::checkValue(Id::kChunkBytes, "64K"), rdSuccess);
  EXPECT_EQ(settings::checkValue(Id::kChunkBytes, "64m"), rdSuccess);
  // auto (or 0): chosen per operation.
  EXPECT_EQ(settings::checkValue(Id::kChunkBytes, "auto"), rdSuccess);
  EXPECT_EQ(settings::checkValue(Id::kWindow, "AUTO"), rdSuccess);
  EXPECT_EQ(settings::checkValue(Id::kWindow, "0"), rdSuccess);
  EXPECT_EQ(settings::checkValue(Id::kAlgo, "RING"), rdSuccess);  // choices ignore case
  EXPECT_EQ(settings::checkValue(Id::kDeterministic, "1"), rdSuccess);
  EXPECT_EQ(settings::checkValue(Id::kListenHost, "any text at all"), rdSuccess);
  EXPECT_EQ(settings::checkValue(Id::kListenHost, ""), rdSuccess);
}

TEST(CheckValue, RejectsWithTheEnvironmentMessages) {
  using settings::Id;
  const std::pair<Id, const char*> bad[] = {
      {Id::kWindow, "-1"},       {Id::kWindow, "65"},       {Id::kWindow, "four"},
      {Id::kWindow, ""},         {Id::kWindow, "4x"},       {Id::kChunkBytes, "1K"},
      {Id::kChunkBytes, "128M"}, {Id::kChunkBytes, "lots"}, {Id::kAlgo, "tree"},
      {Id::kDeterministic, "2"}, {Id::kSpinUs, "-1"}};
  for (const auto& [id, text] : bad) {
    const settings::Setting& s = settings::info(id);
    EXPECT_EQ(settings::checkValue(id, text), rdInvalidArgument) << s.name << "=" << text;
    EXPECT_NE(lastError().find(std::string(s.env) + "=" + text + " is not valid: expected "),
              std::string::npos)
        << lastError();
    EXPECT_NE(lastError().find(settings::allowedText(s)), std::string::npos) << lastError();
  }
}

}  // namespace
}  // namespace rd::orch
