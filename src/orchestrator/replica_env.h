// SPDX-License-Identifier: BSD-3-Clause
// The environment each replica of a job gets: the cluster layout in Vertex AI's CLUSTER_SPEC and
// TensorFlow's TF_CONFIG, torchrun's variables, the libreduce settings that join it to the
// reducers, and the AIP_* output directories.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "orchestrator/job_spec.h"
#include "orchestrator/managed_env.h"

namespace rd::orch {

/** Where each replica of a job lives and what the whole job shares, decided at launch. */
struct JobLayout {
  std::string job_id;      // CLOUD_ML_JOB_ID; also the stem of the communicator id
  int attempt = 0;         // gang restarts so far: each attempt joins a fresh communicator
  std::string output_dir;  // the job's directory under baseOutputDirectory
  // host:port per replica of each pool, indexed like JobSpec::pools. Reducers' are the
  // addresses they reported ready on; the others' are free ports reserved for the replica
  // (the primary's is MASTER_ADDR:MASTER_PORT, and MASTER_PORT+1 is kept free for the ring
  // rendezvous).
  std::array<std::vector<std::string>, kPoolCount> addresses;
  std::string secret_file;  // the job secret's file (0600); the secret itself is never in env
  // reducerPool: the job key's file as the ranks see it (they present it instead of the job
  // secret); "" when the job runs reducers of its own.
  std::string pool_key_file;
  // A trial of a tuning job (job_id is then the tuning job's): CLOUD_ML_TRIAL_ID, and the file
  // its hypertune reports go to (CLOUD_ML_HP_METRIC_FILE). Empty for a plain job.
  std::string trial_id;
  std::string hp_metric_file;
};

/** One replica: which pool, which index, how many times it was restarted on its own. */
struct ReplicaId {
  PoolKind pool = PoolKind::kWorkers;
  int index = 0;
  int restarts = 0;
  // Where a rank runs among the job's nodes: torchrun's LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK.
  // local_rank -1: every replica on this host (the local backend), so LOCAL_RANK is RANK and
  // the local world is the world.
  int local_rank = -1;
  int local_world_size = 0;
  int node_rank = 0;
};

/**
 * The variables reducectl sets for @p replica. The replica's environment is reducectl's own
 * (less managedVariables() and LIBREDUCE_SECRET), then the pool's env entries from the spec
 * (which may not name a managed variable: the spec check refuses it), then these. Values:
 * - CLUSTER_SPEC: {"cluster": {"workerpool0": [...], ...}, "environment": "cloud",
 *   "task": {"type": "workerpoolN", "index": I, "trial": ""}, "job": {...}}
 * - TF_CONFIG: {"cluster": {"chief": [...], "worker": [...], "evaluator": [...]}, "task":
 *   {"type": ..., "index": I}, "environment": "cloud"} (the built-in reducers are not TensorFlow
 *   servers and are left out)
 * - primary and workers: RANK (primary 0, workers 1..), WORLD_SIZE, LOCAL_RANK,
 *   LOCAL_WORLD_SIZE, NODE_RANK (from @p replica's placement), MASTER_ADDR, MASTER_PORT,
 *   TORCHELASTIC_RESTART_COUNT
 * - LIBREDUCE_REDUCERS, LIBREDUCE_COMM_ID, LIBREDUCE_SECRET_FILE, the spec's libreduce settings
 * - AIP_MODEL_DIR, AIP_CHECKPOINT_DIR, AIP_TENSORBOARD_LOG_DIR (under output_dir),
 *   CLOUD_ML_JOB_ID, CLOUD_ML_TRIAL_ID (the trial's id, empty outside a tuning job), and in a
 *   trial CLOUD_ML_HP_METRIC_FILE
 */
std::vector<std::pair<std::string, std::string>> replicaEnvironment(const JobSpec& spec,
                                                                    const JobLayout& layout,
                                                                    const ReplicaId& replica);

}  // namespace rd::orch
