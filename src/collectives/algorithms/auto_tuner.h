// SPDX-License-Identifier: BSD-3-Clause
// LIBREDUCE_ALGO=auto on a communicator with reducers: which of rs and ring runs each
// all-reduce. Which one is faster at a size depends on the links, the reducers and the CPUs
// (ring wins on one host, where memory is the network, and where messages cost more CPU than
// link time; rs wins where the links are the limit), so the communicator measures it, per size
// class (powers of two):
//
//   - the first trialCalls() calls of a class are kRuns runs of back-to-back calls, alternating
//     rs and ring; each run is timed on every rank from its first call's post to the last
//     completion among its calls;
//   - the next call (kSum) runs rs, and every rank posts with it one small all-reduce (max) of
//     its time of every run (it waits for its own trials first);
//   - the call after that (kDecide) waits for those maxima, which every rank receives
//     identical, takes each algorithm's best run but its first and so makes the same choice on
//     every rank; the class keeps it from then on.
//
// Why runs, and why not the first: the steady state is what the class will see from then on,
// and a class's first calls do not see it. A link that saved up credit while idle (a token
// bucket: cloud rate limits, the emulated cluster's links) runs the first calls at the speed of
// the CPUs, where ring was faster, and the steady state at the link's rate, where rs is
// (measured: 32 KiB at 4 ranks on 200 Mbit/s links, ring 0.7 ms per call alone against 2.1 ms
// back to back; a 6-call trial chose ring where rs was 1.5 times as fast). A run moves at least
// kRunBytes per rank (up to kMaxCallsPerRun calls), so that a saved-up burst is a small part of
// it, and each algorithm's first run, which also sets up the ring's connections, only warms up.
//
// A run's time is the longest any rank saw. One rank's own time misleads when the ranks post
// at different moments: a ring rank that posts last finds its neighbours' pieces already
// there and finishes at once, while an rs rank always waits for the reducer's answer. The rank
// that posts first waits for the whole operation.
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
  /** Timed runs of a size class before it is decided, alternating rs and ring. */
  static constexpr uint32_t kRuns = 6;
  /** Bytes per rank a run moves at least, unless that takes more than kMaxCallsPerRun calls. */
  static constexpr uint64_t kRunBytes = 2ull << 20;
  static constexpr uint32_t kMaxCallsPerRun = 64;
  using Clock = std::chrono::steady_clock;
  using Times = std::array<double, kRuns>;  // seconds of each run, in call order

  /** The size class of an all-reduce of @p bytes. */
  static uint32_t sizeClass(uint64_t bytes);

  /** Calls per timed run of @p size_class (the same on every rank: it depends on the class). */
  static uint32_t callsPerRun(uint32_t size_class);

  /** Calls of @p size_class that try an algorithm before the two that decide it. */
  static uint32_t trialCalls(uint32_t size_class) { return kRuns * callsPerRun(size_class); }

  enum class Step { kTrial, kSum, kDecide, kDecided };

  /** What the next call of @p size_class is; @p algorithm is what it runs (kSum: rs). */
  Step next(uint32_t size_class, rdAlgorithm_t* algorithm);

  /** A trial call posted at @p posted, completing through @p request. */
  void record(uint32_t size_class, rdAlgorithm_t algorithm, Clock::time_point posted,
              std::shared_ptr<Request> request);

  /**
   * kSum: this rank's time of each run, once every trial completed (waits up to
   * @p timeout_ms for them), in memory that lives until the class is decided: the buffer of
   * the all-reduce (max) that combines them, whose request setSum() keeps.
   */
  std::shared_ptr<Times> trialTimes(uint32_t size_class, int timeout_ms);
  void setSum(uint32_t size_class, std::shared_ptr<Request> request);

  /**
   * kDecide: waits for the combined times, fixes the class to the algorithm with the faster
   * best run (not counting its first) and returns it (and, when asked, each algorithm's best
   * run's time per call: rs, ring).
   */
  rdResult_t decide(uint32_t size_class, rdAlgorithm_t* algorithm,
                    std::array<double, 2>* best = nullptr);

  /** The algorithm run @p index of a class runs. */
  static rdAlgorithm_t runAlgorithm(uint32_t index) {
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
