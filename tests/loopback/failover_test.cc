// SPDX-License-Identifier: BSD-3-Clause
// Reducer failover (docs/failover.md): a communicator that loses a reducer, killed or frozen,
// mid-operation or between operations, goes on with the others; every result stays exact; a
// result some ranks got from the lost reducer and others did not ends the same everywhere; when
// the last reducer is lost the error names every one.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "detection_bound.h"
#include "protocol/wire.h"
#include "world.h"

namespace rd::test {
namespace {

using transport::loopback::Fabric;
using transport::loopback::Fate;
using transport::loopback::MessageView;

constexpr uint32_t kHeartbeatMs = 300;
const auto kBound = std::chrono::seconds(20);

WorldOptions failoverWorld(int ranks, int reducers) {
  WorldOptions o;
  o.ranks = ranks;
  o.reducers = reducers;
  o.timeout_ms = 30000;  // far longer than any failover may take
  o.heartbeat_ms = kHeartbeatMs;
  o.algorithm = rdAlgoReductionServer;
  return o;
}

const Collective kEvery[] = {Collective::kAllReduce, Collective::kReduceScatter,
                             Collective::kAllGather, Collective::kBroadcast, Collective::kBarrier};

TEST(Failover, AReducerKilledMidOperationCostsNoResult) {
  for (Collective c : kEvery) {
    World world(failoverWorld(3, 2));
    ASSERT_EQ(world.join(), rdSuccess) << lastError();
    // Frozen first, so that the operation is certainly in flight when the reducer dies.
    Fabric::freeze(world.reducerAddress(0));
    World::Posted p = world.start(c, 40000, rdFloat32, rdSum);
    Fabric::kill(world.reducerAddress(0));
    auto deadline = Clock::now() + kBound;
    for (int r = 0; r < 3; ++r) world.finish(p, r, deadline);
    EXPECT_TRUE(allCorrect(p.outcomes)) << static_cast<int>(c);
    // Later operations run on the survivor alone.
    for (Collective next : kEvery) {
      EXPECT_TRUE(allCorrect(world.run(next, 30001, rdFloat32, rdSum))) << static_cast<int>(next);
    }
    Fabric::reset();
  }
}

TEST(Failover, AFrozenReducerIsLeftBehindWithinTheHeartbeat) {
  World world(failoverWorld(3, 3));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  ASSERT_TRUE(allCorrect(world.run(Collective::kAllReduce, 50000, rdFloat32, rdSum)));
  Fabric::freeze(world.reducerAddress(1));
  auto t0 = Clock::now();
  EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 50000, rdFloat32, rdSum, kBound)));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
  std::printf("left behind after %lld ms (period %u ms)\n", static_cast<long long>(took.count()),
              kHeartbeatMs);
  // Named within the heartbeat (tests/detection_bound.h); the operation then completes.
  EXPECT_LT(took, detectionBound(std::chrono::milliseconds(kHeartbeatMs),
                                 std::chrono::milliseconds(400)));
  EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 50000, rdFloat32, rdSum)));
  Fabric::reset();
}

// Many operations on one communicator, 3 reducers: one killed, then another frozen; every
// operation (in place or not, in flight at the fault or not) is exact.
TEST(Failover, ManyOperationsThroughAKillAndAFreeze) {
  World world(failoverWorld(4, 3));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  auto in_place = [](int, coll::OpDesc* d) {
    std::memcpy(d->recv, d->send, d->count * sizeof(float));
    d->send = d->recv;
  };
  for (int i = 0; i < 60; ++i) {
    World::Posted p =
        world.start(Collective::kAllReduce, 20000 + i, rdFloat32, rdSum,
                    i % 2 == 0 ? in_place : std::function<void(int, coll::OpDesc*)>{});
    if (i == 20) Fabric::kill(world.reducerAddress(1));
    if (i == 40) Fabric::freeze(world.reducerAddress(2));
    auto deadline = Clock::now() + kBound;
    for (int r = 0; r < 4; ++r) world.finish(p, r, deadline);
    ASSERT_TRUE(allCorrect(p.outcomes)) << "operation " << i;
  }
  Fabric::reset();
}

// Drops every result @p lost sends to @p to; counts them in @p dropped.
void dropResults(const std::string& lost, const std::string& to,
                 const std::shared_ptr<std::atomic<int>>& dropped) {
  Fabric::setFilter([lost, to, dropped](const MessageView& m) {
    Fate f;
    wire::Header h;
    if (m.header_len != sizeof h || m.from != lost || m.to != to) return f;
    std::memcpy(&h, m.header, sizeof h);
    if (h.type == static_cast<uint8_t>(wire::MsgType::kResult)) {
      f.kind = Fate::kDrop;
      ++*dropped;
    }
    return f;
  });
}

// The lost reducer sent chunk results to ranks 0 and 1 but never to rank 2 (dropped): the
// survivor takes the result ranks 0 and 1 hold, and rank 2 ends with the same. Large enough
// that ranks 0 and 1 keep their buffers until the release round ends.
TEST(Failover, AResultSomeRanksGotIsTheOneEveryRankEndsWith) {
  for (bool in_place : {true, false}) {
    World world(failoverWorld(3, 2));
    ASSERT_EQ(world.join(), rdSuccess) << lastError();
    const std::string lost = world.reducerAddress(0);
    auto dropped = std::make_shared<std::atomic<int>>(0);
    dropResults(lost, world.rank(0).peerAddress(2), dropped);
    World::Posted p = world.start(Collective::kAllReduce, 100000, rdFloat32, rdSum,
                                  [in_place](int, coll::OpDesc* d) {
                                    if (!in_place) return;
                                    std::memcpy(d->recv, d->send, d->count * sizeof(float));
                                    d->send = d->recv;
                                  });
    // Ranks 0 and 1 have every result (they wait for the release that rank 2 holds up).
    auto deadline = Clock::now() + kBound;
    while (*dropped == 0 && Clock::now() < deadline) std::this_thread::yield();
    ASSERT_GT(*dropped, 0);
    Fabric::kill(lost);
    for (int r = 0; r < 3; ++r) world.finish(p, r, deadline);
    EXPECT_TRUE(allCorrect(p.outcomes)) << (in_place ? "in place" : "apart");
    Fabric::reset();
  }
}

// A small all-reduce hands the buffers back before the release round ends: ranks 0 and 1
// complete while rank 2 still lacks results, and then reuse their buffers. After the loss they
// answer for the results from their copies, and rank 2 still ends exact.
TEST(Failover, ASmallResultHandedBackEarlyIsStillAnsweredFor) {
  World world(failoverWorld(3, 2));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  const std::string lost = world.reducerAddress(0);
  auto dropped = std::make_shared<std::atomic<int>>(0);
  dropResults(lost, world.rank(0).peerAddress(2), dropped);
  const size_t count = 6000;  // 24 KB: under the copy's bound, chunks on both reducers
  World::Posted p = world.start(Collective::kAllReduce, count, rdFloat32, rdSum);
  auto deadline = Clock::now() + kBound;
  for (int r = 0; r < 2; ++r) {
    Outcome o = world.finish(p, r, deadline);
    ASSERT_EQ(o.status, rdSuccess) << "rank " << r << ": " << o.error;
    EXPECT_EQ(o.wrong, 0u) << "rank " << r;
    std::memset(p.descs[r].recv, 0x7f, count * sizeof(float));
    std::memset(const_cast<void*>(p.descs[r].send), 0x7f, count * sizeof(float));
  }
  while (*dropped == 0 && Clock::now() < deadline) std::this_thread::yield();
  ASSERT_GT(*dropped, 0);
  EXPECT_EQ(p.requests[2]->test(), rdInProgress);
  Fabric::kill(lost);
  Outcome last = world.finish(p, 2, deadline);
  EXPECT_EQ(last.status, rdSuccess) << last.error;
  EXPECT_EQ(last.wrong, 0u);
  EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, count, rdFloat32, rdSum)));
  Fabric::reset();
}

// Small all-reduces do not wait for their release round, so its messages ride on the next
// data frame (kLanded) and result (kReleased) between the same rank and reducer; only those no
// frame carried in time go alone. Either way each goes exactly once per rank and operation.
TEST(Failover, TheReleaseRoundRidesOnDataAndResults) {
  World world(failoverWorld(3, 2));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  struct Counts {
    std::atomic<int> landed_alone{0}, landed_carried{0}, released_alone{0}, released_carried{0};
  };
  auto counts = std::make_shared<Counts>();
  Fabric::setFilter([counts](const MessageView& m) {
    wire::Header h;
    if (m.header_len != sizeof h) return Fate{};
    std::memcpy(&h, m.header, sizeof h);
    const bool carried = (h.flags & wire::kFlagCarried) != 0;
    switch (static_cast<wire::MsgType>(h.type)) {
      case wire::MsgType::kLanded: ++counts->landed_alone; break;
      case wire::MsgType::kReleased: ++counts->released_alone; break;
      case wire::MsgType::kData: counts->landed_carried += carried ? 1 : 0; break;
      case wire::MsgType::kResult:
      case wire::MsgType::kAck: counts->released_carried += carried ? 1 : 0; break;
      default: break;
    }
    return Fate{};
  });
  constexpr int kOps = 40;
  for (int i = 0; i < kOps; ++i) {
    ASSERT_TRUE(allCorrect(world.run(Collective::kAllReduce, 1000 + i, rdFloat32, rdSum)));
  }
  // The last operations' messages go alone at the next tick.
  const int expected = kOps * 3;
  auto settled = [&] {
    return counts->landed_alone + counts->landed_carried == expected &&
           counts->released_alone + counts->released_carried == expected;
  };
  auto deadline = Clock::now() + kBound;
  while (!settled() && Clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(counts->landed_alone + counts->landed_carried, expected);
  EXPECT_EQ(counts->released_alone + counts->released_carried, expected);
  EXPECT_GT(counts->landed_carried, expected / 2);
  EXPECT_GT(counts->released_carried, expected / 2);
  Fabric::reset();
}

TEST(Failover, LosingEveryReducerNamesThemAll) {
  World world(failoverWorld(3, 2));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Fabric::kill(world.reducerAddress(1));
  EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 5000, rdFloat32, rdSum)));
  Fabric::kill(world.reducerAddress(0));
  auto outcomes = world.run(Collective::kAllReduce, 5000, rdFloat32, rdSum, kBound);
  EXPECT_TRUE(allFailedNaming(outcomes, "every reducer was lost"));
  EXPECT_TRUE(allFailedNaming(outcomes, world.reducerAddress(0)));
  EXPECT_TRUE(allFailedNaming(outcomes, world.reducerAddress(1)));
  Fabric::reset();
}

}  // namespace
}  // namespace rd::test
