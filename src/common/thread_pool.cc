// SPDX-License-Identifier: BSD-3-Clause
#include "common/thread_pool.h"

#include <algorithm>
#include <atomic>

namespace rd {

struct ThreadPool::Job {
  const std::function<void(int)>* fn;
  int parts;
  std::atomic<int> next{0};
  std::mutex mutex;
  std::condition_variable idle;
  int attached = 0;  // helpers currently inside runParts for this job (guarded by mutex)
};

ThreadPool::ThreadPool(int helpers) {
  threads_.reserve(static_cast<size_t>(std::max(helpers, 0)));
  for (int i = 0; i < helpers; ++i) threads_.emplace_back([this] { helperLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::runParts(Job* job) {
  for (int i = job->next.fetch_add(1); i < job->parts; i = job->next.fetch_add(1)) (*job->fn)(i);
}

void ThreadPool::helperLoop() {
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = queue_.front();
      queue_.pop_front();
      // Attach while still holding the pool lock: the owner removes unclaimed entries under the
      // same lock, so it either sees this helper attached or sees the entry gone.
      std::lock_guard<std::mutex> job_lock(job->mutex);
      ++job->attached;
    }
    runParts(job);
    std::lock_guard<std::mutex> job_lock(job->mutex);
    // Notify under the job's lock: the owner cannot return (and destroy the job) before it.
    if (--job->attached == 0) job->idle.notify_all();
  }
}

void ThreadPool::parallelFor(int parts, const std::function<void(int)>& fn) {
  if (parts <= 0) return;
  int invite = std::min(parts - 1, helpers());
  if (invite == 0) {
    for (int i = 0; i < parts; ++i) fn(i);
    return;
  }
  Job job;
  job.fn = &fn;
  job.parts = parts;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int i = 0; i < invite; ++i) queue_.push_back(&job);
  }
  if (invite == 1)
    wake_.notify_one();
  else
    wake_.notify_all();
  runParts(&job);
  {
    // Withdraw invitations no helper has taken yet: their parts are already done.
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.erase(std::remove(queue_.begin(), queue_.end(), &job), queue_.end());
  }
  std::unique_lock<std::mutex> job_lock(job.mutex);
  job.idle.wait(job_lock, [&job] { return job.attached == 0; });
}

}  // namespace rd
