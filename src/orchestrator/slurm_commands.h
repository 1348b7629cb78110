// SPDX-License-Identifier: BSD-3-Clause
// Slurm's own commands as the Slurm backend uses them: sbatch to submit, squeue for the live
// state, scontrol for the state of a job that left the queue, scancel. No accounting database is
// needed. Each command runs with a time limit, so a controller that does not answer becomes an
// error instead of a hang.
#pragma once

#include <string>

namespace rd::orch {

/** What squeue says of a job: every component's state, the first reason given. */
struct SlurmQueueState {
  bool answered = false;  // squeue ran and answered (else: error says why)
  bool in_queue = false;  // false: the job has left the queue (or was never there)
  bool pending = false;   // some component is still PENDING
  std::string state;      // RUNNING, PENDING, COMPLETING, ... (the first component's)
  std::string reason;     // why it is pending ("Resources", "PartitionNodeLimit")
  std::string error;
};

/** `sbatch --parsable SCRIPT`: the job id, or false with sbatch's own message. */
bool slurmSubmit(const std::string& script, std::string* job_id, std::string* error);

SlurmQueueState slurmQueueState(const std::string& job_id);

/** JobState= of `scontrol show job` (COMPLETED, FAILED, CANCELLED, TIMEOUT, ...); "" if unknown. */
std::string slurmFinalState(const std::string& job_id);

/** `scancel JOB`; false with the reason. */
bool slurmCancel(const std::string& job_id, std::string* error);

/**
 * A pending reason that waiting will not change (the job asks for more than the partition has,
 * a bad account, QoS or constraint): the job should be refused, not left waiting.
 */
bool slurmReasonIsHopeless(const std::string& reason);

}  // namespace rd::orch
