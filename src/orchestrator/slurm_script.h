// SPDX-License-Identifier: BSD-3-Clause
// The Slurm backend's batch script: one heterogeneous job per attempt, one component per pool,
// each pool's replicas started by one srun step (one task per replica) that runs
// `reducectl slurm-replica` on the nodes. The script itself decides the attempt's outcome: it
// ends when the rank-0 pool's step ends (success; the other ranks get a grace period) or when any
// step fails, and writes the outcome to the attempt's directory.
#pragma once

#include <string>
#include <vector>

#include "orchestrator/job_spec.h"

namespace rd::orch {

/** What an attempt's script needs besides the spec. Paths are absolute and seen by every node. */
struct SlurmAttempt {
  std::string job_dir;        // the job's directory (shared)
  int attempt = 0;            // 0-based
  std::string reducectl;      // this program, as the nodes run it
  std::string reduce_server;  // the built-in reducer
  std::string working_dir;    // where relative commands and paths resolve: reducectl's own
  int ready_timeout_s = 30;
  int finish_grace_s = 10;
};

/** JOB_DIR/reducectl/slurm/attempt-N (1-based N): ready/, addr/, exit/, outcome. */
std::string slurmAttemptDir(const std::string& job_dir, int attempt);

/** The pools that are components of the job, in component order (the pools with replicas). */
std::vector<PoolKind> slurmComponents(const JobSpec& spec);

/**
 * The Slurm resources of @p kind's pool: its slurm fields, with Vertex's machineSpec mapped
 * where they are silent (machine types to CPUs and memory per task, accelerators to GPUs per
 * task). Notes on what was mapped loosely go to @p notes; false with @p error when the machine
 * cannot be mapped (an unknown machine type, TPUs).
 */
bool slurmPoolResources(const JobSpec& spec, PoolKind kind, std::vector<std::string>* options,
                        std::vector<std::string>* notes, std::string* error);

/** The batch script for @p attempt of @p spec; false with @p error as slurmPoolResources. */
bool renderSbatchScript(const JobSpec& spec, const SlurmAttempt& attempt, std::string* script,
                        std::string* error);

}  // namespace rd::orch
