// c10d works for libreduce requests, and the thread that completes them.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "libreduce/reduce.h"

namespace rd::torch_backend {

/**
 * One collective in flight. It keeps the tensors the request reads and writes alive, runs
 * @p on_success (copying results out of staging buffers) once the request is done, then
 * completes itself and its future (whose value is the output tensor list, as DDP expects).
 * A failed request completes with a c10::Error naming the operation and the library's message:
 * wait() and the future's wait() raise it.
 */
class LibreduceWork : public c10d::Work {
 public:
  LibreduceWork(int rank, c10d::OpType type, std::string name, rdRequest_t request,
                std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep_alive,
                std::function<void()> on_success);
  /** A work that failed before it could start (the communicator had already failed). */
  LibreduceWork(int rank, c10d::OpType type, std::string name, const std::string& error);
  ~LibreduceWork() override;

  bool isCompleted() override;
  bool isSuccess() const override;
  std::vector<at::Tensor> result() override;
  /** Waits up to @p timeout (0 = until done); throws on failure or when the wait runs out. */
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

  /** Blocks until the request has ended, then completes the work (completion thread only). */
  void complete();

 private:
  void finishWith(std::exception_ptr error);

  std::string name_;
  rdRequest_t request_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_alive_;
  std::function<void()> on_success_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

/**
 * Completes works in the order they were posted, which is the order their requests finish in
 * (every rank posts collectives in one order). Blocks on each request: no polling.
 */
class CompletionThread {
 public:
  CompletionThread();
  ~CompletionThread();  // drains what is queued (each request is bounded by its timeout)
  CompletionThread(const CompletionThread&) = delete;
  CompletionThread& operator=(const CompletionThread&) = delete;

  void enqueue(c10::intrusive_ptr<LibreduceWork> work);

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<LibreduceWork>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace rd::torch_backend
