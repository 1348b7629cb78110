// SPDX-License-Identifier: BSD-3-Clause
// CUDA kernels against the CPU kernels (scalar ISA), bit for bit; NaN matches NaN whatever its
// payload. Every dtype x op x count x source count, the three memory paths (16-byte vectors
// with a head and a tail, element loads, byte loads), counts large enough for the unrolled
// loop, aliasing, avg options, NaN/Inf, half rounding, streams and the error paths. Tests that
// need a GPU skip without one; argument errors are checked on every machine.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"
#include "cpu/cpu_reduce.h"
#include "cuda/cuda_reduce.h"
#include "reference_reduce.h"
#include "test_data.h"

namespace rd::test {
namespace {

using kernels::ReduceArgs;

constexpr size_t kGuard = 64;  // bytes around every destination that must stay untouched

// Skips a test that needs a GPU; describeDevices() says why there is none ("no CUDA device (..)").
#define REQUIRE_DEVICE()                                                                     \
  do {                                                                                       \
    if (kernels::cuda::deviceCount() == 0) GTEST_SKIP() << kernels::cuda::describeDevices(); \
  } while (0)

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call << ": "

// One device allocation, freed on scope exit.
class DeviceMem {
 public:
  explicit DeviceMem(size_t bytes) {
    if (cudaMalloc(&ptr_, bytes) != cudaSuccess) ptr_ = nullptr;
  }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
  ~DeviceMem() { cudaFree(ptr_); }
  bool ok() const { return ptr_ != nullptr; }
  unsigned char* at(size_t offset) const { return static_cast<unsigned char*>(ptr_) + offset; }

 private:
  void* ptr_ = nullptr;
};

// Sources on the host and the same bytes on the device, source s at byte offset offsets[s].
struct Inputs {
  rdDataType_t dtype;
  size_t capacity;  // elements per source
  std::vector<std::vector<unsigned char>> host;
  std::vector<std::unique_ptr<DeviceMem>> dev;
  std::vector<size_t> offsets;

  Inputs(rdDataType_t t, int n, size_t elements, std::vector<size_t> offs = {})
      : dtype(t), capacity(elements), offsets(std::move(offs)) {
    offsets.resize(static_cast<size_t>(n), offsets.empty() ? 0 : offsets.back());
    const size_t bytes = capacity * rdDataTypeSize(dtype);
    for (int s = 0; s < n; ++s) {
      host.emplace_back(bytes);
      dev.push_back(std::make_unique<DeviceMem>(bytes + kGuard));
    }
  }
  void fill(uint64_t seed) {
    for (size_t s = 0; s < host.size(); ++s) fillRandom(host[s].data(), capacity, dtype, seed + s);
  }
  // Copies the host sources to the device; records a failure and returns false if CUDA fails.
  bool upload() const {
    for (size_t s = 0; s < host.size(); ++s) {
      if (!dev[s]->ok() || cudaMemcpy(dev[s]->at(offsets[s]), host[s].data(), host[s].size(),
                                      cudaMemcpyHostToDevice) != cudaSuccess) {
        ADD_FAILURE() << "upload of source " << s << " failed";
        return false;
      }
    }
    return true;
  }
  std::vector<const void*> hostPtrs(int n) const {
    std::vector<const void*> p;
    for (int s = 0; s < n; ++s) p.push_back(host[static_cast<size_t>(s) % host.size()].data());
    return p;
  }
  // n may exceed the number of sources: pointers then repeat (a source may appear twice).
  std::vector<const void*> devPtrs(int n) const {
    std::vector<const void*> p;
    for (int s = 0; s < n; ++s) {
      const size_t i = static_cast<size_t>(s) % host.size();
      p.push_back(dev[i]->at(offsets[i]));
    }
    return p;
  }
};

struct Case {
  size_t count = 0;
  int nsrcs = 1;
  rdRedOp_t op = rdSum;
  size_t dst_offset = 0;     // bytes past a 256-byte aligned address
  int alias = -1;            // >= 0: dst is this source (it is overwritten; upload again)
  uint64_t avg_divisor = 0;  // ReduceArgs::avg_divisor
  bool finalize_avg = true;
  cudaStream_t stream = nullptr;
};

// Reduces count elements of the first c.nsrcs inputs on the GPU, runs the scalar CPU kernel on
// the host copies, compares every element and checks the guard bytes around the destination.
void expectMatchesCpu(const Inputs& in, const Case& c, const std::string& what) {
  const size_t esize = rdDataTypeSize(in.dtype), bytes = c.count * esize;
  const std::vector<const void*> dev_srcs = in.devPtrs(c.nsrcs), host_srcs = in.hostPtrs(c.nsrcs);
  const size_t lead = 256 + c.dst_offset;  // guard bytes before the destination
  DeviceMem dst_mem(lead + bytes + kGuard);
  ASSERT_TRUE(dst_mem.ok());
  ASSERT_CUDA(cudaMemset(dst_mem.at(0), 0xAB, lead + bytes + kGuard));
  void* dst = dst_mem.at(lead);
  if (c.alias >= 0) dst = const_cast<void*>(dev_srcs[static_cast<size_t>(c.alias)]);

  ReduceArgs args;
  args.srcs = dev_srcs.data();
  args.nsrcs = c.nsrcs;
  args.dst = dst;
  args.count = c.count;
  args.dtype = in.dtype;
  args.op = c.op;
  args.avg_divisor = c.avg_divisor;
  args.finalize_avg = c.finalize_avg;
  ASSERT_EQ(kernels::cuda::reduce(args, c.stream), rdSuccess) << what << ": " << lastError();
  ASSERT_CUDA(c.stream ? cudaStreamSynchronize(c.stream) : cudaDeviceSynchronize()) << what;

  std::vector<unsigned char> got(lead + bytes + kGuard), want(bytes + 1);
  if (c.alias >= 0) {
    ASSERT_CUDA(cudaMemcpy(got.data() + lead, dst, bytes, cudaMemcpyDeviceToHost));
  } else {
    ASSERT_CUDA(cudaMemcpy(got.data(), dst_mem.at(0), got.size(), cudaMemcpyDeviceToHost));
    for (size_t b = 0; b < lead; ++b) ASSERT_EQ(got[b], 0xAB) << what << ": wrote before dst";
    for (size_t b = 0; b < kGuard; ++b) {
      ASSERT_EQ(got[lead + bytes + b], 0xAB) << what << ": wrote past the end";
    }
  }
  const unsigned char* result = got.data() + lead;

  kernels::cpu::Options scalar;
  scalar.isa = kernels::cpu::Isa::kScalar;
  scalar.threads = 1;
  scalar.stream_bytes = 0;
  ReduceArgs ref = args;
  ref.srcs = host_srcs.data();
  ref.dst = want.data();
  ASSERT_EQ(kernels::cpu::reduce(ref, scalar), rdSuccess) << what << ": " << lastError();

  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < c.count; ++i) {
    if (!sameElement(result, want.data(), i, in.dtype) && wrong++ == 0) first = i;
  }
  EXPECT_EQ(wrong, 0u) << what << ": first wrong element " << first << " got "
                       << getAsDouble(result, first, in.dtype) << " want "
                       << getAsDouble(want.data(), first, in.dtype);
}

class CudaKernel : public ::testing::TestWithParam<rdDataType_t> {
 protected:
  void SetUp() override { REQUIRE_DEVICE(); }
};

TEST_P(CudaKernel, EveryOpCountAndSourceCountMatchesCpu) {
  const rdDataType_t dtype = GetParam();
  Inputs pool(dtype, kMaxSources, kMaxCount);
  pool.fill(1000 * static_cast<uint64_t>(dtype) + 1);
  ASSERT_TRUE(pool.upload());
  for (size_t count : kCounts) {  // prefixes of the same sources
    for (int n : kSourceCounts) {
      for (rdRedOp_t op : kAllOps) {
        Case c;
        c.count = count;
        c.nsrcs = n;
        c.op = op;
        expectMatchesCpu(pool, c, describe(dtype, op, count, n));
        if (HasFailure()) return;
      }
    }
  }
}

// Above one wave of threads per unit, so that each thread runs the unrolled loop and the
// remainder loop.
TEST_P(CudaKernel, LargeCountsMatchCpu) {
  const rdDataType_t dtype = GetParam();
  const size_t count = (size_t{1} << 24) + 5;
  Inputs in(dtype, 3, count);
  in.fill(500 + static_cast<uint64_t>(dtype));
  ASSERT_TRUE(in.upload());
  for (rdRedOp_t op : {rdSum, rdMax, rdAvg}) {
    Case c;
    c.count = count;
    c.nsrcs = 3;
    c.op = op;
    expectMatchesCpu(in, c, describe(dtype, op, count, 3));
  }
}

// Common offsets take the vector path with a head; mixed offsets that keep elements aligned
// take element loads; odd offsets take byte loads.
TEST_P(CudaKernel, MisalignedPointersMatchCpu) {
  const rdDataType_t dtype = GetParam();
  const size_t esize = rdDataTypeSize(dtype);
  const std::vector<std::vector<size_t>> layouts = {
      {esize, esize, esize, esize},      // same offset: vectors after a head
      {8, 8, 8, 8},                      // same offset, half a vector
      {0, esize, 2 * esize, 3 * esize},  // aligned elements, different vector offsets
      {1, 1, 1, 1},                      // same odd offset
      {0, 1, 2, 3},                      // every pointer different
  };
  for (size_t layout = 0; layout < layouts.size(); ++layout) {
    for (size_t count : {size_t{1}, size_t{2}, size_t{5}, size_t{15}, size_t{17}, size_t{33},
                         size_t{1003}, (size_t{1} << 21) + 7}) {
      Inputs in(dtype, 4, count, layouts[layout]);
      in.fill(77 + count);
      ASSERT_TRUE(in.upload());
      for (rdRedOp_t op : {rdSum, rdMin, rdAvg}) {
        for (size_t dst_offset : {layouts[layout][0], layouts[layout][0] + 16, size_t{5}}) {
          Case c;
          c.count = count;
          c.nsrcs = 4;
          c.op = op;
          c.dst_offset = dst_offset;
          expectMatchesCpu(in, c,
                           describe(dtype, op, count, 4) + " layout " + std::to_string(layout) +
                               " dst offset " + std::to_string(dst_offset));
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST_P(CudaKernel, DestinationMayBeASource) {
  const rdDataType_t dtype = GetParam();
  for (size_t offset : {size_t{0}, rdDataTypeSize(dtype), size_t{3}}) {
    for (size_t count : {size_t{4099}, size_t{1} << 21}) {
      Inputs in(dtype, 3, count, {offset});
      in.fill(5 + count);
      for (int alias : {0, 2}) {
        for (rdRedOp_t op : kAllOps) {
          ASSERT_TRUE(in.upload());  // the previous case overwrote a source
          Case c;
          c.count = count;
          c.nsrcs = 3;
          c.op = op;
          c.alias = alias;
          expectMatchesCpu(in, c,
                           describe(dtype, op, count, 3) + " dst=src" + std::to_string(alias) +
                               " offset " + std::to_string(offset));
        }
      }
    }
  }
}

TEST_P(CudaKernel, AvgDivisorAndDeferredScaling) {
  const rdDataType_t dtype = GetParam();
  const size_t count = 100003;
  Inputs in(dtype, 4, count);
  in.fill(11);
  ASSERT_TRUE(in.upload());
  // 1 << 40 takes the 64-bit integer division; 3 and 10 the 32-bit one.
  for (uint64_t divisor : {uint64_t{1}, uint64_t{3}, uint64_t{10}, uint64_t{1} << 40}) {
    Case c;
    c.count = count;
    c.nsrcs = 4;
    c.op = rdAvg;
    c.avg_divisor = divisor;
    expectMatchesCpu(in, c,
                     describe(dtype, rdAvg, count, 4) + " divisor " + std::to_string(divisor));
  }
  Case deferred;
  deferred.count = count;
  deferred.nsrcs = 4;
  deferred.op = rdAvg;
  deferred.avg_divisor = 7;
  deferred.finalize_avg = false;  // a plain sum: the scaling is a later step's
  expectMatchesCpu(in, deferred, describe(dtype, rdAvg, count, 4) + " finalize_avg=false");
}

// The most sources one call takes, on a stream of its own.
TEST_P(CudaKernel, MaxSourcesOnAStream) {
  const rdDataType_t dtype = GetParam();
  Inputs in(dtype, 13, 70001);
  in.fill(3);
  ASSERT_TRUE(in.upload());
  cudaStream_t stream = nullptr;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (rdRedOp_t op : {rdSum, rdMax, rdAvg}) {
    Case c;
    c.count = 70001;
    c.nsrcs = kernels::cuda::kMaxSources;
    c.op = op;
    c.stream = stream;
    expectMatchesCpu(in, c, describe(dtype, op, c.count, c.nsrcs) + " on a stream");
  }
  cudaStreamDestroy(stream);
}

std::string typeName(const ::testing::TestParamInfo<rdDataType_t>& info) {
  return rdDataTypeName(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CudaKernel, ::testing::ValuesIn(kAllTypes), typeName);

// ---- Special values: NaN, +-Inf, +-0, extremes, subnormals, and every half bit pattern.
class CudaSpecialValues : public ::testing::TestWithParam<rdDataType_t> {
 protected:
  void SetUp() override { REQUIRE_DEVICE(); }
};

TEST_P(CudaSpecialValues, NanInfAndZerosMatchCpu) {
  const rdDataType_t dtype = GetParam();
  const double inf = std::numeric_limits<double>::infinity();
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                             -std::numeric_limits<double>::quiet_NaN(),
                             inf,
                             -inf,
                             0.0,
                             -0.0,
                             1.0,
                             -1.0,
                             0.5,
                             3.0,
                             6.0e4,  // near float16 max: sums overflow to Inf
                             -6.0e4,
                             1.0e38,  // near float32 / bfloat16 max
                             -1.0e38,
                             1.0e300,
                             -1.0e300,
                             6.0e-8,   // float16 subnormal
                             1.0e-40,  // float32 subnormal
                             1.0e-310};
  constexpr size_t kSpecials = sizeof(specials) / sizeof(specials[0]);
  const size_t count = 20011;
  Inputs in(dtype, 8, count);
  uint64_t state = 99;
  for (auto& buf : in.host) {
    for (size_t i = 0; i < count; ++i) {
      putFloat(buf.data(), i, dtype, specials[splitmix64(state) % kSpecials]);
    }
  }
  ASSERT_TRUE(in.upload());
  for (int n : {1, 2, 3, 8}) {
    for (rdRedOp_t op : kAllOps) {
      Case c;
      c.count = count;
      c.nsrcs = n;
      c.op = op;
      expectMatchesCpu(in, c, describe(dtype, op, count, n) + " special values");
    }
  }
}

// Sums and products of every 16-bit pattern with a spread of others: ties, overflow to Inf,
// results in the subnormal range and NaN inputs, rounded by the GPU's conversion and by the CPU.
TEST_P(CudaSpecialValues, EveryHalfPatternRoundsLikeTheCpu) {
  const rdDataType_t dtype = GetParam();
  if (rdDataTypeSize(dtype) != 2) GTEST_SKIP() << "16-bit types only";
  const uint16_t partners[] = {0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0x3C01, 0xBC01,
                               0x3800, 0x4200, 0x7BFF, 0xFBFF, 0x7C00, 0x7E00, 0x1400, 0x5640,
                               0x3F80, 0x3F81, 0xBF80, 0x4040, 0x7F7F, 0x0080, 0x3555, 0xC0A5};
  constexpr size_t kPartners = sizeof(partners) / sizeof(partners[0]);
  const size_t count = 65536 * kPartners;
  Inputs in(dtype, 3, count);
  uint64_t state = 7;
  for (size_t i = 0; i < count; ++i) {
    const auto a = static_cast<uint16_t>(i & 0xFFFF);
    const uint16_t b = partners[i >> 16];
    const auto r = static_cast<uint16_t>(splitmix64(state));
    std::memcpy(in.host[0].data() + 2 * i, &a, 2);
    std::memcpy(in.host[1].data() + 2 * i, &b, 2);
    std::memcpy(in.host[2].data() + 2 * i, &r, 2);
  }
  ASSERT_TRUE(in.upload());
  for (int n : {2, 3}) {
    for (rdRedOp_t op : kAllOps) {
      Case c;
      c.count = count;
      c.nsrcs = n;
      c.op = op;
      expectMatchesCpu(in, c, describe(dtype, op, count, n) + " all patterns");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(FloatingTypes, CudaSpecialValues,
                         ::testing::Values(rdFloat16, rdBfloat16, rdFloat32, rdFloat64), typeName);

// ---- Errors and device queries: argument checks come before any CUDA call, so these run on
// every machine.
// Wire compression on a GPU: the wide sums give the CPU's bits for every form (narrow, widen,
// fold into a float32 sum, the last fold rounded and scaled).
TEST(CudaWideSum, EveryFormMatchesCpu) {
  REQUIRE_DEVICE();
  const size_t count = 100003;
  for (rdDataType_t narrow : {rdBfloat16, rdFloat16}) {
    Inputs in(narrow, 3, count);
    in.fill(5);
    ASSERT_TRUE(in.upload());
    std::vector<float> acc(count);
    fillRandom(acc.data(), count, rdFloat32, 9);
    DeviceMem dacc(count * 4), ddst(count * 4);
    ASSERT_TRUE(dacc.ok() && ddst.ok());
    ASSERT_CUDA(cudaMemcpy(dacc.at(0), acc.data(), count * 4, cudaMemcpyHostToDevice));
    for (int nsrcs : {0, 1, 3}) {
      for (bool with_acc : {false, true}) {
        if (nsrcs == 0 && !with_acc) continue;
        for (bool narrow_out : {false, true}) {
          kernels::WideSumArgs a;
          a.narrow = narrow;
          a.nsrcs = nsrcs;
          a.narrow_out = narrow_out;
          a.count = count;
          a.scale = narrow_out ? 0.25f : 1.0f;
          std::vector<const void*> host_srcs, dev_srcs;
          for (int k = 0; k < nsrcs; ++k) {
            host_srcs.push_back(in.host[k].data());
            dev_srcs.push_back(in.dev[k]->at(0));
          }
          const size_t out_bytes = count * (narrow_out ? 2 : 4);
          std::vector<unsigned char> want(out_bytes), got(out_bytes);
          a.srcs = host_srcs.data();
          a.acc = with_acc ? acc.data() : nullptr;
          a.dst = want.data();
          ASSERT_EQ(kernels::cpu::wideSum(a), rdSuccess) << lastError();
          a.srcs = dev_srcs.data();
          a.acc = with_acc ? reinterpret_cast<const float*>(dacc.at(0)) : nullptr;
          a.dst = ddst.at(0);
          ASSERT_EQ(kernels::cuda::wideSum(a, nullptr), rdSuccess) << lastError();
          ASSERT_CUDA(cudaMemcpy(got.data(), ddst.at(0), out_bytes, cudaMemcpyDeviceToHost));
          EXPECT_EQ(std::memcmp(want.data(), got.data(), out_bytes), 0)
              << rdDataTypeName(narrow) << " nsrcs " << nsrcs << " acc " << with_acc
              << " narrow_out " << narrow_out;
        }
      }
    }
  }
}

TEST(CudaKernelErrors, BadArgumentsAreRejected) {
  const auto fake = reinterpret_cast<const void*>(uintptr_t{1} << 20);
  std::vector<const void*> many(kernels::cuda::kMaxSources + 1, fake);
  ReduceArgs args;
  args.srcs = many.data();
  args.nsrcs = static_cast<int>(many.size());
  args.dst = reinterpret_cast<void*>(uintptr_t{1} << 30);
  args.count = 4;
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdUnsupported);
  EXPECT_NE(lastError().find("at most 128"), std::string::npos) << lastError();

  args.nsrcs = 0;
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdInvalidArgument);
  args.nsrcs = 1;
  args.srcs = nullptr;
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdInvalidArgument);
  args.srcs = many.data();
  args.dst = nullptr;
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdInvalidArgument);
  const void* null_src[] = {fake, nullptr};
  args.srcs = null_src;
  args.nsrcs = 2;
  args.dst = reinterpret_cast<void*>(uintptr_t{1} << 30);
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdInvalidArgument);
  // dst overlapping a source partially (one element in) is refused; exactly equal is fine.
  args.srcs = many.data();
  args.nsrcs = 1;
  args.dst = reinterpret_cast<void*>((uintptr_t{1} << 20) + 4);
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdInvalidArgument);
  args.dst = reinterpret_cast<void*>(uintptr_t{1} << 30);
  args.dtype = rdNumDataTypes;
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdInvalidArgument);
  args.dtype = rdFloat32;
  args.op = rdNumRedOps;
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdInvalidArgument);
  // count 0 does nothing, even with pointers no device could read.
  args.op = rdSum;
  args.count = 0;
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdSuccess);
}

TEST(CudaKernelErrors, WithoutADeviceReduceReportsACudaError) {
  if (kernels::cuda::deviceCount() != 0) GTEST_SKIP() << "a CUDA device is present";
  const void* srcs[] = {reinterpret_cast<const void*>(uintptr_t{1} << 20)};
  ReduceArgs args;
  args.srcs = srcs;
  args.nsrcs = 1;
  args.dst = reinterpret_cast<void*>(uintptr_t{1} << 30);
  args.count = 4;
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdCudaError);
  EXPECT_NE(lastError().find("CUDA reduce: "), std::string::npos) << lastError();
  std::printf("reported: %s\n", lastError().c_str());
  EXPECT_EQ(kernels::cuda::deviceCount(), 0);  // and nothing sticky was left behind
}

TEST(CudaDevices, DescribeNeverFails) {
  const std::string text = kernels::cuda::describeDevices();
  EXPECT_FALSE(text.empty());
  if (kernels::cuda::deviceCount() == 0) {
    EXPECT_EQ(text.rfind("no CUDA device (", 0), 0u) << text;
  } else {
    EXPECT_EQ(text.rfind("0: ", 0), 0u) << text;
    EXPECT_NE(text.find(", sm_"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace rd::test
