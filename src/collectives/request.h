// SPDX-License-Identifier: BSD-3-Clause
// The completion of one asynchronous operation: completed once on the progress thread, tested
// or waited on from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/trace.h"

namespace rd::coll {

class Request {
 public:
  /** Records the outcome (first call wins) and wakes the waiters. */
  void complete(rdResult_t status, std::string error = std::string()) {
    std::vector<std::function<void()>> callbacks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (status_ != rdInProgress) return;
      status_ = status;
      error_ = std::move(error);
      completed_at_ = std::chrono::steady_clock::now();
      callbacks.swap(callbacks_);
    }
    cv_.notify_all();
    for (auto& fn : callbacks) fn();
  }

  /**
   * Runs @p fn once the request is complete: on the completing thread, or at once on this one
   * when it already is. @p fn must not block.
   */
  void onComplete(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (status_ == rdInProgress) {
        callbacks_.push_back(std::move(fn));
        return;
      }
    }
    fn();
  }

  /** The rank a receive matched (set before it completes); -1 for other operations. */
  void setSource(int rank) {
    std::lock_guard<std::mutex> lock(mu_);
    source_ = rank;
  }
  int source() {
    std::lock_guard<std::mutex> lock(mu_);
    return source_;
  }

  /** Where the operation's time went, for its timeline: its wire number, when its first chunk
   * went out and when its last result landed (zero: never). */
  struct Timeline {
    uint64_t seq = 0;
    std::chrono::steady_clock::time_point first_sent{}, last_landed{};
  };
  void setSeq(uint64_t seq) {
    std::lock_guard<std::mutex> lock(mu_);
    timeline_.seq = seq;
  }
  // Each chunk calls these: without a timeline (LIBREDUCE_TRACE unset) they take no lock.
  void markSent() {
    if (trace::Tracer::get() == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (timeline_.first_sent == std::chrono::steady_clock::time_point{}) {
      timeline_.first_sent = std::chrono::steady_clock::now();
    }
  }
  void markLanded() {
    if (trace::Tracer::get() == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    timeline_.last_landed = std::chrono::steady_clock::now();
  }
  Timeline timeline() {
    std::lock_guard<std::mutex> lock(mu_);
    return timeline_;
  }
  /** The outcome so far (rdInProgress until complete()), without reporting it. */
  rdResult_t outcome() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

  /** When complete() recorded the outcome (meaningful once test() says it is done). */
  std::chrono::steady_clock::time_point completedAt() {
    std::lock_guard<std::mutex> lock(mu_);
    return completed_at_;
  }

  /** rdSuccess, rdInProgress or the error (its text becomes the thread's last error). */
  rdResult_t test() {
    std::lock_guard<std::mutex> lock(mu_);
    return report();
  }

  /** Blocks up to @p timeout_ms (< 0 = no limit) for the outcome. */
  rdResult_t wait(int timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    auto done = [this] { return status_ != rdInProgress; };
    if (timeout_ms < 0) {
      cv_.wait(lock, done);
    } else {
      cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), done);
    }
    return report();
  }

 private:
  rdResult_t report() {
    if (status_ < 0) return setError(status_, error_);
    return status_;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  rdResult_t status_ = rdInProgress;
  std::string error_;
  std::chrono::steady_clock::time_point completed_at_{};
  std::vector<std::function<void()>> callbacks_;
  int source_ = -1;
  Timeline timeline_;
};

}  // namespace rd::coll
