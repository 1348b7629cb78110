// SPDX-License-Identifier: BSD-3-Clause
// Test harness for multi-process tests: starts real reduce-server processes and real worker
// processes (rd_worker_check), collects their output and exit status with time limits, and
// kills whatever is left when the test ends.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace rd::test {

struct Process {
  pid_t pid = -1;
  int out_fd = -1;  // stdout + stderr, read by the harness
  std::string output;
  int status = -1;  // exit code, or 128 + signal; -1 while running
  std::chrono::steady_clock::time_point ended;
};

struct Reducer {
  Process* process = nullptr;
  std::string address;
};

class Cluster {
 public:
  Cluster();
  ~Cluster();  // SIGKILLs and reaps every process still running

  /**
   * Starts @p n reducers with extra flags (and @p env added to theirs); fails the test if one is
   * not ready in 20 s.
   */
  std::vector<Reducer> startReducers(int n, const std::vector<std::string>& flags = {},
                                     const std::map<std::string, std::string>& env = {});

  /**
   * Starts a reducer at @p old's address (after @p old died, as reducectl replaces one) and
   * waits until it is ready; fails the test if it is not in 20 s.
   */
  Reducer replaceReducer(const Reducer& old);

  /** Starts reduce-server with exactly @p flags (no --listen added); does not wait. */
  Process* startRaw(const std::vector<std::string>& flags);

  /** Comma-separated addresses of @p reducers. */
  static std::string addresses(const std::vector<Reducer>& reducers);

  /**
   * Starts @p n workers running rd_worker_check with @p args. Each gets RANK, WORLD_SIZE,
   * LIBREDUCE_REDUCERS, a fresh LIBREDUCE_COMM_ID and @p env; @p per_rank_env overrides per rank.
   */
  std::vector<Process*> startWorkers(
      int n, const std::string& reducers, const std::vector<std::string>& args,
      const std::map<std::string, std::string>& env = {},
      const std::map<int, std::map<std::string, std::string>>& per_rank_env = {});

  /**
   * Like startWorkers, with @p binary instead of rd_worker_check (e.g. the NCCL plugin harness).
   */
  std::vector<Process*> startPrograms(
      const std::string& binary, int n, const std::string& reducers,
      const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
      const std::map<int, std::map<std::string, std::string>>& per_rank_env = {});

  /** Waits until every process in @p procs exits or @p limit passes; returns false on timeout. */
  bool wait(const std::vector<Process*>& procs, std::chrono::milliseconds limit);

  /** Waits until @p text appears in @p p's output (or it exits / @p limit passes). */
  bool waitForOutput(Process* p, const std::string& text, std::chrono::milliseconds limit);

  /** Sends @p sig to @p p. */
  static void signal(Process* p, int sig);

  /** Resident memory of @p p in KiB (VmRSS), and its peak (VmHWM). */
  static long rssKiB(const Process* p, const char* field = "VmRSS:");

  /** CPU time (user + system) of @p p in seconds. */
  static double cpuSeconds(const Process* p);

  /** Temporary directory removed with the cluster. */
  const std::string& dir() const { return dir_; }

 private:
  // Starts one reducer listening on @p listen ("host:port") and waits until it is ready. With
  // @p retry_in_use, a port found taken gives a reducer without an address instead of a failure.
  Reducer startReducer(const std::string& listen, const std::vector<std::string>& flags,
                       const std::map<std::string, std::string>& env, bool retry_in_use = false);
  Process* spawn(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env);
  void pump(std::chrono::milliseconds max_wait);  // reads output, reaps exits

  std::vector<Process*> procs_;
  std::string dir_;
  int next_comm_ = 0;
};

/** All output of @p procs joined, for failure messages. */
std::string joinedOutput(const std::vector<Process*>& procs);

/**
 * The environment of a reducer whose peak RSS a test checks: under AddressSanitizer a small
 * quarantine (freed memory otherwise waits in 256 MiB of it); nothing otherwise.
 */
std::map<std::string, std::string> rssCheckEnvironment();

/** True in a build with AddressSanitizer (its shadow memory grows a process's RSS by 1/8). */
bool underAddressSanitizer();

}  // namespace rd::test
