// SPDX-License-Identifier: BSD-3-Clause
// Heartbeats (LIBREDUCE_HEARTBEAT_MS): a frozen reducer is named by every rank, and a frozen rank
// by the reducers (who tell the others), within the heartbeat period, while the operation
// timeout is a minute; an idle communicator outlives many periods; ranks must agree on the
// period.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "detection_bound.h"
#include "world.h"

namespace rd::test {
namespace {

using transport::loopback::Fabric;

constexpr uint32_t kHeartbeatMs = 500;
constexpr uint32_t kLongTimeoutMs = 60000;
// A period and a tick (tests/detection_bound.h); far below the timeout.
const auto kDetectionBound =
    detectionBound(std::chrono::milliseconds(kHeartbeatMs), std::chrono::milliseconds(400));

// Prints how long detection took (for the record of the bound) and checks the bound.
void expectDetectedInTime(Clock::time_point freeze) {
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - freeze);
  std::printf("detected after %lld ms (period %u ms)\n", static_cast<long long>(took.count()),
              kHeartbeatMs);
  EXPECT_LT(took, kDetectionBound);
}

WorldOptions heartbeatWorld(int ranks, int reducers, uint32_t heartbeat_ms = kHeartbeatMs) {
  WorldOptions o;
  o.ranks = ranks;
  o.reducers = reducers;
  o.timeout_ms = kLongTimeoutMs;
  o.heartbeat_ms = heartbeat_ms;
  o.algorithm = rdAlgoReductionServer;  // auto would try some calls on the ring
  return o;
}

// Without failover (tests/loopback/failover_test.cc has it: the others go on).
TEST(Heartbeat, AFrozenReducerIsNamedByEveryRankWithinThePeriod) {
  WorldOptions o = heartbeatWorld(3, 2);
  o.failover = false;
  World world(o);
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  ASSERT_TRUE(allCorrect(world.run(Collective::kAllReduce, 50000, rdFloat32, rdSum)));
  Fabric::freeze(world.reducerAddress(1));
  auto t0 = Clock::now();
  auto outcomes = world.run(Collective::kAllReduce, 50000, rdFloat32, rdSum, 2 * kDetectionBound);
  EXPECT_TRUE(allFailedNaming(outcomes, world.reducerAddress(1)));
  EXPECT_NE(outcomes[0].error.find("sent nothing for"), std::string::npos) << outcomes[0].error;
  expectDetectedInTime(t0);
  Fabric::reset();
}

TEST(Heartbeat, AFrozenRankIsNamedToTheOthersWithinThePeriod) {
  World world(heartbeatWorld(3, 2));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  ASSERT_TRUE(allCorrect(world.run(Collective::kAllReduce, 5000, rdFloat32, rdSum)));
  const std::string frozen = world.rank(0).peerAddress(2);
  Fabric::freeze(frozen);
  auto t0 = Clock::now();
  World::Posted p = world.start(Collective::kAllReduce, 5000, rdFloat32, rdSum);
  auto deadline = t0 + 2 * kDetectionBound;
  for (int r : {0, 1}) {
    Outcome o = world.finish(p, r, deadline);
    EXPECT_NE(o.status, rdSuccess);
    EXPECT_NE(o.error.find("rank 2 sent nothing for"), std::string::npos) << o.error;
  }
  expectDetectedInTime(t0);
  Fabric::thaw(frozen);
  // The frozen rank learns it was given up on once it runs again.
  EXPECT_NE(world.finish(p, 2, Clock::now() + kDetectionBound).status, rdSuccess);
  Fabric::reset();
}

TEST(Heartbeat, AnIdleCommunicatorOutlivesManyPeriods) {
  constexpr uint32_t kShortest = 200;  // limits::kMinHeartbeatMs
  World world(heartbeatWorld(3, 2, kShortest));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  // Nothing but heartbeats for 6 periods: no side may take the quiet for a fault.
  std::this_thread::sleep_for(std::chrono::milliseconds(6 * kShortest));
  for (int r = 0; r < 3; ++r) EXPECT_EQ(world.rank(r).asyncError(), rdSuccess) << lastError();
  EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 5000, rdFloat32, rdSum)));
}

// Every side's progress thread held up for over two periods (a long call on it, a host starved
// of CPU): once it runs again, each side's own absence is credited to its peers
// (transport/liveness.h), so no one is called frozen for the time it was not listening.
TEST(Heartbeat, AnObserverHeldUpPastThePeriodBlamesNoPeer) {
  constexpr uint32_t kShortest = 200;  // limits::kMinHeartbeatMs
  World world(heartbeatWorld(3, 2, kShortest));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  ASSERT_TRUE(allCorrect(world.run(Collective::kAllReduce, 5000, rdFloat32, rdSum)));
  ASSERT_EQ(world.engine().runSync([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(3 * kShortest));
    return rdSuccess;
  }),
            rdSuccess);
  // Some periods after: every side has looked at its peers again since the hold-up.
  std::this_thread::sleep_for(std::chrono::milliseconds(2 * kShortest));
  for (int r = 0; r < 3; ++r) EXPECT_EQ(world.rank(r).asyncError(), rdSuccess) << lastError();
  EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 5000, rdFloat32, rdSum)));
}

TEST(Heartbeat, RanksWithDifferentPeriodsAreRefusedAtJoin) {
  WorldOptions o = heartbeatWorld(3, 1);
  o.timeout_ms = 1000;  // the ranks that were not refused wait this long for the last one
  World world(o);
  std::vector<coll::CommConfig> configs;
  for (int r = 0; r < 3; ++r) configs.push_back(world.config(r));
  configs[2].heartbeat_ms = 2 * kHeartbeatMs;
  EXPECT_NE(world.join(configs), rdSuccess);
  bool named = false;
  for (const Outcome& outcome : world.joinOutcomes()) {
    named = named || outcome.error.find("LIBREDUCE_HEARTBEAT_MS") != std::string::npos;
  }
  EXPECT_TRUE(named) << world.joinOutcomes()[2].error;
}

}  // namespace
}  // namespace rd::test
