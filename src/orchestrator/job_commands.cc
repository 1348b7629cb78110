// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/job_commands.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "orchestrator/job_files.h"
#include "orchestrator/job_status.h"
#include "orchestrator/live_figures.h"
#include "orchestrator/slurm_commands.h"

namespace rd::orch {
namespace {

constexpr auto kStatusPoll = std::chrono::milliseconds(200);

std::string tailOf(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::ate);
  if (!in) return "";
  std::streamoff size = in.tellg();
  std::streamoff from =
      size > static_cast<std::streamoff>(bytes) ? size - static_cast<std::streamoff>(bytes) : 0;
  in.seekg(from);
  std::string text(static_cast<size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  return text;
}

// In the detached child: a session of its own (a Ctrl-C in the terminal is not for it), no
// terminal, its output to the log.
void detachFromTerminal(const std::string& log) {
  setsid();
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (null_fd >= 0) dup2(null_fd, 0);
  if (log_fd >= 0) {
    dup2(log_fd, 1);
    dup2(log_fd, 2);
  }
}

// The job @p id_or_dir names: its directory and status; false after saying it is unknown.
// A local job whose reducectl is gone without recording an end has ended: its orphan guard
// stopped the replicas when reducectl died. Recorded as FAILED, so that status and cancel say
// so instead of the state it had when reducectl was killed. A Slurm job lives on in Slurm's
// queue, which status asks.
void settleAbandonedJob(const std::string& dir, JobStatusRecord* status) {
  if (isFinalState(status->state) || !status->slurm_job.empty() ||
      status->backend == "kubernetes" || isReducectlProcess(status->driver_pid)) {
    return;
  }
  status->cause = "the reducectl that ran it (pid " + std::to_string(status->driver_pid) +
                  ") ended without recording the job's end (killed?) while the job was " +
                  status->state + "; its replicas were stopped with it";
  status->state = "FAILED";
  writeJobStatus(dir, *status);
}

bool findJob(const std::string& id_or_dir, std::string* dir, JobStatusRecord* status) {
  *dir = findJobDir(id_or_dir);
  if (!dir->empty() && readJobStatus(*dir, status)) {
    settleAbandonedJob(*dir, status);
    return true;
  }
  std::fprintf(stderr, "reducectl: no job '%s' (give its id or its directory)\n",
               id_or_dir.c_str());
  return false;
}

}  // namespace

int runDetached(const std::string& job_id, const std::string& output_dir,
                const std::function<JobResult(int notify_fd)>& run_job) {
  std::string error;
  if (!makeDirectories(output_dir + "/reducectl", &error)) {
    std::fprintf(stderr, "reducectl: %s\n", error.c_str());
    return 1;
  }
  std::string log = output_dir + "/reducectl/reducectl.log";
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    std::perror("reducectl: pipe");
    return 1;
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    detachFromTerminal(log);
    JobResult result = run_job(fds[1]);
    std::fflush(nullptr);
    _exit(result.exit_code);
  }
  close(fds[1]);
  if (pid < 0) {
    std::perror("reducectl: fork");
    close(fds[0]);
    return 1;
  }
  std::string started;
  char buf[256];
  ssize_t n = 0;
  // Up to the line, not to the end: processes the job forked (its orphan guard) hold the pipe.
  while (started.find('\n') == std::string::npos &&
         ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))) {
    if (n > 0) started.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (started.empty()) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::fprintf(stderr, "reducectl: job %s did not start; its log (%s) ends:\n%s", job_id.c_str(),
                 log.c_str(), tailOf(log, 2000).c_str());
    return 1;
  }
  // "JOB_ID SLURM_ID" from the Slurm backend, "JOB_ID" from the others.
  size_t space = started.find(' ');
  std::string slurm_job = space == std::string::npos ? "" : started.substr(space + 1);
  while (!slurm_job.empty() && slurm_job.back() == '\n') slurm_job.pop_back();
  std::printf("%s\n", job_id.c_str());
  std::fflush(stdout);
  std::fprintf(stderr,
               "reducectl: job %s started in the background%s; reducectl status %s, reducectl "
               "cancel %s; its log: %s\n",
               job_id.c_str(), slurm_job.empty() ? "" : (" (Slurm job " + slurm_job + ")").c_str(),
               job_id.c_str(), job_id.c_str(), log.c_str());
  return 0;
}

void tellDetachedWaiter(int* fd, const std::string& line) {
  if (*fd < 0) return;
  if (!line.empty() && write(*fd, line.data(), line.size()) < 0) {
    // the waiter is gone; the job goes on
  }
  close(*fd);
  *fd = -1;
}

int showJobStatus(const std::string& id_or_dir) {
  std::string dir;
  JobStatusRecord s;
  if (!findJob(id_or_dir, &dir, &s)) return 2;
  bool followed = isReducectlProcess(s.driver_pid);
  std::printf("job %s: %s\n", s.job_id.c_str(), s.state.c_str());
  if (!s.cause.empty()) std::printf("  cause: %s\n", s.cause.c_str());
  std::printf("  backend: %s", s.backend.c_str());
  if (!s.slurm_job.empty()) {
    SlurmQueueState q = slurmQueueState(s.slurm_job);
    std::string slurm_state = q.in_queue ? q.state : slurmFinalState(s.slurm_job);
    std::printf(" (Slurm job %s: %s)", s.slurm_job.c_str(),
                slurm_state.empty() ? "not in the queue" : slurm_state.c_str());
  }
  std::printf("\n  directory: %s\n", dir.c_str());
  if (!isFinalState(s.state) && !followed) {
    std::printf("  note: the reducectl that followed it (pid %d) is gone\n", s.driver_pid);
  }
  showLiveFigures(dir, !isFinalState(s.state));
  return 0;
}

int cancelJob(const std::string& id_or_dir, int wait_s) {
  std::string dir;
  JobStatusRecord s;
  if (!findJob(id_or_dir, &dir, &s)) return 2;
  if (isFinalState(s.state)) {
    std::printf("job %s had already ended: %s\n", s.job_id.c_str(), s.state.c_str());
    return 0;
  }
  if (!isReducectlProcess(s.driver_pid)) {
    if (s.slurm_job.empty()) {
      std::fprintf(stderr, "reducectl: job %s: the reducectl that ran it (pid %d) is gone\n",
                   s.job_id.c_str(), s.driver_pid);
      return 1;
    }
    std::string error;
    if (!slurmCancel(s.slurm_job, &error)) {
      std::fprintf(stderr, "reducectl: %s\n", error.c_str());
      return 1;
    }
    s.state = "CANCELLED";
    s.cause = "cancelled with scancel by reducectl cancel (its reducectl was gone)";
    writeJobStatus(dir, s);
    std::printf("job %s: CANCELLED (Slurm job %s)\n", s.job_id.c_str(), s.slurm_job.c_str());
    return 0;
  }
  kill(s.driver_pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  while (std::chrono::steady_clock::now() < deadline) {
    JobStatusRecord now;
    if (readJobStatus(dir, &now) && isFinalState(now.state) && !isReducectlProcess(s.driver_pid)) {
      std::printf("job %s: %s\n", now.job_id.c_str(), now.state.c_str());
      return 0;
    }
    std::this_thread::sleep_for(kStatusPoll);
  }
  std::fprintf(stderr, "reducectl: job %s did not end within %d s of the cancel\n",
               s.job_id.c_str(), wait_s);
  return 1;
}

}  // namespace rd::orch
