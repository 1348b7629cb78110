// SPDX-License-Identifier: BSD-3-Clause
// One replica of a job as a child process: its own session and process group (one signal stops it
// and everything it started), an environment built from scratch, its standard output and error on
// pipes that the job loop reads.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace rd::orch {

struct LaunchRequest {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::pair<std::string, std::string>> env;  // the whole environment
  std::string working_dir;                               // empty: inherit
};

struct LaunchedProcess {
  pid_t pid = -1;  // also its process group id
  int stdout_fd = -1;
  int stderr_fd = -1;
};

/**
 * Starts @p request. A program that cannot be executed (missing, not executable, bad working
 * directory) is reported here, with the reason, rather than as an exit status later: the child
 * tells the parent through a close-on-exec pipe whether exec succeeded. Signals the parent blocks
 * are unblocked and dispositions reset in the child.
 */
bool launchProcess(const LaunchRequest& request, LaunchedProcess* out, std::string* error);

/** Sends @p sig to the process group @p pgid; false when the group is gone. */
bool signalGroup(pid_t pgid, int sig);

/** "exit 3", "killed by SIGKILL" from a waitpid status. */
std::string describeWaitStatus(int status);

/**
 * SIGKILLs and reaps every child of this process except @p keep, again until none is left (a
 * subreaper inherits the children of those it kills): processes that left their replica's group.
 */
void killStrayChildren(pid_t keep);

/** The shell-style exit code for a waitpid status: the exit status, or 128 + signal. */
int exitCodeOf(int status);

/**
 * Blocks SIGCHLD, SIGINT, SIGTERM and SIGHUP (the mask before goes to @p old_mask) and returns a
 * non-blocking signalfd that reads them: how a job loop learns of children and of cancellation.
 * -1 with @p error set when the signalfd cannot be made.
 */
int blockJobSignals(sigset_t* old_mask, std::string* error);

/**
 * Undoes blockJobSignals: consumes what is pending on *@p fd (a late SIGCHLD, a Ctrl-C during
 * the cleanup: unblocked, it would end reducectl before its summary), closes it (-1 after) and
 * restores @p old_mask. Nothing when *@p fd is -1.
 */
void unblockJobSignals(int* fd, const sigset_t& old_mask);

}  // namespace rd::orch
