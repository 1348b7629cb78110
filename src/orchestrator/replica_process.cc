// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/replica_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace rd::orch {

namespace {

// Only async-signal-safe calls between fork and exec: the strings and pointer arrays are all
// built before the fork.
[[noreturn]] void execChild(char* const* argv, char* const* envp, const char* dir, pid_t parent,
                            int out_fd, int err_fd, int status_fd) {
  // Dies with reducectl even before the orphan guard has heard of it (reducectl killed between
  // this fork and the guard's registration); the guard then kills the rest of the group.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT}) signal(sig, SIG_DFL);
  int saved_errno = 0;
  const char* step = "setsid";
  if (setsid() < 0) goto fail;
  step = "stdin";
  {
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, 0) < 0) goto fail;
    close(null_fd);
  }
  step = "stdout";
  if (dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) goto fail;
  close(out_fd);
  close(err_fd);
  step = "working directory";
  if (dir != nullptr && chdir(dir) < 0) goto fail;
  step = "exec";
  execvpe(argv[0], argv, envp);
fail:
  saved_errno = errno;
  // The parent reads "<errno> <step>" and reports it; the child ends without running anything.
  char msg[64];
  int len = 0;
  int e = saved_errno;
  char digits[16];
  int nd = 0;
  do {
    digits[nd++] = static_cast<char>('0' + e % 10);
    e /= 10;
  } while (e > 0 && nd < 15);
  while (nd > 0) msg[len++] = digits[--nd];
  msg[len++] = ' ';
  for (const char* s = step; *s != '\0' && len < 63; ++s) msg[len++] = *s;
  ssize_t w = write(status_fd, msg, static_cast<size_t>(len));
  (void)w;
  _exit(127);
}

}  // namespace

bool launchProcess(const LaunchRequest& request, LaunchedProcess* out, std::string* error) {
  if (request.argv.empty()) {
    *error = "no command";
    return false;
  }
  std::vector<char*> argv;
  argv.reserve(request.argv.size() + 1);
  for (const auto& a : request.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_text;
  env_text.reserve(request.env.size());
  for (const auto& [k, v] : request.env) env_text.push_back(std::string(k).append("=").append(v));
  std::vector<char*> envp;
  envp.reserve(env_text.size() + 1);
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  // execvpe searches the PATH of the caller's environment, which is the one the replica gets too
  // (reducectl passes its own PATH through).
  int out_pipe[2], err_pipe[2], status_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) < 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (pipe2(err_pipe, O_CLOEXEC) < 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return false;
  }
  if (pipe2(status_pipe, O_CLOEXEC) < 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    return false;
  }
  const char* dir = request.working_dir.empty() ? nullptr : request.working_dir.c_str();
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    for (int fd :
         {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], status_pipe[0], status_pipe[1]}) {
      close(fd);
    }
    return false;
  }
  if (pid == 0) {
    execChild(argv.data(), envp.data(), dir, parent, out_pipe[1], err_pipe[1], status_pipe[1]);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(status_pipe[1]);
  // No setpgid from this side: it would make the child a group leader, and its setsid would then
  // fail. The status pipe closes only at exec, after the setsid: once we return, the group exists.
  char msg[80] = {};
  ssize_t n = 0;
  do {
    n = read(status_pipe[0], msg, sizeof msg - 1);
  } while (n < 0 && errno == EINTR);
  close(status_pipe[0]);
  if (n > 0) {  // exec failed: the child has exited with 127
    int status = 0;
    waitpid(pid, &status, 0);
    close(out_pipe[0]);
    close(err_pipe[0]);
    char* step = std::strchr(msg, ' ');
    int err = std::atoi(msg);
    std::string what = step != nullptr ? step + 1 : "exec";
    if (what == "exec") {
      *error = "cannot run '" + request.argv[0] + "': " + std::strerror(err);
    } else if (what == "working directory") {
      *error =
          "cannot enter working directory '" + request.working_dir + "': " + std::strerror(err);
    } else {
      *error = "cannot start '" + request.argv[0] + "' (" + what + "): " + std::strerror(err);
    }
    return false;
  }
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
  out->pid = pid;
  out->stdout_fd = out_pipe[0];
  out->stderr_fd = err_pipe[0];
  return true;
}

bool signalGroup(pid_t pgid, int sig) {
  return pgid > 0 && kill(-pgid, sig) == 0;
}

std::string describeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return std::string("killed by SIG") +
           (name != nullptr ? name : std::to_string(WTERMSIG(status)));
  }
  return "status " + std::to_string(status);
}

void killStrayChildren(pid_t keep) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/children", static_cast<int>(getpid()));
  for (int round = 0; round < 50; ++round) {  // bounded: about a second
    std::ifstream in(path);
    std::vector<pid_t> strays;
    long pid = 0;
    while (in >> pid) {
      if (static_cast<pid_t>(pid) != keep) strays.push_back(static_cast<pid_t>(pid));
    }
    if (strays.empty()) return;
    for (pid_t p : strays) {
      kill(p, SIGKILL);
      while (waitpid(p, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    // Their own children are ours now: the next round takes them.
  }
}

int exitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

int blockJobSignals(sigset_t* old_mask, std::string* error) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  sigprocmask(SIG_BLOCK, &mask, old_mask);
  int fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) *error = std::string("signalfd: ") + std::strerror(errno);
  return fd;
}

void unblockJobSignals(int* fd, const sigset_t& old_mask) {
  if (*fd < 0) return;
  signalfd_siginfo info{};
  while (read(*fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
  }
  close(*fd);
  *fd = -1;
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
}

}  // namespace rd::orch
