// LIBREDUCE_ALGO=auto on a communicator with reducers: which of rs and ring runs each
// all-reduce. Which one is faster at a size depends on the links, the reducers and the CPUs
// (ring wins on one host, where memory is the network, and where messages cost more CPU than
// link time; rs wins where the links are the limit), so the communicator measures it, per size
// class (powers of two):
//
//   - the first kTrials calls of a class alternate rs and ring, each timed on every rank from
//     post to completion;
//   - the next call (kSum) runs rs, and every rank posts with it one small all-reduce (max) of
//     its time of every trial (it waits for its own trials first);
//   - the call after that (kDecide) waits for those maxima, which every rank receives
//     identical, takes each algorithm's best trial and so makes the same choice on every
//     rank; the class keeps it from then on.
//
// A trial's time is the longest any rank saw. One rank's own time misleads when the ranks post
// at different moments: a ring rank that posts last finds its neighbours' pieces already
// there and finishes at once (measured: ring trials of 64 KiB at 4 ranks on 200 Mbit/s links
// timed 0.8 ms per rank, against 4 ms per call in steady state), while an rs rank always waits
// for the reducer's answer. The rank that posts first waits for the whole operation.
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
  using Times = std::array<double, kTrials>;  // seconds of each trial, in call order

  /** The size class of an all-reduce of @p bytes. */
  static uint32_t sizeClass(uint64_t bytes);

  enum class Step { kTrial, kSum, kDecide, kDecided };

  /** What the next call of @p size_class is; @p algorithm is what it runs (kSum: rs). */
  Step next(uint32_t size_class, rdAlgorithm_t* algorithm);

  /** A trial call posted at @p posted, completing through @p request. */
  void record(uint32_t size_class, rdAlgorithm_t algorithm, Clock::time_point posted,
              std::shared_ptr<Request> request);

  /**
   * kSum: this rank's time of each trial, once every trial completed (waits up to
   * @p timeout_ms for them), in memory that lives until the class is decided: the buffer of
   * the all-reduce (max) that combines them, whose request setSum() keeps.
   */
  std::shared_ptr<Times> trialTimes(uint32_t size_class, int timeout_ms);
  void setSum(uint32_t size_class, std::shared_ptr<Request> request);

  /**
   * kDecide: waits for the combined times, fixes the class to the algorithm with the faster
   * best trial and returns it (and, when asked, each algorithm's best time: rs, ring).
   */
  rdResult_t decide(uint32_t size_class, rdAlgorithm_t* algorithm,
                    std::array<double, 2>* best = nullptr);

  /** The algorithm trial @p index of a class runs. */
  static rdAlgorithm_t trialAlgorithm(uint32_t index) {
    // rs first: it needs no connections of its own, so the class's first call is not also
    // the one that sets up the ring's.
    return index % 2 == 0 ? rdAlgoReductionServer : rdAlgoRing;
  }

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
