// SPDX-License-Identifier: BSD-3-Clause
#include "common/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace rd {
namespace {

TEST(ThreadPool, RunsEveryPartExactlyOnce) {
  for (int helpers : {0, 1, 3}) {
    ThreadPool pool(helpers);
    for (int parts : {0, 1, 2, 7, 100}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(parts));
      pool.parallelFor(parts, [&](int i) { hits[static_cast<size_t>(i)]++; });
      for (int i = 0; i < parts; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << i;
    }
  }
}

TEST(ThreadPool, ConcurrentCallersEachGetTheirOwnWork) {
  ThreadPool pool(2);
  std::atomic<long> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int round = 0; round < 200; ++round) {
        pool.parallelFor(5, [&](int i) { total += i + 1; });  // 15 per call
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4L * 200 * 15);
}

TEST(ThreadPool, UsesHelpersForLongParts) {
  ThreadPool pool(1);
  std::atomic<int> distinct_threads{0};
  std::thread::id caller = std::this_thread::get_id();
  // Each part waits (bounded) until both run at once: they can only if the helper took one.
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
  bool together = true;
  pool.parallelFor(2, [&](int) {
    if (std::this_thread::get_id() != caller) distinct_threads++;
    std::unique_lock<std::mutex> lock(mu);
    ++running;
    cv.notify_all();
    together =
        cv.wait_for(lock, std::chrono::seconds(10), [&] { return running == 2; }) && together;
  });
  EXPECT_EQ(distinct_threads.load(), 1);
  EXPECT_TRUE(together);
}

}  // namespace
}  // namespace rd
