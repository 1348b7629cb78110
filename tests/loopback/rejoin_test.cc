// SPDX-License-Identifier: BSD-3-Clause
// Re-admission of a replacement reducer (docs/failover.md): a reducer started where a lost one
// listened joins the running communicator at an operation boundary and serves its chunks
// again; operations in flight through the admission stay exact; a reducer that cannot prove the
// job secret is never admitted, and the communicator goes on without it.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <string>

#include "world.h"

namespace rd::test {
namespace {

using transport::loopback::Fabric;

const auto kBound = std::chrono::seconds(20);

WorldOptions rejoinWorld() {
  WorldOptions o;
  o.ranks = 4;
  o.reducers = 3;
  o.timeout_ms = 30000;
  o.heartbeat_ms = 300;
  o.algorithm = rdAlgoReductionServer;
  return o;
}

// Runs all-reduces until reducer @p m served a chunk, every one verified; false at the deadline.
bool runUntilServed(World& world, int m) {
  auto deadline = Clock::now() + kBound;
  while (Clock::now() < deadline) {
    auto outcomes = world.run(Collective::kAllReduce, 30000, rdFloat32, rdSum);
    EXPECT_TRUE(allCorrect(outcomes));
    if (!allCorrect(outcomes)) return false;
    if (world.reducer(m).stats().chunks_served > 0) return true;
  }
  return false;
}

TEST(Rejoin, AReplacementIsAdmittedAndServes) {
  World world(rejoinWorld());
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  ASSERT_TRUE(allCorrect(world.run(Collective::kAllReduce, 30000, rdFloat32, rdSum)));
  Fabric::kill(world.reducerAddress(1));
  ASSERT_TRUE(allCorrect(world.run(Collective::kAllReduce, 30000, rdFloat32, rdSum, kBound)));
  world.replaceReducer(1);
  ASSERT_TRUE(runUntilServed(world, 1));
  // Every collective runs over the three reducers again; lost again, it is left behind again.
  const Collective every[] = {Collective::kAllReduce, Collective::kReduceScatter,
                              Collective::kAllGather, Collective::kBroadcast, Collective::kBarrier};
  for (Collective c : every) {
    EXPECT_TRUE(allCorrect(world.run(c, 30001, rdFloat32, rdSum))) << static_cast<int>(c);
  }
  Fabric::kill(world.reducerAddress(1));
  EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 30000, rdFloat32, rdSum, kBound)));
  Fabric::reset();
}

// Four operations in flight at all times (half in place) while the replacement is admitted.
TEST(Rejoin, OperationsInFlightThroughTheAdmissionStayExact) {
  World world(rejoinWorld());
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  auto in_place = [](int, coll::OpDesc* d) {
    std::memcpy(d->recv, d->send, d->count * sizeof(float));
    d->send = d->recv;
  };
  std::deque<World::Posted> flying;
  auto finishOldest = [&] {
    auto deadline = Clock::now() + kBound;
    for (int r = 0; r < 4; ++r) world.finish(flying.front(), r, deadline);
    bool ok = allCorrect(flying.front().outcomes);
    flying.pop_front();
    return ok;
  };
  for (int i = 0; i < 200; ++i) {
    if (i == 20) Fabric::kill(world.reducerAddress(2));
    if (i == 40) world.replaceReducer(2);
    flying.push_back(
        world.start(Collective::kAllReduce, 20000 + i, rdFloat32, rdSum,
                    i % 2 == 0 ? in_place : std::function<void(int, coll::OpDesc*)>{}));
    if (flying.size() == 4) {
      ASSERT_TRUE(finishOldest()) << "operation " << i - 3;
    }
  }
  while (!flying.empty()) ASSERT_TRUE(finishOldest());
  EXPECT_TRUE(runUntilServed(world, 2));
  Fabric::reset();
}

// A reducer cut off long enough to be lost, then back: its old state of the communicator is
// dropped once the ranks closed their connections, and it is admitted like a replacement.
TEST(Rejoin, AReducerLostToAFreezeIsAdmittedWhenItThaws) {
  World world(rejoinWorld());
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Fabric::freeze(world.reducerAddress(0));
  ASSERT_TRUE(allCorrect(world.run(Collective::kAllReduce, 30000, rdFloat32, rdSum, kBound)));
  const uint64_t before = world.reducer(0).stats().chunks_served;
  Fabric::thaw(world.reducerAddress(0));
  auto deadline = Clock::now() + kBound;
  bool served = false;
  while (!served && Clock::now() < deadline) {
    ASSERT_TRUE(allCorrect(world.run(Collective::kAllReduce, 30000, rdFloat32, rdSum)));
    served = world.reducer(0).stats().chunks_served > before;
  }
  EXPECT_TRUE(served);
  Fabric::reset();
}

TEST(Rejoin, AReplacementWithoutTheJobSecretIsNeverAdmitted) {
  World world(rejoinWorld());
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Fabric::kill(world.reducerAddress(1));
  world.replaceReducer(1, "not the job's secret");
  // The ranks try it every second and it refuses them each time (their proof does not match);
  // operations go on without it meanwhile.
  auto deadline = Clock::now() + kBound;
  while (world.reducer(1).stats().joins_refused < 8 && Clock::now() < deadline) {
    ASSERT_TRUE(allCorrect(world.run(Collective::kAllReduce, 30000, rdFloat32, rdSum, kBound)));
  }
  EXPECT_GE(world.reducer(1).stats().joins_refused, 8u);
  EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 30000, rdFloat32, rdSum)));
  EXPECT_EQ(world.reducer(1).stats().chunks_served, 0u);
  EXPECT_EQ(world.rank(0).asyncError(), rdSuccess);
  Fabric::reset();
}

}  // namespace
}  // namespace rd::test
