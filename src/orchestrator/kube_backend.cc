// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/kube_backend.h"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>

#include "orchestrator/external_command.h"
#include "orchestrator/job_commands.h"
#include "orchestrator/job_display.h"
#include "orchestrator/job_files.h"
#include "orchestrator/job_record.h"
#include "orchestrator/job_status.h"
#include "orchestrator/pool_key.h"

namespace rd::orch {
namespace {

constexpr int kPollMs = 1000;
constexpr int kKubectlTimeoutS = 30;

// kubectl ARGS...: its output, or false with its error.
bool kubectl(const std::vector<std::string>& args, std::string* out, std::string* error) {
  std::vector<std::string> argv = {"kubectl"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string err;
  int code = runCommand(argv, out, &err, kKubectlTimeoutS);
  if (code == 0) return true;
  *error = code < 0 ? "kubectl is not installed" : trimSpace(err.empty() ? *out : err);
  return false;
}

class KubeJob {
 public:
  KubeJob(const JobSpec& spec, const KubeRunOptions& options)
      : spec_(spec), options_(options), display_(options.run.quiet) {}

  JobResult run() {
    started_ = Clock::now();
    started_wall_ = wallClockNow();
    std::string error;
    bool applied = prepare(&error) && apply(&error);
    tellDetachedWaiter(&options_.run.notify_fd, applied ? layout_.job_id + "\n" : "");
    if (!applied) {
      final_ = JobState::kFailed;
      cause_ = error;
      display_.note("error: " + error);
    } else {
      follow();
      gatherLogsAndDelete();
    }
    return finish();
  }

 private:
  bool prepare(std::string* error) {
    layout_.job_id = options_.run.job_id.empty() ? makeJobId(spec_.name) : options_.run.job_id;
    std::string base = spec_.base_output_dir.empty() ? "reducectl-jobs" : spec_.base_output_dir;
    layout_.output_dir = absolutePath(base) + "/" + layout_.job_id;
    log_dir_ = layout_.output_dir + "/reducectl";
    if (!makeDirectories(log_dir_, error)) return false;
    registerJob(layout_.job_id, layout_.output_dir);
    options_.kube.job_id = layout_.job_id;
    // Attached to a shared pool, the ranks' Secret holds the job key instead of a fresh secret.
    if (spec_.reducer_pool.attached()) {
      if (!readPoolKey(spec_.reducer_pool, &options_.kube.secret, error)) return false;
    } else {
      options_.kube.secret = newSecret();
    }
    jobset_ = kubeJobSetName(layout_.job_id);
    manifest_ = log_dir_ + "/kubernetes.yaml";
    std::string yaml;
    if (!renderKubernetes(spec_, options_.kube, &yaml, error)) return false;
    // The manifest holds the secret: readable by its owner only.
    mode_t old = umask(077);
    bool written = writeFileAtomically(manifest_, yaml);
    umask(old);
    if (!written) {
      *error = "cannot write " + manifest_;
      return false;
    }
    signal_fd_ = blockJobSignals(&old_mask_, error);
    if (signal_fd_ < 0) return false;
    display_.start();
    setState(JobState::kQueued);
    return true;
  }

  bool apply(std::string* error) {
    std::string out;
    if (!kubectl({"get", "--raw", "/version", "--request-timeout=10s"}, &out, error)) {
      *error = "no Kubernetes cluster is reachable through kubectl (" + *error +
               "); `reducectl render --backend kubernetes` prints the manifests without one";
      return false;
    }
    if (!kubectl({"apply", "-f", manifest_}, &out, error)) {
      *error = "kubectl apply refused the manifests (" + manifest_ + "): " + *error;
      return false;
    }
    display_.note("applied JobSet " + jobset_ + " (" + manifest_ + ")");
    return true;
  }

  // The JobSet's Completed / Failed condition, else how far its pods are.
  void follow() {
    auto deadline = spec_.scheduling.timeout_s > 0
                        ? started_ + std::chrono::seconds(spec_.scheduling.timeout_s)
                        : Clock::time_point::max();
    while (true) {
      pollfd fd{signal_fd_, POLLIN, 0};
      if (poll(&fd, 1, kPollMs) > 0) {
        signalfd_siginfo info{};
        while (read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
          if (info.ssi_signo == SIGCHLD) continue;
          cancel_signal_ = static_cast<int>(info.ssi_signo);
          final_ = JobState::kCancelled;
          cause_ = std::string("cancelled by SIG") + sigabbrev_np(cancel_signal_);
          display_.note(cause_);
          return;
        }
      }
      if (Clock::now() >= deadline) {
        final_ = JobState::kFailed;
        cause_ = "timed out after " + formatDuration(spec_.scheduling.timeout_s);
        display_.note(cause_);
        return;
      }
      std::string conditions, error;
      if (!kubectl({"get", "jobset", jobset_, "-o",
                    "jsonpath={range .status.conditions[*]}{.type}={.status}:{.message};{end}"},
                   &conditions, &error)) {
        display_.note("warning: " + error);
        continue;
      }
      if (conditions.find("Completed=True") != std::string::npos) {
        final_ = JobState::kSucceeded;
        return;
      }
      size_t failed = conditions.find("Failed=True:");
      if (failed != std::string::npos) {
        final_ = JobState::kFailed;
        cause_ = "the JobSet failed: " +
                 conditions.substr(failed + 12, conditions.find(';', failed) - failed - 12);
        display_.note(cause_);
        return;
      }
      trackPods();
    }
  }

  void trackPods() {
    std::string pods, error;
    // One line per pod: its replicatedJob, its phase, whether its container is ready.
    const std::string format =
        "jsonpath={range .items[*]}{.metadata.labels.jobset\\.sigs\\.k8s\\.io/replicatedjob-name}"
        " {.status.phase} {.status.containerStatuses[0].ready}\n{end}";
    if (!kubectl({"get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=" + jobset_, "-o", format},
                 &pods, &error)) {
      return;
    }
    int running = 0, reducers_ready = 0;
    std::istringstream lines(pods);
    std::string job, phase, ready;
    while (lines >> job >> phase) {
      std::getline(lines, ready);
      if (phase == "Running") ++running;
      if (job == "reducers" && ready.find("true") != std::string::npos) ++reducers_ready;
    }
    if (running == 0) return;
    bool all_ready = reducers_ready >= spec_.pool(PoolKind::kReducers).replica_count;
    setState(all_ready ? JobState::kRunning : JobState::kProvisioning);
  }

  void gatherLogsAndDelete() {
    std::string logs, error;
    if (kubectl({"logs", "-l", "jobset.sigs.k8s.io/jobset-name=" + jobset_, "--all-containers",
                 "--prefix", "--tail=-1", "--max-log-requests=64"},
                &logs, &error)) {
      writeFileAtomically(log_dir_ + "/pods.log", logs);
    }
    std::string out;
    if (!kubectl({"delete", "-f", manifest_, "--ignore-not-found", "--wait=false"}, &out, &error)) {
      display_.note("warning: deleting the JobSet: " + error);
    }
  }

  JobResult finish() {
    state_ = final_;
    writeStatus();
    double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    JobRecord record{spec_, layout_, state_, cause_, started_wall_, seconds, 0};
    JobResult result = reportJobEnd(record, {}, log_dir_, cancel_signal_, &display_);
    unblockJobSignals(&signal_fd_, old_mask_);
    return result;
  }

  void setState(JobState state) {
    if (state == state_ && state != JobState::kQueued) return;
    state_ = state;
    display_.note("job " + layout_.job_id + " " + jobStateName(state));
    writeStatus();
  }

  void writeStatus() {
    if (layout_.output_dir.empty()) return;
    writeJobStatus(layout_.output_dir,
                   {layout_.job_id, jobStateName(state_), "kubernetes", "", cause_, getpid()});
  }

  const JobSpec& spec_;
  KubeRunOptions options_;
  JobDisplay display_;
  JobLayout layout_;
  std::string log_dir_, jobset_, manifest_, cause_, started_wall_;
  JobState state_ = JobState::kQueued;
  JobState final_ = JobState::kFailed;
  int cancel_signal_ = 0;
  int signal_fd_ = -1;
  sigset_t old_mask_{};
  Clock::time_point started_;
};

}  // namespace

JobResult runKubeJob(const JobSpec& spec, const KubeRunOptions& options) {
  KubeJob job(spec, options);
  return job.run();
}

}  // namespace rd::orch
