// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/slurm_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>

#include "orchestrator/job_commands.h"
#include "orchestrator/job_display.h"
#include "orchestrator/job_files.h"
#include "orchestrator/job_record.h"
#include "orchestrator/job_spec_writer.h"
#include "orchestrator/job_status.h"
#include "orchestrator/pool_key.h"
#include "orchestrator/slurm_commands.h"
#include "orchestrator/slurm_replica.h"
#include "orchestrator/slurm_script.h"

namespace rd::orch {
namespace {

// Slurm is asked about the job twice a second: state changes show within that, and a squeue
// call costs the controller little.
constexpr int kPollMs = 500;
// After scancel, how long the job may take to leave the queue (Slurm's KillWait, a slow node).
constexpr int kCancelWaitS = 90;
constexpr size_t kLastLines = 3;

enum class Phase { kQueued, kStarted, kStopping, kDone };

std::string readLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

class SlurmJob {
 public:
  SlurmJob(const JobSpec& spec, const SlurmRunOptions& options)
      : spec_(spec), options_(options), display_(options.run.quiet) {}

  JobResult run();

 private:
  bool prepare(std::string* error);
  bool submit();
  void loop();
  void waitForSignalOrTick();
  void onSignal(int sig);
  void tick();
  void followStarted();
  void attemptEnded();
  void readExitFiles();
  void describeEnds();
  std::string failureCause(const std::string& outcome);
  void tailLogs();
  void stop(JobState final_state, const std::string& cause);
  void setState(JobState state);
  void writeStatus();

  const JobSpec& spec_;
  SlurmRunOptions options_;
  JobDisplay display_;
  JobLayout layout_;
  std::string log_dir_;
  std::string attempt_dir_;
  std::string slurm_id_;
  std::string slurm_ids_;  // every attempt's, for the record
  std::vector<Replica> replicas_;
  std::map<std::string, off_t> log_offsets_;
  std::map<std::string, std::string> how_ended_;  // "exit 3", from the replica's exit file
  int signal_fd_ = -1;
  sigset_t old_mask_{};
  Phase phase_ = Phase::kQueued;
  JobState state_ = JobState::kQueued;
  JobState final_state_ = JobState::kFailed;
  std::string cause_;
  std::string last_reason_;
  int restarts_used_ = 0;
  int cancel_signal_ = 0;
  Clock::time_point started_;
  Clock::time_point attempt_running_ = Clock::time_point::max();
  Clock::time_point job_deadline_ = Clock::time_point::max();
  Clock::time_point stop_deadline_ = Clock::time_point::max();
  std::string started_wall_;
};

JobResult SlurmJob::run() {
  JobResult result;
  started_ = Clock::now();
  started_wall_ = wallClockNow();
  std::string error;
  if (!prepare(&error)) {
    display_.note("error: " + error);
    unblockJobSignals(&signal_fd_, old_mask_);
    result.cause = error;
    if (!layout_.output_dir.empty()) {
      state_ = JobState::kFailed;
      cause_ = error;
      writeStatus();
    }
    return result;
  }
  display_.note("job " + layout_.job_id + " on Slurm; logs in " + log_dir_);
  if (spec_.scheduling.timeout_s > 0) {
    job_deadline_ = started_ + std::chrono::seconds(spec_.scheduling.timeout_s);
  }
  if (submit()) loop();
  tellDetachedWaiter(&options_.run.notify_fd, "");  // never submitted: the waiter reads nothing
  state_ = final_state_;
  writeStatus();
  unlink(layout_.secret_file.c_str());
  double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  JobRecord record{spec_, layout_, state_, cause_, started_wall_, seconds, restarts_used_};
  record.slurm_jobs = slurm_ids_;
  const double started_epoch_s = epochSecondsAgo(seconds);
  for (int a = 0; a <= layout_.attempt; ++a) {
    readReducerLosses(slurmAttemptDir(layout_.output_dir, a), started_epoch_s, &record.failovers);
  }
  std::string events_warning;
  mergeRankEvents(spec_, layout_.output_dir, started_epoch_s, &record.failovers, &events_warning);
  if (!events_warning.empty()) display_.note("warning: " + events_warning);
  result = reportJobEnd(record, replicas_, log_dir_, cancel_signal_, &display_);
  unblockJobSignals(&signal_fd_, old_mask_);
  return result;
}

bool SlurmJob::prepare(std::string* error) {
  layout_.job_id = options_.run.job_id.empty() ? makeJobId(spec_.name) : options_.run.job_id;
  std::string base = spec_.base_output_dir.empty() ? "reducectl-jobs" : spec_.base_output_dir;
  layout_.output_dir = absolutePath(base) + "/" + layout_.job_id;
  log_dir_ = layout_.output_dir + "/reducectl";
  for (const char* sub : {"/reducectl/slurm", "/model", "/checkpoints", "/logs"}) {
    if (!makeDirectories(layout_.output_dir + sub, error)) return false;
  }
  layout_.secret_file = slurmSecretFile(layout_.output_dir);
  if (!writeSecretFile(layout_.secret_file, error)) return false;
  if (spec_.reducer_pool.attached()) {
    // The ranks read the key where it is: on a file system every node shares.
    std::string key;
    if (!readPoolKey(spec_.reducer_pool, &key, error)) return false;
  }
  if (!writeFileAtomically(slurmSpecFile(layout_.output_dir), jobSpecDocument(spec_))) {
    *error = "cannot write " + slurmSpecFile(layout_.output_dir);
    return false;
  }
  registerJob(layout_.job_id, layout_.output_dir);
  for (int p = 0; p < kPoolCount; ++p) {
    for (int i = 0; i < spec_.pools[p].replica_count; ++i) {
      Replica r;
      r.id.pool = static_cast<PoolKind>(p);
      r.id.index = i;
      r.name = std::string(poolName(r.id.pool)) + "-" + std::to_string(i);
      replicas_.push_back(std::move(r));
    }
  }
  signal_fd_ = blockJobSignals(&old_mask_, error);
  if (signal_fd_ < 0) return false;
  display_.start();
  return true;
}

// A new attempt: its directory, its script, a new Slurm job.
bool SlurmJob::submit() {
  SlurmAttempt a{layout_.output_dir,         layout_.attempt,   options_.reducectl,
                 options_.run.reduce_server, absolutePath("."), options_.run.ready_timeout_s,
                 options_.run.finish_grace_s};
  attempt_dir_ = slurmAttemptDir(layout_.output_dir, layout_.attempt);
  std::string error, script;
  for (const char* sub : {"/ready", "/addr", "/exit"}) {
    if (!makeDirectories(attempt_dir_ + sub, &error)) break;
  }
  std::string script_file = attempt_dir_ + ".sbatch";
  if (error.empty() && renderSbatchScript(spec_, a, &script, &error) &&
      !writeFileAtomically(script_file, script)) {
    error = "cannot write " + script_file;
  }
  if (error.empty() && !slurmSubmit(script_file, &slurm_id_, &error)) slurm_id_.clear();
  if (!error.empty()) {
    final_state_ = JobState::kFailed;
    cause_ = error;
    display_.note(error);
    phase_ = Phase::kDone;
    return false;
  }
  slurm_ids_ += (slurm_ids_.empty() ? "" : ",") + slurm_id_;
  for (auto& r : replicas_) {
    r.running = r.ended = r.ready = false;
    r.exit_code = -1;
    r.result.clear();
  }
  phase_ = Phase::kQueued;
  attempt_running_ = Clock::time_point::max();
  last_reason_.clear();
  display_.note("attempt " + std::to_string(layout_.attempt + 1) + ": Slurm job " + slurm_id_ +
                " (" + script_file + ")");
  setState(JobState::kQueued);
  tellDetachedWaiter(&options_.run.notify_fd, layout_.job_id + " " + slurm_id_ + "\n");
  return true;
}

void SlurmJob::loop() {
  while (phase_ != Phase::kDone) {
    waitForSignalOrTick();
    if (phase_ == Phase::kDone) break;
    tick();
    double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    display_.setStatus(statusLine(phase_ == Phase::kStopping ? "STOPPING" : jobStateName(state_),
                                  seconds, replicas_, restarts_used_,
                                  spec_.scheduling.max_restarts));
  }
}

void SlurmJob::waitForSignalOrTick() {
  pollfd fd{signal_fd_, POLLIN, 0};
  if (poll(&fd, 1, kPollMs) <= 0) return;
  signalfd_siginfo info{};
  while (read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    onSignal(static_cast<int>(info.ssi_signo));
  }
}

void SlurmJob::onSignal(int sig) {
  if (sig == SIGCHLD) return;  // Slurm's commands, reaped where they run
  if (cancel_signal_ != 0) {
    display_.note(std::string("SIG") + sigabbrev_np(sig) +
                  " again: cancelling the Slurm job again");
    std::string error;
    slurmCancel(slurm_id_, &error);
    return;
  }
  cancel_signal_ = sig;
  if (phase_ == Phase::kStopping) return;
  stop(JobState::kCancelled, std::string("cancelled by SIG") + sigabbrev_np(sig));
}

void SlurmJob::tick() {
  tailLogs();
  SlurmQueueState q = slurmQueueState(slurm_id_);
  if (!q.answered) {
    display_.note("warning: " + q.error);  // the controller may be restarting: ask again
    return;
  }
  auto now = Clock::now();
  if (phase_ == Phase::kStopping) {
    if (!q.in_queue) {
      tailLogs();
      readExitFiles();
      describeEnds();
      phase_ = Phase::kDone;
    } else if (now >= stop_deadline_) {
      display_.note("warning: Slurm job " + slurm_id_ + " is still " + q.state + " " +
                    std::to_string(kCancelWaitS) + " s after scancel");
      phase_ = Phase::kDone;
    }
    return;
  }
  if (now >= job_deadline_) {
    stop(JobState::kFailed, "timed out after " + formatDuration(spec_.scheduling.timeout_s));
    return;
  }
  if (!q.in_queue) {
    attemptEnded();
    return;
  }
  if (q.pending) {
    if (q.reason != last_reason_) {
      last_reason_ = q.reason;
      display_.note("Slurm job " + slurm_id_ + " pending: " + q.reason);
    }
    if (slurmReasonIsHopeless(q.reason)) {
      stop(JobState::kFailed, "Slurm cannot run the job as specified (pending reason " + q.reason +
                                  ": it asks for more nodes, CPUs, memory or time than its "
                                  "partition, account or QoS allows)");
    }
    return;
  }
  if (phase_ == Phase::kQueued) {
    phase_ = Phase::kStarted;
    attempt_running_ = now;
    for (auto& r : replicas_) r.running = true;
    setState(JobState::kProvisioning);
  }
  followStarted();
}

// The attempt's files: reducers' ready files, replicas' exit files, the ready deadline.
void SlurmJob::followStarted() {
  bool all_ready = true;
  std::string not_ready;
  for (auto& r : replicas_) {
    if (r.id.pool != PoolKind::kReducers || r.ready) continue;
    std::string address = readyAddress(attempt_dir_ + "/ready/" + r.name);
    if (!address.empty()) {
      r.ready = true;
      layout_.addresses[static_cast<int>(PoolKind::kReducers)].resize(
          spec_.pool(PoolKind::kReducers).replica_count);
      layout_.addresses[static_cast<int>(PoolKind::kReducers)][r.id.index] = address;
      continue;
    }
    all_ready = false;
    if (not_ready.empty()) not_ready = r.name;
  }
  readExitFiles();
  if (all_ready && state_ == JobState::kProvisioning) {
    int reducers = spec_.pool(PoolKind::kReducers).replica_count;
    if (reducers > 0) display_.note(std::to_string(reducers) + " reducer(s) ready");
    setState(JobState::kRunning);
  }
  if (!all_ready &&
      Clock::now() >= attempt_running_ + std::chrono::seconds(options_.run.ready_timeout_s)) {
    std::string cause =
        not_ready + " not ready after " + std::to_string(options_.run.ready_timeout_s) + " s";
    if (!exists(attempt_dir_ + "/batch-started")) {
      cause += "; the job's batch script wrote nothing to " + layout_.output_dir +
               ": it must be on a filesystem every node sees";
    }
    stop(JobState::kFailed, cause);
  }
}

void SlurmJob::readExitFiles() {
  for (auto& r : replicas_) {
    if (r.ended) continue;
    std::string line = readLine(attempt_dir_ + "/exit/" + r.name);
    if (line.empty()) continue;
    r.ended = true;
    r.running = false;
    r.exit_code = std::atoi(line.c_str());
    r.result = line.substr(line.find(' ') + 1);
    how_ended_[r.name] = r.result;
  }
}

// How each replica's end reads in the summary, once its whole log is in (srun writes the logs;
// they are complete when the job has left the queue).
void SlurmJob::describeEnds() {
  for (auto& r : replicas_) {
    r.running = false;
    if (!r.ended) {
      r.result = "stopped when the attempt ended";
      continue;
    }
    bool stopped = r.exit_code == 128 + SIGTERM || r.exit_code == 128 + SIGKILL ||
                   (r.exit_code == 0 && r.id.pool == PoolKind::kReducers);
    if (stopped) {
      r.result += " (stopped when the attempt ended)";
    } else if (r.exit_code == 0) {
      r.result += " (finished)";
    } else if (!r.last_err.empty()) {
      r.result += ": " + r.last_err.back();
    }
  }
}

// The Slurm job left the queue: the outcome its script wrote, or Slurm's word on it.
void SlurmJob::attemptEnded() {
  tailLogs();
  readExitFiles();
  std::string outcome = readLine(attempt_dir_ + "/outcome");
  describeEnds();
  if (outcome.rfind("succeeded", 0) == 0) {
    display_.note(outcome.substr(11) + "; the job succeeded");
    final_state_ = JobState::kSucceeded;
    cause_.clear();
    phase_ = Phase::kDone;
    return;
  }
  std::string cause = failureCause(outcome);
  const Scheduling& s = spec_.scheduling;
  if (s.disable_retries || restarts_used_ >= s.max_restarts || Clock::now() >= job_deadline_) {
    final_state_ = JobState::kFailed;
    cause_ = cause;
    display_.note(cause);
    phase_ = Phase::kDone;
    return;
  }
  ++restarts_used_;
  display_.note(cause + "; restarting the job as a new Slurm job (restart " +
                std::to_string(restarts_used_) + " of " + std::to_string(s.max_restarts) +
                (s.restart_job_on_worker_restart ? ")" : "; on Slurm every replica restarts)"));
  ++layout_.attempt;
  submit();
}

// The replica that failed first in its own right (not one ended by the attempt's end), else the
// script's outcome, else Slurm's final state.
std::string SlurmJob::failureCause(const std::string& outcome) {
  for (const auto& r : replicas_) {
    bool ended_by_others = r.exit_code == 128 + SIGTERM || r.exit_code == 128 + SIGKILL;
    if (!r.ended || ended_by_others) continue;
    if (r.exit_code != 0) {
      return r.name + " failed (" + how_ended_[r.name] + ")" +
             (r.last_err.empty() ? "" : ": " + r.last_err.back());
    }
    if (r.id.pool == PoolKind::kReducers) return r.name + " exited during the job";
  }
  if (!outcome.empty()) return "attempt " + std::to_string(layout_.attempt + 1) + " " + outcome;
  std::string state = slurmFinalState(slurm_id_);
  if (state == "TIMEOUT") return "Slurm job " + slurm_id_ + " reached its time limit";
  if (state == "CANCELLED") return "Slurm job " + slurm_id_ + " was cancelled outside reducectl";
  return "Slurm job " + slurm_id_ + " ended " + (state.empty() ? "(state unknown)" : state) +
         " before its script recorded an outcome";
}

// Each replica's log (srun writes it in the job directory): new lines to the terminal, the last
// few kept for the cause.
void SlurmJob::tailLogs() {
  for (auto& r : replicas_) {
    std::string path = log_dir_ + "/" + r.name + ".log";
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    off_t& offset = log_offsets_[r.name];
    char buf[65536];
    ssize_t n = 0;
    while ((n = pread(fd, buf, sizeof buf, offset)) > 0) {
      offset += n;
      r.out_buf.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    size_t nl = 0;
    while ((nl = r.out_buf.find('\n')) != std::string::npos) {
      std::string line = r.out_buf.substr(0, nl);
      r.out_buf.erase(0, nl + 1);
      display_.replicaLine(r.name, false, line);
      r.last_err.push_back(line);
      if (r.last_err.size() > kLastLines) r.last_err.pop_front();
    }
  }
}

void SlurmJob::stop(JobState final_state, const std::string& cause) {
  final_state_ = final_state;
  cause_ = cause;
  display_.note(cause + "; cancelling Slurm job " + slurm_id_);
  std::string error;
  if (!slurmCancel(slurm_id_, &error)) display_.note("warning: " + error);
  phase_ = Phase::kStopping;
  stop_deadline_ = Clock::now() + std::chrono::seconds(kCancelWaitS);
  writeStatus();
}

void SlurmJob::setState(JobState state) {
  if (state == state_ && state != JobState::kQueued) return;
  state_ = state;
  display_.note("job " + layout_.job_id + " " + jobStateName(state));
  writeStatus();
}

void SlurmJob::writeStatus() {
  JobStatusRecord s{layout_.job_id, jobStateName(state_), "slurm", slurm_id_, cause_, getpid()};
  writeJobStatus(layout_.output_dir, s);
}

}  // namespace

JobResult runSlurmJob(const JobSpec& spec, const SlurmRunOptions& options) {
  SlurmJob job(spec, options);
  return job.run();
}

bool renderSlurmJob(const JobSpec& spec, const SlurmRunOptions& options, std::string* script,
                    std::string* error) {
  std::string base = spec.base_output_dir.empty() ? "reducectl-jobs" : spec.base_output_dir;
  std::string id = options.run.job_id.empty() ? spec.name + "-JOBID" : options.run.job_id;
  SlurmAttempt a{absolutePath(base) + "/" + id,
                 0,
                 options.reducectl,
                 options.run.reduce_server,
                 absolutePath("."),
                 options.run.ready_timeout_s,
                 options.run.finish_grace_s};
  return renderSbatchScript(spec, a, script, error);
}

}  // namespace rd::orch
