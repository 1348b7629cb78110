// SPDX-License-Identifier: BSD-3-Clause
// A fixed set of worker threads that run submitted tasks in submission order (BytePS's engine
// threads play this part there): the reducer's reductions run here, so its network progress
// never waits on a kernel. Idle threads block on a condition variable and cost no CPU.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rd {

class Executor {
 public:
  /** Starts @p threads worker threads (at least one). */
  explicit Executor(int threads);
  /** Runs every task already submitted, then joins the threads. */
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /** Queues @p task; it runs on one of the threads. Thread-safe. */
  void submit(std::function<void()> task);

  /** Blocks until every task submitted so far has finished. Thread-safe. */
  void drain();

  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> queue_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace rd
