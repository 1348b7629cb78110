// SPDX-License-Identifier: BSD-3-Clause
// The per-operation pipeline (collectives/pipeline.h): chunk sizes and windows for every shape
// of operation, and their bounds.
#include "collectives/pipeline.h"

#include <gtest/gtest.h>

#include <string>

#include "collectives/communicator.h"
#include "common/limits.h"
#include "protocol/chunking.h"

namespace rd::coll {
namespace {

CommConfig config(uint32_t nranks, uint32_t nreducers) {
  CommConfig c;
  c.nranks = nranks;
  for (uint32_t i = 0; i < nreducers; ++i)
    c.reducers.push_back("127.0.0.1:" + std::to_string(i + 1));
  return c;
}

TEST(Pipeline, BigBuffersKeepEachRanksShareOfTheIngressBudgetInFlight) {
  // 1 MiB per reducer over 4 ranks with a window of 4: 64 KiB chunks; over 8 ranks 32 KiB.
  for (uint64_t bytes : {64ull << 20, 256ull << 20}) {
    Pipeline p4 = reductionServerPipeline(config(4, 4), bytes, 4);
    EXPECT_EQ(p4.window, kAutoWindow);
    EXPECT_EQ(p4.chunk_bytes, 64u << 10) << bytes;
    EXPECT_EQ(reductionServerPipeline(config(8, 8), bytes, 4).chunk_bytes, 32u << 10) << bytes;
  }
  // 16 MiB: the depth rule cuts deeper than the budget (128 chunks per reducer).
  EXPECT_EQ(reductionServerPipeline(config(8, 8), 16 << 20, 4).chunk_bytes, 16u << 10);
  // Two ranks may keep more in flight, up to the auto maximum.
  CommConfig two = config(2, 2);
  two.ingress_bytes = 64ull << 20;
  EXPECT_EQ(reductionServerPipeline(two, 1ull << 30, 4).chunk_bytes, kAutoMaxChunkBytes);
  // Many ranks: never below a page, whatever the budget's share.
  EXPECT_EQ(reductionServerPipeline(config(4096, 8), 1ull << 30, 4).chunk_bytes,
            limits::kMinChunkBytes);
}

TEST(Pipeline, SmallBuffersAreCutIntoSeveralChunksPerReducer) {
  // 64 MiB over 8 reducers, 2 ranks (a large share each): kDepth = 128 chunks of 64 KiB each.
  static_assert(kDepth == 128);
  EXPECT_EQ(reductionServerPipeline(config(2, 8), 64 << 20, 4).chunk_bytes, 64u << 10);
  // 1 MiB: no deeper than kMinCutChunkBytes (8 per reducer), whose messages would cost more.
  EXPECT_EQ(reductionServerPipeline(config(8, 8), 1 << 20, 4).chunk_bytes, kMinCutChunkBytes);
  // 64 KiB: one 8 KiB chunk per reducer rather than all of it on one reducer's link.
  EXPECT_EQ(reductionServerPipeline(config(8, 8), 64 << 10, 4).chunk_bytes, 8u << 10);
  // 8 KiB: two reducers get kMinPartBytes each; 4 KiB goes whole to one.
  EXPECT_EQ(reductionServerPipeline(config(8, 8), 8 << 10, 4).chunk_bytes, kMinPartBytes);
  EXPECT_EQ(reductionServerPipeline(config(8, 8), 4 << 10, 4).chunk_bytes, kMinPartBytes);
  // Never below one element, and always whole elements.
  EXPECT_EQ(reductionServerPipeline(config(2, 8), 8, 8).chunk_bytes, kMinPartBytes);
  EXPECT_EQ(reductionServerPipeline(config(2, 1), 30000, 6).chunk_bytes % 6, 0u);
}

TEST(Pipeline, ExplicitSettingsWin) {
  CommConfig c = config(8, 4);
  c.chunk_bytes = 1 << 20;
  c.window = 7;
  Pipeline big = reductionServerPipeline(c, 1ull << 30, 4);
  EXPECT_EQ(big.chunk_bytes, 1u << 20);
  EXPECT_EQ(big.window, 7u);
  EXPECT_EQ(maxChunkBytes(c), 1u << 20);
  EXPECT_EQ(ringPieceBytes(c), 1u << 20);
  // Mid-sized buffers use the size asked for, not the depth rule's cut (16 MiB over 4 reducers
  // would be 32 KiB chunks).
  EXPECT_EQ(reductionServerPipeline(c, 16 << 20, 4).chunk_bytes, 1u << 20);
  // A small buffer is still spread over every reducer: 256 KiB over 4, 64 KiB each.
  EXPECT_EQ(reductionServerPipeline(c, 256 << 10, 4).chunk_bytes, 64u << 10);
  EXPECT_EQ(reductionServerPipeline(c, 4 << 10, 4).chunk_bytes, kMinPartBytes);
}

TEST(Pipeline, OneHostUsesLargeChunksWhateverTheDepth) {
  CommConfig c = config(4, 2);
  c.reducers_on_loopback = true;
  EXPECT_EQ(maxChunkBytes(c), kLoopbackChunkBytes);
  // 1 MiB over 2 reducers: 4 chunks of 128 KiB each, where the depth rule cuts 16 KiB ones.
  EXPECT_EQ(reductionServerPipeline(c, 1 << 20, 4).chunk_bytes, kLoopbackChunkBytes);
  EXPECT_EQ(reductionServerPipeline(config(4, 2), 1 << 20, 4).chunk_bytes, kMinCutChunkBytes);
  EXPECT_EQ(reductionServerPipeline(c, 1ull << 30, 4).chunk_bytes, kLoopbackChunkBytes);
  // Smaller buffers: one chunk per reducer; the smallest whole to one reducer.
  EXPECT_EQ(reductionServerPipeline(c, 64 << 10, 4).chunk_bytes, 32u << 10);
  EXPECT_EQ(reductionServerPipeline(c, 4 << 10, 4).chunk_bytes, kMinPartBytes);
  // An explicit size still wins.
  c.chunk_bytes = 32 << 10;
  EXPECT_EQ(reductionServerPipeline(c, 1 << 20, 4).chunk_bytes, 32u << 10);
}

TEST(Pipeline, OneHostIsReadFromTheReducerListAsWritten) {
  EXPECT_TRUE(allOnLoopback({"127.0.0.1:1", "127.8.9.10:2", "localhost:3", "[::1]:4"}));
  EXPECT_FALSE(allOnLoopback({}));
  EXPECT_FALSE(allOnLoopback({"127.0.0.1:1", "198.18.0.2:2"}));
  EXPECT_FALSE(allOnLoopback({"128.0.0.1:1"}));
  // A name is not resolved: on one host it may map to 127.0.1.1, on the others to its address.
  EXPECT_FALSE(allOnLoopback({"reducer-0:1"}));
  EXPECT_FALSE(allOnLoopback({"127.0.0.1"}));  // no port: not an address
}

TEST(Pipeline, ChunksNeverExceedWhatTheRankAnnouncedAtJoin) {
  for (uint32_t n : {1u, 2u, 3u, 8u, 100u, 65536u}) {
    for (uint32_t k : {1u, 2u, 7u, 64u}) {
      for (uint64_t chunk :
           {uint64_t{0}, uint64_t{4096}, uint64_t{1} << 20, limits::kMaxChunkBytes}) {
        CommConfig c = config(n, k);
        c.chunk_bytes = chunk;
        c.reducers_on_loopback = (n + k) % 2 == 0;  // either kind of communicator
        const uint64_t cap = maxChunkBytes(c);
        EXPECT_GE(cap, limits::kMinChunkBytes);
        EXPECT_LE(cap, limits::kMaxChunkBytes);
        for (uint64_t bytes : {0ull, 1ull, 4095ull, 1ull << 20, 1ull << 34}) {
          for (size_t esize : {1u, 2u, 4u, 8u}) {
            Pipeline p = reductionServerPipeline(c, bytes, esize);
            ASSERT_LE(p.chunk_bytes, cap) << n << " " << k << " " << chunk << " " << bytes;
            ASSERT_GE(p.chunk_bytes, esize);
            ASSERT_EQ(p.chunk_bytes % esize, 0u);
            // The operation's chunk count fits the header's chunk index.
            wire::Geometry g = wire::makeGeometry(wire::Coll::kAllReduce, bytes / esize, n, 0,
                                                  p.chunk_bytes, esize);
            ASSERT_LE(g.nchunks, UINT32_MAX);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace rd::coll
