// SPDX-License-Identifier: BSD-3-Clause
#include "work.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

namespace rd::torch_backend {
namespace {

c10::intrusive_ptr<c10::ivalue::Future> tensorListFuture() {
  return c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
}

std::exception_ptr failure(const std::string& name, const std::string& message) {
  return std::make_exception_ptr(
      c10::Error(c10::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                 "libreduce " + name + " failed: " + message));
}

}  // namespace

LibreduceWork::LibreduceWork(int rank, c10d::OpType type, std::string name,
                             std::vector<rdRequest_t> requests, std::vector<at::Tensor> outputs,
                             std::vector<at::Tensor> keep_alive, std::function<void()> on_success,
                             std::string error, std::shared_ptr<GroupFailures> failures)
    : c10d::Work(rank, type),
      name_(std::move(name)),
      requests_(std::move(requests)),
      post_error_(std::move(error)),
      outputs_(std::move(outputs)),
      keep_alive_(std::move(keep_alive)),
      on_success_(std::move(on_success)),
      failures_(std::move(failures)),
      future_(tensorListFuture()) {}

LibreduceWork::LibreduceWork(int rank, c10d::OpType type, std::string name,
                             const std::string& error)
    : c10d::Work(rank, type), name_(std::move(name)), future_(tensorListFuture()) {
  finishWith(failure(name_, error));
}

LibreduceWork::~LibreduceWork() {
  for (rdRequest_t r : requests_) rdRequestFree(r);
}

bool LibreduceWork::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

bool LibreduceWork::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ && !exception_;
}

std::vector<at::Tensor> LibreduceWork::result() {
  return outputs_;
}

bool LibreduceWork::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == kNoTimeout) {
    cv_.wait(lock, [&] { return completed_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
    TORCH_CHECK(false, "libreduce ", name_, " did not finish within ", timeout.count(),
                " ms (it keeps running; a dead peer fails it after the group's timeout)");
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> LibreduceWork::getFuture() {
  return future_;
}

int LibreduceWork::sourceRank() const {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(completed_ && source_rank_ >= 0, "libreduce ", name_,
              ": sourceRank() is known once a receive has completed");
  return source_rank_;
}

bool LibreduceWork::requestsDone() const {
  return std::all_of(requests_.begin(), requests_.end(),
                     [](rdRequest_t r) { return rdRequestTest(r) != rdInProgress; });
}

bool LibreduceWork::cancelReceives() {
  bool all = true;
  for (rdRequest_t r : requests_) {
    if (rdRequestTest(r) != rdInProgress) continue;
    all = rdRequestCancel(r) == rdSuccess && all;
  }
  return all;
}

void LibreduceWork::complete() {
  std::string error = post_error_;
  for (rdRequest_t r : requests_) {
    rdResult_t status = rdRequestWait(r, -1);  // bounded by the communicator's timeout
    if (status != rdSuccess && error.empty()) {
      std::string detail = rdGetLastError();
      error = std::string(rdGetErrorString(status)) + (detail.empty() ? "" : ": " + detail);
      // A receive cancelled by its wait's timeout is no failure of the group.
      if (failures_ && status != rdAborted) failures_->record(status);
    }
  }
  if (!error.empty()) {
    finishWith(failure(name_, error));
    return;
  }
  if (requests_.size() == 1) rdRequestSource(requests_[0], &source_rank_);
  try {
    if (on_success_) on_success_();
  } catch (...) {
    finishWith(std::current_exception());
    return;
  }
  finishWith(nullptr);
}

void LibreduceWork::finishWith(const std::exception_ptr& error) {
  keep_alive_.clear();
  on_success_ = nullptr;
  // The future first (its callbacks run here), then the work: whoever wait()ed on the work
  // may read the future's value at once.
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
  finish(error);
}

namespace {

// A request's completion callback: wakes the completion threads (on the library's thread; it
// only takes the state's lock) and drops its reference to the state.
void wakeCompletionThreads(void* arg) {
  auto* state = static_cast<std::shared_ptr<CompletionThreads::State>*>(arg);
  { std::lock_guard<std::mutex> lock((*state)->mu); }
  (*state)->cv.notify_all();
  delete state;
}

}  // namespace

CompletionThreads::CompletionThreads() : state_(std::make_shared<State>()) {
  state_->threads.emplace_back([state = state_] { run(state); });
}

CompletionThreads::~CompletionThreads() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->stopping = true;
  state_->cv.notify_all();
  // Threads may start others while the queue drains: join until none is left.
  while (!state_->threads.empty()) {
    std::vector<std::thread> threads;
    threads.swap(state_->threads);
    lock.unlock();
    for (auto& t : threads) {
      if (t.get_id() == std::this_thread::get_id()) {
        t.detach();  // this very thread: it returns once the work it completes is done
      } else {
        t.join();
      }
    }
    lock.lock();
  }
}

void CompletionThreads::enqueue(const c10::intrusive_ptr<LibreduceWork>& work) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->queue.push_back(work);
  }
  // Registered after the work is queued: a request that already ended calls back at once.
  for (rdRequest_t r : work->requests()) {
    rdRequestSetCallback(r, wakeCompletionThreads, new std::shared_ptr<State>(state_));
  }
  state_->cv.notify_all();
}

c10::intrusive_ptr<LibreduceWork> CompletionThreads::takeFinished(State& state) {
  for (auto it = state.queue.begin(); it != state.queue.end(); ++it) {
    if ((*it)->requestsDone()) {
      auto work = std::move(*it);
      state.queue.erase(it);
      return work;
    }
  }
  return {};
}

void CompletionThreads::run(const std::shared_ptr<State>& state) {
  std::unique_lock<std::mutex> lock(state->mu);
  for (;;) {
    c10::intrusive_ptr<LibreduceWork> work;
    ++state->idle;
    state->cv.wait(lock, [&] {
      work = takeFinished(*state);
      return work || (state->stopping && state->queue.empty());
    });
    --state->idle;
    if (!work) return;  // stopping, and everything posted is complete
    if (state->idle == 0 && state->threads.size() < kMaxThreads) {
      state->threads.emplace_back([state] { run(state); });
    }
    lock.unlock();
    work->complete();
    work.reset();  // the last references may go here: outside the lock
    lock.lock();
  }
}

}  // namespace rd::torch_backend
