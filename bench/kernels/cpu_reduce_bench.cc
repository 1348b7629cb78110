// SPDX-License-Identifier: BSD-3-Clause
// Bytes moved per second of the CPU reduction kernels next to memcpy, in one run.
//
// A reduction of N sources of S bytes moves (N + 1) * S bytes (N reads, one write); memcpy of S
// bytes moves 2 * S. The wire-compression conversions of C elements (float32 to bfloat16 /
// float16 and back) move 6 * C bytes (4 read and 2 written per element, or the reverse). Both are
// measured on the same buffers with the same thread counts, so their ratio is what the kernels
// achieve of the machine's copy bandwidth.
//
//   rd_cpu_kernel_bench --benchmark_format=json > out.json
//   bench/kernels/kernel_report.py out.json      # ratio table
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <vector>

#include "common/thread_pool.h"
#include "cpu/cpu_reduce.h"

namespace {

using rd::kernels::ReduceArgs;
using rd::kernels::cpu::Isa;
using rd::kernels::cpu::Options;

constexpr size_t kBytesPerSource = 64u << 20;
constexpr int kMaxSources = 16;

// Sources and destination allocated and touched once, shared by every benchmark.
struct Buffers {
  std::vector<std::unique_ptr<unsigned char[]>> srcs;
  std::unique_ptr<unsigned char[]> dst;
  Buffers() {
    for (int s = 0; s < kMaxSources; ++s) {
      srcs.emplace_back(new unsigned char[kBytesPerSource]);
      // Small integers in every element type keep sums finite and the data realistic.
      std::memset(srcs.back().get(), 0x3C, kBytesPerSource);
    }
    dst.reset(new unsigned char[kBytesPerSource]);
    std::memset(dst.get(), 0, kBytesPerSource);
  }
};

Buffers& buffers() {
  static Buffers b;
  return b;
}

rd::ThreadPool& copyPool() {
  static rd::ThreadPool pool(7);
  return pool;
}

void BM_Memcpy(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  Buffers& b = buffers();
  const size_t part = kBytesPerSource / static_cast<size_t>(threads);
  for (auto _ : state) {
    copyPool().parallelFor(threads, [&](int t) {
      const size_t off = part * static_cast<size_t>(t);
      std::memcpy(b.dst.get() + off, b.srcs[0].get() + off, part);
    });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * kBytesPerSource);
}

// The timed loop of a kernel benchmark: the configured options with @p threads (returned in
// @p options for the label), @p call once per iteration; false (the run marked skipped) when the
// settings are invalid or a call fails.
template <class Call>
bool timeKernel(benchmark::State& state, int threads, const char* failure, Options* options,
                Call call) {
  if (rd::kernels::cpu::configuredOptions(options) != rdSuccess) {
    state.SkipWithError("invalid LIBREDUCE_* kernel settings");
    return false;
  }
  options->threads = threads;
  for (auto _ : state) {
    if (call(*options) != rdSuccess) {
      state.SkipWithError(failure);
      return false;
    }
    benchmark::ClobberMemory();
  }
  return true;
}

void BM_Reduce(benchmark::State& state) {
  const auto dtype = static_cast<rdDataType_t>(state.range(0));
  const int nsrcs = static_cast<int>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  Buffers& b = buffers();
  std::vector<const void*> srcs;
  for (int s = 0; s < nsrcs; ++s) srcs.push_back(b.srcs[static_cast<size_t>(s)].get());
  ReduceArgs args;
  args.srcs = srcs.data();
  args.nsrcs = nsrcs;
  args.dst = b.dst.get();
  args.count = kBytesPerSource / rdDataTypeSize(dtype);
  args.dtype = dtype;
  args.op = rdSum;
  Options options;
  if (!timeKernel(state, threads, "reduce failed", &options,
                  [&](const Options& o) { return rd::kernels::cpu::reduce(args, o); })) {
    return;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * (nsrcs + 1) *
                          static_cast<int64_t>(kBytesPerSource));
  state.SetLabel(std::string(rdDataTypeName(dtype)) + " sum N=" + std::to_string(nsrcs) + " " +
                 rd::kernels::cpu::isaName(options.isa));
}

// Arguments: direction (0: float32 -> narrow, as a worker sends; 1: narrow -> float32, as it
// receives), the narrow type, threads.
void BM_Convert(benchmark::State& state) {
  const bool widen = state.range(0) != 0;
  const auto narrow = static_cast<rdDataType_t>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  Buffers& b = buffers();
  const size_t count = kBytesPerSource / sizeof(float);
  const void* src = b.srcs[0].get();
  rd::kernels::WideSumArgs args;
  args.narrow = narrow;
  args.count = count;
  args.dst = b.dst.get();
  if (widen) {
    args.srcs = &src;
    args.nsrcs = 1;
  } else {
    args.acc = static_cast<const float*>(src);
    args.narrow_out = true;
  }
  Options options;
  if (!timeKernel(state, threads, "conversion failed", &options,
                  [&](const Options& o) { return rd::kernels::cpu::wideSum(args, o); })) {
    return;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 6 *
                          static_cast<int64_t>(count));
  state.SetLabel(std::string(widen ? "widen " : "narrow ") + rdDataTypeName(narrow) + " " +
                 rd::kernels::cpu::isaName(options.isa));
}

void convertArgs(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    for (int widen : {0, 1}) {
      for (rdDataType_t narrow : {rdBfloat16, rdFloat16}) b->Args({widen, narrow, threads});
    }
  }
}

void reduceArgs(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2}) {
    for (rdDataType_t dtype : {rdFloat32, rdBfloat16, rdFloat16}) {
      for (int n : {2, 4, 8, 16}) b->Args({dtype, n, threads});
    }
  }
}

BENCHMARK(BM_Memcpy)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Reduce)->Apply(reduceArgs)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Convert)->Apply(convertArgs)->UseRealTime()->Unit(benchmark::kMillisecond);
// memcpy again at the end: a drift between the two shows the machine's noise during the run.
BENCHMARK(BM_Memcpy)
    ->Name("BM_Memcpy_end")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
