// SPDX-License-Identifier: BSD-3-Clause
// auto's measurements (collectives/algorithms/auto_tuner.h) on one rank, with made-up times:
// how many calls a size class tries, and that the decision goes by the runs after each
// algorithm's first.
#include "collectives/algorithms/auto_tuner.h"

#include <gtest/gtest.h>

#include <memory>

namespace rd::coll {
namespace {

using std::chrono::milliseconds;

TEST(AutoTuner, SmallSizesRunManyCallsPerTimedRunAndLargeOnesOne) {
  // A run moves at least 2 MiB of the class's smallest size, up to 64 calls.
  EXPECT_EQ(AutoTuner::callsPerRun(AutoTuner::sizeClass(4096)), 64u);
  EXPECT_EQ(AutoTuner::callsPerRun(AutoTuner::sizeClass(32 << 10)), 64u);
  EXPECT_EQ(AutoTuner::callsPerRun(AutoTuner::sizeClass(64 << 10)), 32u);
  EXPECT_EQ(AutoTuner::callsPerRun(AutoTuner::sizeClass((64 << 10) + 1)), 32u);
  EXPECT_EQ(AutoTuner::callsPerRun(AutoTuner::sizeClass(1 << 20)), 2u);
  EXPECT_EQ(AutoTuner::callsPerRun(AutoTuner::sizeClass(64 << 20)), 1u);
  EXPECT_EQ(AutoTuner::trialCalls(AutoTuner::sizeClass(64 << 20)), AutoTuner::kRuns);
}

// Runs one size class's trials, each run taking @p run_ms[run] (every call already complete),
// then its sum and decision, as the communicator does with one rank.
rdAlgorithm_t decideWith(AutoTuner& tuner, uint64_t bytes,
                         const std::array<int, AutoTuner::kRuns>& run_ms,
                         std::array<double, 2>* best) {
  const uint32_t size_class = AutoTuner::sizeClass(bytes);
  const uint32_t per_run = AutoTuner::callsPerRun(size_class);
  rdAlgorithm_t algorithm = rdAlgoDefault;
  const auto now = AutoTuner::Clock::now();
  for (uint32_t call = 0; call < AutoTuner::trialCalls(size_class); ++call) {
    EXPECT_EQ(tuner.next(size_class, &algorithm), AutoTuner::Step::kTrial);
    EXPECT_EQ(algorithm, AutoTuner::runAlgorithm(call / per_run));
    auto request = std::make_shared<Request>();
    request->complete(rdSuccess);
    // The run's first call was posted its time before now; the others within it.
    const int ms = call % per_run == 0 ? run_ms[call / per_run] : 0;
    tuner.record(size_class, algorithm, now - milliseconds(ms), request);
  }
  EXPECT_EQ(tuner.next(size_class, &algorithm), AutoTuner::Step::kSum);
  EXPECT_NE(tuner.trialTimes(size_class, 1000), nullptr);
  auto summed = std::make_shared<Request>();
  summed->complete(rdSuccess);  // one rank: its own times are the maxima
  tuner.setSum(size_class, summed);
  EXPECT_EQ(tuner.next(size_class, &algorithm), AutoTuner::Step::kDecide);
  EXPECT_EQ(tuner.decide(size_class, &algorithm, best), rdSuccess);
  EXPECT_EQ(tuner.decided(size_class), algorithm);
  return algorithm;
}

TEST(AutoTuner, EachAlgorithmsFirstRunOnlyWarmsUp) {
  // Ring's first run is the fastest of all (a link's saved-up burst), its later ones slower
  // than rs's: rs wins. Runs: rs, ring, rs, ring, rs, ring.
  AutoTuner tuner;
  std::array<double, 2> best{};
  EXPECT_EQ(decideWith(tuner, 32 << 10, {400, 50, 100, 200, 110, 190}, &best),
            rdAlgoReductionServer);
  // Per call: rs's best later run 100 ms over 64 calls, ring's 190 ms.
  EXPECT_NEAR(best[0], 0.100 / 64, 0.010 / 64);
  EXPECT_NEAR(best[1], 0.190 / 64, 0.010 / 64);
  // And the other way round, in another class: rs's first run does not count either.
  EXPECT_EQ(decideWith(tuner, 1 << 20, {10, 200, 300, 100, 300, 120}, &best), rdAlgoRing);
  EXPECT_EQ(tuner.decided(AutoTuner::sizeClass(32 << 10)), rdAlgoReductionServer);
}

TEST(AutoTuner, AFailedRunLosesToOneThatCompleted) {
  const uint32_t size_class = AutoTuner::sizeClass(64 << 20);  // one call per run
  AutoTuner tuner;
  rdAlgorithm_t algorithm = rdAlgoDefault;
  for (uint32_t run = 0; run < AutoTuner::kRuns; ++run) {
    ASSERT_EQ(tuner.next(size_class, &algorithm), AutoTuner::Step::kTrial);
    auto request = std::make_shared<Request>();
    // Every rs run fails; ring's complete, however slowly.
    request->complete(algorithm == rdAlgoRing ? rdSuccess : rdRemoteError);
    tuner.record(size_class, algorithm, AutoTuner::Clock::now() - milliseconds(500), request);
  }
  ASSERT_EQ(tuner.next(size_class, &algorithm), AutoTuner::Step::kSum);
  tuner.trialTimes(size_class, 1000);
  auto summed = std::make_shared<Request>();
  summed->complete(rdSuccess);
  tuner.setSum(size_class, summed);
  ASSERT_EQ(tuner.next(size_class, &algorithm), AutoTuner::Step::kDecide);
  ASSERT_EQ(tuner.decide(size_class, &algorithm), rdSuccess);
  EXPECT_EQ(algorithm, rdAlgoRing);
}

}  // namespace
}  // namespace rd::coll
