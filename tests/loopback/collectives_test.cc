// SPDX-License-Identifier: BSD-3-Clause
// Every collective through the real worker and reducer code, ranks x reducers x collective, with
// counts that do not divide by ranks, reducers or chunks, over the loopback transport: the
// ReducerOp, RingOp, ring composite and ReduceComm against each other, verified exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>

#include "world.h"

namespace rd::test {
namespace {

using Shape = std::tuple<int, int, Collective>;  // ranks, reducers (0 = ring), collective

const char* collName(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "allreduce";
    case Collective::kReduceScatter: return "reducescatter";
    case Collective::kAllGather: return "allgather";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kBarrier: return "barrier";
  }
  return "?";
}

std::string shapeName(const Shape& shape) {
  int reducers = std::get<1>(shape);
  return std::to_string(std::get<0>(shape)) + "ranks_" +
         (reducers == 0 ? std::string("ring") : std::to_string(reducers) + "reducers") + "_" +
         collName(std::get<2>(shape));
}

class Matrix : public ::testing::TestWithParam<Shape> {};

// 0, 1, odd sizes, more than one chunk, and more than the eager limit (fetched by rendezvous).
constexpr size_t kCounts[] = {0, 1, 7, 1000, 5003};
struct TypeOp {
  rdDataType_t dtype;
  rdRedOp_t op;
};
constexpr TypeOp kTypeOps[] = {
    {rdFloat32, rdSum}, {rdInt64, rdMax}, {rdBfloat16, rdAvg}, {rdUint8, rdMin}};

TEST_P(Matrix, ExactResultsEveryCountAndType) {
  auto [ranks, reducers, coll] = GetParam();
  WorldOptions o;
  o.ranks = ranks;
  o.reducers = reducers;
  World world(o);
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  bool reduces = coll == Collective::kAllReduce || coll == Collective::kReduceScatter;
  for (size_t count : kCounts) {
    for (const TypeOp& t : kTypeOps) {
      if (!reduces && t.op != rdSum && t.dtype != rdInt64) continue;  // op does not apply
      SCOPED_TRACE(std::string(rdDataTypeName(t.dtype)) + " " + rdRedOpName(t.op) + " count " +
                   std::to_string(count));
      EXPECT_TRUE(allCorrect(world.run(coll, count, t.dtype, t.op)));
      if (coll == Collective::kBarrier) break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    RanksReducersCollectives, Matrix,
    ::testing::Combine(::testing::Values(1, 2, 3, 5), ::testing::Values(0, 1, 2, 3),
                       ::testing::Values(Collective::kAllReduce, Collective::kReduceScatter,
                                         Collective::kAllGather, Collective::kBroadcast,
                                         Collective::kBarrier)),
    [](const auto& param_info) { return shapeName(param_info.param); });

// Every dtype with every operator (the matrix above takes four pairs): through reducers and on
// the ring, one element, several chunks and past the eager limit.
TEST(EveryType, EveryDtypeAndOperatorIsExact) {
  for (int reducers : {0, 2}) {
    WorldOptions o;
    o.ranks = 3;
    o.reducers = reducers;
    World world(o);
    ASSERT_EQ(world.join(), rdSuccess) << lastError();
    for (int d = 0; d < rdNumDataTypes; ++d) {
      for (int op = 0; op < rdNumRedOps; ++op) {
        for (Collective coll : {Collective::kAllReduce, Collective::kReduceScatter}) {
          for (size_t count : {size_t{1}, size_t{5003}}) {
            SCOPED_TRACE(std::string(rdDataTypeName(static_cast<rdDataType_t>(d))) + " " +
                         rdRedOpName(static_cast<rdRedOp_t>(op)) + " count " +
                         std::to_string(count) + " reducers " + std::to_string(reducers));
            EXPECT_TRUE(allCorrect(
                world.run(coll, count, static_cast<rdDataType_t>(d), static_cast<rdRedOp_t>(op))));
          }
        }
      }
    }
  }
}

// Several operations in flight at once on one communicator, results checked each.
TEST(Pipelining, ManyOperationsInFlight) {
  for (int reducers : {0, 2}) {
    WorldOptions o;
    o.ranks = 3;
    o.reducers = reducers;
    o.window = 2;
    World world(o);
    ASSERT_EQ(world.join(), rdSuccess) << lastError();
    for (int i = 0; i < 20; ++i) {
      EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 3000 + i, rdFloat32, rdSum)));
    }
  }
}

// Deterministic mode: rank order on the reducer, so floating sums are bit-identical however
// contributions arrive (checked by the exact inputs, and by two runs with random delays).
TEST(Deterministic, SameBitsWhateverTheArrivalOrder) {
  WorldOptions o;
  o.ranks = 4;
  o.reducers = 2;
  o.deterministic = true;
  World world(o);
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  transport::loopback::Faults f;
  f.max_delay = std::chrono::microseconds(300);
  f.keep_order = false;
  for (uint64_t seed : {1, 2, 3}) {
    f.seed = seed;
    transport::loopback::Fabric::setFaults(f);
    EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 4000, rdFloat32, rdAvg)));
  }
}

// Chunks big enough that the reducer reduces them on its executor (kOffloadBytes), received
// both ways (eager: folded from the transport's buffer; rendezvous: into the slot), in arrival
// order and in rank order, with arrivals reordered: exact results every time.
TEST(LargeChunks, ReducedOffTheProgressThreadEagerOrNot) {
  static_assert(server::kOffloadBytes <= (1 << 20));
  for (bool deterministic : {false, true}) {
    for (size_t eager_limit : {size_t{8192}, size_t{2} << 20}) {
      SCOPED_TRACE(std::string(deterministic ? "rank order" : "arrival order") + ", eager up to " +
                   std::to_string(eager_limit));
      WorldOptions o;
      o.ranks = 3;
      o.reducers = 2;
      o.chunk_bytes = 1 << 20;
      o.deterministic = deterministic;
      World world(o);
      ASSERT_EQ(world.join(), rdSuccess) << lastError();
      transport::loopback::Faults f;
      f.seed = 7;
      f.max_delay = std::chrono::microseconds(300);
      f.keep_order = false;
      f.eager_limit = eager_limit;
      transport::loopback::Fabric::setFaults(f);
      // 5 MiB of float32 cut into 8 chunks per reducer of 320 KiB, and avg's single scaling;
      // 6 MiB of bfloat16 reduce-scattered in 384 KiB chunks.
      EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, (5 << 18) + 3, rdFloat32, rdSum)));
      EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, (5 << 18) + 1, rdFloat32, rdAvg)));
      EXPECT_TRUE(allCorrect(world.run(Collective::kReduceScatter, 1 << 20, rdBfloat16, rdAvg)));
      transport::loopback::Fabric::setFaults(transport::loopback::Faults{});
    }
  }
}

// auto with reducers: each size class tries both algorithms, then every rank keeps the one that
// was faster, whichever that is; results are exact all along.
TEST(AutoTuning, EveryRankKeepsTheFasterAlgorithmOfEachSizeClass) {
  using transport::loopback::Fabric;
  using transport::loopback::Fate;
  using transport::loopback::MessageView;
  WorldOptions o;
  o.ranks = 3;
  o.reducers = 2;
  World world(o);
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  auto slowDown = [](wire::MsgType type) {
    Fabric::setFilter([type](const MessageView& m) {
      wire::Header h;
      bool match = m.header_len == sizeof h;
      if (match) std::memcpy(&h, m.header, sizeof h);
      Fate f;
      if (match && h.type == static_cast<uint8_t>(type)) f.delay = std::chrono::milliseconds(3);
      return f;
    });
  };
  struct Case {
    wire::MsgType slowed;
    size_t count;  // float32: 16 KB and 160 KB, two size classes
    rdAlgorithm_t expected;
  };
  for (const Case& c : {Case{wire::MsgType::kRing, 4000, rdAlgoReductionServer},
                        Case{wire::MsgType::kData, 40000, rdAlgoRing}}) {
    slowDown(c.slowed);
    const uint32_t calls = coll::AutoTuner::trialCalls(coll::AutoTuner::sizeClass(c.count * 4));
    for (uint32_t call = 0; call < calls + 4; ++call) {
      EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, c.count, rdFloat32, rdSum)));
    }
    for (int r = 0; r < o.ranks; ++r) {
      EXPECT_EQ(world.rank(r).autoChoice(c.count * 4), c.expected) << "rank " << r;
    }
  }
  Fabric::reset();
}

// Deterministic communicators never measure: the choice would change the bits.
TEST(AutoTuning, DeterministicCommunicatorsRunRs) {
  WorldOptions o;
  o.ranks = 2;
  o.reducers = 1;
  o.deterministic = true;
  World world(o);
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  const uint32_t calls = coll::AutoTuner::trialCalls(coll::AutoTuner::sizeClass(4000));
  for (uint32_t call = 0; call < calls + 2; ++call) {
    EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 1000, rdFloat32, rdSum)));
  }
  EXPECT_EQ(world.rank(0).autoChoice(4000), rdAlgoDefault);
}

// A reducer whose memory fits one chunk at a time still serves everything (contributions wait).
TEST(ReducerMemory, ContributionsWaitForMemoryAndAllComplete) {
  WorldOptions o;
  o.ranks = 3;
  o.reducers = 1;
  o.chunk_bytes = 4096;
  // One chunk from each of the 3 ranks, with the communicator's and the chunk's state (quota.h;
  // one reducer: no failover, so no release-round marks).
  o.reducer_memory = 3 * 4096ull + server::commStateBytes(3, false) + server::slotStateBytes(3);
  o.reducer_memory_percent = 100;
  World world(o);
  ASSERT_EQ(world.join(), rdSuccess) << lastError();
  EXPECT_TRUE(allCorrect(world.run(Collective::kAllReduce, 20000, rdInt32, rdSum)));
  EXPECT_TRUE(allCorrect(world.run(Collective::kReduceScatter, 3000, rdFloat64, rdSum)));
  // The limit held, and was reached: contributions waited for memory.
  const server::ServerStats stats = world.reducer(0).stats();
  EXPECT_LE(stats.memory_peak, o.reducer_memory);
  EXPECT_GE(stats.memory_peak, 3 * 4096u);
  EXPECT_GT(stats.waited_for_memory, 0u) << "peak " << stats.memory_peak;
}

}  // namespace
}  // namespace rd::test
