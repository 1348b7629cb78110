// Bytes moved per second of the CUDA reduction kernels next to cudaMemcpy device-to-device,
// measured in the same run on the same buffers. A reduction of N sources of S bytes moves
// (N + 1) * S bytes; a copy of S bytes moves 2 * S. Every timed configuration is verified
// first against the CPU kernels, element by element; a wrong element fails the run.
//
//   rd_cuda_kernel_bench [--mib-per-source 256] [--iters 20]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/cpu_reduce.h"
#include "cuda/cuda_reduce.h"

namespace {

using rd::kernels::ReduceArgs;

#define CUDA_OK(call)                                                                            \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

// Median time in ms of `iters` runs of fn, timed with events on the default stream.
template <class Fn>
float medianMs(int iters, Fn fn) {
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  for (int w = 0; w < 3; ++w) fn();
  std::vector<float> times;
  for (int i = 0; i < iters; ++i) {
    CUDA_OK(cudaEventRecord(start));
    fn();
    CUDA_OK(cudaEventRecord(stop));
    CUDA_OK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Small integers (-7..7) as the element type: every sum is exact in every type.
void fillHost(std::vector<unsigned char>& buf, rdDataType_t dtype, int seed) {
  const size_t esize = rdDataTypeSize(dtype), count = buf.size() / esize;
  for (size_t i = 0; i < count; ++i) {
    float v =
        static_cast<float>(static_cast<int>((i * 7 + static_cast<size_t>(seed) * 3) % 15) - 7);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    if (dtype == rdFloat32) {
      std::memcpy(&buf[i * 4], &v, 4);
    } else if (dtype == rdBfloat16) {
      auto b = static_cast<uint16_t>(bits >> 16);  // exact for small integers
      std::memcpy(&buf[i * 2], &b, 2);
    } else {  // float16 of a small integer: exponent re-biased, mantissa truncated exactly
      uint16_t h = 0;
      if (v != 0) {
        uint32_t exp = ((bits >> 23) & 0xFF) - 127 + 15;
        h = static_cast<uint16_t>(((bits >> 16) & 0x8000) | (exp << 10) | ((bits >> 13) & 0x3FF));
      }
      std::memcpy(&buf[i * 2], &h, 2);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 256;
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mib-per-source") == 0)
      mib = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--iters") == 0) iters = std::atoi(argv[i + 1]);
  }
  if (rd::kernels::cuda::deviceCount() == 0) {
    std::printf("no CUDA device: %s; nothing to measure\n",
                rd::kernels::cuda::describeDevices().c_str());
    return 0;
  }
  std::printf("device %s\n", rd::kernels::cuda::describeDevices().c_str());
  const size_t bytes = mib << 20;
  constexpr int kMaxN = 16;
  std::vector<void*> dev(kMaxN);
  for (auto& p : dev) CUDA_OK(cudaMalloc(&p, bytes));
  void* dst = nullptr;
  CUDA_OK(cudaMalloc(&dst, bytes));

  const float copy_ms =
      medianMs(iters, [&] { CUDA_OK(cudaMemcpy(dst, dev[0], bytes, cudaMemcpyDeviceToDevice)); });
  const double copy_gbps = 2.0 * static_cast<double>(bytes) / (copy_ms * 1e6);
  std::printf("cudaMemcpy D2D %zu MiB: %.3f ms, %.1f GB/s moved\n\n", mib, copy_ms, copy_gbps);
  std::printf("%-9s %3s %10s %14s %8s %8s\n", "dtype", "N", "time(ms)", "moved(GB/s)", "ratio",
              "#wrong");

  size_t total_wrong = 0, below_bar = 0;
  std::vector<std::vector<unsigned char>> host(kMaxN, std::vector<unsigned char>(bytes));
  std::vector<unsigned char> got(bytes), want(bytes);
  for (rdDataType_t dtype : {rdFloat32, rdBfloat16, rdFloat16}) {
    for (int s = 0; s < kMaxN; ++s) {
      fillHost(host[s], dtype, s);
      CUDA_OK(cudaMemcpy(dev[s], host[s].data(), bytes, cudaMemcpyHostToDevice));
    }
    for (int n : {2, 4, 8, 16}) {
      std::vector<const void*> ptrs(dev.begin(), dev.begin() + n), host_ptrs;
      for (int s = 0; s < n; ++s) host_ptrs.push_back(host[s].data());
      ReduceArgs args;
      args.srcs = ptrs.data();
      args.nsrcs = n;
      args.dst = dst;
      args.count = bytes / rdDataTypeSize(dtype);
      args.dtype = dtype;
      if (rd::kernels::cuda::reduce(args, nullptr) != rdSuccess) {
        std::fprintf(stderr, "reduce failed: %s\n", rdGetLastError());
        return 1;
      }
      CUDA_OK(cudaMemcpy(got.data(), dst, bytes, cudaMemcpyDeviceToHost));
      ReduceArgs ref = args;
      ref.srcs = host_ptrs.data();
      ref.dst = want.data();
      rd::kernels::cpu::reduce(ref);
      size_t wrong = 0;
      const size_t esize = rdDataTypeSize(dtype);
      for (size_t i = 0; i < args.count; ++i)
        wrong += std::memcmp(&got[i * esize], &want[i * esize], esize) != 0;
      total_wrong += wrong;
      const float ms = medianMs(iters, [&] { rd::kernels::cuda::reduce(args, nullptr); });
      const double gbps = (n + 1.0) * static_cast<double>(bytes) / (ms * 1e6);
      const double ratio = gbps / copy_gbps;
      below_bar += ratio < 0.8;
      std::printf("%-9s %3d %10.3f %14.1f %8.2f %8zu\n", rdDataTypeName(dtype), n, ms, gbps, ratio,
                  wrong);
    }
  }
  std::printf("\n%s: %zu wrong elements; %zu configurations below 80%% of cudaMemcpy\n",
              total_wrong == 0 ? "VERIFIED" : "FAILED", total_wrong, below_bar);
  for (auto* p : dev) cudaFree(p);
  cudaFree(dst);
  return total_wrong == 0 ? 0 : 1;
}
