// SPDX-License-Identifier: BSD-3-Clause
// What reducectl shows on the terminal while a job runs: each replica's output line by line with
// its name in front, reducectl's own notes, and on a terminal a one-line live status that is
// redrawn under the output.
//
// Once started, a writer thread does the writing: the job loop must never block on a terminal
// that is not read (a pager, Ctrl-S, a full pipe), or timeouts and signals would wait with it.
// Replica lines beyond a bounded backlog are dropped from the terminal (they stay in the logs)
// and counted; reducectl's own notes are never dropped.
#pragma once

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace rd::orch {

class JobDisplay {
 public:
  /** @p quiet: replicas' output is not shown (it still goes to their logs). */
  explicit JobDisplay(bool quiet);
  ~JobDisplay();
  JobDisplay(const JobDisplay&) = delete;
  JobDisplay& operator=(const JobDisplay&) = delete;

  /** Starts the writer thread. Call after the orphan guard is forked (a fork copies no threads,
   *  but a lock one of them held). Before it, writes are direct. */
  void start();

  /** One line of a replica's standard output (to ours) or error (to ours), as "[NAME] LINE". */
  void replicaLine(const std::string& replica, bool is_stderr, const std::string& line);

  /** A line of reducectl's own, "reducectl: TEXT", on standard error. */
  void note(const std::string& text);

  /** The live status line (terminal only; elsewhere state changes are notes). */
  void setStatus(const std::string& text);

  /** Removes the status line and waits until everything queued is written (before the summary). */
  void finish();

 private:
  void emit(FILE* out, std::string text, bool droppable);
  void writerLoop();
  std::string eraseStatus();
  std::string drawStatus();

  bool quiet_;
  bool tty_;
  std::string status_;
  bool drawn_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<FILE*, std::string>> queue_;
  size_t queued_bytes_ = 0;
  size_t dropped_lines_ = 0;
  bool writing_ = false;
  bool stop_ = false;
  std::thread writer_;
};

}  // namespace rd::orch
