// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/local_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "orchestrator/container_runtime.h"
#include "orchestrator/job_commands.h"
#include "orchestrator/job_display.h"
#include "orchestrator/job_files.h"
#include "orchestrator/job_record.h"
#include "orchestrator/job_status.h"
#include "orchestrator/live_figures.h"
#include "orchestrator/local_job.h"
#include "orchestrator/network_emulation.h"
#include "orchestrator/orphan_guard.h"
#include "orchestrator/pool_key.h"
#include "orchestrator/replica_env.h"
#include "orchestrator/replica_output.h"
#include "orchestrator/replica_process.h"
#include "orchestrator/trace_merge.h"

namespace rd::orch {

namespace {

// The loop sleeps in poll() until output, a signal, or the next thing to check: ready files are
// polled while provisioning; otherwise the next deadline, or the status line's clock.
constexpr int kReadyPollMs = 100;
constexpr int kIdlePollMs = 1000;
constexpr int kEmulatedPort = 29500;  // torchrun's default MASTER_PORT

}  // namespace

JobResult LocalJob::run() {
  JobResult result;
  std::string error;
  started_ = Clock::now();
  started_wall_ = wallClockNow();
  if (!prepare(&error)) {
    display_.note("error: " + error);
    tellDetachedWaiter(&options_.notify_fd, "");
    cleanup();
    restoreSignals();
    result.state = JobState::kFailed;
    result.cause = error;
    return result;
  }
  display_.note("job " + layout_.job_id + " " + jobStateName(JobState::kQueued) + "; logs in " +
                log_dir_);
  if (options_.trial_id.empty()) registerJob(layout_.job_id, layout_.output_dir);
  writeStatus();
  if (spec_.scheduling.timeout_s > 0) {
    job_deadline_ = started_ + std::chrono::seconds(spec_.scheduling.timeout_s);
  }
  startAttempt();
  tellDetachedWaiter(&options_.notify_fd, layout_.job_id + "\n");
  loop();
  cleanup();
  writeStatus();
  double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  JobRecord record{spec_, layout_, state_, cause_, started_wall_, seconds, restarts_used_};
  std::string events_warning;
  mergeRankEvents(spec_, layout_.output_dir, epochSecondsAgo(seconds), &failovers_,
                  &events_warning);
  if (!events_warning.empty()) display_.note("warning: " + events_warning);
  if (options_.trace) mergeTrace();
  record.failovers = failovers_;
  result = reportJobEnd(record, replicas_, log_dir_, cancel_signal_, &display_);
  restoreSignals();
  return result;
}

bool LocalJob::prepare(std::string* error) {
  layout_.job_id = options_.job_id.empty() ? makeJobId(spec_.name) : options_.job_id;
  std::string base = spec_.base_output_dir.empty() ? "reducectl-jobs" : spec_.base_output_dir;
  layout_.output_dir = absolutePath(base) + "/" + layout_.job_id;
  if (!options_.trial_id.empty()) layout_.output_dir += "/" + options_.trial_id;
  layout_.trial_id = options_.trial_id;
  layout_.hp_metric_file = options_.hp_metric_file;
  log_dir_ = layout_.output_dir + "/reducectl";
  for (const char* sub : {"/reducectl", "/model", "/checkpoints", "/logs"}) {
    if (!makeDirectories(layout_.output_dir + sub, error)) return false;
  }
  if (options_.trace && !makeDirectories(traceDir(), error)) return false;
  if (!checkContainerImages(spec_, error)) return false;
  for (const PoolSpec& pool : spec_.pools) {
    if (pool.replica_count > 0 && !pool.note.empty()) display_.note(pool.note);
  }
  if (!guard_.start(error)) return false;
  if (!makeSecret(&secret_dir_, &layout_.secret_file, error)) return false;
  guard_.removeOnDeath(secret_dir_);
  if (spec_.reducer_pool.attached()) {
    std::string key;
    if (!readPoolKey(spec_.reducer_pool, &key, error)) return false;
    layout_.pool_key_file = spec_.reducer_pool.key_file;
    std::string reducers;
    for (const auto& a : spec_.reducer_pool.addresses)
      reducers += (reducers.empty() ? "" : ",") + a;
    display_.note("attached to the shared reducer pool " + reducers + " as communicator " +
                  spec_.reducer_pool.comm_id);
  }
  if (options_.emulate_network) {
    if (!createEmulatedNetwork(spec_, options_.netns_tool, &net_, error)) return false;
    guard_.runOnDeath(net_.destroy_command);
    display_.note("emulated network: each replica in its own namespace (" + net_.prefix + "-*)");
  }
  signal_fd_ = blockJobSignals(&old_mask_, error);
  if (signal_fd_ < 0) return false;
  // Only now: the writer thread inherits the blocked mask, so the signals wait for the signalfd
  // instead of being delivered to it.
  display_.start();
  return true;
}

// Every replica of every pool for this attempt; the reducers start now, the rest once every
// reducer is ready.
void LocalJob::startAttempt() {
  std::vector<Replica> previous = std::move(replicas_);
  replicas_.clear();
  for (int p = 0; p < kPoolCount; ++p) {
    const PoolSpec& pool = spec_.pools[p];
    layout_.addresses[p].assign(pool.replica_count, "");
    for (int i = 0; i < pool.replica_count; ++i) {
      Replica r;
      r.id.pool = static_cast<PoolKind>(p);
      r.id.index = i;
      r.name = std::string(poolName(r.id.pool)) + "-" + std::to_string(i);
      for (const auto& old : previous) {
        if (old.name == r.name) r.log_fd = old.log_fd;  // logs continue across attempts
      }
      replicas_.push_back(std::move(r));
    }
  }
  enterPhase(Phase::kProvisioning, JobState::kProvisioning);
  phase_deadline_ = Clock::now() + std::chrono::seconds(options_.ready_timeout_s);
  for (auto& r : replicas_) {
    if (r.id.pool != PoolKind::kReducers) continue;
    r.ready_file = secret_dir_ + "/" + r.name + ".ready";
    unlink(r.ready_file.c_str());
    if (!launch(r)) return;
  }
  checkProvisioning();
}

const EmulatedHost* LocalJob::hostOf(const Replica& r) const {
  if (!options_.emulate_network) return nullptr;
  if (r.id.pool == PoolKind::kReducers) return &net_.reducers.at(r.id.index);
  // The ranks' namespaces hold the primary, then the workers, then the evaluators.
  size_t slot = r.id.index;
  if (r.id.pool != PoolKind::kPrimary) slot += spec_.pool(PoolKind::kPrimary).replica_count;
  if (r.id.pool == PoolKind::kEvaluators) slot += spec_.pool(PoolKind::kWorkers).replica_count;
  return &net_.ranks.at(slot);
}

bool LocalJob::launch(Replica& r) {
  const PoolSpec& pool = spec_.pool(r.id.pool);
  const EmulatedHost* host = hostOf(r);
  LaunchRequest req;
  std::vector<std::pair<std::string, std::string>> env = pool.env;
  // Where the ranks tell of reducer failovers, for the job record (the spec's own setting wins).
  if (isRankPool(r.id.pool)) {
    env.emplace_back("LIBREDUCE_EVENTS_FILE", rankEventsFile(layout_.output_dir, r.name));
    addRankMetrics(r, &env);
  }
  for (auto& kv : replicaEnvironment(spec_, layout_, r.id)) env.push_back(std::move(kv));
  if (r.id.pool == PoolKind::kReducers) env.emplace_back("LIBREDUCE_READY_FILE", r.ready_file);
  req.env = inheritedEnvironment(environ);
  if (options_.trace) {
    // --trace wins over a LIBREDUCE_TRACE of the spec's or of this environment.
    for (auto* list : {&env, &req.env}) {
      std::erase_if(*list, [](const auto& kv) { return kv.first == "LIBREDUCE_TRACE"; });
    }
    env.emplace_back("LIBREDUCE_TRACE", traceDir());
  }
  if (!pool.container.image_uri.empty()) {
    // The container gets the replica's environment only; podman itself runs with reducectl's.
    bool reducer = r.id.pool == PoolKind::kReducers;
    ContainerReplica c{
        containerName(layout_.job_id + (layout_.trial_id.empty() ? "" : "-" + layout_.trial_id),
                      r.name),
        env,
        {layout_.output_dir},
        {},
        pool.working_dir};
    (reducer ? c.read_write : c.read_only).push_back(secret_dir_);  // reducers write ready files
    r.container_name = c.name;
    guard_.runOnDeath(podmanRemoveCommand(c.name));
    req.argv = podmanRunArgv(pool.container, c);
  } else {
    if (r.id.pool == PoolKind::kReducers && pool.command.empty()) {
      // A replacement listens where the reducer it replaces did: the ranks connect there. On
      // 127.0.0.1 that is a port below the ephemeral range: once the reducer died, a rank that
      // reconnects from an ephemeral port could be given its very port (a TCP self-connect)
      // and hold it against the replacement.
      const std::string& known = layout_.addresses[static_cast<int>(r.id.pool)][r.id.index];
      std::string listen = host != nullptr ? host->address + ":0" : "";
      if (r.id.restarts > 0 && !known.empty()) {
        listen = known;
      } else if (host == nullptr) {
        int port = reserveLocalPort(false, &reducer_ports_);
        listen = "127.0.0.1:" + std::to_string(port);  // 0: none free below, the kernel picks
      }
      req.argv = {options_.reduce_server, "--listen",         listen, "--ready-file", r.ready_file,
                  "--secret-file",        layout_.secret_file};
      // On this host, its metrics for `reducectl status` (a namespace's loopback is its own).
      if (host == nullptr) req.argv.insert(req.argv.end(), {"--metrics", "127.0.0.1:0"});
    } else {
      req.argv = pool.command;
    }
    req.working_dir = pool.working_dir;
    for (auto& kv : env) req.env.push_back(std::move(kv));
  }
  if (host != nullptr) req.argv.insert(req.argv.begin(), {"ip", "netns", "exec", host->netns});
  if (r.log_fd < 0) {
    std::string path = log_dir_ + "/" + r.name + ".log";
    r.log_fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  if (layout_.attempt > 0 || r.id.restarts > 0) {
    std::string mark = "--- reducectl: attempt " + std::to_string(layout_.attempt + 1) +
                       ", restart " + std::to_string(r.id.restarts) + " of this replica ---\n";
    if (r.log_fd >= 0 && write(r.log_fd, mark.data(), mark.size()) < 0) {
      // the log is best effort; the terminal still shows the output
    }
  }
  std::string error;
  if (!launchProcess(req, &r.proc, &error)) {
    r.ended = true;
    r.result = "not started: " + error;
    fail(r.name + ": " + error);
    return false;
  }
  guard_.watch(r.proc.pid);
  r.last_err.clear();
  r.running = true;
  r.ended = false;
  r.signalled = false;
  return true;
}

void LocalJob::startOthers() {
  std::set<int> ports_given;  // each probe socket is closed at once: remember what was handed out
  for (auto& r : replicas_) {
    if (r.id.pool == PoolKind::kReducers) continue;
    bool rank0 = r.id.pool == rankZeroPool(spec_) && r.id.index == 0;
    const EmulatedHost* host = hostOf(r);
    if (host != nullptr) {  // a namespace of its own: every port is free there
      layout_.addresses[static_cast<int>(r.id.pool)][r.id.index] =
          host->address + ":" + std::to_string(kEmulatedPort);
      continue;
    }
    int port = reserveLocalPort(rank0, &ports_given);
    if (port == 0) {
      fail("no free TCP port on 127.0.0.1 for " + r.name);
      return;
    }
    layout_.addresses[static_cast<int>(r.id.pool)][r.id.index] =
        "127.0.0.1:" + std::to_string(port);
  }
  enterPhase(Phase::kRunning, JobState::kRunning);
  phase_deadline_ = Clock::time_point::max();
  for (auto& r : replicas_) {
    if (r.id.pool != PoolKind::kReducers && !launch(r)) return;
  }
}

void LocalJob::enterPhase(Phase phase, JobState state) {
  phase_ = phase;
  if (state != state_) {
    state_ = state;
    display_.note("job " + layout_.job_id + " " + jobStateName(state));
    writeStatus();
  }
  updateStatus();
}

void LocalJob::writeStatus() {
  JobStatusRecord s{layout_.job_id, jobStateName(state_), "local", "", cause_, getpid()};
  writeJobStatus(layout_.output_dir, s);
}

void LocalJob::loop() {
  while (phase_ != Phase::kDone) {
    pollOnce(pollTimeoutMs());
    if (phase_ == Phase::kProvisioning) checkProvisioning();
    if (phase_ == Phase::kRunning) checkReplacements();
    checkDeadlines();
    updateStatus();
  }
}

int LocalJob::pollTimeoutMs() const {
  if (phase_ == Phase::kProvisioning) return kReadyPollMs;
  for (const auto& r : replicas_) {
    if (r.running && !r.ready && r.id.pool == PoolKind::kReducers) return kReadyPollMs;
  }
  auto next = std::min({job_deadline_, phase_deadline_, rank_failures_due_});
  auto now = Clock::now();
  if (next <= now) return 0;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
  return static_cast<int>(std::min<int64_t>(ms, kIdlePollMs));
}

void LocalJob::pollOnce(int timeout_ms) {
  std::vector<pollfd> fds{{signal_fd_, POLLIN, 0}};
  std::vector<std::pair<Replica*, bool>> owners{{nullptr, false}};
  for (auto& r : replicas_) {
    if (r.proc.stdout_fd >= 0) {
      fds.push_back({r.proc.stdout_fd, POLLIN, 0});
      owners.emplace_back(&r, false);
    }
    if (r.proc.stderr_fd >= 0) {
      fds.push_back({r.proc.stderr_fd, POLLIN, 0});
      owners.emplace_back(&r, true);
    }
  }
  int n = poll(fds.data(), fds.size(), timeout_ms);
  if (n <= 0) return;
  for (size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents != 0) drain(*owners[i].first, owners[i].second, false);
  }
  if (fds[0].revents != 0) {
    signalfd_siginfo info{};
    while (read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      onSignal(static_cast<int>(info.ssi_signo));
    }
  }
}

void LocalJob::onSignal(int sig) {
  if (sig == SIGCHLD) {
    reapChildren();
    return;
  }
  if (cancel_signal_ != 0) {
    // A second Ctrl-C: stop waiting for graceful exits.
    display_.note(std::string("SIG") + sigabbrev_np(sig) + " again: killing every replica now");
    for (auto& r : replicas_) {
      if (r.running) signalGroup(r.proc.pid, SIGKILL);
    }
    return;
  }
  cancel_signal_ = sig;
  if (phase_ == Phase::kStopping && !restart_after_stop_) return;  // already ending
  if (phase_ == Phase::kFinishing) {  // the job has succeeded: only stop the rest sooner
    beginStop(JobState::kSucceeded, "", false);
    return;
  }
  beginStop(JobState::kCancelled, std::string("cancelled by SIG") + sigabbrev_np(sig), false);
}

void LocalJob::drain(Replica& r, bool is_stderr, bool final) {
  drainReplicaOutput(r, is_stderr, final, display_);
}

void LocalJob::checkProvisioning() {
  if (phase_ != Phase::kProvisioning) return;
  for (auto& r : replicas_) {
    if (r.id.pool != PoolKind::kReducers || r.ready) continue;
    std::string address = readyAddress(r.ready_file);
    if (address.empty()) return;  // not yet: deadlines are checked by the loop
    r.ready = true;
    layout_.addresses[static_cast<int>(PoolKind::kReducers)][r.id.index] = address;
    recordReducerMetrics(r);
  }
  int reducers = spec_.pool(PoolKind::kReducers).replica_count;
  if (reducers > 0) display_.note(std::to_string(reducers) + " reducer(s) ready");
  startOthers();
}

void LocalJob::addRankMetrics(const Replica& r,
                              std::vector<std::pair<std::string, std::string>>* env) {
  // The spec's or this environment's own LIBREDUCE_METRICS (an endpoint a Prometheus server
  // scrapes, say) wins: then status has no figures of the ranks.
  auto given = [env](const char* variable) {
    for (const auto& kv : *env) {
      if (kv.first == variable) return true;
    }
    return std::getenv(variable) != nullptr;
  };
  if (given("LIBREDUCE_METRICS")) return;
  const std::string dir = rankMetricsDir(layout_.output_dir, r.name);
  std::string error;
  if (!makeDirectories(dir, &error)) {
    display_.note(r.name + ": no metrics for reducectl status: " + error);
    return;
  }
  env->emplace_back("LIBREDUCE_METRICS", dir);
  if (!given("LIBREDUCE_METRICS_INTERVAL_MS")) {
    env->emplace_back("LIBREDUCE_METRICS_INTERVAL_MS", kRankMetricsIntervalMs);
  }
}

std::string LocalJob::traceDir() const {
  return layout_.output_dir + "/trace";
}

void LocalJob::mergeTrace() {
  const std::string merged = layout_.output_dir + "/trace.json";
  TraceMergeReport report;
  std::string error;
  if (!mergeTraces({traceDir()}, merged, &report, &error)) {
    display_.note("warning: no timeline: " + error);
    return;
  }
  display_.note("timeline of " + std::to_string(report.files) + " process(es): " + merged);
  for (const std::string& refused : report.refused) display_.note("warning: left out " + refused);
}

void LocalJob::recordReducerMetrics(const Replica& r) {
  const std::string metrics = readyField(r.ready_file, "metrics");
  if (metrics.empty()) return;
  reducer_metrics_[r.name] = metrics;
  std::string text;
  for (const auto& [name, address] : reducer_metrics_) {
    text.append(name).append(" ").append(address).append("\n");
  }
  writeFileAtomically(reducerMetricsList(layout_.output_dir), text);
}

void LocalJob::checkDeadlines() {
  pruneLingering();
  auto now = Clock::now();
  if (now >= rank_failures_due_) settleRankFailures();
  if (now >= job_deadline_ && phase_ != Phase::kStopping && phase_ != Phase::kFinishing &&
      phase_ != Phase::kDone) {
    job_deadline_ = Clock::time_point::max();
    fail("timed out after " + formatDuration(spec_.scheduling.timeout_s));
    return;
  }
  if (now < phase_deadline_) {
    if (phase_ == Phase::kStopping && !anyRunning(true)) phase_deadline_ = now;
    if (phase_ == Phase::kFinishing && !anyRunning(false)) phase_deadline_ = now;
    if (now < phase_deadline_) return;
  }
  switch (phase_) {
    case Phase::kProvisioning:
      for (const auto& r : replicas_) {
        if (r.id.pool == PoolKind::kReducers && !r.ready) {
          fail(r.name + " not ready after " + std::to_string(options_.ready_timeout_s) + " s");
          return;
        }
      }
      break;
    case Phase::kFinishing: beginStop(JobState::kSucceeded, "", false); break;
    case Phase::kStopping:
      if (anyRunning(true)) {
        for (auto& r : replicas_) {
          if (r.running) signalGroup(r.proc.pid, SIGKILL);
        }
        for (pid_t pgid : lingering_) signalGroup(pgid, SIGKILL);
        phase_deadline_ = Clock::time_point::max();  // SIGCHLD brings us back
        return;
      }
      if (restart_after_stop_ && now >= job_deadline_) {
        restart_after_stop_ = false;  // no time left for another attempt
        final_state_ = JobState::kFailed;
        cause_ =
            "timed out after " + formatDuration(spec_.scheduling.timeout_s) + " (while restarting)";
        display_.note(cause_);
        phase_deadline_ = now;
      } else if (restart_after_stop_) {
        restart_after_stop_ = false;
        ++layout_.attempt;
        startAttempt();
      } else {
        state_ = final_state_;
        phase_ = Phase::kDone;
      }
      break;
    default: break;
  }
}

void LocalJob::succeed(const std::string& why) {
  display_.note(why + "; the job succeeded, stopping the rest");
  final_state_ = JobState::kSucceeded;
  phase_ = Phase::kFinishing;
  phase_deadline_ = Clock::now() + std::chrono::seconds(options_.finish_grace_s);
}

void LocalJob::fail(const std::string& cause) {
  if (phase_ == Phase::kStopping && !restart_after_stop_) return;
  beginStop(JobState::kFailed, cause, false);
}

void LocalJob::beginStop(JobState final_state, const std::string& cause, bool restart) {
  restart_after_stop_ = restart;
  rank_failures_.clear();  // the stop ends, or restarts, those ranks too
  rank_failures_due_ = Clock::time_point::max();
  if (!restart) {
    final_state_ = final_state;
    cause_ = cause;
    if (!cause.empty()) display_.note(cause);
  }
  phase_ = Phase::kStopping;
  for (auto& r : replicas_) {
    if (!r.running) continue;
    r.signalled = true;
    signalGroup(r.proc.pid, SIGTERM);
  }
  phase_deadline_ = Clock::now() + std::chrono::seconds(options_.stop_grace_s);
}

// With @p everyone false: only the ranks (primary, workers), whose end the finishing phase waits
// for; evaluators and reducers are stopped once the ranks are done.
bool LocalJob::anyRunning(bool everyone) const {
  if (everyone && !lingering_.empty()) return true;
  for (const auto& r : replicas_) {
    if (r.running && (everyone || isRankPool(r.id.pool))) return true;
  }
  return false;
}

void LocalJob::updateStatus() {
  double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  display_.setStatus(statusLine(phase_ == Phase::kStopping ? "STOPPING" : jobStateName(state_),
                                seconds, replicas_, restarts_used_, spec_.scheduling.max_restarts));
}

void LocalJob::cleanup() {
  for (auto& r : replicas_) {
    if (r.running) signalGroup(r.proc.pid, SIGKILL);
  }
  for (pid_t pgid : lingering_) signalGroup(pgid, SIGKILL);
  for (auto& r : replicas_) {
    if (!r.running) continue;
    int status = 0;
    while (waitpid(r.proc.pid, &status, 0) < 0 && errno == EINTR) {
    }
    onExit(r, status);
  }
  // Processes that left their replica's group (setsid, daemons) were reparented to us.
  killStrayChildren(guard_.pid());
  // A container outlives its podman client when that was killed: remove it by name.
  for (const auto& r : replicas_) {
    if (!r.container_name.empty() &&
        std::system(podmanRemoveCommand(r.container_name).c_str()) < 0) {
      display_.note("warning: could not run podman to remove " + r.container_name);
    }
  }
  for (pid_t pgid : lingering_) {
    guard_.forget(pgid);
    closeOutput(pgid);
  }
  lingering_.clear();
  for (auto& r : replicas_) {
    if (r.log_fd >= 0) close(r.log_fd);
    r.log_fd = -1;
  }
  std::string net_error;
  if (!destroyEmulatedNetwork(net_, &net_error)) {
    display_.note("warning: removing the emulated network: " + net_error);
  }
  guard_.finish();
  if (!secret_dir_.empty()) {
    unlink(layout_.secret_file.c_str());
    for (const auto& r : replicas_) {
      if (!r.ready_file.empty()) unlink(r.ready_file.c_str());
    }
    rmdir(secret_dir_.c_str());
  }
}

void LocalJob::restoreSignals() {
  unblockJobSignals(&signal_fd_, old_mask_);
}

const char* jobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued: return "QUEUED";
    case JobState::kProvisioning: return "PROVISIONING";
    case JobState::kRunning: return "RUNNING";
    case JobState::kSucceeded: return "SUCCEEDED";
    case JobState::kFailed: return "FAILED";
    case JobState::kCancelled: return "CANCELLED";
  }
  return "?";
}

int jobExitCode(JobState state, int cancel_signal) {
  if (state == JobState::kSucceeded) return 0;
  return state == JobState::kCancelled ? 128 + cancel_signal : 1;
}

JobResult runLocalJob(const JobSpec& spec, const RunOptions& options) {
  LocalJob job(spec, options);
  return job.run();
}

}  // namespace rd::orch
