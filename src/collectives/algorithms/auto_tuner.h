// LIBREDUCE_ALGO=auto on a communicator with reducers: which of rs and ring runs each
// all-reduce. Which one is faster at a size depends on the links, the reducers and the CPUs
// (ring wins on one host, where memory is the network, and where messages cost more CPU than
// link time; rs wins where the links are the limit), so the communicator measures it, per size
// class (powers of two):
//
//   - the first kTrials calls of a class alternate rs and ring, each timed on every rank from
//     post to completion;
//   - the next call (kSum) runs rs, and every rank posts with it one small all-reduce of the
//     best time each algorithm had on that rank (it waits for its own trials first);
//   - the call after that (kDecide) waits for that sum, which every rank receives identical, so
//     every rank makes the same choice; the class keeps it from then on.
//
// A rank's calls of a class must follow each other (as they do when every rank is a process or
// a thread of its own): the kSum call waits for the class's earlier calls to complete.
// Thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "collectives/request.h"
#include "libreduce/reduce.h"

namespace rd::coll {

class AutoTuner {
 public:
  /** Calls of a size class that try an algorithm before it is decided (half each). */
  static constexpr uint32_t kTrials = 6;
  using Clock = std::chrono::steady_clock;
  using Times = std::array<double, 2>;  // seconds: rs, ring

  /** The size class of an all-reduce of @p bytes. */
  static uint32_t sizeClass(uint64_t bytes);

  enum class Step { kTrial, kSum, kDecide, kDecided };

  /** What the next call of @p size_class is; @p algorithm is what it runs (kSum: rs). */
  Step next(uint32_t size_class, rdAlgorithm_t* algorithm);

  /** A trial call posted at @p posted, completing through @p request. */
  void record(uint32_t size_class, rdAlgorithm_t algorithm, Clock::time_point posted,
              std::shared_ptr<Request> request);

  /**
   * kSum: this rank's best trial time of each algorithm, once every trial completed (waits up
   * to @p timeout_ms for them), in memory that lives until the class is decided: the buffer of
   * the all-reduce that sums it, whose request setSum() keeps.
   */
  std::shared_ptr<Times> bestTimes(uint32_t size_class, int timeout_ms);
  void setSum(uint32_t size_class, std::shared_ptr<Request> request);

  /** kDecide: waits for the sum, fixes the class to the faster and returns it. */
  rdResult_t decide(uint32_t size_class, rdAlgorithm_t* algorithm);

  /** What @p size_class was fixed to; rdAlgoDefault while it is still measuring. */
  rdAlgorithm_t decided(uint32_t size_class);

 private:
  struct Trial {
    rdAlgorithm_t algorithm;
    Clock::time_point posted;
    std::shared_ptr<Request> request;
  };
  struct Class {
    uint32_t calls = 0;
    std::vector<Trial> trials;
    std::shared_ptr<Times> sum;
    std::shared_ptr<Request> sum_request;
    rdAlgorithm_t decided = rdAlgoDefault;
  };
  static constexpr uint32_t kClasses = 65;

  std::mutex mu_;
  std::array<Class, kClasses> classes_;
};

}  // namespace rd::coll
