// SPDX-License-Identifier: BSD-3-Clause
// The reducer's memory: every chunk buffer comes from here, and the total in use never exceeds
// the configured limit whatever the message sizes. Freed buffers are kept for reuse (no page
// faults in steady state) but count against the limit too, so the footprint stays flat.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace rd::server {

class BufferPool {
 public:
  explicit BufferPool(uint64_t limit_bytes) : limit_(limit_bytes) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /** A buffer of @p bytes, or nullptr when it would exceed the limit (try again later). */
  void* acquire(size_t bytes);

  /** Returns a buffer from acquire() with its size. */
  void release(void* buffer, size_t bytes);

  /**
   * Counts @p bytes of state held elsewhere (per-rank and per-chunk bookkeeping) against the
   * limit before it is allocated; false when they do not fit. unreserve() gives them back.
   */
  bool reserve(uint64_t bytes);
  void unreserve(uint64_t bytes);

  /** Called after every release (the server retries contributions waiting for memory). */
  void setReleaseHook(std::function<void()> hook) { on_release_ = std::move(hook); }

  uint64_t limit() const { return limit_; }
  uint64_t inUse() const { return in_use_; }
  uint64_t cached() const { return cached_; }
  /** The most the pool ever held (in use plus cached): never above limit(). */
  uint64_t peak() const { return peak_; }

 private:
  void dropCached(uint64_t need);

  uint64_t limit_;
  uint64_t in_use_ = 0;
  uint64_t cached_ = 0;
  uint64_t peak_ = 0;
  std::map<size_t, std::vector<void*>> free_;  // by exact size
  std::function<void()> on_release_;
};

}  // namespace rd::server
