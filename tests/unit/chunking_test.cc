// SPDX-License-Identifier: BSD-3-Clause
// Chunk geometry: how a buffer is cut into chunks, which ranks contribute and receive each one,
// and which reducer serves it, for every collective.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "protocol/chunking.h"
#include "protocol/wire.h"

namespace rd::wire {
namespace {

constexpr Coll kColls[] = {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather,
                           Coll::kBroadcast};

bool perRank(Coll c) {
  return c == Coll::kReduceScatter || c == Coll::kAllGather;
}

const char* collName(Coll c) {
  return wire::collName(static_cast<uint8_t>(c));
}

TEST(ChunkGeometry, CoversTheBufferExactlyOnce) {
  for (Coll coll : kColls) {
    for (uint64_t count : {0ull, 1ull, 7ull, 1000ull, (1ull << 20) + 3}) {
      for (uint32_t nranks : {1u, 2u, 3u, 8u}) {
        for (uint64_t chunk_bytes : {4096ull, 1ull << 20}) {
          for (size_t esize : {1u, 2u, 4u, 8u}) {
            SCOPED_TRACE(testing::Message()
                         << collName(coll) << " count " << count << " nranks " << nranks
                         << " chunk_bytes " << chunk_bytes << " esize " << esize);
            Geometry g = makeGeometry(coll, count, nranks, 0, chunk_bytes, esize);
            const uint64_t chunk_elems = chunk_bytes / esize;
            ASSERT_EQ(g.chunk_elems, chunk_elems);
            const uint64_t parts = perRank(coll) ? nranks : 1;
            const uint64_t total = count * parts;
            const uint64_t per_part =
                std::max<uint64_t>(1, (count + chunk_elems - 1) / chunk_elems);
            ASSERT_EQ(g.nchunks, per_part * parts);

            std::vector<std::pair<uint64_t, uint64_t>> spans;  // (offset, elems)
            for (uint64_t k = 0; k < g.nchunks; ++k) {
              ChunkSpan s = chunkSpan(g, k);
              ASSERT_LE(s.elems, chunk_elems) << k;
              if (count > 0) {
                ASSERT_GT(s.elems, 0u) << k;
              }
              if (perRank(coll)) {
                // Each chunk lies inside its owner's part of the buffer.
                ASSERT_LT(s.owner, nranks) << k;
                ASSERT_GE(s.offset, s.owner * count) << k;
                ASSERT_LE(s.offset + s.elems, (s.owner + 1) * count) << k;
              }
              spans.emplace_back(s.offset, s.elems);
            }
            std::sort(spans.begin(), spans.end());
            uint64_t covered = 0;
            for (const auto& [offset, elems] : spans) {
              ASSERT_EQ(offset, covered) << "gap or overlap";
              covered += elems;
            }
            ASSERT_EQ(covered, total);
          }
        }
      }
    }
  }
}

TEST(ChunkGeometry, ZeroCountHasOneEmptyChunk) {
  for (Coll coll : kColls) {
    SCOPED_TRACE(collName(coll));
    Geometry g = makeGeometry(coll, 0, 3, 0, 4096, 4);
    ASSERT_EQ(g.nchunks, perRank(coll) ? 3u : 1u);
    for (uint64_t k = 0; k < g.nchunks; ++k) {
      ChunkSpan s = chunkSpan(g, k);
      EXPECT_EQ(s.elems, 0u) << k;
      EXPECT_EQ(s.offset, 0u) << k;
      if (perRank(coll)) {
        EXPECT_EQ(s.owner, k);
      }
    }
  }
}

TEST(ChunkGeometry, SplitsEachRanksPartOnItsOwn) {
  // 1500 float32 per rank in 4 KiB chunks: 1024 + 476 elements per rank.
  Geometry g = makeGeometry(Coll::kReduceScatter, 1500, 3, 0, 4096, 4);
  EXPECT_EQ(g.chunks_per_rank, 2u);
  ASSERT_EQ(g.nchunks, 6u);
  ChunkSpan s = chunkSpan(g, 3);
  EXPECT_EQ(s.owner, 1u);
  EXPECT_EQ(s.offset, 1500u + 1024u);
  EXPECT_EQ(s.elems, 476u);
}

TEST(ChunkGeometry, RoundsChunkBytesDownToWholeElements) {
  EXPECT_EQ(makeGeometry(Coll::kAllReduce, 100, 1, 0, 4097, 8).chunk_elems, 512u);
  EXPECT_EQ(makeGeometry(Coll::kAllReduce, 100, 1, 0, 4095, 2).chunk_elems, 2047u);
  // Never zero elements, which would make the chunk count infinite.
  EXPECT_EQ(makeGeometry(Coll::kAllReduce, 100, 1, 0, 3, 8).chunk_elems, 1u);
  EXPECT_EQ(makeGeometry(Coll::kAllReduce, 100, 1, 0, 0, 8).chunk_elems, 1u);
}

TEST(ChunkRoles, AllReduceEveryRankContributesAndReceives) {
  Geometry g = makeGeometry(Coll::kAllReduce, 10000, 4, 0, 4096, 4);
  EXPECT_EQ(contributorCount(g), 4u);
  for (uint64_t k = 0; k < g.nchunks; ++k) {
    for (uint32_t r = 0; r < 4; ++r) {
      EXPECT_TRUE(contributes(g, k, r)) << k << " " << r;
      EXPECT_TRUE(receivesResult(g, k, r)) << k << " " << r;
    }
  }
}

TEST(ChunkRoles, ReduceScatterEveryRankContributesOnlyOwnerReceives) {
  Geometry g = makeGeometry(Coll::kReduceScatter, 3000, 4, 0, 4096, 4);
  EXPECT_EQ(contributorCount(g), 4u);
  for (uint64_t k = 0; k < g.nchunks; ++k) {
    uint32_t owner = chunkSpan(g, k).owner;
    for (uint32_t r = 0; r < 4; ++r) {
      EXPECT_TRUE(contributes(g, k, r)) << k << " " << r;
      EXPECT_EQ(receivesResult(g, k, r), r == owner) << k << " " << r;
    }
  }
}

TEST(ChunkRoles, AllGatherOnlyOwnerContributesOthersReceive) {
  Geometry g = makeGeometry(Coll::kAllGather, 3000, 4, 0, 4096, 4);
  EXPECT_EQ(contributorCount(g), 1u);
  std::vector<int> contributions(4);
  for (uint64_t k = 0; k < g.nchunks; ++k) {
    uint32_t owner = chunkSpan(g, k).owner;
    for (uint32_t r = 0; r < 4; ++r) {
      EXPECT_EQ(contributes(g, k, r), r == owner) << k << " " << r;
      EXPECT_EQ(receivesResult(g, k, r), r != owner) << k << " " << r;
      contributions[r] += contributes(g, k, r) ? 1 : 0;
    }
  }
  // Every rank owns the same number of chunks of its own part.
  // 3000 elements per rank in 1024-element chunks: 3 each.
  for (uint32_t r = 0; r < 4; ++r) EXPECT_EQ(contributions[r], 3) << r;
}

TEST(ChunkRoles, BroadcastOnlyRootContributesEveryoneElseReceives) {
  for (uint32_t root : {0u, 2u, 3u}) {
    Geometry g = makeGeometry(Coll::kBroadcast, 10000, 4, root, 4096, 4);
    EXPECT_EQ(contributorCount(g), 1u);
    for (uint64_t k = 0; k < g.nchunks; ++k) {
      for (uint32_t r = 0; r < 4; ++r) {
        EXPECT_EQ(contributes(g, k, r), r == root) << root << " " << k << " " << r;
        EXPECT_EQ(receivesResult(g, k, r), r != root) << root << " " << k << " " << r;
      }
    }
  }
}

TEST(ChunkRoles, ReducerForSpreadsChunks) {
  for (uint32_t nreducers : {1u, 2u, 3u, 7u}) {
    for (uint64_t seq : {0ull, 1ull, 5ull, 1ull << 40}) {
      std::vector<int> load(nreducers);
      for (uint64_t k = 0; k < 100 * nreducers; ++k) {
        uint32_t r = reducerFor(k, seq, nreducers);
        ASSERT_LT(r, nreducers);
        ++load[r];
        // Consecutive chunks go to different reducers.
        if (nreducers > 1) {
          EXPECT_NE(r, reducerFor(k + 1, seq, nreducers)) << k;
        }
      }
      for (uint32_t r = 0; r < nreducers; ++r) EXPECT_EQ(load[r], 100) << nreducers << " " << r;
    }
    // The next operation starts its first chunk on the next reducer, so single-chunk
    // operations do not all land on reducer 0.
    if (nreducers > 1) {
      EXPECT_NE(reducerFor(0, 0, nreducers), reducerFor(0, 1, nreducers));
    }
  }
}

// routeChunk (docs/failover.md): with every reducer alive it is reducerFor; a chunk moves only
// when its reducer is lost, never onto a lost one, the same way whatever order the losses come
// in; a lost reducer's chunks spread over the survivors.
TEST(ChunkRoutes, MoveOnlyWhenTheirReducerIsLostAndAgreeAcrossLiveSets) {
  std::mt19937_64 random(7);
  for (uint32_t n : {2u, 3u, 5u, 8u}) {
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<uint8_t> all(n, 1), fewer(n, 1), fewest(n, 1);
      // fewest loses a superset of what fewer loses; one reducer stays alive.
      uint32_t keep = static_cast<uint32_t>(random() % n);
      for (uint32_t m = 0; m < n; ++m) {
        if (m == keep) continue;
        if (random() % 3 == 0) fewer[m] = fewest[m] = 0;
        if (random() % 3 == 0) fewest[m] = 0;
      }
      for (uint64_t seq : {0ull, 3ull, 1ull << 33}) {
        for (uint64_t k = 0; k < 64; ++k) {
          ASSERT_EQ(routeChunk(k, seq, all), reducerFor(k, seq, n));
          uint32_t a = routeChunk(k, seq, fewer);
          uint32_t b = routeChunk(k, seq, fewest);
          ASSERT_NE(fewer[a], 0);
          ASSERT_NE(fewest[b], 0);
          if (fewer[reducerFor(k, seq, n)] != 0) {
            EXPECT_EQ(a, reducerFor(k, seq, n));
          }
          if (fewest[a] != 0) {
            EXPECT_EQ(a, b) << "chunk " << k << " moved off a live reducer";
          }
        }
      }
    }
  }
}

TEST(ChunkRoutes, ALostReducersChunksSpreadOverTheSurvivors) {
  std::vector<uint8_t> alive = {1, 0, 1, 1};
  std::vector<int> load(alive.size());
  for (uint64_t seq = 0; seq < 50; ++seq) {
    for (uint64_t k = 0; k < 40; ++k) {
      if (reducerFor(k, seq, 4) == 1) ++load[routeChunk(k, seq, alive)];
    }
  }
  EXPECT_EQ(load[1], 0);
  for (uint32_t m : {0u, 2u, 3u}) EXPECT_GT(load[m], 100) << m;  // 500 chunks moved, ~167 each
}

}  // namespace
}  // namespace rd::wire
