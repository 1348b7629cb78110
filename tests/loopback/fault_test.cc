// SPDX-License-Identifier: BSD-3-Clause
// Faults injected into the loopback network while the real worker and reducer code runs:
// reordered, late, dropped and duplicated frames, a rank that leaves, a reducer that freezes or
// dies mid-operation, ranks that disagree. Each case ends within its bound with exact results
// or with an error that names the culprit; never a hang, never a wrong result reported as good.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>

#include "protocol/wire.h"
#include "world.h"

namespace rd::test {
namespace {

using transport::loopback::Fabric;
using transport::loopback::Fate;
using transport::loopback::FaultCounts;
using transport::loopback::Faults;
using transport::loopback::MessageView;

constexpr uint32_t kShortTimeout = 200;  // ms: fault cases wait for this many, not seconds
const auto kFaultBound = std::chrono::milliseconds(20 * kShortTimeout);

wire::Header headerOf(const MessageView& m) {
  wire::Header h;
  if (m.header_len == sizeof h) std::memcpy(&h, m.header, sizeof h);
  return h;
}

bool isType(const MessageView& m, wire::MsgType type) {
  return m.header_len == sizeof(wire::Header) && headerOf(m).type == static_cast<uint8_t>(type);
}

// A filter with one effect on the first message that @p match accepts.
transport::loopback::Filter once(std::function<bool(const MessageView&)> match, Fate fate) {
  auto fired = std::make_shared<std::atomic<bool>>(false);
  return [match = std::move(match), fate, fired](const MessageView& m) {
    if (!match(m) || fired->exchange(true)) return Fate{};
    return fate;
  };
}

WorldOptions faultWorld(int ranks, int reducers) {
  WorldOptions o;
  o.ranks = ranks;
  o.reducers = reducers;
  o.timeout_ms = kShortTimeout;
  return o;
}

// --- the network reorders, delays, drops and duplicates ------------------------------------

using ReducersAndSeed = std::tuple<int, int>;  // reducers (0 = ring), random seed

std::string faultName(const ReducersAndSeed& p) {
  int reducers = std::get<0>(p);
  return (reducers == 0 ? std::string("ring") : std::to_string(reducers) + "reducers") + "_seed" +
         std::to_string(std::get<1>(p));
}

class RandomFaults : public ::testing::TestWithParam<ReducersAndSeed> {};

// Reordered frames (across and within connections): the protocol keys everything by operation
// and chunk, so results are exact.
TEST_P(RandomFaults, ReorderedFramesStillGiveExactResults) {
  auto [reducers, seed] = GetParam();
  World world(faultWorld(3, reducers));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Faults f;
  f.seed = static_cast<uint64_t>(seed);
  f.max_delay = std::chrono::microseconds(500);
  f.keep_order = false;
  const FaultCounts before = Fabric::injected();
  Fabric::setFaults(f);
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                       Collective::kBroadcast, Collective::kBarrier}) {
    EXPECT_TRUE(allCorrect(world.run(c, 3001, rdFloat32, rdSum, kFaultBound)));
  }
  EXPECT_GT(Fabric::injected().delayed, before.delayed);  // the frames were indeed shuffled
  Fabric::reset();
}

// Lost and doubled frames: every operation ends, exact or with an error, within its bound.
TEST_P(RandomFaults, DroppedAndDuplicatedFramesEndCorrectOrFailed) {
  auto [reducers, seed] = GetParam();
  World world(faultWorld(3, reducers));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Faults f;
  f.seed = static_cast<uint64_t>(seed);
  f.drop = 0.02;
  f.duplicate = 0.02;
  const FaultCounts before = Fabric::injected();
  auto faults = [&before] {
    const FaultCounts now = Fabric::injected();
    return now.dropped - before.dropped + now.duplicated - before.duplicated;
  };
  Fabric::setFaults(f);
  // Small operations send few frames: go on until some were indeed lost or doubled (or one
  // failed, after which the communicator sends nothing more), so that every seed tests what it
  // names; a few seeds leave the first operations untouched.
  bool failed = false;
  for (int i = 0; i < 40 && (i < 4 || (faults() < 3 && !failed)); ++i) {
    auto t0 = Clock::now();
    auto outcomes = world.run(Collective::kAllReduce, 2000 + i, rdInt32, rdSum, kFaultBound);
    EXPECT_TRUE(correctOrFailed(outcomes)) << "operation " << i;
    EXPECT_LT(Clock::now() - t0, kFaultBound);
    failed = failed || !allCorrect(outcomes);
  }
  EXPECT_GT(faults(), 0u);
  Fabric::reset();
}

// Headers with a flipped byte (hostile input from a peer that passed the join): the receiver
// validates every frame, so every operation ends exact or with an error; nothing crashes.
TEST_P(RandomFaults, CorruptedHeadersEndCorrectOrFailed) {
  auto [reducers, seed] = GetParam();
  World world(faultWorld(3, reducers));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Faults f;
  f.seed = static_cast<uint64_t>(seed);
  f.corrupt = 0.03;
  const uint64_t before = Fabric::injected().corrupted;
  Fabric::setFaults(f);
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                       Collective::kBroadcast}) {
    EXPECT_TRUE(correctOrFailed(world.run(c, 3000, rdInt64, rdSum, kFaultBound)));
  }
  EXPECT_GT(Fabric::injected().corrupted, before);  // some headers were indeed flipped
  Fabric::reset();
}

INSTANTIATE_TEST_SUITE_P(ReducersAndSeeds, RandomFaults,
                         ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Range(1, 9)),
                         [](const auto& param_info) { return faultName(param_info.param); });

// A frame held back for a while (less than the timeout) changes nothing.
TEST(LateFrames, DelayedDataAndResultsStillGiveExactResults) {
  for (auto type : {wire::MsgType::kData, wire::MsgType::kResult}) {
    WorldOptions o = faultWorld(3, 2);
    o.timeout_ms = 1000;
    World world(o);
    ASSERT_EQ(world.join(), rdSuccess) << lastError();
    Fabric::setFilter([type](const MessageView& m) {
      Fate f;
      if (isType(m, type) && headerOf(m).chunk % 3 == 0) f.delay = std::chrono::milliseconds(100);
      return f;
    });
    EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 9000, rdFloat64, rdSum)));
  }
}

TEST(DroppedFrame, LostContributionFailsEveryRankNamingWhoseDataIsMissing) {
  World world(faultWorld(3, 1));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Fabric::setFilter(once(
      [](const MessageView& m) { return isType(m, wire::MsgType::kData) && headerOf(m).rank == 1; },
      Fate{Fate::kDrop}));
  auto outcomes = world.run(Collective::kAllReduce, 100, rdFloat32, rdSum, kFaultBound);
  EXPECT_TRUE(allFailedNaming(outcomes, "rank 1 did not deliver chunk"));
}

TEST(DroppedFrame, LostResultFailsThatRankNamingTheReducer) {
  World world(faultWorld(3, 1));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Fabric::setFilter(once(
      [](const MessageView& m) {
        return isType(m, wire::MsgType::kResult) && headerOf(m).rank == 2;
      },
      Fate{Fate::kDrop}));
  auto outcomes = world.run(Collective::kAllReduce, 100, rdFloat32, rdSum, kFaultBound);
  EXPECT_EQ(outcomes[0].status, rdSuccess) << outcomes[0].error;
  EXPECT_EQ(outcomes[1].status, rdSuccess) << outcomes[1].error;
  EXPECT_EQ(outcomes[2].status, rdTimeout);
  EXPECT_NE(outcomes[2].error.find("no answer from reducer 0"), std::string::npos)
      << outcomes[2].error;
  // The next operation fails on every rank: rank 2 told the reducer why it gave up.
  EXPECT_TRUE(allFailedNaming(world.run(Collective::kAllReduce, 100, rdFloat32, rdSum, kFaultBound),
                              "rank 2"));
}

// A rank that stops after its last contribution left (frozen, or its word lost) holds up the
// release round, not any chunk: the release reducer names it, and every rank hears that name
// before its own timeout (which could only say the release never came). Large enough that no
// rank hands its buffers back before the release.
TEST(DroppedFrame, MissingReleaseConfirmationFailsEveryRankNamingTheRank) {
  World world(faultWorld(3, 2));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Fabric::setFilter([](const MessageView& m) {
    const bool from_rank_2 = isType(m, wire::MsgType::kLanded) && headerOf(m).rank == 2;
    return from_rank_2 ? Fate{Fate::kDrop} : Fate{};
  });
  auto outcomes = world.run(Collective::kAllReduce, 100000, rdFloat32, rdSum, kFaultBound);
  EXPECT_TRUE(allFailedNaming(outcomes, "rank 2 did not confirm the results of operation"));
  for (const Outcome& o : outcomes) EXPECT_EQ(o.status, rdTimeout) << o.error;
}

TEST(DuplicatedFrame, RepeatedContributionIsRefusedAndFailsTheCommunicator) {
  World world(faultWorld(3, 1));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Fabric::setFilter(once(
      [](const MessageView& m) { return isType(m, wire::MsgType::kData) && headerOf(m).rank == 0; },
      Fate{Fate::kDuplicate}));
  auto outcomes = world.run(Collective::kAllReduce, 100, rdFloat32, rdSum, kFaultBound);
  for (int r = 0; r < 3; ++r) EXPECT_LT(outcomes[r].status, 0) << "rank " << r;
  EXPECT_NE(outcomes[1].error.find("duplicate contribution"), std::string::npos)
      << outcomes[1].error;
  EXPECT_TRUE(correctOrFailed(outcomes));
}

TEST(DuplicatedFrame, RepeatedResultIsAProtocolErrorNotASecondCopy) {
  World world(faultWorld(2, 1));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Fabric::setFilter(once(
      [](const MessageView& m) {
        return isType(m, wire::MsgType::kResult) && headerOf(m).rank == 0;
      },
      Fate{Fate::kDuplicate}));
  // Several chunks: the copy of the first arrives while later answers are awaited.
  auto outcomes = world.run(Collective::kAllReduce, 20000, rdFloat32, rdSum, kFaultBound);
  EXPECT_EQ(outcomes[0].status, rdProtocolError) << outcomes[0].error;
  EXPECT_NE(outcomes[0].error.find("repeats"), std::string::npos) << outcomes[0].error;
  EXPECT_TRUE(correctOrFailed(outcomes));
}

// --- peers that leave, freeze or die -------------------------------------------------------

TEST(RankLeaves, OthersFailNamingIt) {
  for (int reducers : {1, 2}) {
    World world(faultWorld(3, reducers));
    ASSERT_EQ(world.join(), rdSuccess) << lastError();
    EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 100, rdFloat32, rdSum)));
    world.destroyRank(2);
    auto outcomes = world.run(Collective::kAllReduce, 100, rdFloat32, rdSum, kFaultBound);
    outcomes.pop_back();  // rank 2 has no communicator
    EXPECT_TRUE(allFailedNaming(outcomes, "rank 2")) << reducers << " reducers";
  }
}

TEST(ReducerFails, FrozenReducerIsNamedWithinTheTimeout) {
  World world(faultWorld(3, 2));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  Fabric::freeze(world.reducerAddress(1));
  auto t0 = Clock::now();
  auto outcomes = world.run(Collective::kAllReduce, 50000, rdFloat32, rdSum, kFaultBound);
  EXPECT_TRUE(allFailedNaming(outcomes, world.reducerAddress(1)));
  EXPECT_LT(Clock::now() - t0, kFaultBound);
}

TEST(ReducerFails, ReducerKilledMidOperationIsNamedByEveryRankWithoutFailover) {
  for (Collective c : {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather,
                       Collective::kBroadcast, Collective::kBarrier}) {
    WorldOptions o = faultWorld(3, 2);
    o.failover = false;
    World world(o);
    ASSERT_EQ(world.join(), rdSuccess) << lastError();
    // Frozen first, so that the operation is certainly in flight when the reducer dies.
    Fabric::freeze(world.reducerAddress(0));
    World::Posted p = world.start(c, 40000, rdFloat32, rdSum);
    Fabric::kill(world.reducerAddress(0));
    auto deadline = Clock::now() + kFaultBound;
    for (int r = 0; r < 3; ++r) world.finish(p, r, deadline);
    EXPECT_TRUE(allFailedNaming(p.outcomes, world.reducerAddress(0)));
  }
}

// Abort returns at once with a frozen reducer, fails what is pending, and destroy is bounded.
TEST(Abort, ReturnsAtOnceAndDestroyIsBoundedWithAFrozenReducer) {
  auto world = std::make_unique<World>(faultWorld(2, 1));
  ASSERT_EQ(world->join(), rdSuccess) << lastError();
  Fabric::freeze(world->reducerAddress(0));
  World::Posted p = world->start(Collective::kAllReduce, 30000, rdFloat32, rdSum);
  auto t0 = Clock::now();
  for (int r = 0; r < 2; ++r) world->rank(r).abort();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1));  // rdCommAbort: "well under a second"
  auto deadline = Clock::now() + std::chrono::seconds(2);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(world->finish(p, r, deadline).status, rdAborted) << p.outcomes[r].error;
  }
  t0 = Clock::now();
  world.reset();  // destroys both ranks with the reducer still frozen
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
}

// --- ranks that disagree ---------------------------------------------------------------------

TEST(Mismatch, DifferentCountDtypeOrOpFailsEveryRankNamingThem) {
  struct Case {
    const char* what;
    std::function<void(coll::OpDesc*)> change;
  };
  std::vector<Case> cases = {
      {"count", [](coll::OpDesc* d) { d->count -= 1; }},
      {"dtype", [](coll::OpDesc* d) { d->dtype = rdInt32; }},
      {"op", [](coll::OpDesc* d) { d->op = rdMax; }},
  };
  for (Collective which : {Collective::kAllReduce, Collective::kReduceScatter}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(c.what) + " of collective " +
                   std::to_string(static_cast<int>(which)));
      World world(faultWorld(3, 1));
      ASSERT_EQ(world.join(), rdSuccess) << lastError();
      auto outcomes =
          world.run(which, 1000, rdFloat32, rdSum, kFaultBound, [&](int rank, coll::OpDesc* d) {
            if (rank == 1) c.change(d);
          });
      EXPECT_TRUE(allFailedNaming(outcomes, "different arguments"));
      // The communicator survives a failed operation: the next one agrees and works.
      EXPECT_TRUE(allCorrect(world.run(which, 1000, rdFloat32, rdSum)));
    }
  }
}

TEST(Mismatch, DifferentBroadcastRootsFailNamingThem) {
  World world(faultWorld(3, 2));
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  auto outcomes = world.run(Collective::kBroadcast, 1000, rdFloat32, rdSum, kFaultBound,
                            [](int rank, coll::OpDesc* d) {
                              if (rank == 2) d->root = (d->root + 1) % 3;
                            });
  EXPECT_TRUE(correctOrFailed(outcomes));
  int named = 0;
  for (const Outcome& o : outcomes) {
    named += o.error.find("different arguments") != std::string::npos ? 1 : 0;
  }
  EXPECT_GE(named, 1);
}

// The ring neighbour that finished first and left does not break a rank that still waits for
// its own send to be taken: losing a link fails only operations that still need it.
TEST(RingNeighbour, ANeighbourThatFinishedAndLeftBreaksNobody) {
  WorldOptions o = faultWorld(3, 0);
  o.timeout_ms = 2000;
  World world(o);
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  // Rank 2 is slow to take rank 1's pieces (they are fetched, so rank 1's sends stay open):
  // rank 0 finishes while rank 1 is still sending.
  Faults fetched;
  fetched.eager_limit = 1024;
  Fabric::setFaults(fetched);
  Fabric::setFilter([](const MessageView& m) {
    Fate f;
    if (isType(m, wire::MsgType::kRing) && headerOf(m).rank == 1) {
      f.delay = std::chrono::milliseconds(50);
    }
    return f;
  });
  for (int i = 0; i < 3; ++i) {
    World::Posted p = world.start(Collective::kAllReduce, 30000, rdFloat32, rdSum);
    auto deadline = Clock::now() + std::chrono::seconds(10);
    if (i == 2) {
      ASSERT_EQ(world.finish(p, 0, deadline).status, rdSuccess) << p.outcomes[0].error;
      world.destroyRank(0);  // leaves while rank 1 still waits on rank 2
      EXPECT_EQ(world.finish(p, 1, deadline).status, rdSuccess) << p.outcomes[1].error;
      EXPECT_EQ(world.finish(p, 2, deadline).status, rdSuccess) << p.outcomes[2].error;
    } else {
      for (int r = 0; r < 3; ++r) world.finish(p, r, deadline);
      EXPECT_TRUE(allCorrect(p.outcomes));
    }
  }
}

}  // namespace
}  // namespace rd::test
