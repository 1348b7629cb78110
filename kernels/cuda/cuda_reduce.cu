// CUDA reduction kernels. Same rules as the CPU kernels, bit for bit: sources combine in index
// order, half types accumulate in float and round once (round to nearest even), integer
// sum/prod wrap, min/max propagate NaN, avg multiplies by 1/divisor (integers divide).
// Built with -fmad=false so no multiply-add is fused behind the CPU's back.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "common/status.h"
#include "cuda/cuda_reduce.h"

namespace rd::kernels::cuda {
namespace {

struct Params {
  const unsigned char* srcs[kMaxSources];
  unsigned char* dst;
  size_t count;
  uint64_t divisor;  // != 0: avg
  int nsrcs;
};

struct Fp16 {};
struct Bf16 {};

// Storage type, compute type and conversions of each element type.
template <class T>
struct Elem {
  using Storage = T;
  using Compute = T;
  __device__ static T in(T v) { return v; }
  __device__ static T out(T v) { return v; }
};
template <>
struct Elem<Fp16> {
  using Storage = uint16_t;
  using Compute = float;
  __device__ static float in(uint16_t h) { return __half2float(__ushort_as_half(h)); }
  __device__ static uint16_t out(float f) { return __half_as_ushort(__float2half_rn(f)); }
};
template <>
struct Elem<Bf16> {
  using Storage = uint16_t;
  using Compute = float;
  __device__ static float in(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }
  __device__ static uint16_t out(float f) {  // the CPU kernels' rounding, NaN kept quiet
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  }
};

template <class C>
struct Arith {  // integer sum/prod run unsigned so that overflow wraps
  using type = C;
};
template <>
struct Arith<int8_t> {
  using type = uint8_t;
};
template <>
struct Arith<int32_t> {
  using type = uint32_t;
};
template <>
struct Arith<int64_t> {
  using type = uint64_t;
};

template <class C>
__device__ bool isNan(C v) {
  return v != v;  // false for every integer
}

struct Sum {
  template <class C>
  __device__ static C apply(C a, C b) {
    using A = typename Arith<C>::type;
    return static_cast<C>(static_cast<A>(static_cast<A>(a) + static_cast<A>(b)));
  }
};
struct Prod {
  template <class C>
  __device__ static C apply(C a, C b) {
    using A = typename Arith<C>::type;
    return static_cast<C>(static_cast<A>(static_cast<A>(a) * static_cast<A>(b)));
  }
};
struct Min {
  template <class C>
  __device__ static C apply(C a, C b) {
    return isNan(a) ? a : (a < b ? a : b);
  }
};
struct Max {
  template <class C>
  __device__ static C apply(C a, C b) {
    return isNan(a) ? a : (a > b ? a : b);
  }
};
// float and half types are float/double; Sum and Prod above must not wrap those.
template <>
__device__ float Sum::apply<float>(float a, float b) {
  return a + b;
}
template <>
__device__ double Sum::apply<double>(double a, double b) {
  return a + b;
}
template <>
__device__ float Prod::apply<float>(float a, float b) {
  return a * b;
}
template <>
__device__ double Prod::apply<double>(double a, double b) {
  return a * b;
}

template <class C>
__device__ C finishAvg(C v, uint64_t divisor) {
  if constexpr (static_cast<C>(0.5) != static_cast<C>(0)) {
    return v * (static_cast<C>(1) / static_cast<C>(divisor));
  } else if constexpr (static_cast<C>(-1) < 0) {
    return static_cast<C>(static_cast<int64_t>(v) / static_cast<int64_t>(divisor));
  } else {
    return static_cast<C>(static_cast<uint64_t>(v) / divisor);
  }
}

template <class T, class Op>
__device__ typename Elem<T>::Storage reduceOne(const Params& p, size_t i) {
  using S = typename Elem<T>::Storage;
  using C = typename Elem<T>::Compute;
  C acc = Elem<T>::in(reinterpret_cast<const S*>(p.srcs[0])[i]);
  for (int s = 1; s < p.nsrcs; ++s) {
    acc = Op::apply(acc, Elem<T>::in(reinterpret_cast<const S*>(p.srcs[s])[i]));
  }
  if (p.divisor != 0) acc = finishAvg(acc, p.divisor);
  return Elem<T>::out(acc);
}

// 16-byte packs: every pointer is 16-byte aligned. One load per source per pack.
template <class T, class Op>
__global__ void reducePacks(Params p, size_t packs) {
  using S = typename Elem<T>::Storage;
  using C = typename Elem<T>::Compute;
  constexpr int kPer = 16 / sizeof(S);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t k = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; k < packs;
       k += stride) {
    union Pack {
      uint4 raw;
      S v[kPer];
    } in, out;
    C acc[kPer];
    in.raw = reinterpret_cast<const uint4*>(p.srcs[0])[k];
#pragma unroll
    for (int e = 0; e < kPer; ++e) acc[e] = Elem<T>::in(in.v[e]);
    for (int s = 1; s < p.nsrcs; ++s) {
      in.raw = reinterpret_cast<const uint4*>(p.srcs[s])[k];
#pragma unroll
      for (int e = 0; e < kPer; ++e) acc[e] = Op::apply(acc[e], Elem<T>::in(in.v[e]));
    }
#pragma unroll
    for (int e = 0; e < kPer; ++e) {
      out.v[e] = Elem<T>::out(p.divisor != 0 ? finishAvg(acc[e], p.divisor) : acc[e]);
    }
    reinterpret_cast<uint4*>(p.dst)[k] = out.raw;
  }
}

// Element by element from `first`: misaligned pointers and the tail after the packs.
template <class T, class Op>
__global__ void reduceElements(Params p, size_t first) {
  using S = typename Elem<T>::Storage;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = first + blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < p.count;
       i += stride) {
    reinterpret_cast<S*>(p.dst)[i] = reduceOne<T, Op>(p, i);
  }
}

int blocksFor(size_t items, int threads) {
  static int sms = [] {
    int device = 0, n = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
      n = 32;
    }
    return n;
  }();
  size_t want = (items + threads - 1) / threads;
  size_t cap = static_cast<size_t>(sms) * 8;  // enough resident warps to saturate HBM
  return static_cast<int>(want < cap ? (want == 0 ? 1 : want) : cap);
}

template <class T, class Op>
rdResult_t launch(const Params& p, cudaStream_t stream) {
  using S = typename Elem<T>::Storage;
  constexpr int kThreads = 256;
  bool aligned = reinterpret_cast<uintptr_t>(p.dst) % 16 == 0;
  for (int s = 0; s < p.nsrcs; ++s)
    aligned = aligned && reinterpret_cast<uintptr_t>(p.srcs[s]) % 16 == 0;
  size_t first = 0;
  if (aligned) {
    const size_t packs = p.count * sizeof(S) / 16;
    if (packs != 0)
      reducePacks<T, Op><<<blocksFor(packs, kThreads), kThreads, 0, stream>>>(p, packs);
    first = packs * 16 / sizeof(S);
  }
  if (first < p.count) {
    reduceElements<T, Op><<<blocksFor(p.count - first, kThreads), kThreads, 0, stream>>>(p, first);
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    return setErrorf(rdCudaError, "CUDA reduce launch: %s", cudaGetErrorString(err));
  }
  return rdSuccess;
}

template <class T>
rdResult_t launchOp(rdRedOp_t op, const Params& p, cudaStream_t stream) {
  switch (op) {
    case rdSum:
    case rdAvg: return launch<T, Sum>(p, stream);
    case rdProd: return launch<T, Prod>(p, stream);
    case rdMin: return launch<T, Min>(p, stream);
    case rdMax: return launch<T, Max>(p, stream);
    case rdNumRedOps: break;
  }
  return setError(rdInvalidArgument, "CUDA reduce: invalid operator");
}

}  // namespace

rdResult_t reduce(const ReduceArgs& args, Stream stream) {
  rdResult_t status = validate(args);
  if (status != rdSuccess) return status;
  if (args.nsrcs > kMaxSources) {
    return setErrorf(rdUnsupported, "CUDA reduce: %d sources, at most %d per call", args.nsrcs,
                     kMaxSources);
  }
  if (args.count == 0) return rdSuccess;
  Params p{};
  for (int s = 0; s < args.nsrcs; ++s) p.srcs[s] = static_cast<const unsigned char*>(args.srcs[s]);
  p.dst = static_cast<unsigned char*>(args.dst);
  p.count = args.count;
  p.nsrcs = args.nsrcs;
  p.divisor = args.op == rdAvg && args.finalize_avg ? avgDivisor(args) : 0;
  cudaStream_t s = stream;
  switch (args.dtype) {
    case rdInt8: return launchOp<int8_t>(args.op, p, s);
    case rdUint8: return launchOp<uint8_t>(args.op, p, s);
    case rdInt32: return launchOp<int32_t>(args.op, p, s);
    case rdUint32: return launchOp<uint32_t>(args.op, p, s);
    case rdInt64: return launchOp<int64_t>(args.op, p, s);
    case rdUint64: return launchOp<uint64_t>(args.op, p, s);
    case rdFloat16: return launchOp<Fp16>(args.op, p, s);
    case rdFloat32: return launchOp<float>(args.op, p, s);
    case rdFloat64: return launchOp<double>(args.op, p, s);
    case rdBfloat16: return launchOp<Bf16>(args.op, p, s);
    case rdNumDataTypes: break;
  }
  return setError(rdInvalidArgument, "CUDA reduce: invalid data type");
}

int deviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls start clean
    return 0;
  }
  return n;
}

std::string describeDevices() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device (") + cudaGetErrorString(err) + ")";
  }
  if (n == 0) return "no CUDA device";
  std::string out;
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    char line[256];
    std::snprintf(line, sizeof line, "%s%d: %s, sm_%d%d, %.1f GiB", d ? "\n  " : "", d, prop.name,
                  prop.major, prop.minor, static_cast<double>(prop.totalGlobalMem) / (1u << 30));
    out += line;
  }
  return out;
}

}  // namespace rd::kernels::cuda
