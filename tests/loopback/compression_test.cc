// SPDX-License-Identifier: BSD-3-Clause
// Wire compression end to end (ranks and reducers in one process): the result is the float32
// sum of the rounded inputs, rounded once; its error against a float64
// reference stays under the bound docs/performance.md states; deterministic mode is bit-identical
// run to run; fp16 overflow gives Inf; operations that do not compress are exact as before.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpu/half_convert.h"
#include "world.h"

namespace rd::test {
namespace {

using std::chrono::seconds;

constexpr int kRanks = 4;

float roundTrip(rdDataType_t wire, float v) {
  return wire == rdBfloat16 ? kernels::bf16ToFloat(kernels::floatToBf16(v))
                            : kernels::halfToFloat(kernels::floatToHalf(v));
}

// Unit roundoff of the wire type: half the spacing of its significand.
double unitRoundoff(rdDataType_t wire) {
  return wire == rdBfloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}

WorldOptions compressedWorld(rdDataType_t wire, bool deterministic) {
  WorldOptions o;
  o.ranks = kRanks;
  o.reducers = 2;
  o.chunk_bytes = 4096;  // many chunks, on both reducers
  o.deterministic = deterministic;
  o.wire_dtype = wire;
  return o;
}

// Random float32 inputs of every rank at a scale, and their results.
struct Data {
  std::vector<std::vector<float>> in;
  std::vector<std::vector<float>> out;
};

Data randomData(size_t in_count, size_t out_count, double scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  Data d;
  d.in.assign(kRanks, std::vector<float>(in_count));
  d.out.assign(kRanks, std::vector<float>(out_count, std::nanf("")));
  for (auto& v : d.in)
    for (float& x : v) x = static_cast<float>(normal(rng));
  return d;
}

// Runs @p c over @p data on every rank; asserts success.
void runOn(World& w, Collective c, size_t count, rdRedOp_t op, Data& data) {
  auto outcomes = w.run(c, count, rdFloat32, op, seconds(30), [&](int r, coll::OpDesc* d) {
    d->send = data.in[r].data();
    d->recv = data.out[r].data();
  });
  for (size_t r = 0; r < outcomes.size(); ++r) {
    ASSERT_EQ(outcomes[r].status, rdSuccess) << "rank " << r << ": " << outcomes[r].error;
  }
}

// In rank order: round each input, sum in float32, scale, round once.
float expectedBits(rdDataType_t wire, const Data& data, size_t i, rdRedOp_t op) {
  float sum = roundTrip(wire, data.in[0][i]);
  for (int r = 1; r < kRanks; ++r) sum = sum + roundTrip(wire, data.in[r][i]);
  if (op == rdAvg) sum = sum * (1.0f / kRanks);
  return roundTrip(wire, sum);
}

struct ErrorStats {
  double max_relative = 0;  // |result - exact| / sum |x|, the largest over elements
  size_t over_bound = 0;
};

// Against the float64 sum of the unrounded inputs; relative to the sum of magnitudes (the sum
// itself may cancel to zero).
ErrorStats measureError(rdDataType_t wire, const Data& data, const std::vector<float>& got,
                        size_t first, rdRedOp_t op) {
  const double u = unitRoundoff(wire), f32 = std::ldexp(1.0, -24);
  // Documented bound (docs/performance.md): each input and the result rounded once to the wire
  // type, n float32 additions and the avg scaling in float32; float16 subnormals add an
  // absolute 2^-25 per rounding.
  const double relative_bound = 2 * u + (kRanks + 2) * f32;
  const double absolute_floor = wire == rdFloat16 ? (kRanks + 1) * std::ldexp(1.0, -25) : 0;
  ErrorStats s;
  for (size_t i = 0; i < got.size(); ++i) {
    double exact = 0, magnitude = 0;
    for (int r = 0; r < kRanks; ++r) {
      exact += data.in[r][first + i];
      magnitude += std::fabs(data.in[r][first + i]);
    }
    if (op == rdAvg) {
      exact /= kRanks;
      magnitude /= kRanks;
    }
    const double err = std::fabs(static_cast<double>(got[i]) - exact);
    if (magnitude > 0) s.max_relative = std::max(s.max_relative, err / magnitude);
    if (err > relative_bound * magnitude + absolute_floor) ++s.over_bound;
  }
  return s;
}

class WireTypes : public ::testing::TestWithParam<rdDataType_t> {};

TEST_P(WireTypes, AllReduceIsTheFloat32SumOfRoundedInputsRoundedOnce) {
  const rdDataType_t wire = GetParam();
  World w(compressedWorld(wire, true));
  ASSERT_EQ(w.join(), rdSuccess);
  const size_t count = 10007;  // chunks plus a tail
  for (double scale : {1e-3, 1.0, 1e3}) {
    for (rdRedOp_t op : {rdSum, rdAvg}) {
      Data data = randomData(count, count, scale, 11);
      runOn(w, Collective::kAllReduce, count, op, data);
      size_t differ = 0;
      for (int r = 0; r < kRanks; ++r) {
        for (size_t i = 0; i < count; ++i) {
          float want = expectedBits(wire, data, i, op);
          if (std::memcmp(&want, &data.out[r][i], 4) != 0) ++differ;
        }
      }
      EXPECT_EQ(differ, 0u) << rdDataTypeName(wire) << " scale " << scale << " " << rdRedOpName(op);
      ErrorStats e = measureError(wire, data, data.out[0], 0, op);
      EXPECT_EQ(e.over_bound, 0u) << rdDataTypeName(wire) << " scale " << scale;
      EXPECT_GT(e.max_relative, 0) << "nothing was rounded: is the data compressed at all?";
      std::printf("%s scale %g %s: max relative error %.3g (bound %.3g)\n", rdDataTypeName(wire),
                  scale, rdRedOpName(op), e.max_relative,
                  2 * unitRoundoff(wire) + (kRanks + 2) * std::ldexp(1.0, -24));
    }
  }
}

TEST_P(WireTypes, ArrivalOrderStaysUnderTheBoundAndEveryRankHoldsTheSameBits) {
  const rdDataType_t wire = GetParam();
  World w(compressedWorld(wire, false));
  ASSERT_EQ(w.join(), rdSuccess);
  const size_t count = 50001;
  Data data = randomData(count, count, 1.0, 5);
  runOn(w, Collective::kAllReduce, count, rdSum, data);
  for (int r = 1; r < kRanks; ++r) {
    EXPECT_EQ(std::memcmp(data.out[0].data(), data.out[r].data(), count * 4), 0) << "rank " << r;
  }
  EXPECT_EQ(measureError(wire, data, data.out[0], 0, rdSum).over_bound, 0u);
}

TEST_P(WireTypes, ReduceScatterAndAllGatherCompressToo) {
  const rdDataType_t wire = GetParam();
  World w(compressedWorld(wire, true));
  ASSERT_EQ(w.join(), rdSuccess);
  const size_t share = 3001;
  Data rs = randomData(share * kRanks, share, 2.0, 3);
  runOn(w, Collective::kReduceScatter, share, rdSum, rs);
  for (int r = 0; r < kRanks; ++r) {
    size_t differ = 0;
    for (size_t i = 0; i < share; ++i) {
      float want = expectedBits(wire, rs, r * share + i, rdSum);
      if (std::memcmp(&want, &rs.out[r][i], 4) != 0) ++differ;
    }
    EXPECT_EQ(differ, 0u) << "rank " << r;
  }
  // All-gather: every rank holds every part rounded once, its own included.
  Data ag = randomData(share, share * kRanks, 2.0, 4);
  std::vector<std::vector<float>> original = ag.in;
  runOn(w, Collective::kAllGather, share, rdSum, ag);
  for (int r = 0; r < kRanks; ++r) {
    size_t differ = 0;
    for (int q = 0; q < kRanks; ++q) {
      for (size_t i = 0; i < share; ++i) {
        float want = roundTrip(wire, original[q][i]);
        if (std::memcmp(&want, &ag.out[r][q * share + i], 4) != 0) ++differ;
      }
    }
    EXPECT_EQ(differ, 0u) << "rank " << r;
  }
}

TEST_P(WireTypes, DeterministicModeIsBitIdenticalRunToRun) {
  const rdDataType_t wire = GetParam();
  std::vector<float> first;
  for (int run = 0; run < 2; ++run) {
    World w(compressedWorld(wire, true));
    ASSERT_EQ(w.join(), rdSuccess);
    Data data = randomData(20000, 20000, 1.0, 21);
    runOn(w, Collective::kAllReduce, 20000, rdSum, data);
    if (run == 0) {
      first = data.out[0];
    } else {
      EXPECT_EQ(std::memcmp(first.data(), data.out[0].data(), first.size() * 4), 0);
    }
  }
}

TEST_P(WireTypes, OperationsThatDoNotCompressStayExact) {
  World w(compressedWorld(GetParam(), false));
  ASSERT_EQ(w.join(), rdSuccess);
  EXPECT_TRUE(allCorrect(w.run(Collective::kAllReduce, 5000, rdFloat64, rdSum)));
  EXPECT_TRUE(allCorrect(w.run(Collective::kAllReduce, 5000, rdInt32, rdSum)));
  EXPECT_TRUE(allCorrect(w.run(Collective::kAllReduce, 5000, rdFloat32, rdProd)));
  EXPECT_TRUE(allCorrect(w.run(Collective::kAllReduce, 5000, rdFloat32, rdMax)));
  EXPECT_TRUE(allCorrect(w.run(Collective::kBroadcast, 5000, rdFloat32, rdSum)));
  // Small integers are exact in both wire types: compressed and still exact.
  EXPECT_TRUE(allCorrect(w.run(Collective::kAllReduce, 5000, rdFloat32, rdSum)));
  EXPECT_TRUE(allCorrect(w.run(Collective::kAllReduce, 5000, rdFloat32, rdAvg)));
}

// float64 travels as it is: metrics, counters and times must stay exact.
TEST_P(WireTypes, Float64IsNotCompressed) {
  World w(compressedWorld(GetParam(), true));
  ASSERT_EQ(w.join(), rdSuccess);
  const size_t count = 7001;
  std::mt19937 rng(17);
  std::normal_distribution<double> normal(0.0, 5.0e5);  // beyond float16's range, too
  std::vector<std::vector<double>> in(kRanks, std::vector<double>(count));
  std::vector<std::vector<double>> out(kRanks, std::vector<double>(count, std::nan("")));
  for (auto& v : in)
    for (double& x : v) x = normal(rng);
  auto outcomes = w.run(Collective::kAllReduce, count, rdFloat64, rdSum, seconds(30),
                        [&](int r, coll::OpDesc* d) {
                          d->send = in[r].data();
                          d->recv = out[r].data();
                        });
  for (size_t r = 0; r < outcomes.size(); ++r) {
    ASSERT_EQ(outcomes[r].status, rdSuccess) << outcomes[r].error;
  }
  size_t differ = 0;
  for (size_t i = 0; i < count; ++i) {
    double want = in[0][i];
    for (int r = 1; r < kRanks; ++r) want += in[r][i];  // rank order (deterministic reducers)
    for (int r = 0; r < kRanks; ++r) differ += out[r][i] != want ? 1 : 0;
  }
  EXPECT_EQ(differ, 0u);
}

INSTANTIATE_TEST_SUITE_P(Compression, WireTypes, ::testing::Values(rdBfloat16, rdFloat16),
                         [](const auto& param_info) {
                           return std::string(param_info.param == rdBfloat16 ? "bf16" : "fp16");
                         });

TEST(Compression, Float16OverflowIsInfinityAsIeeeSays) {
  World w(compressedWorld(rdFloat16, true));
  ASSERT_EQ(w.join(), rdSuccess);
  const float inf = std::numeric_limits<float>::infinity();
  Data data = randomData(64, 64, 1.0, 1);
  for (int r = 0; r < kRanks; ++r) {
    data.in[r][0] = 40000.0f;                  // each fits float16; the sum does not
    data.in[r][1] = r == 0 ? 70000.0f : 1.0f;  // beyond 65504 already on the wire
    data.in[r][2] = -30000.0f;                 // -120000: -Inf
    data.in[r][3] = 16000.0f;                  // 64000 fits
  }
  runOn(w, Collective::kAllReduce, 64, rdSum, data);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(data.out[r][0], inf) << "rank " << r;
    EXPECT_EQ(data.out[r][1], inf) << "rank " << r;
    EXPECT_EQ(data.out[r][2], -inf) << "rank " << r;
    EXPECT_EQ(data.out[r][3], 64000.0f) << "rank " << r;
  }
  // bfloat16 keeps float32's range: the same sums are finite.
  World b(compressedWorld(rdBfloat16, true));
  ASSERT_EQ(b.join(), rdSuccess);
  runOn(b, Collective::kAllReduce, 64, rdSum, data);
  EXPECT_EQ(data.out[0][0], roundTrip(rdBfloat16, kRanks * roundTrip(rdBfloat16, 40000.0f)));
  EXPECT_TRUE(std::isfinite(data.out[0][1]));
}

TEST(Compression, RanksWithDifferentWireTypesAreRefusedAtJoin) {
  World w(compressedWorld(rdBfloat16, false));
  std::vector<coll::CommConfig> configs;
  for (int r = 0; r < kRanks; ++r) configs.push_back(w.config(r));
  configs[2].wire_dtype = rdFloat32;
  EXPECT_NE(w.join(configs), rdSuccess);
  bool named = false;
  for (const Outcome& o : w.joinOutcomes()) {
    named = named || o.error.find("LIBREDUCE_WIRE_DTYPE") != std::string::npos;
  }
  EXPECT_TRUE(named) << w.joinOutcomes()[2].error;
}

}  // namespace
}  // namespace rd::test
