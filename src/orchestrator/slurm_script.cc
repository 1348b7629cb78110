// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/slurm_script.h"

#include <string>
#include <vector>

#include "orchestrator/external_command.h"
#include "orchestrator/machine_types.h"

namespace rd::orch {
namespace {

std::string minutesText(int64_t seconds) {
  return std::to_string((seconds + 59) / 60);
}

// The options every component carries: its partition (the pool's, else the job's), the account,
// QoS, time limit and the spec's own sbatch options (a heterogeneous job takes them per
// component).
std::vector<std::string> jobLevelOptions(const JobSpec& spec, PoolKind kind) {
  const SlurmJobSpec& s = spec.slurm;
  std::vector<std::string> out;
  const std::string& partition = spec.pool(kind).slurm.partition;
  if (!partition.empty() || !s.partition.empty()) {
    out.push_back("--partition=" + (partition.empty() ? s.partition : partition));
  }
  if (!s.account.empty()) out.push_back("--account=" + s.account);
  if (!s.qos.empty()) out.push_back("--qos=" + s.qos);
  // The job's own timeout is enforced by reducectl; Slurm's limit is the backstop for a job
  // left behind (--detach, reducectl killed).
  int64_t limit = s.time_limit_s > 0 ? s.time_limit_s : spec.scheduling.timeout_s;
  if (limit > 0) out.push_back("--time=" + minutesText(limit));
  for (const auto& option : s.sbatch_options) out.push_back(option);
  return out;
}

// A directive is one line that sbatch reads as options: a newline or another control character
// in a value would end it and smuggle in a line of the spec's choosing.
bool directiveSafe(const std::string& what, const std::string& value, std::string* error) {
  for (unsigned char c : value) {
    if (c < 0x20 || c == 0x7f) {
      *error = what + " cannot go into the sbatch script: it holds a control character (" +
               (c == '\n' ? std::string("a newline") : "code " + std::to_string(c)) + ")";
      return false;
    }
  }
  return true;
}

// The rank-0 pool's step decides the attempt: the primary, or the workers without one.
const char* decidingPool(const JobSpec& spec) {
  return poolName(rankZeroPool(spec));
}

std::string scriptBody(const JobSpec& spec, const SlurmAttempt& a) {
  std::vector<PoolKind> components = slurmComponents(spec);
  bool het = components.size() > 1;
  std::string out;
  out += "set -u\n";
  out += "job_dir=" + shellQuoted(a.job_dir) + "\n";
  out += "attempt_dir=" + shellQuoted(slurmAttemptDir(a.job_dir, a.attempt)) + "\n";
  out += "replica=(" + shellQuoted(a.reducectl) +
         " slurm-replica --job-dir \"$job_dir\" --attempt " + std::to_string(a.attempt) +
         " --ready-timeout " + std::to_string(a.ready_timeout_s) + " --reduce-server " +
         shellQuoted(a.reduce_server) + ")\n";
  out += "finish_grace_s=" + std::to_string(a.finish_grace_s) + "\n\n";
  out +=
      "# The job directory must be shared: reducectl waits for this file from the first node.\n"
      "echo \"$(hostname) ${SLURM_JOB_ID}\" >\"$attempt_dir/batch-started\"\n\n"
      "declare -A step_pool=()\n"
      "start_step() {  # POOL [HET_GROUP]: one task per replica, logs per replica (%t = index)\n"
      "  srun ${2:+--het-group=$2} --kill-on-bad-exit=1 --open-mode=append \\\n"
      "    --output=\"$job_dir/reducectl/$1-%t.log\" \"${replica[@]}\" --pool \"$1\" &\n"
      "  step_pool[$!]=$1\n"
      "}\n"
      "end_attempt() {  # EXIT_CODE OUTCOME\n"
      "  echo \"$2\" >\"$attempt_dir/outcome.tmp\" && mv \"$attempt_dir/outcome.tmp\" "
      "\"$attempt_dir/outcome\"\n"
      "  exit \"$1\"  # Slurm ends the steps still running\n"
      "}\n"
      "ranks_running() {\n"
      "  local pid\n"
      "  for pid in \"${!step_pool[@]}\"; do\n"
      "    [[ ${step_pool[$pid]} == primary || ${step_pool[$pid]} == worker ]] && "
      "kill -0 \"$pid\" 2>/dev/null && return 0\n"
      "  done\n"
      "  return 1\n"
      "}\n\n";
  for (size_t k = 0; k < components.size(); ++k) {
    out += std::string("start_step ") + poolName(components[k]) +
           (het ? " " + std::to_string(k) : "") + "\n";
  }
  out += std::string("decider=") + decidingPool(spec) + "\n\n";
  out +=
      "while ((${#step_pool[@]} > 0)); do\n"
      "  wait -n -p ended \"${!step_pool[@]}\"\n"
      "  code=$?\n"
      "  pool=${step_pool[$ended]}\n"
      "  unset \"step_pool[$ended]\"\n"
      "  ((code == 0)) || end_attempt 1 \"failed: the $pool step ended with exit $code\"\n"
      "  [[ $pool == reducer ]] && end_attempt 1 \"failed: the reducer step ended during the "
      "job\"\n"
      "  if [[ $pool == \"$decider\" ]]; then\n"
      "    # The other ranks get the grace period to end by themselves.\n"
      "    for ((i = 0; i < finish_grace_s * 10; ++i)); do ranks_running || break; sleep 0.1; "
      "done\n"
      "    end_attempt 0 \"succeeded: the $pool step finished\"\n"
      "  fi\n"
      "done\n"
      "end_attempt 1 \"failed: every step ended without the $decider step finishing\"\n";
  return out;
}

}  // namespace

std::string slurmAttemptDir(const std::string& job_dir, int attempt) {
  return job_dir + "/reducectl/slurm/attempt-" + std::to_string(attempt + 1);
}

std::vector<PoolKind> slurmComponents(const JobSpec& spec) {
  std::vector<PoolKind> out;
  for (int p = 0; p < kPoolCount; ++p) {
    if (spec.pools[p].replica_count > 0) out.push_back(static_cast<PoolKind>(p));
  }
  return out;
}

bool slurmPoolResources(const JobSpec& spec, PoolKind kind, std::vector<std::string>* options,
                        std::vector<std::string>* notes, std::string* error) {
  const PoolSpec& pool = spec.pool(kind);
  const SlurmPoolSpec& s = pool.slurm;
  MachineShape shape;
  std::string machine_error;
  if (!machineShape(pool.machine, &shape, &machine_error)) {
    *error = std::string("the ") + poolName(kind) + " pool's machineSpec (line " +
             std::to_string(pool.machine.line) + "): " + machine_error;
    return false;
  }
  options->push_back("--ntasks=" + std::to_string(pool.replica_count));
  if (s.nodes > 0) options->push_back("--nodes=" + std::to_string(s.nodes));
  if (s.tasks_per_node > 0)
    options->push_back("--ntasks-per-node=" + std::to_string(s.tasks_per_node));
  int cpus = s.cpus_per_task > 0 ? s.cpus_per_task : shape.vcpus;
  if (cpus > 0) options->push_back("--cpus-per-task=" + std::to_string(cpus));
  if (!s.memory.empty()) {
    options->push_back("--mem=" + s.memory);
  } else if (shape.memory_mb > 0 && cpus > 0) {
    // One replica is one task: the machine's memory spread over the task's CPUs.
    options->push_back("--mem-per-cpu=" + std::to_string((shape.memory_mb + cpus - 1) / cpus) +
                       "M");
  }
  if (!s.gpus.empty()) {
    options->push_back("--gpus-per-task=" + s.gpus);
  } else if (shape.gpus > 0) {
    options->push_back("--gpus-per-task=" + std::to_string(shape.gpus));
    notes->push_back(std::string(poolName(kind)) + ": " + shape.gpu_model +
                     " asked as any GPU (Slurm's GPU type names are the cluster's own; "
                     "slurm.gpus: TYPE:COUNT names one)");
  }
  if (!pool.machine.machine_type.empty()) {
    notes->push_back(std::string(poolName(kind)) + ": machineType " + pool.machine.machine_type +
                     " asked as " + std::to_string(shape.vcpus) + " CPUs and " +
                     std::to_string(shape.memory_mb) + " MB per replica");
  }
  return true;
}

bool renderSbatchScript(const JobSpec& spec, const SlurmAttempt& attempt, std::string* script,
                        std::string* error) {
  std::vector<PoolKind> components = slurmComponents(spec);
  if (!directiveSafe("the job name", spec.name, error) ||
      !directiveSafe("the output directory (baseOutputDirectory)", attempt.job_dir, error) ||
      !directiveSafe("the working directory (workingDir)", attempt.working_dir, error)) {
    return false;
  }
  std::string out = "#!/bin/bash\n";
  out += "# reducectl: job " + spec.name + ", attempt " + std::to_string(attempt.attempt + 1) +
         "; one component per pool, one task per replica.\n";
  out += "#SBATCH --job-name=" + spec.name + "\n";
  out += "#SBATCH --output=" + slurmAttemptDir(attempt.job_dir, attempt.attempt) + ".out\n";
  if (!attempt.working_dir.empty()) out += "#SBATCH --chdir=" + attempt.working_dir + "\n";
  std::vector<std::string> notes;
  for (size_t k = 0; k < components.size(); ++k) {
    if (k > 0) out += "#SBATCH hetjob\n";
    out += "# component " + std::to_string(k) + ": " + poolName(components[k]) + " x" +
           std::to_string(spec.pool(components[k]).replica_count) + "\n";
    std::vector<std::string> options;
    if (!slurmPoolResources(spec, components[k], &options, &notes, error)) return false;
    for (const auto& option : jobLevelOptions(spec, components[k])) options.push_back(option);
    for (const auto& option : options) {
      if (!directiveSafe("the sbatch option '" + option.substr(0, option.find('=')) + "'", option,
                         error)) {
        return false;
      }
      out += "#SBATCH " + option + "\n";
    }
  }
  for (const auto& note : notes) out += "# note: " + note + "\n";
  out += "\n" + scriptBody(spec, attempt);
  *script = std::move(out);
  return true;
}

}  // namespace rd::orch
