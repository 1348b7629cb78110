// SPDX-License-Identifier: BSD-3-Clause
// A small fixed pool of helper threads for splitting one large computation (a big reduction)
// into parts. Waiting threads block on condition variables: an idle pool costs no CPU.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rd {

class ThreadPool {
 public:
  /** Starts @p helpers helper threads (0 is allowed: everything then runs on the caller). */
  explicit ThreadPool(int helpers);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /**
   * Runs fn(0) .. fn(parts - 1), on the calling thread and on idle helpers, and returns when
   * all are done. Safe to call from several threads at once; a caller never waits for a helper
   * that has not started on its parts (it runs them itself).
   */
  void parallelFor(int parts, const std::function<void(int)>& fn);

  int helpers() const { return static_cast<int>(threads_.size()); }

 private:
  struct Job;
  void helperLoop();
  static void runParts(Job* job);

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job*> queue_;  // one entry per helper invited to a job
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace rd
