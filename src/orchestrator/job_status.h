// SPDX-License-Identifier: BSD-3-Clause
// A job's live status on disk, so that `reducectl status JOB` and `reducectl cancel JOB` work on
// a job run by another reducectl (--detach, another terminal): JOB_DIR/reducectl/status holds the
// state, the backend, the process following the job and Slurm's job id; a registry of job ids
// (XDG_STATE_HOME/reducectl/jobs/ID, a link to the job's directory) finds the directory by id.
#pragma once

#include <string>

namespace rd::orch {

struct JobStatusRecord {
  std::string job_id;
  std::string state;      // QUEUED ... CANCELLED (jobStateName)
  std::string backend;    // "local" or "slurm"
  std::string slurm_job;  // Slurm's job id of the current attempt; empty for the local backend
  std::string cause;      // why it failed or was cancelled
  int driver_pid = 0;     // the reducectl following the job
};

/** Writes JOB_DIR/reducectl/status atomically. */
bool writeJobStatus(const std::string& job_dir, const JobStatusRecord& status);

/** Reads it; false when there is none (not a reducectl job directory). */
bool readJobStatus(const std::string& job_dir, JobStatusRecord* status);

/** Records @p job_id -> @p job_dir in the registry (best effort). */
void registerJob(const std::string& job_id, const std::string& job_dir);

/** The directory of a job given by id (the registry) or by its directory; "" when unknown. */
std::string findJobDir(const std::string& id_or_dir);

/** True while @p pid is a reducectl process (not a reused pid). */
bool isReducectlProcess(int pid);

/** True for SUCCEEDED, FAILED, CANCELLED. */
bool isFinalState(const std::string& state);

}  // namespace rd::orch
