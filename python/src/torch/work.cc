#include "work.h"

#include <c10/util/Exception.h>

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

LibreduceWork::LibreduceWork(int rank, c10d::OpType type, std::string name, rdRequest_t request,
                             std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep_alive,
                             std::function<void()> on_success)
    : c10d::Work(rank, type),
      name_(std::move(name)),
      request_(request),
      outputs_(std::move(outputs)),
      keep_alive_(std::move(keep_alive)),
      on_success_(std::move(on_success)),
      future_(tensorListFuture()) {}

LibreduceWork::LibreduceWork(int rank, c10d::OpType type, std::string name,
                             const std::string& error)
    : c10d::Work(rank, type),
      name_(std::move(name)),
      request_(nullptr),
      future_(tensorListFuture()) {
  finishWith(failure(name_, error));
}

LibreduceWork::~LibreduceWork() {
  if (request_ != nullptr) rdRequestFree(request_);
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

void LibreduceWork::complete() {
  rdResult_t status = rdRequestWait(request_, -1);  // bounded by the communicator's timeout
  if (status != rdSuccess) {
    std::string detail = rdGetLastError();
    finishWith(failure(
        name_, std::string(rdGetErrorString(status)) + (detail.empty() ? "" : ": " + detail)));
    return;
  }
  try {
    if (on_success_) on_success_();
  } catch (...) {
    finishWith(std::current_exception());
    return;
  }
  finishWith(nullptr);
}

void LibreduceWork::finishWith(std::exception_ptr error) {
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

CompletionThread::CompletionThread() : thread_([this] { run(); }) {}

CompletionThread::~CompletionThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void CompletionThread::enqueue(c10::intrusive_ptr<LibreduceWork> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
}

void CompletionThread::run() {
  for (;;) {
    c10::intrusive_ptr<LibreduceWork> work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything posted is complete
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work->complete();
  }
}

}  // namespace rd::torch_backend
