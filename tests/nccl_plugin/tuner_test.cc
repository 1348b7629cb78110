// SPDX-License-Identifier: BSD-3-Clause
// The plugin's tuner as NCCL drives it: libnccl-net-libreduce.so dlopened, ncclTunerPlugin_v4 ..
// _v7 looked up, and getCollInfo called with cost tables shaped and filled as NCCL fills them
// (time = latency + bytes / (1000 x bus bandwidth) per algorithm and protocol, NCCL's default
// base latencies, -1 where NCCL may not choose). NCCL then picks the cheapest entry.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <string>

#include "nccl_plugin/nccl_tuner_abi.h"

namespace rd::test {
namespace {

constexpr int kAlgos = 7;   // tree, ring, CollNet direct, CollNet chain, NVLS, NVLS tree, PAT
constexpr int kProtos = 3;  // LL, LL128, Simple
using Table = std::array<std::array<float, kProtos>, kAlgos>;

// A table as NCCL computes it for an all-reduce over @p nodes nodes of one GPU each on
// 25 GB/s links: base latencies of NCCL's defaults plus a network hop per step, LL at a quarter
// and LL128 at ~90% of the Simple bandwidth, ring's bus bandwidth the link's, tree's the same
// with log-depth latency. CollNet's entries are NCCL's own pessimistic estimate (its latency
// model has no reducers) when @p collnet is set up, else -1.
Table ncclTable(int nodes, size_t size, bool collnet) {
  const auto bytes = static_cast<double>(size);
  const double link_gbs = 25, net_hop_us = 5;
  const double base[2][kProtos] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};  // tree, ring
  const double proto_bw[kProtos] = {0.25, 0.9, 1.0};
  Table t;
  for (auto& row : t) row.fill(-1.0f);
  const double ring_bus = link_gbs * nodes / (2.0 * (nodes - 1));  // algbw of ring
  for (int p = 0; p < kProtos; ++p) {
    double ring_lat = base[1][p] + 2 * (nodes - 1) * net_hop_us;
    double tree_lat = base[0][p] + 2 * std::log2(nodes) * net_hop_us;
    t[kNcclAlgoRing][p] = static_cast<float>(ring_lat + bytes / (1000 * ring_bus * proto_bw[p]));
    t[kNcclAlgoTree][p] =
        static_cast<float>(tree_lat + bytes / (1000 * ring_bus * 0.9 * proto_bw[p]));
  }
  if (collnet) {
    for (int a : {kNcclAlgoCollNetDirect, kNcclAlgoCollNetChain}) {
      t[a][kNcclProtoSimple] = static_cast<float>(40 + bytes / (1000 * link_gbs * 0.5));
    }
  }
  return t;
}

// The entry NCCL would pick: the cheapest not ignored.
std::pair<int, int> chosen(const Table& t) {
  std::pair<int, int> best{-1, -1};
  for (int a = 0; a < kAlgos; ++a) {
    for (int p = 0; p < kProtos; ++p) {
      if (t[a][p] < 0) continue;
      if (best.first < 0 || t[a][p] < t[best.first][best.second]) best = {a, p};
    }
  }
  return best;
}

bool isCollNet(int algo) {
  return algo == kNcclAlgoCollNetDirect || algo == kNcclAlgoCollNetChain;
}

class Tuner : public ::testing::Test {
 protected:
  void SetUp() override {
    lib_ = dlopen(RD_NCCL_PLUGIN_LIB, RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) FAIL() << dlerror();
    // As many reducers as nodes, links of one speed: the model's rs cost per byte is 1.
    std::string reducers;
    for (int i = 1; i <= 8; ++i) reducers += "10.0.0." + std::to_string(i) + ":7000,";
    reducers.pop_back();
    setenv("LIBREDUCE_REDUCERS", reducers.c_str(), 1);
    unsetenv("LIBREDUCE_NCCL_TUNER");
    unsetenv("LIBREDUCE_NCCL_COLLNET_LATENCY_US");
    unsetenv("LIBREDUCE_NCCL_CHUNK_BYTES");
  }
  void TearDown() override {
    if (context_ != nullptr) {
      EXPECT_EQ(v6()->finalize(context_), ncclSuccess);
    }
    unsetenv("LIBREDUCE_REDUCERS");
  }
  template <typename T>
  T* symbol(const char* name) {
    return static_cast<T*>(dlsym(lib_, name));
  }
  ncclTuner_v6_t* v6() { return symbol<ncclTuner_v6_t>("ncclTunerPlugin_v6"); }

  // A v6 context for a communicator of @p nodes nodes (one rank each).
  void open(int nodes) {
    ASSERT_NE(v6(), nullptr);
    ASSERT_EQ(v6()->init(&context_, 0x5eed, nodes, nodes, nullptr, nullptr, nullptr), ncclSuccess);
  }
  // getCollInfo on an NCCL table; returns the table after the call.
  Table tune(ncclFunc_t coll, int nodes, size_t bytes, bool collnet = true) {
    Table t = ncclTable(nodes, bytes, collnet);
    int channels = 0;
    EXPECT_EQ(v6()->getCollInfo(context_, coll, bytes, 1, reinterpret_cast<float**>(t.data()),
                                kAlgos, kProtos, 0, &channels),
              ncclSuccess);
    return t;
  }
  // The smallest power-of-two all-reduce that NCCL is made to run through CollNet.
  size_t crossover(int nodes) {
    for (size_t bytes = 1; bytes <= (size_t{1} << 32); bytes *= 2) {
      if (isCollNet(chosen(tune(ncclFuncAllReduce, nodes, bytes)).first)) return bytes;
    }
    return 0;
  }

  void* lib_ = nullptr;
  void* context_ = nullptr;
};

TEST_F(Tuner, EveryVersionNcclLooksUpIsExported) {
  auto* v4 = symbol<ncclTuner_v4_t>("ncclTunerPlugin_v4");
  auto* v5 = symbol<ncclTuner_v5_t>("ncclTunerPlugin_v5");
  auto* v7 = symbol<ncclTuner_v7_t>("ncclTunerPlugin_v7");
  ASSERT_TRUE(v4 && v5 && v6() && v7);
  for (const char* name : {v4->name, v5->name, v6()->name, v7->name})
    EXPECT_STREQ(name, "libreduce");
  EXPECT_NE(v6()->getChunkSize, nullptr);
  EXPECT_NE(v7->getChunkSize, nullptr);
}

TEST_F(Tuner, LargeAllReducesGoThroughCollNetAndNothingElseChanges) {
  open(8);
  for (size_t bytes : {size_t{4} << 20, size_t{64} << 20, size_t{1} << 30}) {
    Table before = ncclTable(8, bytes, true);
    Table after = tune(ncclFuncAllReduce, 8, bytes);
    EXPECT_NE(chosen(before).first, kNcclAlgoCollNetChain) << "NCCL alone would not choose it";
    auto [algo, proto] = chosen(after);
    EXPECT_TRUE(isCollNet(algo)) << bytes << " bytes: algorithm " << algo;
    EXPECT_EQ(proto, kNcclProtoSimple);
    for (int a = 0; a < kAlgos; ++a) {
      for (int p = 0; p < kProtos; ++p) {
        if (!(a == algo && p == proto)) {
          EXPECT_EQ(after[a][p], before[a][p]) << a << "/" << p;
        }
      }
    }
    // The prediction written in is the model's: latency + ring's time x n / (2 (n - 1)).
    double ring = before[kNcclAlgoRing][kNcclProtoSimple];
    EXPECT_NEAR(after[algo][proto], 50 + ring * 8 / 14.0, 1e-3 * ring);
  }
}

TEST_F(Tuner, SmallAllReducesStayWithNccl) {
  open(8);
  for (size_t bytes : {size_t{8}, size_t{4096}, size_t{65536}}) {
    Table before = ncclTable(8, bytes, true);
    EXPECT_EQ(tune(ncclFuncAllReduce, 8, bytes), before) << bytes;
  }
}

TEST_F(Tuner, CrossoverFollowsTheLatencySettingAndTheReducerCount) {
  open(8);
  size_t at_default = crossover(8);
  ASSERT_GT(at_default, 0u);
  ASSERT_EQ(v6()->finalize(context_), ncclSuccess);
  setenv("LIBREDUCE_NCCL_COLLNET_LATENCY_US", "500", 1);
  open(8);
  size_t at_slow = crossover(8);
  EXPECT_GT(at_slow, at_default);
  ASSERT_EQ(v6()->finalize(context_), ncclSuccess);
  unsetenv("LIBREDUCE_NCCL_COLLNET_LATENCY_US");
  // Four reducers carry 8 links' traffic at half the rate: 2 against ring's 1.75 per byte.
  setenv("LIBREDUCE_REDUCERS", "10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000,10.0.0.4:7000", 1);
  open(8);
  EXPECT_EQ(crossover(8), 0u) << "too few reducers: ring stays faster at every size";
  std::printf("crossover at 8 nodes: %zu bytes (50 us), %zu bytes (500 us)\n", at_default, at_slow);
}

TEST_F(Tuner, LeavesEverythingElseToNccl) {
  open(8);
  const size_t big = size_t{256} << 20;
  for (ncclFunc_t coll :
       {ncclFuncAllGather, ncclFuncReduceScatter, ncclFuncBroadcast, ncclFuncReduce}) {
    EXPECT_EQ(tune(coll, 8, big), ncclTable(8, big, true)) << "collective " << coll;
  }
  EXPECT_EQ(tune(ncclFuncAllReduce, 8, big, false), ncclTable(8, big, false))
      << "CollNet not set up: nothing to prefer";
  ASSERT_EQ(v6()->finalize(context_), ncclSuccess);
  open(1);  // one node: nothing crosses the network
  EXPECT_EQ(tune(ncclFuncAllReduce, 1, big), ncclTable(1, big, true));
}

TEST_F(Tuner, OffWhenDisabledOrWithoutReducersOrMisconfigured) {
  const size_t big = size_t{256} << 20;
  for (auto [name, value] :
       {std::pair{"LIBREDUCE_NCCL_TUNER", "0"}, std::pair{"LIBREDUCE_REDUCERS", ""},
        std::pair{"LIBREDUCE_NCCL_TUNER", "2"}}) {
    setenv(name, value, 1);
    open(8);
    EXPECT_EQ(tune(ncclFuncAllReduce, 8, big), ncclTable(8, big, true)) << name << "=" << value;
    ASSERT_EQ(v6()->finalize(context_), ncclSuccess);
    context_ = nullptr;
    unsetenv(name);
    SetUp();
  }
}

TEST_F(Tuner, EveryVersionMakesTheSameChoice) {
  const size_t big = size_t{64} << 20;
  Table want = ncclTable(8, big, true);
  void* c6 = nullptr;
  ASSERT_EQ(v6()->init(&c6, 1, 8, 8, nullptr, nullptr, nullptr), ncclSuccess);
  int channels = 0;
  v6()->getCollInfo(c6, ncclFuncAllReduce, big, 1, reinterpret_cast<float**>(want.data()), kAlgos,
                    kProtos, 0, &channels);
  v6()->finalize(c6);
  auto* v4 = symbol<ncclTuner_v4_t>("ncclTunerPlugin_v4");
  auto* v5 = symbol<ncclTuner_v5_t>("ncclTunerPlugin_v5");
  auto* v7 = symbol<ncclTuner_v7_t>("ncclTunerPlugin_v7");
  void* c4 = nullptr;
  void* c5 = nullptr;
  void* c7 = nullptr;
  ASSERT_EQ(v4->init(8, 8, nullptr, &c4), ncclSuccess);
  ASSERT_EQ(v5->init(&c5, 1, 8, 8, nullptr, nullptr, nullptr), ncclSuccess);
  ASSERT_EQ(v7->init(&c7, 1, 8, 8, nullptr, nullptr, nullptr), ncclSuccess);
  Table t4 = ncclTable(8, big, true), t5 = t4, t7 = t4;
  v4->getCollInfo(c4, ncclFuncAllReduce, big, 1, reinterpret_cast<float**>(t4.data()), kAlgos,
                  kProtos, 0, &channels);
  v5->getCollInfo(c5, ncclFuncAllReduce, big, 1, reinterpret_cast<float**>(t5.data()), kAlgos,
                  kProtos, 0, &channels);
  v7->getCollInfo(c7, ncclFuncAllReduce, big, 1, reinterpret_cast<float**>(t7.data()), kAlgos,
                  kProtos, 0, &channels);
  EXPECT_EQ(t4, want);
  EXPECT_EQ(t5, want);
  EXPECT_EQ(t7, want);
  EXPECT_EQ(v4->destroy(c4), ncclSuccess);
  EXPECT_EQ(v5->finalize(c5), ncclSuccess);
  EXPECT_EQ(v7->finalize(c7), ncclSuccess);
}

TEST_F(Tuner, ChunkSizeOfCollNetAllReducesGrowsNeverShrinks) {
  open(8);
  auto chunk = [&](ncclFunc_t coll, size_t bytes, int algo, size_t nccl_chunk) {
    size_t size = nccl_chunk;
    EXPECT_EQ(v6()->getChunkSize(context_, coll, bytes, algo, kNcclProtoSimple, 4, &size),
              ncclSuccess);
    return size;
  };
  // auto: the bytes per channel (NCCL clamps that to its buffer step).
  EXPECT_EQ(chunk(ncclFuncAllReduce, 8 << 20, kNcclAlgoCollNetChain, 32768), size_t{2} << 20);
  EXPECT_EQ(chunk(ncclFuncAllReduce, 8 << 20, kNcclAlgoCollNetDirect, 131072), size_t{2} << 20);
  EXPECT_EQ(chunk(ncclFuncAllReduce, 64 << 10, kNcclAlgoCollNetChain, 32768), size_t{32768});
  EXPECT_EQ(chunk(ncclFuncAllReduce, 8 << 20, kNcclAlgoRing, 131072), size_t{131072});
  EXPECT_EQ(chunk(ncclFuncAllGather, 8 << 20, kNcclAlgoCollNetDirect, 131072), size_t{131072});
  ASSERT_EQ(v6()->finalize(context_), ncclSuccess);
  setenv("LIBREDUCE_NCCL_CHUNK_BYTES", "512K", 1);
  open(8);
  EXPECT_EQ(chunk(ncclFuncAllReduce, 8 << 20, kNcclAlgoCollNetChain, 32768), size_t{512} << 10);
}

}  // namespace
}  // namespace rd::test
