// SPDX-License-Identifier: BSD-3-Clause
// CPU kernels against the scalar reference: every dtype x op x count x source count x ISA,
// plus exact sums, NaN/Inf, aliasing, misaligned buffers, threads, streaming stores and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "common/status.h"
#include "cpu/cpu_reduce.h"
#include "reference_reduce.h"
#include "test_data.h"

// Readable ISA names in test listings (dtype names come from test_data.h).
namespace rd::kernels::cpu {
void PrintTo(Isa isa, std::ostream* os) {
  *os << isaName(isa);
}
}  // namespace rd::kernels::cpu

namespace rd::test {
namespace {

using kernels::ReduceArgs;
using kernels::cpu::Isa;
using kernels::cpu::Options;

constexpr size_t kGuard = 16;  // elements after count that must stay untouched

Options singleThread(Isa isa) {
  Options o;
  o.isa = isa;
  o.threads = 1;
  o.stream_bytes = 0;
  return o;
}

// Random sources for one dtype, generated once per process and shared by the tests.
struct Pool {
  std::vector<std::vector<unsigned char>> data;
  std::vector<const void*> ptrs;
};

const Pool& poolFor(rdDataType_t dtype) {
  static std::map<rdDataType_t, std::unique_ptr<Pool>> pools;
  auto& pool = pools[dtype];
  if (!pool) {
    pool = std::make_unique<Pool>();
    for (int s = 0; s < kMaxSources; ++s) {
      pool->data.emplace_back(kMaxCount * rdDataTypeSize(dtype));
      fillRandom(pool->data.back().data(), kMaxCount, dtype, 1000 * dtype + s + 1);
      pool->ptrs.push_back(pool->data.back().data());
    }
  }
  return *pool;
}

std::string describe(Isa isa, rdDataType_t t, rdRedOp_t op, size_t count, int n) {
  return std::string(kernels::cpu::isaName(isa)) + " " + test::describe(t, op, count, n);
}

// Runs the kernel and the reference on the same inputs and compares every element and the
// guard elements after the end.
void expectMatchesReference(const std::vector<const void*>& srcs, size_t count, rdDataType_t dtype,
                            rdRedOp_t op, const Options& options, const std::string& what) {
  const size_t esize = rdDataTypeSize(dtype);
  std::vector<unsigned char> out((count + kGuard) * esize, 0xAB), ref(count * esize + 1);
  ReduceArgs args;
  args.srcs = srcs.data();
  args.nsrcs = static_cast<int>(srcs.size());
  args.dst = out.data();
  args.count = count;
  args.dtype = dtype;
  args.op = op;
  ASSERT_EQ(kernels::cpu::reduce(args, options), rdSuccess) << what << ": " << lastError();
  refReduce(srcs.data(), args.nsrcs, ref.data(), count, dtype, op, kernels::avgDivisor(args));
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!sameElement(out.data(), ref.data(), i, dtype)) {
      if (wrong++ == 0) first = i;
    }
  }
  EXPECT_EQ(wrong, 0u) << what << ": first wrong element " << first << " got "
                       << getAsDouble(out.data(), first, dtype) << " want "
                       << getAsDouble(ref.data(), first, dtype);
  for (size_t b = count * esize; b < out.size(); ++b) {
    ASSERT_EQ(out[b], 0xAB) << what << ": wrote past the end at byte " << b;
  }
}

class CpuKernelMatrix : public ::testing::TestWithParam<std::tuple<Isa, rdDataType_t>> {
 protected:
  void SetUp() override {
    if (!kernels::cpu::isaSupported(std::get<0>(GetParam()))) {
      GTEST_SKIP() << kernels::cpu::isaName(std::get<0>(GetParam()))
                   << " not supported by this CPU";
    }
  }
};

TEST_P(CpuKernelMatrix, EveryOpCountAndSourceCountMatchesReference) {
  const auto [isa, dtype] = GetParam();
  const Pool& pool = poolFor(dtype);
  for (rdRedOp_t op : kAllOps) {
    for (size_t count : kCounts) {
      for (int n : kSourceCounts) {
        std::vector<const void*> srcs(pool.ptrs.begin(), pool.ptrs.begin() + n);
        expectMatchesReference(srcs, count, dtype, op, singleThread(isa),
                               describe(isa, dtype, op, count, n));
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(CpuKernelMatrix, ThreadsAndStreamingStoresGiveTheSameResult) {
  const auto [isa, dtype] = GetParam();
  const Pool& pool = poolFor(dtype);
  std::vector<const void*> srcs(pool.ptrs.begin(), pool.ptrs.begin() + 3);
  for (int threads : {2, 3, 8}) {
    for (size_t stream_bytes : {size_t{0}, size_t{1}}) {
      Options o = singleThread(isa);
      o.threads = threads;
      o.split_bytes = 4096;
      o.stream_bytes = stream_bytes;
      for (rdRedOp_t op : {rdSum, rdMax, rdAvg}) {
        expectMatchesReference(srcs, kMaxCount, dtype, op, o,
                               describe(isa, dtype, op, kMaxCount, 3) +
                                   " threads=" + std::to_string(threads) +
                                   " stream=" + std::to_string(stream_bytes));
      }
    }
  }
}

TEST_P(CpuKernelMatrix, MisalignedBuffersWork) {
  const auto [isa, dtype] = GetParam();
  for (size_t offset : {1, 2, 3, 5, 7}) {
    for (size_t count : {size_t{1003}, size_t{70001}}) {
      Buffers b(4, count, dtype, offset);
      for (int s = 0; s < 4; ++s) fillRandom(b.src(s), count, dtype, 77 + s);
      Options o = singleThread(isa);
      o.stream_bytes = 1;  // streaming stores must cope with the alignment too
      o.threads = 2;
      o.split_bytes = 4096;
      for (rdRedOp_t op : {rdSum, rdMin, rdAvg}) {
        expectMatchesReference(
            b.srcs, count, dtype, op, o,
            describe(isa, dtype, op, count, 4) + " offset=" + std::to_string(offset));
      }
    }
  }
}

TEST_P(CpuKernelMatrix, DestinationMayAliasASource) {
  const auto [isa, dtype] = GetParam();
  const size_t count = 4099;
  for (int alias : {0, 2}) {
    for (rdRedOp_t op : kAllOps) {
      Buffers b(3, count, dtype);
      for (int s = 0; s < 3; ++s) fillRandom(b.src(s), count, dtype, 5 + s);
      std::vector<unsigned char> ref(count * rdDataTypeSize(dtype));
      refReduce(b.srcs.data(), 3, ref.data(), count, dtype, op, 3);
      ReduceArgs args;
      args.srcs = b.srcs.data();
      args.nsrcs = 3;
      args.dst = b.src(alias);
      args.count = count;
      args.dtype = dtype;
      args.op = op;
      ASSERT_EQ(kernels::cpu::reduce(args, singleThread(isa)), rdSuccess) << lastError();
      for (size_t i = 0; i < count; ++i) {
        ASSERT_TRUE(sameElement(b.src(alias), ref.data(), i, dtype))
            << describe(isa, dtype, op, count, 3) << " dst=src" << alias << " element " << i;
      }
    }
  }
}

TEST_P(CpuKernelMatrix, AvgDivisorAndDeferredScaling) {
  const auto [isa, dtype] = GetParam();
  const size_t count = 1000;
  Buffers b(2, count, dtype);
  for (int s = 0; s < 2; ++s) fillRandom(b.src(s), count, dtype, 11 + s);
  std::vector<unsigned char> ref(count * rdDataTypeSize(dtype));
  ReduceArgs args;
  args.srcs = b.srcs.data();
  args.nsrcs = 2;
  args.dst = b.dst;
  args.count = count;
  args.dtype = dtype;
  args.op = rdAvg;
  args.avg_divisor = 5;  // two partial sums of five contributions
  ASSERT_EQ(kernels::cpu::reduce(args, singleThread(isa)), rdSuccess);
  refReduce(b.srcs.data(), 2, ref.data(), count, dtype, rdAvg, 5);
  for (size_t i = 0; i < count; ++i) ASSERT_TRUE(sameElement(b.dst, ref.data(), i, dtype)) << i;
  args.finalize_avg = false;  // avg left as a sum for a later step
  ASSERT_EQ(kernels::cpu::reduce(args, singleThread(isa)), rdSuccess);
  refReduce(b.srcs.data(), 2, ref.data(), count, dtype, rdSum, 0);
  for (size_t i = 0; i < count; ++i) ASSERT_TRUE(sameElement(b.dst, ref.data(), i, dtype)) << i;
}

// Exactly summable inputs checked against sums computed independently of the reference.
TEST_P(CpuKernelMatrix, SmallIntegerInputsGiveExactResults) {
  const auto [isa, dtype] = GetParam();
  const size_t count = 1003;
  const int n = 17;
  Buffers b(n, count, dtype);
  const bool is_unsigned = dtype == rdUint8 || dtype == rdUint32 || dtype == rdUint64;
  for (int s = 0; s < n; ++s) fillSmallInts(b.src(s), count, dtype, is_unsigned ? 0 : -7, 7, 3 + s);
  ReduceArgs args;
  args.srcs = b.srcs.data();
  args.nsrcs = n;
  args.dst = b.dst;
  args.count = count;
  args.dtype = dtype;
  for (rdRedOp_t op : {rdSum, rdMin, rdMax}) {
    args.op = op;
    ASSERT_EQ(kernels::cpu::reduce(args, singleThread(isa)), rdSuccess);
    for (size_t i = 0; i < count; ++i) {
      double want = getAsDouble(b.srcs[0], i, dtype);
      for (int s = 1; s < n; ++s) {
        double v = getAsDouble(b.srcs[static_cast<size_t>(s)], i, dtype);
        want = op == rdSum ? want + v : op == rdMin ? std::min(want, v) : std::max(want, v);
      }
      ASSERT_EQ(getAsDouble(b.dst, i, dtype), want)
          << describe(isa, dtype, op, count, n) << " at " << i;
    }
  }
}

std::string paramName(const ::testing::TestParamInfo<CpuKernelMatrix::ParamType>& info) {
  return std::string(kernels::cpu::isaName(std::get<0>(info.param))) + "_" +
         rdDataTypeName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllIsasAndTypes, CpuKernelMatrix,
                         ::testing::Combine(::testing::Values(Isa::kScalar, Isa::kAvx2,
                                                              Isa::kAvx512),
                                            ::testing::ValuesIn(kAllTypes)),
                         paramName);

}  // namespace
}  // namespace rd::test
