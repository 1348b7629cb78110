// SPDX-License-Identifier: BSD-3-Clause
#include "cpu/cpu_reduce.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>

#include "common/check.h"
#include "common/dtype.h"
#include "common/settings.h"
#include "common/thread_pool.h"
#include "cpu/isa_kernels.h"

namespace rd::kernels::cpu {
namespace {

constexpr int kMaxAutoThreads = 8;

int onlineCpus() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

// Helpers shared by every reduction of the process, sized for the largest useful split; they
// sleep on a condition variable while idle.
ThreadPool& sharedPool() {
  static ThreadPool pool(std::min(onlineCpus(), kMaxAutoThreads) - 1);
  return pool;
}

using RangeFn = void (*)(const ReduceRange&);
using WideRangeFn = void (*)(const WideSumRange&);

RangeFn rangeFunction(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return avx512::reduceRange;
    case Isa::kAvx2: return avx2::reduceRange;
    case Isa::kScalar: break;
  }
  return scalar::reduceRange;
}

WideRangeFn wideRangeFunction(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return avx512::wideSumRange;
    case Isa::kAvx2: return avx2::wideSumRange;
    case Isa::kScalar: break;
  }
  return scalar::wideSumRange;
}

// Runs @p run over [0, count) in parts of at least options.split_bytes of destination (part
// boundaries on 4 KiB of destination, so every part's stores are aligned alike), the caller's
// thread included.
template <class Run>
void runInParts(size_t count, size_t esize, const Options& options, Run run) {
  const size_t bytes = count * esize;
  const size_t split = std::max<size_t>(options.split_bytes, 4096);
  const size_t max_parts = std::max<size_t>(1, bytes / split);
  const int parts = static_cast<int>(std::min<size_t>(max_parts, std::max(options.threads, 1)));
  if (parts <= 1) {
    run(size_t{0}, count);
    return;
  }
  const size_t align_elems = 4096 / esize;
  const size_t per_part = (count / parts + align_elems - 1) / align_elems * align_elems;
  sharedPool().parallelFor(parts, [&](int p) {
    const size_t begin = std::min(count, per_part * static_cast<size_t>(p));
    const size_t end = p == parts - 1 ? count : std::min(count, begin + per_part);
    if (begin < end) run(begin, end);
  });
}

rdResult_t checkIsa(const Options& options) {
  if (isaSupported(options.isa)) return rdSuccess;
  return setErrorf(rdUnsupported, "CPU kernels for %s are not supported on this CPU",
                   isaName(options.isa));
}

rdResult_t loadOptions(Options* out) {
  std::string isa_name;
  RD_CHECK(settings::readChoice(settings::Id::kCpuIsa, &isa_name));
  Options o;
  if (isa_name == "auto") {
    o.isa = bestIsa();
  } else if (!parseIsa(isa_name, &o.isa) || !isaSupported(o.isa)) {
    return setErrorf(rdUnsupported, "LIBREDUCE_CPU_ISA=%s: this CPU does not support it (best: %s)",
                     isa_name.c_str(), isaName(bestIsa()));
  }
  int64_t threads = 0;
  RD_CHECK(settings::readInt(settings::Id::kKernelThreads, &threads));
  o.threads = threads > 0 ? static_cast<int>(threads) : std::min(onlineCpus(), kMaxAutoThreads);
  uint64_t bytes = 0;
  RD_CHECK(settings::readSize(settings::Id::kKernelSplitBytes, &bytes));
  o.split_bytes = bytes;
  RD_CHECK(settings::readSize(settings::Id::kKernelStreamBytes, &bytes));
  o.stream_bytes = bytes;
  *out = o;
  return rdSuccess;
}

}  // namespace

const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    case Isa::kScalar: break;
  }
  return "scalar";
}

bool parseIsa(const std::string& name, Isa* out) {
  for (int i = 0; i < kNumIsas; ++i) {
    if (name == isaName(static_cast<Isa>(i))) {
      *out = static_cast<Isa>(i);
      return true;
    }
  }
  return false;
}

#if defined(__x86_64__)
namespace {

struct CpuFeatures {
  bool avx2_f16c = false;
  bool avx512 = false;  // F, BW, VL, DQ
};

// Reads CPUID and the OS-enabled register state (XCR0): a CPU bit alone does not mean the
// kernel saves the wider registers on context switch.
CpuFeatures detectFeatures() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  const bool osxsave = (c & (1u << 27)) != 0, avx = (c & (1u << 28)) != 0;
  const bool f16c = (c & (1u << 29)) != 0;
  if (!osxsave || !avx) return f;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool os_avx = (xcr0_lo & 0x6u) == 0x6u;       // SSE and AVX state
  const bool os_avx512 = (xcr0_lo & 0xE6u) == 0xE6u;  // plus opmask and ZMM state
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return f;
  const bool avx2 = (b & (1u << 5)) != 0;
  const unsigned avx512_bits = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);  // F DQ BW VL
  f.avx2_f16c = os_avx && avx2 && f16c;
  f.avx512 = f.avx2_f16c && os_avx512 && (b & avx512_bits) == avx512_bits;
  return f;
}

}  // namespace
#endif

bool isaSupported(Isa isa) {
#if defined(__x86_64__)
  static const CpuFeatures features = detectFeatures();
  switch (isa) {
    case Isa::kAvx512: return features.avx512;
    case Isa::kAvx2: return features.avx2_f16c;
    case Isa::kScalar: return true;
  }
  return false;
#else
  return isa == Isa::kScalar;
#endif
}

Isa bestIsa() {
  if (isaSupported(Isa::kAvx512)) return Isa::kAvx512;
  if (isaSupported(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kScalar;
}

rdResult_t configuredOptions(Options* out) {
  // Read once: a reducer calls this for every chunk. A failure is kept and reported each time.
  static std::once_flag once;
  static Options options;
  static rdResult_t status = rdSuccess;
  static std::string error;
  std::call_once(once, [] {
    status = loadOptions(&options);
    if (status != rdSuccess) error = lastError();
  });
  if (status != rdSuccess) return setError(status, error);
  *out = options;
  return rdSuccess;
}

rdResult_t reduce(const ReduceArgs& args) {
  Options options;
  RD_CHECK(configuredOptions(&options));
  return reduce(args, options);
}

rdResult_t reduce(const ReduceArgs& args, const Options& options) {
  RD_CHECK(validate(args));
  if (args.count == 0) return rdSuccess;
  RD_CHECK(checkIsa(options));
  const size_t esize = dtypeSize(args.dtype);
  const bool avg = args.op == rdAvg && args.finalize_avg;
  ReduceRange range{args.srcs,
                    args.nsrcs,
                    args.dst,
                    0,
                    args.count,
                    args.dtype,
                    args.op == rdAvg ? rdSum : args.op,
                    avg ? avgDivisor(args) : 0,
                    options.stream_bytes != 0 && args.count * esize >= options.stream_bytes};
  RangeFn fn = rangeFunction(options.isa);
  runInParts(args.count, esize, options, [&](size_t begin, size_t end) {
    ReduceRange r = range;
    r.begin = begin;
    r.end = end;
    fn(r);
  });
  return rdSuccess;
}

rdResult_t wideSum(const WideSumArgs& args) {
  Options options;
  RD_CHECK(configuredOptions(&options));
  return wideSum(args, options);
}

rdResult_t wideSum(const WideSumArgs& args, const Options& options) {
  RD_CHECK(validate(args));
  if (args.count == 0) return rdSuccess;
  RD_CHECK(checkIsa(options));
  const size_t out_bytes = args.count * (args.narrow_out ? 2 : sizeof(float));
  WideSumRange range{};
  range.acc = args.acc;
  range.srcs = args.srcs;
  range.nsrcs = args.nsrcs;
  range.narrow = args.narrow;
  range.dst = args.dst;
  range.narrow_out = args.narrow_out;
  range.scale = args.scale;
  range.end = args.count;
  range.stream = options.stream_bytes != 0 && out_bytes >= options.stream_bytes;
  WideRangeFn fn = wideRangeFunction(options.isa);
  runInParts(args.count, args.narrow_out ? 2 : sizeof(float), options,
             [&](size_t begin, size_t end) {
               WideSumRange r = range;
               r.begin = begin;
               r.end = end;
               fn(r);
             });
  return rdSuccess;
}

rdResult_t narrowFloats(const float* src, void* dst, size_t count, rdDataType_t narrow) {
  WideSumArgs args;
  args.acc = src;
  args.narrow = narrow;
  args.narrow_out = true;
  args.dst = dst;
  args.count = count;
  return wideSum(args);
}

rdResult_t widenToFloats(const void* src, float* dst, size_t count, rdDataType_t narrow) {
  WideSumArgs args;
  args.srcs = &src;
  args.nsrcs = 1;
  args.narrow = narrow;
  args.dst = dst;
  args.count = count;
  return wideSum(args);
}

}  // namespace rd::kernels::cpu

extern "C" rdResult_t rdLocalReduce(const void* const* srcs, int nsrcs, void* dst, size_t count,
                                    rdDataType_t dtype, rdRedOp_t op) {
  rd::clearLastError();
  rd::kernels::ReduceArgs args;
  args.srcs = srcs;
  args.nsrcs = nsrcs;
  args.dst = dst;
  args.count = count;
  args.dtype = dtype;
  args.op = op;
  return rd::kernels::cpu::reduce(args);
}
