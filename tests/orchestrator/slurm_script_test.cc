// SPDX-License-Identifier: BSD-3-Clause
// The Slurm backend's pieces that need no Slurm: the cluster fields of the spec, machine types,
// the batch script, the spec the nodes read back, Slurm's tasks-per-node form.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "orchestrator/job_spec.h"
#include "orchestrator/job_spec_writer.h"
#include "orchestrator/machine_types.h"
#include "orchestrator/slurm_replica.h"
#include "orchestrator/slurm_script.h"

namespace rd::orch {
namespace {

JobSpec parseOk(const std::string& text) {
  JobSpec spec;
  std::string error;
  EXPECT_TRUE(parseJobSpec(text, "job.yaml", &spec, &error)) << error;
  return spec;
}

const char* const kClusterSpec = R"(displayName: cluster
scheduling: {timeout: 90m, maxRestarts: 2}
libreduce: {chunk_bytes: 1M, deterministic: true}
slurm:
  partition: gpu
  account: ml
  qos: high
  sbatchOptions: [--exclusive, --constraint=ib]
workerPoolSpecs:
  - replicaCount: 1
    command: [python3, train.py]
    env: {QUOTE: "it's"}
    machineSpec: {machineType: a2-highgpu-2g}
  - replicaCount: 4
    command: [python3, train.py]
    slurm: {nodes: 2, tasksPerNode: 2, cpusPerTask: 6, gpus: "a100:1", memory: 64G}
  - replicaCount: 3
    machineSpec: {machineType: n2-highcpu-16}
    slurm: {partition: cpu}
  - replicaCount: 1
    command: [python3, eval.py]
    machineSpec: {machineType: n1-standard-4, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}
)";

std::string render(const JobSpec& spec, std::string* error = nullptr) {
  SlurmAttempt a{"/shared/jobs/cluster-1",
                 1,
                 "/opt/libreduce/bin/reducectl",
                 "/opt/libreduce/bin/reduce-server",
                 "/home/me",
                 45,
                 10};
  std::string script, err;
  bool ok = renderSbatchScript(spec, a, &script, &err);
  if (error != nullptr) *error = err;
  EXPECT_EQ(ok, error == nullptr) << err;
  return script;
}

// The #SBATCH lines of component @p k (0-based).
std::vector<std::string> component(const std::string& script, int k) {
  std::vector<std::string> lines;
  int at = 0;
  size_t pos = 0;
  while (pos < script.size()) {
    size_t nl = script.find('\n', pos);
    std::string line = script.substr(pos, nl - pos);
    pos = nl + 1;
    if (line == "#SBATCH hetjob") {
      ++at;
    } else if (line.rfind("#SBATCH --", 0) == 0 && at == k) {
      lines.push_back(line.substr(8));
    }
  }
  return lines;
}

bool has(const std::vector<std::string>& lines, const std::string& option) {
  for (const auto& l : lines) {
    if (l == option) return true;
  }
  return false;
}

TEST(SlurmSpec, ClusterFieldsAreRead) {
  JobSpec spec = parseOk(kClusterSpec);
  EXPECT_EQ(spec.slurm.partition, "gpu");
  EXPECT_EQ(spec.slurm.account, "ml");
  EXPECT_EQ(spec.slurm.qos, "high");
  EXPECT_EQ(spec.slurm.sbatch_options,
            (std::vector<std::string>{"--exclusive", "--constraint=ib"}));
  const SlurmPoolSpec& workers = spec.pool(PoolKind::kWorkers).slurm;
  EXPECT_EQ(workers.nodes, 2);
  EXPECT_EQ(workers.tasks_per_node, 2);
  EXPECT_EQ(workers.cpus_per_task, 6);
  EXPECT_EQ(workers.gpus, "a100:1");
  EXPECT_EQ(workers.memory, "64G");
  const MachineSpec& eval = spec.pool(PoolKind::kEvaluators).machine;
  EXPECT_EQ(eval.machine_type, "n1-standard-4");
  EXPECT_EQ(eval.accelerator_type, "NVIDIA_TESLA_T4");
  EXPECT_EQ(eval.accelerator_count, 1);
}

TEST(SlurmScript, OneComponentPerPoolWithItsResources) {
  std::string script = render(parseOk(kClusterSpec));
  EXPECT_EQ(script.rfind("#!/bin/bash\n", 0), 0u);
  EXPECT_NE(script.find("#SBATCH --job-name=cluster\n"), std::string::npos);
  EXPECT_NE(script.find("#SBATCH --output=/shared/jobs/cluster-1/reducectl/slurm/attempt-2.out\n"),
            std::string::npos);
  EXPECT_NE(script.find("#SBATCH --chdir=/home/me\n"), std::string::npos);
  auto primary = component(script, 0), workers = component(script, 1);
  auto reducers = component(script, 2), evaluator = component(script, 3);
  EXPECT_TRUE(component(script, 4).empty());
  // a2-highgpu-2g: 24 vCPUs, 170 GB, 2 A100s.
  EXPECT_TRUE(has(primary, "--ntasks=1"));
  EXPECT_TRUE(has(primary, "--cpus-per-task=24"));
  EXPECT_TRUE(has(primary, "--mem-per-cpu=7254M"));
  EXPECT_TRUE(has(primary, "--gpus-per-task=2"));
  EXPECT_TRUE(has(workers, "--ntasks=4"));
  EXPECT_TRUE(has(workers, "--nodes=2"));
  EXPECT_TRUE(has(workers, "--ntasks-per-node=2"));
  EXPECT_TRUE(has(workers, "--cpus-per-task=6"));
  EXPECT_TRUE(has(workers, "--mem=64G"));
  EXPECT_TRUE(has(workers, "--gpus-per-task=a100:1"));
  EXPECT_TRUE(has(reducers, "--cpus-per-task=16"));
  EXPECT_TRUE(has(reducers, "--mem-per-cpu=1024M"));
  EXPECT_TRUE(has(evaluator, "--gpus-per-task=1"));
  EXPECT_TRUE(has(reducers, "--partition=cpu"));  // the pool's own partition
  EXPECT_FALSE(has(reducers, "--partition=gpu"));
  for (const auto* c : {&primary, &workers, &reducers, &evaluator}) {
    EXPECT_TRUE(has(*c, "--partition=gpu") || c == &reducers);
    EXPECT_TRUE(has(*c, "--account=ml"));
    EXPECT_TRUE(has(*c, "--qos=high"));
    EXPECT_TRUE(has(*c, "--time=90"));  // the job's timeout as Slurm's backstop
    EXPECT_TRUE(has(*c, "--exclusive"));
    EXPECT_TRUE(has(*c, "--constraint=ib"));
  }
  EXPECT_NE(script.find("# note: evaluator: NVIDIA_TESLA_T4 asked as any GPU"), std::string::npos);
  EXPECT_NE(script.find("start_step primary 0\nstart_step worker 1\nstart_step reducer 2\n"
                        "start_step evaluator 3\ndecider=primary\n"),
            std::string::npos);
  EXPECT_NE(script.find("--attempt 1 --ready-timeout 45 --reduce-server "
                        "'/opt/libreduce/bin/reduce-server'"),
            std::string::npos);
}

TEST(SlurmScript, OnePoolIsNotAHeterogeneousJob) {
  JobSpec spec = parseOk(
      "displayName: ring\nworkerPoolSpecs:\n  - {}\n  - replicaCount: 3\n"
      "    command: [a]\n");
  std::string script = render(spec);
  EXPECT_EQ(script.find("hetjob"), std::string::npos);
  EXPECT_NE(script.find("start_step worker\ndecider=worker\n"), std::string::npos);
  EXPECT_EQ(slurmComponents(spec), std::vector<PoolKind>{PoolKind::kWorkers});
}

TEST(SlurmScript, PathsAreQuotedForTheShell) {
  JobSpec spec =
      parseOk("displayName: q\nworkerPoolSpecs:\n  - replicaCount: 1\n    command: [a]\n");
  SlurmAttempt a{"/jobs/it's here", 0, "/bin/reducectl", "/bin/reduce-server", "/", 30, 10};
  std::string script, error;
  ASSERT_TRUE(renderSbatchScript(spec, a, &script, &error)) << error;
  EXPECT_NE(script.find("job_dir='/jobs/it'\\''s here'\n"), std::string::npos);
}

// A newline in a directive's value would end the #SBATCH line and add one of the spec's choosing.
TEST(SlurmScript, NoLineCanBeInjectedIntoTheDirectives) {
  JobSpec spec =
      parseOk("displayName: q\nworkerPoolSpecs:\n  - replicaCount: 1\n    command: [a]\n");
  std::string script, error;
  SlurmAttempt a{
      "/jobs/x\n#SBATCH --uid=0", 0, "/bin/reducectl", "/bin/reduce-server", "/", 30, 10};
  EXPECT_FALSE(renderSbatchScript(spec, a, &script, &error));
  EXPECT_NE(error.find("the output directory (baseOutputDirectory) cannot go into the sbatch "
                       "script: it holds a control character (a newline)"),
            std::string::npos)
      << error;
  a.job_dir = "/jobs/x";
  a.working_dir = "/w\rork";
  EXPECT_FALSE(renderSbatchScript(spec, a, &script, &error));
  EXPECT_NE(error.find("the working directory (workingDir)"), std::string::npos) << error;
}

TEST(SlurmScript, UnmappableMachinesAreRefusedClearly) {
  std::string error;
  render(parseOk("displayName: m\nworkerPoolSpecs:\n  - replicaCount: 1\n    command: [a]\n"
                 "    machineSpec: {machineType: n1-standard-8, acceleratorType: TPU_V3, "
                 "acceleratorCount: 8}\n"),
         &error);
  EXPECT_NE(error.find("acceleratorType TPU_V3 is a TPU"), std::string::npos) << error;
}

TEST(MachineTypes, GoogleSizes) {
  MachineShape shape;
  std::string error;
  ASSERT_TRUE(machineShape({"n1-standard-8", "", 0, 0}, &shape, &error)) << error;
  EXPECT_EQ(shape.vcpus, 8);
  EXPECT_EQ(shape.memory_mb, 8 * 3840);  // 30 GB
  ASSERT_TRUE(machineShape({"g2-standard-24", "", 0, 0}, &shape, &error)) << error;
  EXPECT_EQ(shape.gpus, 2);
  EXPECT_EQ(shape.gpu_model, "NVIDIA_L4");
  ASSERT_TRUE(machineShape({"a3-highgpu-8g", "", 0, 0}, &shape, &error)) << error;
  EXPECT_EQ(shape.vcpus, 208);
  EXPECT_EQ(shape.gpus, 8);
  ASSERT_TRUE(machineShape({"", "NVIDIA_TESLA_V100", 4, 0}, &shape, &error)) << error;
  EXPECT_EQ(shape.vcpus, 0);
  EXPECT_EQ(shape.gpus, 4);
  EXPECT_FALSE(machineShape({"c2-highmem-8", "", 0, 0}, &shape, &error));  // c2 has no highmem
  EXPECT_FALSE(machineShape({"n1-standard-0", "", 0, 0}, &shape, &error));
}

TEST(SlurmReplica, TasksPerNodeForm) {
  EXPECT_EQ(tasksOnNode("2(x3),1", 0), 2);
  EXPECT_EQ(tasksOnNode("2(x3),1", 2), 2);
  EXPECT_EQ(tasksOnNode("2(x3),1", 3), 1);
  EXPECT_EQ(tasksOnNode("2(x3),1", 4), 0);
  EXPECT_EQ(tasksOnNode("4", 0), 4);
  EXPECT_EQ(tasksOnNode("", 0), 0);
}

TEST(JobSpecWriter, TheNodesReadTheSameJob) {
  JobSpec spec = parseOk(kClusterSpec);
  spec.base_output_dir = "/shared/jobs";
  JobSpec back = parseOk(jobSpecDocument(spec));
  EXPECT_EQ(back.name, spec.name);
  EXPECT_EQ(back.base_output_dir, spec.base_output_dir);
  EXPECT_EQ(back.libreduce_env, spec.libreduce_env);
  EXPECT_EQ(back.scheduling.timeout_s, spec.scheduling.timeout_s);
  EXPECT_EQ(back.scheduling.max_restarts, 2);
  for (int p = 0; p < kPoolCount; ++p) {
    EXPECT_EQ(back.pools[p].replica_count, spec.pools[p].replica_count) << p;
    EXPECT_EQ(back.pools[p].command, spec.pools[p].command) << p;
    EXPECT_EQ(back.pools[p].env, spec.pools[p].env) << p;
  }
}

}  // namespace
}  // namespace rd::orch
