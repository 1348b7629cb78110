// SPDX-License-Identifier: BSD-3-Clause
// What the local backend's job does when a replica ends: reaping it, and then going on without
// a lost reducer (failover), restarting the job, or failing it; a rank's failure waits a
// moment for the reducer exit that may have caused it.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "orchestrator/job_files.h"
#include "orchestrator/local_job.h"
#include "orchestrator/replica_output.h"

namespace rd::orch {

namespace {

// A rank that fails because a reducer died can be reaped before that reducer: the reducer's
// connections close as its exit begins, its exit status comes only at the end. A rank's failure
// is acted on after this long, so that a reducer's exit in the meantime, the cause, decides:
// one incident, one restart.
constexpr auto kRankFailureSettle = std::chrono::seconds(1);

}  // namespace

void LocalJob::reapChildren() {
  for (;;) {
    // Peek first: while the exited process is a zombie, its pid (its group's id) cannot be
    // reused, so its group can be signalled safely before it is reaped.
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    pid_t pid = info.si_pid;
    Replica* replica = nullptr;
    for (auto& r : replicas_) {
      if (r.running && r.proc.pid == pid) replica = &r;
    }
    bool lingers = false;
    if (replica != nullptr && !replica->signalled) {
      signalGroup(pid, SIGKILL);  // whatever the replica started dies with it
    } else if (replica != nullptr) {
      // Being stopped: what it started keeps the stop's grace (a wrapper script that does not
      // exec ends first); killed at the stop deadline at the latest.
      lingering_.push_back(pid);
      lingers = true;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (pid == guard_.pid()) {
      guard_.lost();
      display_.note("warning: the orphan guard process ended unexpectedly");
      continue;
    }
    if (replica == nullptr) continue;  // a process a replica left behind, reparented to us
    if (!replica->signalled) guard_.forget(pid);
    onExit(*replica, status, lingers);
  }
}

// Groups whose leader ended while being stopped, still holding processes: alive ones stay.
void LocalJob::pruneLingering() {
  std::vector<pid_t> alive;
  for (pid_t pgid : lingering_) {
    if (signalGroup(pgid, 0)) {
      alive.push_back(pgid);
    } else {
      guard_.forget(pgid);
      closeOutput(pgid);
    }
  }
  lingering_ = std::move(alive);
}

// The last of a replica's output once nobody of its group is left to write it.
void LocalJob::closeOutput(pid_t pgid) {
  for (auto& r : replicas_) {
    if (r.running || r.proc.pid != pgid) continue;
    drain(r, false, true);
    drain(r, true, true);
  }
}

void LocalJob::onExit(Replica& r, int status, bool group_lingers) {
  // A lingering group keeps the pipes: closing them now would kill a child that is cleaning up
  // with SIGPIPE at its next line of output (a shell reporting its own child's signal).
  drain(r, false, !group_lingers);
  drain(r, true, !group_lingers);
  r.running = false;
  r.ended = true;
  r.exit_code = exitCodeOf(status);
  r.result = describeWaitStatus(status);
  if (r.signalled) {
    r.result += " (stopped by reducectl)";
    return;
  }
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (ok) r.result += " (finished)";
  if (!ok && !r.last_err.empty()) r.result += ": " + r.last_err.back();
  if (phase_ == Phase::kStopping || phase_ == Phase::kDone || phase_ == Phase::kFinishing) return;
  bool is_reducer = r.id.pool == PoolKind::kReducers;
  if (phase_ == Phase::kProvisioning && is_reducer) {
    failOrRestart(r, r.name + " exited before it was ready (" + r.result + ")");
    return;
  }
  if (ok && !is_reducer) {
    bool has_primary = spec_.pool(PoolKind::kPrimary).replica_count > 0;
    if (r.id.pool == PoolKind::kPrimary) {
      succeed("the primary finished");
    } else if (!has_primary && r.id.pool == PoolKind::kWorkers) {
      bool all = true;
      for (const auto& w : replicas_) {
        if (w.id.pool == PoolKind::kWorkers && !(w.ended && w.exit_code == 0)) all = false;
      }
      if (all) succeed("every worker finished");
    }
    return;
  }
  std::string cause = r.name + " " + (is_reducer && ok ? "exited during the job" : "failed") +
                      " (" + describeWaitStatus(status) + ")";
  if (!r.last_err.empty() && !ok) cause += ": " + r.last_err.back();
  if (is_reducer && phase_ == Phase::kRunning && goOnWithout(r, describeWaitStatus(status))) return;
  if (!is_reducer && phase_ == Phase::kRunning &&
      spec_.pool(PoolKind::kReducers).replica_count > 0) {
    deferRankFailure(r, cause);
    return;
  }
  failOrRestart(r, cause);
}

void LocalJob::deferRankFailure(const Replica& r, const std::string& cause) {
  if (rank_failures_.empty()) rank_failures_due_ = Clock::now() + kRankFailureSettle;
  rank_failures_.emplace_back(r.name, cause);
}

// Unless a stop (a reducer's failure restarting the job) came first and covers them.
void LocalJob::settleRankFailures() {
  auto failures = std::move(rank_failures_);
  rank_failures_.clear();
  rank_failures_due_ = Clock::time_point::max();
  for (const auto& [name, cause] : failures) {
    if (phase_ != Phase::kRunning) return;
    for (auto& r : replicas_) {
      if (r.name == name) failOrRestart(r, cause);
    }
  }
}

bool LocalJob::goOnWithout(Replica& r, const std::string& cause) {
  const bool others = std::any_of(replicas_.begin(), replicas_.end(), [&r](const Replica& o) {
    return o.id.pool == PoolKind::kReducers && &o != &r && o.running && o.ready;
  });
  if (!others || !reducersFailOver(spec_)) return false;
  FailoverRecord f;
  f.reducer = r.name;
  f.address = layout_.addresses[static_cast<int>(PoolKind::kReducers)][r.id.index];
  f.lost_at_s = std::chrono::duration<double>(Clock::now() - started_).count();
  f.cause = cause;
  const bool replace = reducersReplaced(spec_) && r.id.restarts < kReducerReplacements;
  std::string note = r.name + " " + cause + ": the ranks go on with the other reducers";
  r.ready = false;
  if (replace) {
    ++r.id.restarts;
    unlink(r.ready_file.c_str());
    f.replaced_at_s = f.lost_at_s;
    note += "; starting a replacement at " + f.address + " (" + std::to_string(r.id.restarts) +
            " of " + std::to_string(kReducerReplacements) + ")";
  }
  display_.note(note);
  failovers_.push_back(f);
  if (replace) launch(r);
  return true;
}

void LocalJob::checkReplacements() {
  for (auto& r : replicas_) {
    if (r.id.pool != PoolKind::kReducers || !r.running || r.ready) continue;
    std::string address = readyAddress(r.ready_file);
    if (address.empty()) continue;
    r.ready = true;
    recordReducerMetrics(r);
    for (auto& f : failovers_) {
      if (f.reducer == r.name && f.back_ready_at_s < 0 && f.replaced_at_s >= 0) {
        f.back_ready_at_s = std::chrono::duration<double>(Clock::now() - started_).count();
      }
    }
    display_.note(r.name + " replacement listening at " + address +
                  "; the ranks re-admit it at an operation boundary");
  }
}

void LocalJob::failOrRestart(Replica& r, const std::string& cause) {
  bool is_reducer = r.id.pool == PoolKind::kReducers;
  const Scheduling& s = spec_.scheduling;
  bool can_restart = !s.disable_retries && restarts_used_ < s.max_restarts;
  if (!can_restart) {
    fail(cause);
    return;
  }
  ++restarts_used_;
  // A reducer's address changes when it restarts, which the workers cannot follow: the whole job
  // starts again, as with restartJobOnWorkerRestart.
  if (s.restart_job_on_worker_restart || is_reducer) {
    display_.note(cause + "; restarting the job (restart " + std::to_string(restarts_used_) +
                  " of " + std::to_string(s.max_restarts) + ")");
    beginStop(JobState::kRunning, cause, true);
    return;
  }
  display_.note(cause + "; restarting " + r.name + " (restart " + std::to_string(restarts_used_) +
                " of " + std::to_string(s.max_restarts) + ")");
  ++r.id.restarts;
  launch(r);
}

}  // namespace rd::orch
