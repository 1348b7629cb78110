// SPDX-License-Identifier: BSD-3-Clause
// CUDA reduction kernels, bit for bit the CPU kernels' results (kernels/cpu/reduce_body.inl):
// sources combine in index order, half types accumulate in float and round once (to nearest
// even), integer sum/prod wrap, min/max propagate NaN from either side, avg multiplies by
// 1/divisor computed in the accumulation type (integers divide, truncating toward zero).
//
// Floating arithmetic goes through the __fadd_rn/__fmul_rn family, which the compiler never
// contracts into a fused multiply-add; CMake also passes -fmad=false as a second guard.
//
// Memory access, per call:
// - every pointer at the same offset modulo 16 (the usual case: cudaMalloc'd buffers, chunks
//   at element offsets that are multiples of 16 bytes): a few head elements one by one, then
//   16-byte loads and stores, then a few tail elements;
// - otherwise each element on its own, with natural loads, or byte loads where a pointer is not
//   even aligned to the element size (the interface allows any alignment; the GPU faults on
//   misaligned loads).
// Each thread keeps kUnroll units per source in flight, over a grid-stride loop sized to fill
// the device once.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/status.h"
#include "cuda/cuda_reduce.h"
#include "cuda/half_types.cuh"

namespace rd::kernels::cuda {
namespace {

constexpr int kThreads = 256;
// Units per source in flight per thread: 4 x 16 B hides HBM latency at the occupancy these
// kernels reach; int8 vectors (16 accumulators each) take 2 to stay near 64 registers.
template <class S>
constexpr int kUnroll = sizeof(S) == 1 ? 2 : 4;
constexpr size_t kVecBytes = 16;

struct Params {
  const unsigned char* srcs[kMaxSources];
  unsigned char* dst;
  size_t head;       // elements before the first unit, reduced one by one
  size_t units;      // access units in the bulk (16-byte vectors or single elements)
  size_t tail;       // elements after the last unit, reduced one by one
  uint64_t divisor;  // != 0: finish rdAvg by dividing by this
  int nsrcs;
};

// ---- Operators. Integer sum/prod run on the unsigned type so that overflow wraps (no UB).
template <class C>
struct Wrap {
  using type = C;
};
template <>
struct Wrap<int8_t> {
  using type = uint8_t;
};
template <>
struct Wrap<int32_t> {
  using type = uint32_t;
};
template <>
struct Wrap<int64_t> {
  using type = uint64_t;
};

template <class C>
__device__ C add(C a, C b) {
  using A = typename Wrap<C>::type;
  return static_cast<C>(static_cast<A>(static_cast<A>(a) + static_cast<A>(b)));
}
template <class C>
__device__ C mul(C a, C b) {
  using A = typename Wrap<C>::type;
  return static_cast<C>(static_cast<A>(static_cast<A>(a) * static_cast<A>(b)));
}
// The non-template overloads win for float and double: IEEE round-to-nearest, never fused.
__device__ float add(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ double add(double a, double b) {
  return __dadd_rn(a, b);
}
__device__ float mul(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ double mul(double a, double b) {
  return __dmul_rn(a, b);
}

template <class C>
constexpr bool kIsFloat = static_cast<C>(0.5) != static_cast<C>(0);

template <class C>
__device__ bool isNan(C v) {
  if constexpr (kIsFloat<C>) {
    return v != v;
  } else {
    return false;
  }
}

struct Sum {
  template <class C>
  __device__ static C apply(C a, C b) {
    return add(a, b);
  }
};
struct Prod {
  template <class C>
  __device__ static C apply(C a, C b) {
    return mul(a, b);
  }
};
// The CPU's x86 min/max (a < b ? a : b, so b when b is NaN), made to propagate a NaN in a too.
// Not fminf/fmaxf: those drop NaN. Equal values (+0/-0) give b, the later source.
struct Min {
  template <class C>
  __device__ static C apply(C a, C b) {
    const C r = a < b ? a : b;
    return isNan(a) ? a : r;
  }
};
struct Max {
  template <class C>
  __device__ static C apply(C a, C b) {
    const C r = a > b ? a : b;
    return isNan(a) ? a : r;
  }
};

// The avg step, set up once per thread: the reciprocal is one IEEE division.
template <class C>
struct Finish {
  uint64_t divisor;
  C recip;
  __device__ explicit Finish(uint64_t d) : divisor(d), recip(0) {
    if constexpr (sizeof(C) == 4 && kIsFloat<C>) {
      if (d != 0) recip = __fdiv_rn(1.0f, static_cast<float>(d));
    } else if constexpr (kIsFloat<C>) {
      if (d != 0) recip = __ddiv_rn(1.0, static_cast<double>(d));
    }
  }
  __device__ C apply(C v) const {
    if (divisor == 0) return v;
    if constexpr (kIsFloat<C>) {
      return mul(v, recip);
    } else if constexpr (sizeof(C) <= 4) {
      // Same quotient as the 64-bit division when both fit in 32 bits, and far cheaper.
      if (divisor <= 0x7FFFFFFFu) {
        if constexpr (static_cast<C>(-1) < 0) {
          return static_cast<C>(static_cast<int32_t>(v) / static_cast<int32_t>(divisor));
        } else {
          return static_cast<C>(static_cast<uint32_t>(v) / static_cast<uint32_t>(divisor));
        }
      }
      return divide64(v);
    } else {
      return divide64(v);
    }
  }
  __device__ C divide64(C v) const {
    if constexpr (static_cast<C>(-1) < 0) {
      return static_cast<C>(static_cast<int64_t>(v) / static_cast<int64_t>(divisor));
    } else {
      return static_cast<C>(static_cast<uint64_t>(v) / divisor);
    }
  }
};

// ---- How one unit (a 16-byte vector or one element) is read and written. `base` is the
// pointer plus the head bytes; `unit` counts units from there.
template <class S>
struct VecAccess {
  static constexpr int kPer = static_cast<int>(kVecBytes / sizeof(S));
  using Raw = uint4;
  __device__ static Raw load(const unsigned char* base, size_t unit) {
    return reinterpret_cast<const uint4*>(base)[unit];
  }
  __device__ static void store(unsigned char* base, size_t unit, Raw r) {
    reinterpret_cast<uint4*>(base)[unit] = r;
  }
};
template <class S>
struct ElemAccess {  // pointers aligned to the element size
  static constexpr int kPer = 1;
  using Raw = S;
  __device__ static Raw load(const unsigned char* base, size_t unit) {
    return reinterpret_cast<const S*>(base)[unit];
  }
  __device__ static void store(unsigned char* base, size_t unit, Raw r) {
    reinterpret_cast<S*>(base)[unit] = r;
  }
};
template <class S>
struct ByteAccess {  // some pointer not even aligned to the element size
  static constexpr int kPer = 1;
  using Raw = S;
  __device__ static Raw load(const unsigned char* base, size_t unit) {
    unsigned char b[sizeof(S)];
#pragma unroll
    for (size_t i = 0; i < sizeof(S); ++i) b[i] = base[unit * sizeof(S) + i];
    S v;
    memcpy(&v, b, sizeof v);
    return v;
  }
  __device__ static void store(unsigned char* base, size_t unit, Raw r) {
    unsigned char b[sizeof(S)];
    memcpy(b, &r, sizeof r);
#pragma unroll
    for (size_t i = 0; i < sizeof(S); ++i) base[unit * sizeof(S) + i] = b[i];
  }
};

// Reduces kN units k, k + stride, ...: all kN loads of one source are issued before any of
// them is combined, so that they are in flight together.
template <class T, class Op, class Access, int kN>
__device__ __forceinline__ void reduceUnits(const Params& p, size_t offset, size_t k, size_t stride,
                                            const Finish<typename Elem<T>::Compute>& fin) {
  using S = typename Elem<T>::Storage;
  using C = typename Elem<T>::Compute;
  using Raw = typename Access::Raw;
  constexpr int kPer = Access::kPer;
  static_assert(sizeof(Raw) == kPer * sizeof(S), "a unit is a whole number of elements");
  C acc[kN][kPer];
  Raw raw[kN];
#pragma unroll
  for (int u = 0; u < kN; ++u) raw[u] = Access::load(p.srcs[0] + offset, k + u * stride);
#pragma unroll
  for (int u = 0; u < kN; ++u) {
    S e[kPer];
    memcpy(e, &raw[u], sizeof(Raw));
#pragma unroll
    for (int j = 0; j < kPer; ++j) acc[u][j] = Elem<T>::in(e[j]);
  }
  for (int s = 1; s < p.nsrcs; ++s) {
    const unsigned char* src = p.srcs[s] + offset;
#pragma unroll
    for (int u = 0; u < kN; ++u) raw[u] = Access::load(src, k + u * stride);
#pragma unroll
    for (int u = 0; u < kN; ++u) {
      S e[kPer];
      memcpy(e, &raw[u], sizeof(Raw));
#pragma unroll
      for (int j = 0; j < kPer; ++j) acc[u][j] = Op::apply(acc[u][j], Elem<T>::in(e[j]));
    }
  }
  // Loads of every source precede the store: dst may be one of the sources.
#pragma unroll
  for (int u = 0; u < kN; ++u) {
    S e[kPer];
#pragma unroll
    for (int j = 0; j < kPer; ++j) e[j] = Elem<T>::out(fin.apply(acc[u][j]));
    Raw r;
    memcpy(&r, e, sizeof(Raw));
    Access::store(p.dst + offset, k + u * stride, r);
  }
}

// __grid_constant__: the source table is read in place from the parameter bank, not copied to
// local memory, although it is indexed at run time.
template <class T, class Op, template <class> class Access>
__global__ void __launch_bounds__(kThreads) reduceKernel(const __grid_constant__ Params p) {
  using S = typename Elem<T>::Storage;
  using A = Access<S>;
  const Finish<typename Elem<T>::Compute> fin(p.divisor);
  const size_t offset = p.head * sizeof(S);
  const size_t tid = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  constexpr int kN = kUnroll<S>;
  size_t k = tid;
  for (; k + (kN - 1) * stride < p.units; k += kN * stride) {
    reduceUnits<T, Op, A, kN>(p, offset, k, stride, fin);
  }
  for (; k < p.units; k += stride) reduceUnits<T, Op, A, 1>(p, offset, k, stride, fin);
  // Head and tail (at most 15 elements each) around the vectors; they share the vectors'
  // offset modulo 16, so each is aligned to its element size.
  if (tid < p.head + p.tail) {
    const size_t i = tid < p.head ? tid : p.head + p.units * A::kPer + (tid - p.head);
    reduceUnits<T, Op, ElemAccess<S>, 1>(p, 0, i, 0, fin);
  }
}

int blocksPerSmFor(const void* kernel) {
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, kThreads, 0) != cudaSuccess ||
      n <= 0) {
    cudaGetLastError();  // a failed query only costs the estimate
    n = 4;
  }
  return n;
}

template <class T, class Op, template <class> class Access>
rdResult_t launch(const Params& p, size_t work_items, cudaStream_t stream) {
  auto* kernel = reduceKernel<T, Op, Access>;
  // Occupancy depends on the kernel and the architecture, not on the call: asked once.
  static const int blocks_per_sm = blocksPerSmFor(reinterpret_cast<const void*>(kernel));
  int device = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) {
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  }
  if (err == cudaSuccess) {
    // One wave of resident blocks at most: the grid-stride loop covers the rest.
    const size_t want = (work_items + kThreads - 1) / kThreads;
    const size_t cap = static_cast<size_t>(sms) * static_cast<size_t>(blocks_per_sm);
    const auto blocks = static_cast<unsigned>(want == 0 ? 1 : (want < cap ? want : cap));
    void* kernel_args[] = {const_cast<Params*>(&p)};
    err = cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(blocks), dim3(kThreads),
                           kernel_args, 0, stream);
  }
  if (err != cudaSuccess) {
    cudaGetLastError();  // reported here; do not leave it for an unrelated later call
    return setErrorf(rdCudaError, "CUDA reduce: %s (%s)", cudaGetErrorString(err),
                     cudaGetErrorName(err));
  }
  return rdSuccess;
}

// Picks the memory access for these pointers and fills head/units/tail.
template <class T, class Op>
rdResult_t launchAccess(Params& p, size_t count, cudaStream_t stream) {
  using S = typename Elem<T>::Storage;
  constexpr size_t kPer = kVecBytes / sizeof(S);
  const auto dst = reinterpret_cast<uintptr_t>(p.dst);
  const uintptr_t mis = dst % kVecBytes;
  bool same16 = mis % sizeof(S) == 0;
  bool elem_aligned = dst % sizeof(S) == 0;
  for (int s = 0; s < p.nsrcs; ++s) {
    const auto src = reinterpret_cast<uintptr_t>(p.srcs[s]);
    same16 = same16 && src % kVecBytes == mis;
    elem_aligned = elem_aligned && src % sizeof(S) == 0;
  }
  if (same16) {
    const size_t head = (kVecBytes - mis) % kVecBytes / sizeof(S);
    p.head = head < count ? head : count;
    p.units = (count - p.head) / kPer;
    p.tail = count - p.head - p.units * kPer;
    const size_t edges = p.head + p.tail;
    return launch<T, Op, VecAccess>(p, p.units > edges ? p.units : edges, stream);
  }
  p.head = p.tail = 0;
  p.units = count;
  if constexpr (sizeof(S) > 1) {
    if (!elem_aligned) return launch<T, Op, ByteAccess>(p, count, stream);
  }
  return launch<T, Op, ElemAccess>(p, count, stream);
}

template <class T>
rdResult_t launchOp(rdRedOp_t op, Params& p, size_t count, cudaStream_t stream) {
  switch (op) {
    case rdSum:
    case rdAvg: return launchAccess<T, Sum>(p, count, stream);
    case rdProd: return launchAccess<T, Prod>(p, count, stream);
    case rdMin: return launchAccess<T, Min>(p, count, stream);
    case rdMax: return launchAccess<T, Max>(p, count, stream);
    case rdNumRedOps: break;
  }
  return setErrorf(rdInvalidArgument, "CUDA reduce: invalid operator %d", static_cast<int>(op));
}

}  // namespace

rdResult_t reduce(const ReduceArgs& args, cudaStream_t stream) {
  rdResult_t status = validate(args);
  if (status != rdSuccess) return status;
  if (args.nsrcs > kMaxSources) {
    return setErrorf(rdUnsupported,
                     "CUDA reduce: %d sources, at most %d per call (reduce in steps with "
                     "finalize_avg=false)",
                     args.nsrcs, kMaxSources);
  }
  if (args.count == 0) return rdSuccess;
  Params p{};
  for (int s = 0; s < args.nsrcs; ++s) p.srcs[s] = static_cast<const unsigned char*>(args.srcs[s]);
  p.dst = static_cast<unsigned char*>(args.dst);
  p.nsrcs = args.nsrcs;
  p.divisor = args.op == rdAvg && args.finalize_avg ? avgDivisor(args) : 0;
  const size_t n = args.count;
  switch (args.dtype) {
    case rdInt8: return launchOp<int8_t>(args.op, p, n, stream);
    case rdUint8: return launchOp<uint8_t>(args.op, p, n, stream);
    case rdInt32: return launchOp<int32_t>(args.op, p, n, stream);
    case rdUint32: return launchOp<uint32_t>(args.op, p, n, stream);
    case rdInt64: return launchOp<int64_t>(args.op, p, n, stream);
    case rdUint64: return launchOp<uint64_t>(args.op, p, n, stream);
    case rdFloat16: return launchOp<Fp16>(args.op, p, n, stream);
    case rdFloat32: return launchOp<float>(args.op, p, n, stream);
    case rdFloat64: return launchOp<double>(args.op, p, n, stream);
    case rdBfloat16: return launchOp<Bf16>(args.op, p, n, stream);
    case rdNumDataTypes: break;
  }
  return setErrorf(rdInvalidArgument, "CUDA reduce: invalid data type %d",
                   static_cast<int>(args.dtype));
}

int deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver / no device: clear it so later CUDA calls start clean
    return 0;
  }
  return n;
}

std::string describeDevices() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device (") + cudaGetErrorString(err) + ")";
  }
  if (n == 0) return "no CUDA device (the driver reports none)";
  std::string out;
  for (int d = 0; d < n; ++d) {
    char line[320];
    cudaDeviceProp prop{};
    const cudaError_t e = cudaGetDeviceProperties(&prop, d);
    if (e != cudaSuccess) {
      cudaGetLastError();
      std::snprintf(line, sizeof line, "%d: unavailable (%s)", d, cudaGetErrorString(e));
    } else {
      std::snprintf(line, sizeof line, "%d: %s, sm_%d%d, %.0f GiB", d, prop.name, prop.major,
                    prop.minor, static_cast<double>(prop.totalGlobalMem) / (1ull << 30));
    }
    if (d != 0) out += '\n';
    out += line;
  }
  return out;
}

}  // namespace rd::kernels::cuda
