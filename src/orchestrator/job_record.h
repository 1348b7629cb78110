// SPDX-License-Identifier: BSD-3-Clause
// A job's replicas as the local backend tracks them, and what is reported about them: the live
// status line, the final summary on the terminal and the job record (job.json) in the job's
// directory.
#pragma once

#include <chrono>
#include <deque>
#include <string>
#include <vector>

#include "orchestrator/job_display.h"
#include "orchestrator/local_backend.h"
#include "orchestrator/reducer_failover.h"
#include "orchestrator/replica_env.h"
#include "orchestrator/replica_process.h"

namespace rd::orch {

using Clock = std::chrono::steady_clock;

struct Replica {
  ReplicaId id;
  std::string name;      // "worker-1"
  LaunchedProcess proc;  // the running process (its group), its output pipes
  bool running = false;
  bool ended = false;                // ran and ended in this attempt
  bool signalled = false;            // reducectl stopped it: its exit is expected
  int exit_code = -1;                // 0..255, or 128 + signal
  std::string result;                // "exit 1: <last error line>", "exit 0 (stopped by reducectl)"
  std::string out_buf, err_buf;      // partial lines
  std::deque<std::string> last_err;  // its last few stderr lines, for the cause
  int log_fd = -1;
  std::string ready_file;      // reducers: where the ready line appears
  std::string container_name;  // a containerSpec pool's replica: its container (removed at the end)
  bool ready = false;          // reducers: its address is in the job's layout
};

struct JobRecord {
  const JobSpec& spec;
  const JobLayout& layout;
  JobState state;
  std::string cause;
  std::string started_wall;  // ISO 8601, local time
  double seconds;            // duration
  int restarts;              // restarts used
  std::string slurm_jobs{};  // the Slurm backend: each attempt's Slurm job id, comma-separated
  std::vector<FailoverRecord> failovers{};
};

/** "RUNNING 0:12 | primary 1/1 | worker 3/3 | reducer 2/2 | restarts 0/2" */
std::string statusLine(const char* state, double seconds, const std::vector<Replica>& replicas,
                       int restarts, int max_restarts);

/** The job record: id, name, state, cause, times, and every replica's result and log. */
std::string jobRecordJson(const JobRecord& record, const std::vector<Replica>& replicas);

/** The summary printed at the end: state, duration, one line per replica, where the logs are. */
std::string jobSummary(const JobRecord& record, const std::vector<Replica>& replicas,
                       const std::string& log_dir);

/**
 * A job's end, whatever ran it: the record to LOG_DIR/job.json (none without a LOG_DIR), the
 * display finished, the summary on standard error. Returns what the backend's run function returns
 * (the exit code 128 +
 * @p cancel_signal when cancelled).
 */
JobResult reportJobEnd(const JobRecord& record, const std::vector<Replica>& replicas,
                       const std::string& log_dir, int cancel_signal, JobDisplay* display);

/** "90 s", "10 min", "1 h 30 min". */
std::string formatDuration(int64_t seconds);

/** Now as 2026-12-01T09:00:00+0000. */
std::string wallClockNow();

}  // namespace rd::orch
