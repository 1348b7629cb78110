// CUDA kernels against the scalar reference, bit for bit (NaN matches NaN): every dtype x op x
// count x source count, misaligned pointers, aliasing, avg options, errors. Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "common/status.h"
#include "cuda/cuda_reduce.h"
#include "reference_reduce.h"
#include "test_data.h"

namespace rd::test {
namespace {

using kernels::ReduceArgs;

class CudaKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kernels::cuda::deviceCount() == 0) {
      GTEST_SKIP() << "no CUDA device: " << kernels::cuda::describeDevices();
    }
  }
};

// Device copies of host buffers, freed on scope exit.
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&ptr, bytes + 64), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(ptr); }
  unsigned char* at(size_t offset) const { return static_cast<unsigned char*>(ptr) + offset; }
};

// Copies the sources to the GPU at `offset` bytes, reduces there and compares with the reference.
void expectMatches(Buffers& host, int n, size_t count, rdDataType_t dtype, rdRedOp_t op,
                   size_t offset, const ReduceArgs& extra, const std::string& what) {
  const size_t bytes = count * rdDataTypeSize(dtype);
  std::vector<DeviceBuffer> dev_srcs;
  dev_srcs.reserve(static_cast<size_t>(n));
  std::vector<const void*> ptrs;
  for (int s = 0; s < n; ++s) {
    dev_srcs.emplace_back(bytes);
    ASSERT_EQ(cudaMemcpy(dev_srcs.back().at(offset), host.srcs[s], bytes, cudaMemcpyHostToDevice),
              cudaSuccess);
    ptrs.push_back(dev_srcs.back().at(offset));
  }
  DeviceBuffer dst(bytes);
  ReduceArgs args = extra;
  args.srcs = ptrs.data();
  args.nsrcs = n;
  args.dst = dst.at(offset);
  args.count = count;
  args.dtype = dtype;
  args.op = op;
  ASSERT_EQ(kernels::cuda::reduce(args, nullptr), rdSuccess) << what << ": " << lastError();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << what;
  std::vector<unsigned char> got(bytes + 1), want(bytes + 1);
  ASSERT_EQ(cudaMemcpy(got.data(), dst.at(offset), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  const uint64_t divisor = op == rdAvg && args.finalize_avg ? kernels::avgDivisor(args) : 0;
  refReduce(host.srcs.data(), n, want.data(), count, dtype, op, divisor);
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!sameElement(got.data(), want.data(), i, dtype) && wrong++ == 0) first = i;
  }
  EXPECT_EQ(wrong, 0u) << what << ": first wrong element " << first << " got "
                       << getAsDouble(got.data(), first, dtype) << " want "
                       << getAsDouble(want.data(), first, dtype);
}

std::string describe(rdDataType_t t, rdRedOp_t op, size_t count, int n) {
  return std::string(rdDataTypeName(t)) + " " + rdRedOpName(op) +
         " count=" + std::to_string(count) + " nsrcs=" + std::to_string(n);
}

TEST_F(CudaKernel, EveryTypeOpCountAndSourceCountMatchesReference) {
  for (rdDataType_t dtype : kAllTypes) {
    for (size_t count :
         {size_t{0}, size_t{1}, size_t{3}, size_t{31}, size_t{1000}, size_t{(1u << 20) + 3}}) {
      for (int n : {1, 2, 3, 8, 17}) {
        Buffers host(n, count, dtype);
        for (int s = 0; s < n; ++s) fillRandom(host.src(s), count, dtype, 31 * dtype + s);
        for (rdRedOp_t op : kAllOps) {
          expectMatches(host, n, count, dtype, op, 0, ReduceArgs{}, describe(dtype, op, count, n));
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST_F(CudaKernel, MisalignedPointersAndAvgOptions) {
  for (rdDataType_t dtype : kAllTypes) {
    const size_t count = 100003;
    Buffers host(4, count, dtype);
    for (int s = 0; s < 4; ++s) fillRandom(host.src(s), count, dtype, 7 + s);
    for (size_t offset : {size_t{8}, size_t{rdDataTypeSize(dtype)}, size_t{1}}) {
      expectMatches(host, 4, count, dtype, rdSum, offset, ReduceArgs{},
                    describe(dtype, rdSum, count, 4) + " offset " + std::to_string(offset));
    }
    ReduceArgs divisor;
    divisor.avg_divisor = 10;
    expectMatches(host, 4, count, dtype, rdAvg, 0, divisor,
                  describe(dtype, rdAvg, count, 4) + " divisor 10");
    ReduceArgs deferred;
    deferred.finalize_avg = false;
    expectMatches(host, 4, count, dtype, rdAvg, 0, deferred,
                  describe(dtype, rdAvg, count, 4) + " deferred");
  }
}

TEST_F(CudaKernel, NanPropagatesAndDestinationMayAliasASource) {
  for (rdDataType_t dtype : {rdFloat16, rdBfloat16, rdFloat32, rdFloat64}) {
    const size_t count = 4099;
    Buffers host(3, count, dtype);
    for (int s = 0; s < 3; ++s) fillRandom(host.src(s), count, dtype, 3 + s);
    for (size_t i = 0; i < count; i += 7)
      putFloat(host.src(1), i, dtype, std::numeric_limits<double>::quiet_NaN());
    for (rdRedOp_t op : kAllOps) {
      expectMatches(host, 3, count, dtype, op, 0, ReduceArgs{},
                    describe(dtype, op, count, 3) + " NaN");
    }
    // In place: dst is source 0 on the device.
    const size_t bytes = count * rdDataTypeSize(dtype);
    DeviceBuffer a(bytes), b(bytes);
    ASSERT_EQ(cudaMemcpy(a.ptr, host.srcs[0], bytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(b.ptr, host.srcs[2], bytes, cudaMemcpyHostToDevice), cudaSuccess);
    const void* ptrs[] = {a.ptr, b.ptr};
    ReduceArgs args;
    args.srcs = ptrs;
    args.nsrcs = 2;
    args.dst = a.ptr;
    args.count = count;
    args.dtype = dtype;
    ASSERT_EQ(kernels::cuda::reduce(args, nullptr), rdSuccess) << lastError();
    std::vector<unsigned char> got(bytes), want(bytes);
    ASSERT_EQ(cudaMemcpy(got.data(), a.ptr, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    const void* host_ptrs[] = {host.srcs[0], host.srcs[2]};
    refReduce(host_ptrs, 2, want.data(), count, dtype, rdSum, 2);
    for (size_t i = 0; i < count; ++i)
      ASSERT_TRUE(sameElement(got.data(), want.data(), i, dtype)) << i;
  }
}

// Argument errors are found before any CUDA call, so these run on every machine.
TEST(CudaKernelErrors, BadArgumentsAreRejected) {
  std::vector<const void*> many(kernels::cuda::kMaxSources + 1, reinterpret_cast<const void*>(64));
  ReduceArgs args;
  args.srcs = many.data();
  args.nsrcs = static_cast<int>(many.size());
  args.dst = reinterpret_cast<void*>(1 << 20);
  args.count = 4;
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdUnsupported);
  EXPECT_NE(lastError().find("at most 128"), std::string::npos) << lastError();
  args.nsrcs = 0;
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdInvalidArgument);
  args.nsrcs = 1;
  args.dst = nullptr;
  EXPECT_EQ(kernels::cuda::reduce(args, nullptr), rdInvalidArgument);
}

TEST(CudaDevices, DescribeNeverFails) {
  std::string text = kernels::cuda::describeDevices();
  EXPECT_FALSE(text.empty());
  if (kernels::cuda::deviceCount() == 0) {
    EXPECT_NE(text.find("no CUDA device"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace rd::test
