// SPDX-License-Identifier: BSD-3-Clause
#include "reduction_server/buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>

namespace rd::server {

namespace {
// Buffers are whole pages straight from mmap: freeing them gives the memory back to the system
// at once, so the resident size follows the pool and not the allocator's heuristics.
constexpr size_t kPage = 4096;
size_t rounded(size_t bytes) {
  return (bytes + kPage - 1) / kPage * kPage;
}
void* mapPages(size_t size) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
}  // namespace

BufferPool::~BufferPool() {
  for (auto& [size, list] : free_) {
    for (void* p : list) munmap(p, size);
  }
}

void BufferPool::dropCached(uint64_t need) {
  // Frees cached buffers (largest first) until @p need more bytes fit under the limit.
  for (auto it = free_.rbegin(); it != free_.rend() && in_use_ + cached_ + need > limit_; ++it) {
    auto& list = it->second;
    while (!list.empty() && in_use_ + cached_ + need > limit_) {
      munmap(list.back(), it->first);
      list.pop_back();
      cached_ -= it->first;
    }
  }
}

void* BufferPool::acquire(size_t bytes) {
  size_t size = rounded(bytes == 0 ? 1 : bytes);
  auto it = free_.find(size);
  if (it != free_.end() && !it->second.empty()) {
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= size;
    in_use_ += size;
    return p;
  }
  if (in_use_ + size > limit_) return nullptr;
  dropCached(size);
  void* p = mapPages(size);
  if (p == nullptr) return nullptr;
  in_use_ += size;
  peak_ = std::max(peak_, in_use_ + cached_);
  return p;
}

void BufferPool::release(void* buffer, size_t bytes) {
  if (buffer == nullptr) return;
  size_t size = rounded(bytes == 0 ? 1 : bytes);
  in_use_ -= size;
  free_[size].push_back(buffer);
  cached_ += size;
  if (on_release_) on_release_();
}

bool BufferPool::reserve(uint64_t bytes) {
  if (in_use_ + bytes > limit_) return false;
  dropCached(bytes);
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_ + cached_);
  return true;
}

void BufferPool::unreserve(uint64_t bytes) {
  in_use_ -= bytes;
  if (on_release_) on_release_();
}

}  // namespace rd::server
