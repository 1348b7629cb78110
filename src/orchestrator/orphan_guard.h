// SPDX-License-Identifier: BSD-3-Clause
// Makes sure no replica outlives reducectl, even when reducectl itself is killed with SIGKILL and
// cannot clean up. A small guard process, forked before any replica, learns every replica's
// process group through a pipe; when the pipe closes without a clean goodbye (reducectl is gone)
// it kills those groups. reducectl is also made a child subreaper, so that processes a replica
// leaves behind are reparented to it and reaped rather than adopted by init.
#pragma once

#include <sys/types.h>

#include <string>

namespace rd::orch {

class OrphanGuard {
 public:
  OrphanGuard() = default;
  ~OrphanGuard();
  OrphanGuard(const OrphanGuard&) = delete;
  OrphanGuard& operator=(const OrphanGuard&) = delete;

  /** Forks the guard. Call before starting any replica (and before any thread). */
  bool start(std::string* error);

  /** The guard will kill group @p pgid if reducectl dies. */
  void watch(pid_t pgid);

  /** Group @p pgid has ended and been reaped: forget it (its id may be reused). */
  void forget(pid_t pgid);

  /** A shell command the guard runs if reducectl dies (after killing the groups). */
  void runOnDeath(const std::string& command);

  /** A directory the guard removes if reducectl dies (the job secret's). */
  void removeOnDeath(const std::string& dir);

  /** Every group is gone: tell the guard to exit without killing anything, and reap it. */
  void finish();

  /** The guard's pid, so that a loop reaping every child can tell it apart. */
  pid_t pid() const { return guard_pid_; }

  /** The guard was reaped by someone else's waitpid(-1) (it was killed): stop talking to it. */
  void lost();

 private:
  void sendLine(const std::string& line);

  int pipe_fd_ = -1;
  pid_t guard_pid_ = -1;
};

}  // namespace rd::orch
