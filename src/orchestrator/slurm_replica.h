// SPDX-License-Identifier: BSD-3-Clause
// `reducectl slurm-replica`: one replica of a Slurm job, run by the attempt's srun step on a node
// (one task per replica, the replica's index is SLURM_PROCID). It meets the other replicas
// through the shared job directory: a reducer starts at once and its ready file gives its
// address; every other replica reserves a port on its node, publishes host:port, and waits until
// every reducer is ready and every replica published (within the ready timeout). Then it runs
// the pool's program with the local backend's environment contract, real host names included,
// and records how the program ended.
#pragma once

#include <string>

#include "orchestrator/job_spec.h"

namespace rd::orch {

struct SlurmReplicaArgs {
  std::string job_dir;  // the job's directory: reducectl/slurm/job-spec.json, the secret
  int attempt = 0;      // 0-based
  PoolKind pool = PoolKind::kWorkers;
  int ready_timeout_s = 30;
  std::string reduce_server;
};

/** The job spec the replicas read: JOB_DIR/reducectl/slurm/job-spec.json. */
std::string slurmSpecFile(const std::string& job_dir);

/** The job secret's file on the shared directory: JOB_DIR/reducectl/secret (0600). */
std::string slurmSecretFile(const std::string& job_dir);

/**
 * Runs the replica and returns its exit code (the program's, 128 + signal when it was killed);
 * 1 with a message on standard error when it cannot start (no SLURM_PROCID, the rendezvous timed
 * out). ATTEMPT_DIR/exit/NAME gets "CODE DESCRIPTION" when the program ends.
 */
int runSlurmReplica(const SlurmReplicaArgs& args);

/** Tasks on node @p node_id from Slurm's "2(x3),1" form of SLURM_STEP_TASKS_PER_NODE; 0 if none. */
int tasksOnNode(const std::string& tasks_per_node, int node_id);

}  // namespace rd::orch
