// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/orphan_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace rd::orch {

namespace {

// The guard's whole life: read "+PGID" / "-PGID" / "xCOMMAND" lines; "." is the clean goodbye.
// End of file without it means reducectl died: kill what is left, then run the commands.
[[noreturn]] void runGuard(int fd) {
  // A session of its own: a signal to reducectl's process group (timeout(1), a shell's kill %1)
  // must not take the guard with it.
  setsid();
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) signal(sig, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  prctl(PR_SET_NAME, "reducectl-guard");
  std::set<pid_t> groups;
  std::vector<std::string> commands;
  std::string pending;
  char buf[256];
  bool clean = false;
  while (!clean) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    size_t nl = 0;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line == ".") {
        clean = true;
      } else if (line.size() > 1 && line[0] == 'x') {
        commands.push_back(line.substr(1));
      } else if (line.size() > 1) {
        pid_t pgid = static_cast<pid_t>(std::atol(line.c_str() + 1));
        if (pgid <= 1) continue;
        if (line[0] == '+') groups.insert(pgid);
        if (line[0] == '-') groups.erase(pgid);
      }
    }
  }
  if (!clean) {
    for (pid_t pgid : groups) kill(-pgid, SIGKILL);
    for (const auto& command : commands) {
      int rc = std::system(command.c_str());
      (void)rc;
    }
  }
  _exit(0);
}

}  // namespace

OrphanGuard::~OrphanGuard() {
  if (pipe_fd_ >= 0) close(pipe_fd_);  // without finish(): the guard kills what it knows
}

bool OrphanGuard::start(std::string* error) {
  // Orphans of replicas come to us, not to init: the job loop reaps them.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[1]);
    runGuard(fds[0]);
  }
  close(fds[0]);
  pipe_fd_ = fds[1];
  guard_pid_ = pid;
  return true;
}

void OrphanGuard::sendLine(const std::string& line) {
  if (pipe_fd_ < 0) return;
  std::string text = line + "\n";
  ssize_t w = 0;
  do {
    w = write(pipe_fd_, text.data(), text.size());
  } while (w < 0 && errno == EINTR);
}

void OrphanGuard::watch(pid_t pgid) {
  sendLine("+" + std::to_string(pgid));
}

void OrphanGuard::forget(pid_t pgid) {
  sendLine("-" + std::to_string(pgid));
}

void OrphanGuard::runOnDeath(const std::string& command) {
  sendLine("x" + command);
}

void OrphanGuard::removeOnDeath(const std::string& dir) {
  std::string quoted = "'";
  for (char c : dir) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  runOnDeath("rm -rf -- " + quoted + "'");
}

void OrphanGuard::lost() {
  if (pipe_fd_ >= 0) close(pipe_fd_);
  pipe_fd_ = -1;
  guard_pid_ = -1;
}

void OrphanGuard::finish() {
  if (pipe_fd_ < 0) return;
  sendLine(".");
  close(pipe_fd_);
  pipe_fd_ = -1;
  int status = 0;
  while (waitpid(guard_pid_, &status, 0) < 0 && errno == EINTR) {
  }
  guard_pid_ = -1;
}

}  // namespace rd::orch
