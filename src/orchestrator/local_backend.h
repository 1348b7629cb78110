// SPDX-License-Identifier: BSD-3-Clause
// The local backend: runs a job's replicas as processes on this machine and drives the job's
// life: reducers first (until every one reports ready), then the primary, workers and evaluators;
// success, failure, restarts (one replica, or the whole job), timeout and cancellation; logs; and
// no process left behind.
#pragma once

#include <string>

#include "orchestrator/job_spec.h"

namespace rd::orch {

/** Vertex AI's job states, in order of a job's life. */
enum class JobState { kQueued, kProvisioning, kRunning, kSucceeded, kFailed, kCancelled };

/** "QUEUED", "PROVISIONING", ... */
const char* jobStateName(JobState state);

/** reducectl's exit status for a job that ended in @p state: 0, 1, or 128 + @p cancel_signal. */
int jobExitCode(JobState state, int cancel_signal);

struct RunOptions {
  std::string reduce_server;  // the built-in reducer's program
  std::string job_id;         // empty: NAME-YYYYMMDD-HHMMSS-XXXX
  // A trial of the tuning job job_id: the job runs in BASE/job_id/trial_id, its replicas get
  // CLOUD_ML_TRIAL_ID and CLOUD_ML_HP_METRIC_FILE = hp_metric_file.
  std::string trial_id;
  std::string hp_metric_file;
  int ready_timeout_s = 30;  // a reducer not ready by then fails the job
  int stop_grace_s = 10;     // SIGTERM, then this long, then SIGKILL
  int finish_grace_s = 10;   // after the primary succeeds, how long the others get to end
  bool quiet = false;        // replicas' output only to their logs, not to the terminal
  // Each replica in its own network namespace behind a link capped at its pool's nicGbps
  // (root; network_emulation.h), built with the harness tool at netns_tool.
  bool emulate_network = false;
  std::string netns_tool;
  // --trace: every replica (ranks and built-in reducers) writes its timeline into
  // OUTPUT_DIR/trace (LIBREDUCE_TRACE), merged into OUTPUT_DIR/trace.json at the job's end.
  bool trace = false;
  // --detach: the job's start (local: the reducers launched; Slurm: the job submitted) is told
  // by writing its id to this pipe, which is then closed; -1: no one waits.
  int notify_fd = -1;
};

struct JobResult {
  JobState state = JobState::kQueued;
  std::string cause;       // why it failed or was cancelled; empty on success
  std::string output_dir;  // the job's directory (logs under reducectl/)
  int exit_code = 1;       // reducectl's: 0 succeeded, 1 failed, 128 + signal when cancelled
};

/**
 * Runs @p spec to its end and returns how it ended. Blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD
 * while it runs (they are read from a signalfd: a first SIGINT/SIGTERM cancels the job, a second
 * one kills the replicas at once).
 */
JobResult runLocalJob(const JobSpec& spec, const RunOptions& options);

}  // namespace rd::orch
