// SPDX-License-Identifier: BSD-3-Clause
// Bytes moved per second of the CUDA reduction kernels next to cudaMemcpy device-to-device,
// both measured in this run on the same device. A reduction of N sources of S bytes moves
// (N + 1) * S bytes (N reads, one write); a copy of S bytes moves 2 * S; the ratio is the share
// of the device's copy bandwidth the kernel reaches.
//
// Every configuration is verified before it is timed: the whole destination against the CPU
// kernels, bit for bit, and again on a sample after timing. A wrong element, a failed call or
// a CUDA error makes the exit status 1; no device prints why and exits 0.
//
//   rd_cuda_kernel_bench [--mib-per-source 256] [--iters 20]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/status.h"
#include "cpu/cpu_reduce.h"
#include "cpu/half_convert.h"
#include "cuda/cuda_reduce.h"

namespace {

using rd::kernels::ReduceArgs;

constexpr int kMaxSources = 16;
constexpr int kWarmup = 3;

bool cudaOk(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "error: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

// Median milliseconds of `iters` runs of fn on `stream`, each timed with its own event pair,
// after kWarmup untimed runs. fn returns false on failure; the median is then negative.
template <class Fn>
double medianMs(cudaStream_t stream, int iters, Fn fn) {
  cudaEvent_t start = nullptr, stop = nullptr;
  if (!cudaOk(cudaEventCreate(&start), "cudaEventCreate") ||
      !cudaOk(cudaEventCreate(&stop), "cudaEventCreate")) {
    return -1;
  }
  std::vector<double> times;
  bool ok = true;
  for (int i = 0; ok && i < kWarmup + iters; ++i) {
    ok = cudaOk(cudaEventRecord(start, stream), "cudaEventRecord") && fn() &&
         cudaOk(cudaEventRecord(stop, stream), "cudaEventRecord") &&
         cudaOk(cudaEventSynchronize(stop), "timed run");
    float ms = 0;
    if (ok) ok = cudaOk(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (ok && i >= kWarmup) times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!ok || times.empty()) return -1;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Random values in [-1, 1) stored as `dtype`, so that sums round in every type. One random block,
// rotated per source, fills the buffer quickly.
void fillSource(std::vector<unsigned char>& buf, rdDataType_t dtype, int source) {
  constexpr size_t kBlock = 1 << 20;
  const size_t esize = rdDataTypeSize(dtype);
  std::vector<unsigned char> block(kBlock);
  uint64_t state = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(source + 1);
  for (size_t i = 0; i < kBlock / esize; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float v = static_cast<float>(state >> 40) * 0x1.0p-23f - 1.0f;
    uint16_t h = 0;
    switch (dtype) {
      case rdFloat32: std::memcpy(&block[i * 4], &v, 4); break;
      case rdFloat16:
        h = rd::kernels::floatToHalf(v);
        std::memcpy(&block[i * 2], &h, 2);
        break;
      default:
        h = rd::kernels::floatToBf16(v);
        std::memcpy(&block[i * 2], &h, 2);
        break;
    }
  }
  std::rotate(
      block.begin(),
      block.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(source) * 4096 % kBlock),
      block.end());
  for (size_t off = 0; off < buf.size(); off += kBlock) {
    std::memcpy(buf.data() + off, block.data(), std::min(kBlock, buf.size() - off));
  }
}

// Elements of got and want that differ (NaN never occurs with these inputs).
size_t countWrong(const unsigned char* got, const unsigned char* want, size_t bytes, size_t esize) {
  size_t wrong = 0;
  for (size_t i = 0; i < bytes; i += esize) wrong += std::memcmp(got + i, want + i, esize) != 0;
  return wrong;
}

struct Row {
  rdDataType_t dtype;
  int n;
  double ms;
  size_t wrong;
};

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 256;
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mib-per-source" && i + 1 < argc) {
      mib = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--iters" && i + 1 < argc) {
      iters = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--mib-per-source 256] [--iters 20]\n", argv[0]);
      return 2;
    }
  }
  if (mib == 0 || iters < 1) {
    std::fprintf(stderr, "--mib-per-source and --iters must be positive\n");
    return 2;
  }
  if (rd::kernels::cuda::deviceCount() == 0) {
    std::printf("no CUDA device: nothing to measure (%s)\n",
                rd::kernels::cuda::describeDevices().c_str());
    return 0;
  }
  std::printf("devices:\n%s\n", rd::kernels::cuda::describeDevices().c_str());
  std::printf("%zu MiB per source, median of %d timed runs after %d warm-up runs\n\n", mib, iters,
              kWarmup);

  const size_t bytes = mib << 20;
  cudaStream_t stream = nullptr;
  std::vector<void*> dev(kMaxSources, nullptr);
  void* dst = nullptr;
  bool ok = cudaOk(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  for (auto& p : dev) ok = ok && cudaOk(cudaMalloc(&p, bytes), "cudaMalloc source");
  ok = ok && cudaOk(cudaMalloc(&dst, bytes), "cudaMalloc destination");
  if (!ok) return 1;

  // The copy bandwidth this device reaches, on the same buffers and stream.
  const double copy_ms = medianMs(stream, iters, [&] {
    return cudaOk(cudaMemcpyAsync(dst, dev[0], bytes, cudaMemcpyDeviceToDevice, stream),
                  "cudaMemcpyAsync");
  });
  if (copy_ms <= 0) return 1;
  const double copy_gbs = 2.0 * static_cast<double>(bytes) / (copy_ms * 1e6);

  std::vector<std::vector<unsigned char>> host(kMaxSources, std::vector<unsigned char>(bytes));
  std::vector<unsigned char> got(bytes), want(bytes);
  std::vector<Row> rows;
  size_t total_wrong = 0;
  for (rdDataType_t dtype : {rdFloat32, rdBfloat16, rdFloat16}) {
    const size_t esize = rdDataTypeSize(dtype);
    for (int s = 0; s < kMaxSources; ++s) {
      fillSource(host[static_cast<size_t>(s)], dtype, s);
      if (!cudaOk(cudaMemcpy(dev[static_cast<size_t>(s)], host[static_cast<size_t>(s)].data(),
                             bytes, cudaMemcpyHostToDevice),
                  "upload")) {
        return 1;
      }
    }
    for (int n : {2, 4, 8, 16}) {
      std::vector<const void*> dev_srcs(dev.begin(), dev.begin() + n), host_srcs;
      for (int s = 0; s < n; ++s) host_srcs.push_back(host[static_cast<size_t>(s)].data());
      ReduceArgs args;
      args.srcs = dev_srcs.data();
      args.nsrcs = n;
      args.dst = dst;
      args.count = bytes / esize;
      args.dtype = dtype;
      args.op = rdSum;
      auto run = [&] {
        if (rd::kernels::cuda::reduce(args, stream) == rdSuccess) return true;
        std::fprintf(stderr, "error: reduce: %s\n", rd::lastError().c_str());
        return false;
      };
      // Verify the whole result before timing.
      if (!cudaOk(cudaMemsetAsync(dst, 0xFF, bytes, stream), "memset") || !run() ||
          !cudaOk(cudaStreamSynchronize(stream), "reduce") ||
          !cudaOk(cudaMemcpy(got.data(), dst, bytes, cudaMemcpyDeviceToHost), "download")) {
        return 1;
      }
      ReduceArgs ref = args;
      ref.srcs = host_srcs.data();
      ref.dst = want.data();
      if (rd::kernels::cpu::reduce(ref) != rdSuccess) {
        std::fprintf(stderr, "error: CPU reduce: %s\n", rd::lastError().c_str());
        return 1;
      }
      size_t wrong = countWrong(got.data(), want.data(), bytes, esize);
      const double ms = medianMs(stream, iters, run);
      if (ms <= 0) return 1;
      // The timed runs wrote the same result: check the first and last MiB again.
      const size_t sample = std::min<size_t>(bytes, 1 << 20);
      if (!cudaOk(cudaMemcpy(got.data(), dst, sample, cudaMemcpyDeviceToHost), "download") ||
          !cudaOk(cudaMemcpy(got.data() + bytes - sample,
                             static_cast<unsigned char*>(dst) + bytes - sample, sample,
                             cudaMemcpyDeviceToHost),
                  "download")) {
        return 1;
      }
      wrong += countWrong(got.data(), want.data(), sample, esize);
      wrong += countWrong(got.data() + bytes - sample, want.data() + bytes - sample, sample, esize);
      total_wrong += wrong;
      rows.push_back({dtype, n, ms, wrong});
    }
  }

  std::printf("%-10s %3s %10s %14s %12s %8s\n", "kernel", "N", "time(ms)", "moved(GB/s)",
              "vs memcpy", "#wrong");
  std::printf("%-10s %3s %10.3f %14.1f %12s %8s\n", "memcpy", "-", copy_ms, copy_gbs, "1.00", "-");
  for (const Row& r : rows) {
    const double gbs = (r.n + 1.0) * static_cast<double>(bytes) / (r.ms * 1e6);
    std::printf("%-10s %3d %10.3f %14.1f %12.2f %8zu\n", rdDataTypeName(r.dtype), r.n, r.ms, gbs,
                gbs / copy_gbs, r.wrong);
  }
  std::printf("\n%s: %zu wrong elements in %zu configurations\n",
              total_wrong == 0 ? "VERIFIED" : "FAILED", total_wrong, rows.size());
  for (void* p : dev) cudaFree(p);
  cudaFree(dst);
  cudaStreamDestroy(stream);
  return total_wrong == 0 ? 0 : 1;
}
