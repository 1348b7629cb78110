// SPDX-License-Identifier: BSD-3-Clause
// The wide-sum kernels (wire compression's float32 sums of bfloat16 / float16 values): every
// instruction set and thread count gives the bits of an element-by-element reference, the
// result is rounded once, overflow gives infinity, and bad arguments are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "common/status.h"
#include "cpu/cpu_reduce.h"
#include "cpu/half_convert.h"

namespace rd::test {
namespace {

using kernels::WideSumArgs;
using kernels::cpu::Isa;
using kernels::cpu::Options;

const Isa kIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512};
const rdDataType_t kNarrowTypes[] = {rdBfloat16, rdFloat16};

uint16_t narrow(rdDataType_t t, float v) {
  return t == rdBfloat16 ? kernels::floatToBf16(v) : kernels::floatToHalf(v);
}
float widen(rdDataType_t t, uint16_t v) {
  return t == rdBfloat16 ? kernels::bf16ToFloat(v) : kernels::halfToFloat(v);
}
uint32_t bitsOf(float f) {
  uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return u;
}

// Three threads also use non-temporal stores for every destination (the large-buffer path).
Options optionsFor(Isa isa, int threads) {
  Options o;
  o.isa = isa;
  o.threads = threads;
  o.split_bytes = 4096;
  o.stream_bytes = threads > 1 ? 1 : 0;
  return o;
}

struct Case {
  rdDataType_t narrow_type;
  size_t count;
  int nsrcs;
  bool with_acc;
  bool narrow_out;
  float scale;
};

// The semantics of wide_sum.h, one element at a time.
std::vector<uint32_t> reference(const Case& c, const std::vector<float>& acc,
                                const std::vector<std::vector<uint16_t>>& srcs) {
  std::vector<uint32_t> out(c.count);
  for (size_t i = 0; i < c.count; ++i) {
    float v = c.with_acc ? acc[i] : widen(c.narrow_type, srcs[0][i]);
    for (int s = c.with_acc ? 0 : 1; s < c.nsrcs; ++s) v = v + widen(c.narrow_type, srcs[s][i]);
    if (c.scale != 1.0f) v = v * c.scale;
    out[i] = c.narrow_out ? narrow(c.narrow_type, v) : bitsOf(v);
  }
  return out;
}

std::vector<uint32_t> run(const Case& c, Isa isa, int threads, const std::vector<float>& acc,
                          const std::vector<std::vector<uint16_t>>& srcs) {
  std::vector<const void*> ptrs;
  for (const auto& s : srcs) ptrs.push_back(s.data());
  std::vector<uint16_t> narrow_dst(c.count, 0xDEAD);
  std::vector<float> wide_dst(c.count, -1.0f);
  WideSumArgs a;
  a.acc = c.with_acc ? acc.data() : nullptr;
  a.srcs = ptrs.data();
  a.nsrcs = c.nsrcs;
  a.narrow = c.narrow_type;
  a.narrow_out = c.narrow_out;
  a.dst = c.narrow_out ? static_cast<void*>(narrow_dst.data()) : wide_dst.data();
  a.count = c.count;
  a.scale = c.scale;
  EXPECT_EQ(kernels::cpu::wideSum(a, optionsFor(isa, threads)), rdSuccess) << lastError();
  std::vector<uint32_t> out(c.count);
  for (size_t i = 0; i < c.count; ++i) out[i] = c.narrow_out ? narrow_dst[i] : bitsOf(wide_dst[i]);
  return out;
}

TEST(WideSum, EveryIsaAndThreadCountGivesTheReferenceBits) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (rdDataType_t t : kNarrowTypes) {
    for (size_t count : {size_t{1}, size_t{31}, size_t{67}, size_t{4099}, size_t{70001}}) {
      for (int nsrcs : {0, 1, 2, 5}) {
        for (bool with_acc : {false, true}) {
          if (nsrcs == 0 && !with_acc) continue;
          for (bool narrow_out : {false, true}) {
            for (float scale : {1.0f, 0.2f}) {
              Case c{t, count, nsrcs, with_acc, narrow_out, scale};
              std::vector<float> acc(count);
              for (float& v : acc) v = normal(rng);
              std::vector<std::vector<uint16_t>> srcs(nsrcs, std::vector<uint16_t>(count));
              for (auto& s : srcs)
                for (uint16_t& v : s) v = narrow(t, normal(rng));
              const auto want = reference(c, acc, srcs);
              for (Isa isa : kIsas) {
                if (!kernels::cpu::isaSupported(isa)) continue;
                for (int threads : {1, 3}) {
                  ASSERT_EQ(run(c, isa, threads, acc, srcs), want)
                      << rdDataTypeName(t) << " count " << count << " nsrcs " << nsrcs << " acc "
                      << with_acc << " narrow_out " << narrow_out << " scale " << scale << " "
                      << kernels::cpu::isaName(isa) << " threads " << threads;
                }
              }
            }
          }
        }
      }
    }
  }
}

// Sixteen contributions of 1 + 2^-7: bfloat16 sums in bfloat16 drift (each partial sum rounds),
// a float32 sum rounded once does not.
TEST(WideSum, RoundsOnceNotAtEveryAddition) {
  const float x = 1.0f + 1.0f / 128;  // exactly representable in bfloat16 (8 significant bits)
  const uint16_t xb = kernels::floatToBf16(x);
  ASSERT_EQ(kernels::bf16ToFloat(xb), x);
  std::vector<std::vector<uint16_t>> srcs(16, std::vector<uint16_t>(40, xb));
  std::vector<const void*> ptrs;
  for (const auto& s : srcs) ptrs.push_back(s.data());
  std::vector<uint16_t> out(40);
  WideSumArgs a;
  a.srcs = ptrs.data();
  a.nsrcs = 16;
  a.narrow = rdBfloat16;
  a.narrow_out = true;
  a.dst = out.data();
  a.count = out.size();
  ASSERT_EQ(kernels::cpu::wideSum(a), rdSuccess);
  for (uint16_t v : out)
    EXPECT_EQ(kernels::bf16ToFloat(v), kernels::bf16ToFloat(kernels::floatToBf16(16 * x)));
  // The same sum folded two contributions at a time through a float32 accumulator agrees.
  std::vector<float> acc(40);
  a.narrow_out = false;
  a.dst = acc.data();
  a.nsrcs = 2;
  ASSERT_EQ(kernels::cpu::wideSum(a), rdSuccess);
  for (int s = 2; s < 16; s += 2) {
    WideSumArgs f = a;
    f.acc = acc.data();
    f.srcs = ptrs.data() + s;
    ASSERT_EQ(kernels::cpu::wideSum(f), rdSuccess);
  }
  for (float v : acc) EXPECT_EQ(v, 16 * x);
}

TEST(WideSum, Float16OverflowIsInfinityAndNanStaysNan) {
  const float inf = std::numeric_limits<float>::infinity();
  for (Isa isa : kIsas) {
    if (!kernels::cpu::isaSupported(isa)) continue;
    const size_t count = 37;
    std::vector<float> acc(count, 1.0f);
    acc[0] = 70000.0f;  // beyond 65504: rounds to infinity when narrowed
    acc[1] = -1e6f;     // and to -infinity
    acc[2] = 65504.0f;  // the largest float16 stays
    acc[3] = std::nanf("");
    acc[36] = 65520.0f;  // halfway to the next power: rounds to infinity (tail element)
    std::vector<uint16_t> out(count);
    WideSumArgs a;
    a.acc = acc.data();
    a.narrow = rdFloat16;
    a.narrow_out = true;
    a.dst = out.data();
    a.count = count;
    ASSERT_EQ(kernels::cpu::wideSum(a, optionsFor(isa, 1)), rdSuccess);
    const char* name = kernels::cpu::isaName(isa);
    EXPECT_EQ(kernels::halfToFloat(out[0]), inf) << name;
    EXPECT_EQ(kernels::halfToFloat(out[1]), -inf) << name;
    EXPECT_EQ(kernels::halfToFloat(out[2]), 65504.0f) << name;
    EXPECT_TRUE(std::isnan(kernels::halfToFloat(out[3]))) << name;
    EXPECT_EQ(kernels::halfToFloat(out[36]), inf) << name;
    // Two float16 contributions whose sum leaves the range: infinity in float16, finite in
    // float32 (the accumulator is wider than the wire).
    std::vector<uint16_t> big(count, kernels::floatToHalf(60000.0f));
    const void* two[] = {big.data(), big.data()};
    std::vector<float> wide(count);
    WideSumArgs s;
    s.srcs = two;
    s.nsrcs = 2;
    s.narrow = rdFloat16;
    s.dst = wide.data();
    s.count = count;
    ASSERT_EQ(kernels::cpu::wideSum(s, optionsFor(isa, 1)), rdSuccess);
    EXPECT_EQ(wide[5], 120000.0f) << name;
    s.narrow_out = true;
    s.dst = out.data();
    ASSERT_EQ(kernels::cpu::wideSum(s, optionsFor(isa, 1)), rdSuccess);
    EXPECT_EQ(kernels::halfToFloat(out[5]), inf) << name;
  }
}

TEST(WideSum, BadArgumentsAreRefusedWithAReason) {
  std::vector<float> acc(64);
  std::vector<uint16_t> narrow_buf(64);
  const void* one[] = {narrow_buf.data()};
  WideSumArgs a;
  a.count = 64;
  a.dst = acc.data();
  EXPECT_EQ(kernels::cpu::wideSum(a), rdInvalidArgument);  // no acc, no sources
  EXPECT_NE(lastError().find("nothing to sum"), std::string::npos) << lastError();
  a.srcs = one;
  a.nsrcs = 1;
  a.narrow = rdFloat32;
  EXPECT_EQ(kernels::cpu::wideSum(a), rdInvalidArgument);
  EXPECT_NE(lastError().find("not a narrow wire type"), std::string::npos) << lastError();
  a.narrow = rdBfloat16;
  a.dst = nullptr;
  EXPECT_EQ(kernels::cpu::wideSum(a), rdInvalidArgument);
  // float32 destination starting inside the accumulator.
  a.acc = acc.data();
  a.dst = acc.data() + 1;
  a.count = 32;
  EXPECT_EQ(kernels::cpu::wideSum(a), rdInvalidArgument);
  EXPECT_NE(lastError().find("partially overlaps the accumulator"), std::string::npos);
  a.dst = acc.data();  // in place: allowed
  EXPECT_EQ(kernels::cpu::wideSum(a), rdSuccess) << lastError();
}

}  // namespace
}  // namespace rd::test
