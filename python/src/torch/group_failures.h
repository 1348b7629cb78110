// SPDX-License-Identifier: BSD-3-Clause
// What a group knows of its failures: the first one (for getError) and the abort hooks to run
// when one happens. Shared by the group and its works, which may outlive it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include "libreduce/reduce.h"

namespace rd::torch_backend {

class GroupFailures {
 public:
  /** Called once per failure (torch asks that hooks be idempotent); must not throw. */
  using Hook = std::function<void()>;

  /** The first failure of the group's operations, rdSuccess while there was none. */
  rdResult_t first() const { return static_cast<rdResult_t>(first_.load()); }

  /**
   * An operation failed with @p status (a lost or silent peer): kept if it is the first, and
   * the abort hooks run (on the calling thread).
   */
  void record(rdResult_t status) {
    int none = rdSuccess;
    first_.compare_exchange_strong(none, status);
    runHooks();
  }

  void addHook(int64_t id, Hook hook) {
    std::lock_guard<std::mutex> lock(mu_);
    hooks_[id] = std::move(hook);
  }

  void removeHook(int64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    hooks_.erase(id);
  }

  /** Runs every hook, a copy of the list: a hook may register or remove hooks. */
  void runHooks() {
    std::map<int64_t, Hook> hooks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      hooks = hooks_;
    }
    for (auto& [id, hook] : hooks) {
      try {
        hook();
      } catch (...) {  // a debugging hook must not turn one failure into another
      }
    }
  }

 private:
  std::atomic<int> first_{rdSuccess};
  std::mutex mu_;
  std::map<int64_t, Hook> hooks_;
};

}  // namespace rd::torch_backend
