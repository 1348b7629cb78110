// SPDX-License-Identifier: BSD-3-Clause
// The local backend's job (local_backend.h): the replicas of one job run as child processes
// of reducectl, through their lives and the job's. Private to the local backend: its life
// (local_backend.cc) and what it does when a replica ends (local_replica_exits.cc).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "orchestrator/job_display.h"
#include "orchestrator/job_record.h"
#include "orchestrator/job_status.h"
#include "orchestrator/local_backend.h"
#include "orchestrator/network_emulation.h"
#include "orchestrator/orphan_guard.h"
#include "orchestrator/replica_process.h"

namespace rd::orch {

class LocalJob {
 public:
  LocalJob(const JobSpec& spec, const RunOptions& options)
      : spec_(spec), options_(options), display_(options.quiet) {}

  JobResult run();

 private:
  // Where the job is in its life. Finishing: the result is known (success), the other replicas
  // get a grace period to end by themselves. Stopping: every replica got SIGTERM and gets
  // SIGKILL at the deadline; then the job ends, or starts its next attempt.
  enum class Phase { kProvisioning, kRunning, kFinishing, kStopping, kDone };

  bool prepare(std::string* error);
  void startAttempt();
  const EmulatedHost* hostOf(const Replica& r) const;
  bool launch(Replica& r);
  void startOthers();
  void loop();
  int pollTimeoutMs() const;
  void pollOnce(int timeout_ms);
  void onSignal(int sig);
  void reapChildren();
  // @p group_lingers: what the replica started still runs (being stopped) and may still write
  // to its pipes, which stay open until they are drained to the end.
  void onExit(Replica& r, int status, bool group_lingers = false);
  void closeOutput(pid_t pgid);
  void failOrRestart(Replica& r, const std::string& cause);
  // A rank's failure while reducers run waits kRankFailureSettle (settleRankFailures acts).
  void deferRankFailure(const Replica& r, const std::string& cause);
  void settleRankFailures();
  // A reducer ended while the job ran: with failover the ranks go on with the others, so the
  // job goes on, and the reducer starts again at its address to be re-admitted. False when
  // the job cannot go on without it (no failover, or no other reducer left).
  bool goOnWithout(Replica& r, const std::string& cause);
  // Replacement reducers whose ready line came (the loop polls while one is awaited).
  void checkReplacements();
  void pruneLingering();
  void restoreSignals();
  void drain(Replica& r, bool is_stderr, bool final);
  void checkProvisioning();
  // --trace: where the replicas write their timelines, and their merge at the job's end.
  std::string traceDir() const;
  void mergeTrace();
  // A rank's metrics textfile directory (LIBREDUCE_METRICS) in @p env, for `reducectl status`,
  // unless the spec or reducectl's environment names one of its own.
  void addRankMetrics(const Replica& r, std::vector<std::pair<std::string, std::string>>* env);
  // A built-in reducer's metrics endpoint (its ready line's metrics=), written to
  // reducerMetricsList() for `reducectl status`.
  void recordReducerMetrics(const Replica& r);
  void checkDeadlines();
  void succeed(const std::string& why);
  void fail(const std::string& cause);
  void beginStop(JobState final_state, const std::string& cause, bool restart);
  void enterPhase(Phase phase, JobState state);
  bool anyRunning(bool everyone) const;
  void updateStatus();
  void writeStatus();
  void cleanup();

  const JobSpec& spec_;
  RunOptions options_;
  JobDisplay display_;
  OrphanGuard guard_;
  EmulatedNetwork net_;
  JobLayout layout_;
  std::string secret_dir_;
  std::string log_dir_;
  int signal_fd_ = -1;
  sigset_t old_mask_{};

  std::vector<Replica> replicas_;
  // Ports handed to built-in reducers on 127.0.0.1 (each probe socket is closed at once).
  std::set<int> reducer_ports_;
  std::map<std::string, std::string> reducer_metrics_;  // reducer name -> host:port
  std::vector<FailoverRecord> failovers_;
  std::vector<pid_t> lingering_;  // groups of stopped replicas whose leader already ended
  // Ranks' failures not yet acted on (name, cause), and when they are.
  std::vector<std::pair<std::string, std::string>> rank_failures_;
  Clock::time_point rank_failures_due_ = Clock::time_point::max();
  Phase phase_ = Phase::kProvisioning;
  JobState state_ = JobState::kQueued;
  JobState final_state_ = JobState::kFailed;
  std::string cause_;
  bool restart_after_stop_ = false;
  int restarts_used_ = 0;
  int cancel_signal_ = 0;
  Clock::time_point started_;
  Clock::time_point job_deadline_ = Clock::time_point::max();
  Clock::time_point phase_deadline_ = Clock::time_point::max();
  std::string started_wall_;
};

}  // namespace rd::orch
