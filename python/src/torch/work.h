// SPDX-License-Identifier: BSD-3-Clause
// c10d works for libreduce requests, and the thread that completes them.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "group_failures.h"
#include "libreduce/reduce.h"

namespace rd::torch_backend {

/**
 * One operation in flight: one request, or several (all-to-all, gather and scatter are a send
 * and a receive per peer). It keeps the tensors the requests read and write alive, runs
 * @p on_success (copying results out of staging buffers) once every request is done, then
 * completes itself and its future (whose value is the output tensor list, as DDP expects).
 * A failed request completes it with a c10::Error naming the operation and the library's
 * message: wait() and the future's wait() raise it.
 */
class LibreduceWork : public c10d::Work {
 public:
  /**
   * @p error: why a request of the operation could not even be posted ("" if all were);
   * @p failures: the group's, told of a failed request (null: nobody). The library fails only
   * the operations that needed a lost ring neighbour, not the communicator: this is how the
   * group's getError() learns of them.
   */
  LibreduceWork(int rank, c10d::OpType type, std::string name, std::vector<rdRequest_t> requests,
                std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep_alive,
                std::function<void()> on_success, std::string error = "",
                std::shared_ptr<GroupFailures> failures = nullptr);
  /** A work that failed before it could start (the communicator had already failed). */
  LibreduceWork(int rank, c10d::OpType type, std::string name, const std::string& error);
  ~LibreduceWork() override;

  bool isCompleted() override;
  bool isSuccess() const override;
  std::vector<at::Tensor> result() override;
  /** Waits up to @p timeout (0 = until done); throws on failure or when the wait runs out. */
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  /** The rank a receive took its message from (recv, recvAnysource). */
  int sourceRank() const override;

  const std::vector<rdRequest_t>& requests() const { return requests_; }
  /** Whether every request has ended. */
  bool requestsDone() const;
  /** Completes the work once its requests have ended (completion threads only). */
  void complete();
  /**
   * Cancels its receives that no message matched yet; they fail the work. Returns whether
   * every receive was cancelled (false: one had already been matched).
   */
  bool cancelReceives();

 private:
  void finishWith(const std::exception_ptr& error);

  std::string name_;
  std::vector<rdRequest_t> requests_;
  std::string post_error_;
  int source_rank_ = -1;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_alive_;
  std::function<void()> on_success_;
  std::shared_ptr<GroupFailures> failures_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

/**
 * Completes works as their requests end, in whatever order that is (a receive may wait while
 * later sends and collectives finish). Each request's completion callback wakes the threads:
 * they never poll. Completing a work runs its future's callbacks, and a DDP communication hook
 * may block there on another work's future (PowerSGD does): so whenever every thread is busy
 * completing, one more starts, up to kMaxThreads.
 */
class CompletionThreads {
 public:
  static constexpr size_t kMaxThreads = 32;

  CompletionThreads();
  /**
   * Drains what is queued (each request is bounded by its timeout). May run on one of the
   * threads (the last reference to the group can go in a future's callback): that one is left
   * to finish on its own.
   */
  ~CompletionThreads();
  CompletionThreads(const CompletionThreads&) = delete;
  CompletionThreads& operator=(const CompletionThreads&) = delete;

  void enqueue(const c10::intrusive_ptr<LibreduceWork>& work);

  /** Shared by the threads, the owner and request callbacks, which may outlive the owner. */
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    // Guarded by mu:
    std::deque<c10::intrusive_ptr<LibreduceWork>> queue;
    std::vector<std::thread> threads;
    size_t idle = 0;
    bool stopping = false;
  };

 private:
  static void run(const std::shared_ptr<State>& state);
  // A work whose requests have all ended, taken out of the queue (mu held); null if none.
  static c10::intrusive_ptr<LibreduceWork> takeFinished(State& state);

  std::shared_ptr<State> state_;
};

}  // namespace rd::torch_backend
