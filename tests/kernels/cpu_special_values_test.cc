// SPDX-License-Identifier: BSD-3-Clause
// NaN / Inf behaviour, integer wrap-around, argument errors, and the float16 / bfloat16
// conversions checked against the compiler's own _Float16 and hand-worked bfloat16 cases.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/status.h"
#include "cpu/cpu_reduce.h"
#include "reference_reduce.h"
#include "test_data.h"

namespace rd::test {
namespace {

using kernels::ReduceArgs;
using kernels::cpu::Isa;
using kernels::cpu::Options;

const Isa kIsas[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512};
const rdDataType_t kFloatTypes[] = {rdFloat16, rdBfloat16, rdFloat32, rdFloat64};

rdResult_t run(Isa isa, const std::vector<const void*>& srcs, void* dst, size_t count,
               rdDataType_t dtype, rdRedOp_t op) {
  ReduceArgs a;
  a.srcs = srcs.data();
  a.nsrcs = static_cast<int>(srcs.size());
  a.dst = dst;
  a.count = count;
  a.dtype = dtype;
  a.op = op;
  Options o;
  o.isa = isa;
  o.threads = 1;
  return kernels::cpu::reduce(a, o);
}

TEST(CpuKernelSpecialValues, NanPropagatesThroughEveryOperatorFromAnySource) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const size_t count = 67;  // vectors plus a tail
  for (Isa isa : kIsas) {
    if (!kernels::cpu::isaSupported(isa)) continue;
    for (rdDataType_t dtype : kFloatTypes) {
      for (int nan_src = 0; nan_src < 3; ++nan_src) {
        Buffers b(3, count, dtype);
        for (int s = 0; s < 3; ++s) fillSmallInts(b.src(s), count, dtype, -3, 3, 9 + s);
        for (size_t i = static_cast<size_t>(nan_src); i < count; i += 5)
          putFloat(b.src(nan_src), i, dtype, nan);
        putFloat(b.src(0), 3, dtype, inf);  // inf + (-inf) = NaN for sums; element 3 has no NaN
        putFloat(b.src(1), 3, dtype, -inf);
        for (rdRedOp_t op : kAllOps) {
          ASSERT_EQ(run(isa, b.srcs, b.dst, count, dtype, op), rdSuccess);
          for (size_t i = static_cast<size_t>(nan_src); i < count; i += 5) {
            EXPECT_TRUE(std::isnan(getAsDouble(b.dst, i, dtype)))
                << kernels::cpu::isaName(isa) << " " << rdDataTypeName(dtype) << " "
                << rdRedOpName(op) << " NaN in source " << nan_src << " element " << i;
          }
          if (op == rdSum || op == rdAvg) {
            EXPECT_TRUE(std::isnan(getAsDouble(b.dst, 3, dtype))) << "inf + -inf";
          }
          if (op == rdMax) {
            EXPECT_EQ(getAsDouble(b.dst, 3, dtype), inf);
          }
          if (op == rdMin) {
            EXPECT_EQ(getAsDouble(b.dst, 3, dtype), -inf);
          }
          std::vector<unsigned char> ref(count * rdDataTypeSize(dtype));
          refReduce(b.srcs.data(), 3, ref.data(), count, dtype, op, 3);
          for (size_t i = 0; i < count; ++i)
            ASSERT_TRUE(sameElement(b.dst, ref.data(), i, dtype)) << i;
        }
      }
    }
  }
}

TEST(CpuKernelSpecialValues, HalfTypesAccumulateInFloatAndRoundOnce) {
  // big + 1 + 1: rounding after each step would give big (ties to even); accumulating in
  // float32 and rounding once gives big + 2. float16 has 11 significant bits, bfloat16 8.
  struct Case {
    rdDataType_t dtype;
    double big;
  };
  for (Case c : {Case{rdFloat16, 2048}, Case{rdBfloat16, 256}}) {
    for (Isa isa : kIsas) {
      if (!kernels::cpu::isaSupported(isa)) continue;
      Buffers b(3, 1, c.dtype);
      putFloat(b.src(0), 0, c.dtype, c.big);
      putFloat(b.src(1), 0, c.dtype, 1);
      putFloat(b.src(2), 0, c.dtype, 1);
      ASSERT_EQ(run(isa, b.srcs, b.dst, 1, c.dtype, rdSum), rdSuccess);
      EXPECT_EQ(getAsDouble(b.dst, 0, c.dtype), c.big + 2)
          << kernels::cpu::isaName(isa) << " " << rdDataTypeName(c.dtype);
    }
  }
}

TEST(CpuKernelSpecialValues, IntegerSumAndProdWrapAndAvgTruncates) {
  for (Isa isa : kIsas) {
    if (!kernels::cpu::isaSupported(isa)) continue;
    std::vector<int8_t> a(40, 100), b(40, 100), out(40);
    std::vector<const void*> srcs = {a.data(), b.data()};
    ASSERT_EQ(run(isa, srcs, out.data(), 40, rdInt8, rdSum), rdSuccess);
    EXPECT_EQ(out[39], static_cast<int8_t>(-56));  // 200 wraps to -56
    ASSERT_EQ(run(isa, srcs, out.data(), 40, rdInt8, rdAvg), rdSuccess);
    EXPECT_EQ(out[0], static_cast<int8_t>(-28));  // the wrapped sum, halved toward zero
    ASSERT_EQ(run(isa, srcs, out.data(), 40, rdInt8, rdProd), rdSuccess);
    EXPECT_EQ(out[7], static_cast<int8_t>(16));  // 10000 mod 256 = 16
    std::vector<int64_t> x(9, INT64_MAX), y(9, 1), z(9);
    std::vector<const void*> s64 = {x.data(), y.data()};
    ASSERT_EQ(run(isa, s64, z.data(), 9, rdInt64, rdSum), rdSuccess);
    EXPECT_EQ(z[8], INT64_MIN);
    std::vector<int32_t> m(9, -7), n(9, 2), o(9);
    std::vector<const void*> s32 = {m.data(), n.data()};
    ASSERT_EQ(run(isa, s32, o.data(), 9, rdInt32, rdAvg), rdSuccess);
    EXPECT_EQ(o[0], -2);  // -5 / 2 truncates toward zero
  }
}

TEST(CpuKernelErrors, BadArgumentsAreRejectedWithAMessage) {
  float a[4] = {}, b[4] = {}, out[8] = {};
  std::vector<const void*> srcs = {a, b};
  ReduceArgs args;
  args.srcs = srcs.data();
  args.nsrcs = 2;
  args.dst = out;
  args.count = 4;
  EXPECT_EQ(kernels::cpu::reduce(args), rdSuccess);

  ReduceArgs bad = args;
  bad.nsrcs = 0;
  EXPECT_EQ(kernels::cpu::reduce(bad), rdInvalidArgument);
  EXPECT_NE(lastError().find("at least one source"), std::string::npos) << lastError();
  bad = args;
  bad.dtype = static_cast<rdDataType_t>(12);
  EXPECT_EQ(kernels::cpu::reduce(bad), rdInvalidArgument);
  EXPECT_NE(lastError().find("data type 12"), std::string::npos) << lastError();
  bad = args;
  bad.op = static_cast<rdRedOp_t>(6);
  EXPECT_EQ(kernels::cpu::reduce(bad), rdInvalidArgument);
  bad = args;
  bad.dst = nullptr;
  EXPECT_EQ(kernels::cpu::reduce(bad), rdInvalidArgument);
  bad = args;
  bad.srcs = nullptr;
  EXPECT_EQ(kernels::cpu::reduce(bad), rdInvalidArgument);
  std::vector<const void*> with_null = {a, nullptr};
  bad = args;
  bad.srcs = with_null.data();
  EXPECT_EQ(kernels::cpu::reduce(bad), rdInvalidArgument);
  EXPECT_NE(lastError().find("source 1 is NULL"), std::string::npos) << lastError();
  bad = args;
  bad.dst = out + 2;  // overlaps nothing
  EXPECT_EQ(kernels::cpu::reduce(bad), rdSuccess);
  std::vector<const void*> overlapping = {out, b};
  bad = args;
  bad.srcs = overlapping.data();
  bad.dst = out + 1;  // partial overlap with source 0
  EXPECT_EQ(kernels::cpu::reduce(bad), rdInvalidArgument);
  EXPECT_NE(lastError().find("partially overlaps source 0"), std::string::npos) << lastError();
  bad = args;
  bad.count = 0;
  bad.dst = nullptr;  // nothing to do: no pointer is touched
  EXPECT_EQ(kernels::cpu::reduce(bad), rdSuccess);
}

#if defined(__x86_64__) && defined(__FLT16_MAX__)
TEST(HalfConversion, EveryFloat16ValueWidensLikeTheCompiler) {
  for (uint32_t h = 0; h < 65536; ++h) {
    auto bits = static_cast<uint16_t>(h);
    _Float16 f16;
    std::memcpy(&f16, &bits, 2);
    float want = static_cast<float>(f16), got = kernels::halfToFloat(bits);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
    } else {
      ASSERT_EQ(kernels::floatBits(got), kernels::floatBits(want)) << h;
    }
  }
}

TEST(HalfConversion, FloatsNarrowToFloat16LikeTheCompiler) {
  uint64_t state = 1;
  auto check = [](float f) {
    _Float16 want = static_cast<_Float16>(f);
    uint16_t want_bits;
    std::memcpy(&want_bits, &want, 2);
    uint16_t got = kernels::floatToHalf(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(kernels::halfToFloat(got)));
    } else {
      ASSERT_EQ(got, want_bits) << f << " bits " << std::hex << kernels::floatBits(f);
    }
  };
  // Every float16 value, the midpoints between neighbours (ties) and one ulp either side.
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    float lo = kernels::halfToFloat(static_cast<uint16_t>(h));
    float hi = kernels::halfToFloat(static_cast<uint16_t>(h + 1));
    float mid = lo + (hi - lo) / 2;
    for (float f : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      check(f);
      check(-f);
    }
  }
  for (int i = 0; i < 200000; ++i)
    check(kernels::bitsFloat(static_cast<uint32_t>(splitmix64(state))));
  for (float f : {65504.0f, 65519.99f, 65520.0f, 1e30f, std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::denorm_min(), 0x1.0p-25f, 0x1.000002p-25f}) {
    check(f);
    check(-f);
  }
}
#endif

TEST(HalfConversion, Bfloat16RoundsToNearestEvenAndKeepsNan) {
  EXPECT_EQ(kernels::floatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(kernels::floatToBf16(kernels::bitsFloat(0x3F808000)), 0x3F80);  // tie, even stays
  EXPECT_EQ(kernels::floatToBf16(kernels::bitsFloat(0x3F818000)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(kernels::floatToBf16(kernels::bitsFloat(0x3F808001)), 0x3F81);  // above the tie
  EXPECT_EQ(kernels::floatToBf16(kernels::bitsFloat(0x7F7FFFFF)), 0x7F80);  // max float -> inf
  EXPECT_EQ(kernels::floatToBf16(kernels::bitsFloat(0x00010000)), 0x0001);  // subnormal kept
  EXPECT_EQ(kernels::floatToBf16(kernels::bitsFloat(0xFF800000)), 0xFF80);  // -inf
  uint16_t nan = kernels::floatToBf16(kernels::bitsFloat(0x7F800001));      // payload only low bits
  EXPECT_TRUE(std::isnan(kernels::bf16ToFloat(nan))) << std::hex << nan;
  for (uint32_t b = 0; b < 65536; ++b) {  // every bfloat16 survives a round trip
    float f = kernels::bf16ToFloat(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(kernels::floatToBf16(f), b);
    }
  }
}

}  // namespace
}  // namespace rd::test
