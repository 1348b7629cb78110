// SPDX-License-Identifier: BSD-3-Clause
// The Slurm backend: runs a job spec as one heterogeneous Slurm job per attempt (slurm_script.h)
// and follows it from Slurm's own state (squeue, scontrol) and the files its replicas write in
// the shared job directory: QUEUED while pending, PROVISIONING until every reducer is ready,
// RUNNING, then how it ended. Restarts are new attempts (a new Slurm job, a fresh communicator);
// Ctrl-C / SIGTERM and the job's timeout cancel it with scancel.
#pragma once

#include <string>

#include "orchestrator/job_spec.h"
#include "orchestrator/local_backend.h"

namespace rd::orch {

struct SlurmRunOptions {
  RunOptions run;         // job id, reducer, timeouts, quiet, notify_fd
  std::string reducectl;  // this program, as the nodes run it (absolute)
};

/** Runs @p spec on Slurm to its end; blocks the job signals while it runs (as runLocalJob). */
JobResult runSlurmJob(const JobSpec& spec, const SlurmRunOptions& options);

/** The first attempt's batch script, as `reducectl render --backend slurm` prints it. */
bool renderSlurmJob(const JobSpec& spec, const SlurmRunOptions& options, std::string* script,
                    std::string* error);

}  // namespace rd::orch
