#include "orchestrator/slurm_commands.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

namespace rd::orch {
namespace {

constexpr int kQueryTimeoutS = 30;

std::string trim(const std::string& text) {
  size_t b = text.find_first_not_of(" \t\r\n");
  size_t e = text.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : text.substr(b, e - b + 1);
}

// Reads both pipes until they close or the deadline; true if they closed in time.
bool collect(int out_fd, int err_fd, std::string* out, std::string* err,
             std::chrono::steady_clock::time_point deadline) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  std::string* sinks[2] = {out, err};
  int open_count = 2;
  while (open_count > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return false;
    int n = poll(fds, 2, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  return true;
}

}  // namespace

int runCommand(const std::vector<std::string>& argv, std::string* out, std::string* err,
               int timeout_s) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return -1;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return -1;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // the job loop blocks its signals
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execvp(args[0], args.data());
    dprintf(2, "cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    *err = std::string("fork: ") + std::strerror(errno);
    return -1;
  }
  bool in_time = collect(out_pipe[0], err_pipe[0], out, err,
                         std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s));
  if (!in_time) kill(pid, SIGKILL);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!in_time) return 124;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && err->find("cannot run") == 0) {
    *err = trim(*err);
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool slurmSubmit(const std::string& script, std::string* job_id, std::string* error) {
  std::string out, err;
  int code = runCommand({"sbatch", "--parsable", script}, &out, &err, kQueryTimeoutS);
  if (code != 0) {
    *error = code < 0 ? err + " (is Slurm installed? scripts/local_slurm.sh starts one)"
                      : "sbatch refused the job: " + trim(err.empty() ? out : err);
    return false;
  }
  // "123" or "123;cluster".
  *job_id = trim(out.substr(0, out.find(';')));
  if (job_id->empty()) {
    *error = "sbatch printed no job id (" + trim(out + err) + ")";
    return false;
  }
  return true;
}

SlurmQueueState slurmQueueState(const std::string& job_id) {
  SlurmQueueState s;
  std::string out, err;
  int code = runCommand({"squeue", "-h", "-j", job_id, "-o", "%T|%r"}, &out, &err, kQueryTimeoutS);
  if (code != 0) {
    // A job that left the queue long ago is unknown to squeue: that is an answer too.
    if (err.find("Invalid job id") != std::string::npos) {
      s.answered = true;
      return s;
    }
    s.error = "squeue: " + trim(err.empty() ? "exit " + std::to_string(code) : err);
    return s;
  }
  s.answered = true;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    line = trim(line);
    if (line.empty()) continue;
    std::string state = line.substr(0, line.find('|'));
    std::string reason = line.find('|') == std::string::npos ? "" : line.substr(line.find('|') + 1);
    if (!s.in_queue) s.state = state;
    s.in_queue = true;
    if (state == "PENDING") {
      s.pending = true;
      if (s.reason.empty() || s.reason == "None") s.reason = reason;
    }
  }
  return s;
}

std::string slurmFinalState(const std::string& job_id) {
  std::string out, err;
  if (runCommand({"scontrol", "-o", "show", "job", job_id}, &out, &err, kQueryTimeoutS) != 0) {
    return "";
  }
  size_t at = out.find("JobState=");
  if (at == std::string::npos) return "";
  return out.substr(at + 9, out.find_first_of(" \n", at) - at - 9);
}

bool slurmCancel(const std::string& job_id, std::string* error) {
  std::string out, err;
  int code = runCommand({"scancel", job_id}, &out, &err, kQueryTimeoutS);
  if (code != 0) *error = "scancel " + job_id + ": " + trim(err.empty() ? out : err);
  return code == 0;
}

bool slurmReasonIsHopeless(const std::string& reason) {
  static const char* const kHopeless[] = {
      "PartitionNodeLimit", "PartitionTimeLimit",    "PartitionConfig",
      "BadConstraints",     "InvalidAccount",        "InvalidQOS",
      "AccountNotAllowed",  "QOSMaxNodePerJobLimit", "QOSMaxCpuPerJobLimit",
  };
  for (const char* hopeless : kHopeless) {
    if (reason == hopeless) return true;
  }
  return false;
}

}  // namespace rd::orch
