// SPDX-License-Identifier: BSD-3-Clause
// The CPU reduction kernels, written once over GCC/Clang vector extensions and compiled once per
// instruction set: isa_<name>.cc defines RD_ISA_NAMESPACE and RD_VEC_BYTES, includes this file,
// and is built with that ISA's -m flags. Everything here lives in the per-ISA namespace (and uses
// no std:: templates) so that no inline function built for one ISA can be linked into another.
//
// Shape of the work: for each vector of elements, load source 0, combine sources 1..n-1 into it
// in order, finalize (avg), store. One pass over every source, no temporaries in memory.

#if defined(__x86_64__)
#include <immintrin.h>
#define RD_HAVE_STREAMING_STORES 1
#else
#define RD_HAVE_STREAMING_STORES 0
#endif

#include <cstddef>
#include <cstdint>

#include "cpu/half_convert.h"
#include "cpu/isa_kernels.h"

#ifndef RD_PREFETCH_AHEAD
#define RD_PREFETCH_AHEAD 1024
#endif
#ifndef RD_ISA_NAMESPACE
#error "define RD_ISA_NAMESPACE and RD_VEC_BYTES before including reduce_body.inl"
#endif

namespace rd::kernels::cpu::RD_ISA_NAMESPACE {
namespace {

constexpr size_t kVecBytes = RD_VEC_BYTES;
#ifndef RD_UNROLL_BYTES
#define RD_UNROLL_BYTES 256
#endif
constexpr size_t kPrefetchAhead = RD_PREFETCH_AHEAD;

template <class C>
struct VecOf {
  // The typedef form: GCC takes vector_size with a dependent size there.
  typedef C type __attribute__((vector_size(kVecBytes)));
};
template <class C>
using Vec = typename VecOf<C>::type;

template <class C>
constexpr size_t kLanes = kVecBytes / sizeof(C);

// ---- Element types: storage in memory, the type arithmetic runs in, and how to convert.
struct Fp16 {};
struct Bf16 {};

template <class T>
struct Elem {  // plain types: stored as they are computed
  using Storage = T;
  using Compute = T;
};
template <>
struct Elem<Fp16> {
  using Storage = uint16_t;
  using Compute = float;
};
template <>
struct Elem<Bf16> {
  using Storage = uint16_t;
  using Compute = float;
};

template <class T>
inline Vec<typename Elem<T>::Compute> load(const unsigned char* p) {
  Vec<typename Elem<T>::Compute> v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
inline void store(unsigned char* p, Vec<typename Elem<T>::Compute> v) {
  __builtin_memcpy(p, &v, sizeof v);
}

// bfloat16 -> float is a 16-bit shift; float -> bfloat16 rounds to nearest even and keeps NaN.
template <>
inline Vec<float> load<Bf16>(const unsigned char* p) {
#if RD_VEC_BYTES == 64
  // One zero-extending load and a shift; the generic conversion below takes five instructions.
  __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return __builtin_bit_cast(Vec<float>, _mm512_slli_epi32(wide, 16));
#elif RD_VEC_BYTES == 32
  __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return __builtin_bit_cast(Vec<float>, _mm256_slli_epi32(wide, 16));
#else
  typedef uint16_t Raw __attribute__((vector_size(kVecBytes / 2)));
  Raw raw;
  __builtin_memcpy(&raw, p, sizeof raw);
  return __builtin_bit_cast(Vec<float>, __builtin_convertvector(raw, Vec<uint32_t>) << 16);
#endif
}

template <>
inline void store<Bf16>(unsigned char* p, Vec<float> v) {
  typedef uint16_t Raw __attribute__((vector_size(kVecBytes / 2)));
  Vec<uint32_t> u = __builtin_bit_cast(Vec<uint32_t>, v);
  Vec<uint32_t> rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  Vec<uint32_t> quiet_nan = (u >> 16) | 0x40u;
  Vec<uint32_t> out = (u & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded;
  Raw raw = __builtin_convertvector(out, Raw);
  __builtin_memcpy(p, &raw, sizeof raw);
}

// float16 uses the F16C conversion instructions where the ISA has them.
template <>
inline Vec<float> load<Fp16>(const unsigned char* p) {
#if RD_VEC_BYTES == 64
  return __builtin_bit_cast(
      Vec<float>, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#elif RD_VEC_BYTES == 32
  return __builtin_bit_cast(Vec<float>,
                            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#else
  Vec<float> v;
  for (size_t i = 0; i < kLanes<float>; ++i) {
    uint16_t h = 0;
    __builtin_memcpy(&h, p + 2 * i, 2);
    v[i] = halfToFloat(h);
  }
  return v;
#endif
}

template <>
inline void store<Fp16>(unsigned char* p, Vec<float> v) {
#if RD_VEC_BYTES == 64
  __m256i h = _mm512_cvtps_ph(__builtin_bit_cast(__m512, v), _MM_FROUND_TO_NEAREST_INT);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
#elif RD_VEC_BYTES == 32
  __m128i h = _mm256_cvtps_ph(__builtin_bit_cast(__m256, v), _MM_FROUND_TO_NEAREST_INT);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), h);
#else
  for (size_t i = 0; i < kLanes<float>; ++i) {
    uint16_t h = floatToHalf(v[i]);
    __builtin_memcpy(p + 2 * i, &h, 2);
  }
#endif
}

// ---- Operators. Integer sum/prod run on the unsigned type so that overflow wraps (no UB).
template <class C>
struct Unsigned {
  using type = C;
};
template <>
struct Unsigned<int8_t> {
  using type = uint8_t;
};
template <>
struct Unsigned<int32_t> {
  using type = uint32_t;
};
template <>
struct Unsigned<int64_t> {
  using type = uint64_t;
};

template <class C>
constexpr bool kIsFloat = static_cast<C>(0.5) != static_cast<C>(0);

struct Sum {
  template <class V>
  static V apply(V a, V b) {
    return a + b;
  }
};
struct Prod {
  template <class V>
  static V apply(V a, V b) {
    return a * b;
  }
};
// x86 min/max semantics (a < b ? a : b), made NaN-propagating for the left operand as well.
struct Min {
  template <class V>
  static V apply(V a, V b) {
    V r = a < b ? a : b;  // b when b is NaN
    return a != a ? a : r;
  }
};
struct Max {
  template <class V>
  static V apply(V a, V b) {
    V r = a > b ? a : b;
    return a != a ? a : r;
  }
};

template <class C, class Op>
struct OpTypeOf {
  using type = C;
};
template <class C>
struct OpTypeOf<C, Sum> {
  using type = typename Unsigned<C>::type;
};
template <class C>
struct OpTypeOf<C, Prod> {
  using type = typename Unsigned<C>::type;
};

// ---- The loop over one range of elements.
template <class T, class Op, bool kAvg>
struct RangeKernel {
  using Storage = typename Elem<T>::Storage;
  using C = typename Elem<T>::Compute;
  using A = typename OpTypeOf<C, Op>::type;  // arithmetic type (unsigned for integer sums)
  static constexpr size_t kLanesPer = kLanes<C>;
  static constexpr size_t kStoreBytes = kLanesPer * sizeof(Storage);
  // Vectors in flight per source: enough independent loads per stream (RD_UNROLL_BYTES of each
  // source per step) to hide memory latency, without running out of vector registers.
  static constexpr int kUnroll = static_cast<int>(
      RD_UNROLL_BYTES / kStoreBytes > 8
          ? 8
          : (RD_UNROLL_BYTES / kStoreBytes < 1 ? 1 : RD_UNROLL_BYTES / kStoreBytes));

  const unsigned char* const* srcs;
  int nsrcs;
  unsigned char* dst;
  uint64_t divisor;
  C reciprocal;  // 1 / divisor in the compute type, for floating avg (set by make())

  // The reciprocal is computed once per range, not once per vector in finish().
  static RangeKernel make(const unsigned char* const* srcs, int nsrcs, unsigned char* dst,
                          uint64_t divisor) {
    C reciprocal{};
    if constexpr (kAvg && kIsFloat<C>) reciprocal = static_cast<C>(1) / static_cast<C>(divisor);
    return RangeKernel{srcs, nsrcs, dst, divisor, reciprocal};
  }

  Vec<A> combine(size_t byte_off) const {
    Vec<A> acc = __builtin_bit_cast(Vec<A>, load<T>(srcs[0] + byte_off));
    for (int s = 1; s < nsrcs; ++s) {
      acc = Op::apply(acc, __builtin_bit_cast(Vec<A>, load<T>(srcs[s] + byte_off)));
    }
    return acc;
  }

  Vec<C> finish(Vec<A> acc) const {
    Vec<C> v = __builtin_bit_cast(Vec<C>, acc);
    if constexpr (kAvg) {
      if constexpr (kIsFloat<C>) {
        v = v * reciprocal;
      } else {
        // Integers: divide the wrapped sum, truncating toward zero; no SIMD division exists.
        for (size_t i = 0; i < kLanesPer; ++i) {
          if constexpr (static_cast<C>(-1) < 0) {
            v[i] = static_cast<C>(static_cast<int64_t>(v[i]) / static_cast<int64_t>(divisor));
          } else {
            v[i] = static_cast<C>(static_cast<uint64_t>(v[i]) / divisor);
          }
        }
      }
    }
    return v;
  }

  // Full vectors from element `begin` for `vectors` vectors; stores with plain or streaming stores.
  template <bool kStream>
  void bulk(size_t begin, size_t vectors) const {
    size_t off = begin * sizeof(Storage);
    size_t v = 0;
    for (; v + kUnroll <= vectors; v += kUnroll, off += kUnroll * kStoreBytes) {
      Vec<A> acc[kUnroll];
      prefetch(srcs[0] + off);
      for (int u = 0; u < kUnroll; ++u) {
        acc[u] = __builtin_bit_cast(Vec<A>, load<T>(srcs[0] + off + u * kStoreBytes));
      }
      for (int s = 1; s < nsrcs; ++s) {
        prefetch(srcs[s] + off);
        for (int u = 0; u < kUnroll; ++u) {
          acc[u] = Op::apply(acc[u],
                             __builtin_bit_cast(Vec<A>, load<T>(srcs[s] + off + u * kStoreBytes)));
        }
      }
      for (int u = 0; u < kUnroll; ++u) put<kStream>(dst + off + u * kStoreBytes, finish(acc[u]));
    }
    for (; v < vectors; ++v, off += kStoreBytes) put<kStream>(dst + off, finish(combine(off)));
  }

  // With many sources the hardware prefetchers fall behind; ask for the lines this iteration
  // will need kPrefetchAhead bytes from now, one request per cache line.
  static void prefetch(const unsigned char* p) {
    for (size_t line = 0; line < kUnroll * kStoreBytes; line += 64) {
      __builtin_prefetch(p + kPrefetchAhead + line, 0, 0);
    }
  }

  template <bool kStream>
  static void put(unsigned char* p, Vec<C> v) {
    if constexpr (kStream) {
      alignas(64) unsigned char buf[kStoreBytes];
      store<T>(buf, v);
      streamStore(p, buf);
    } else {
      store<T>(p, v);
    }
  }

  static void streamStore(unsigned char* p, const unsigned char* buf) {
#if RD_HAVE_STREAMING_STORES
    if constexpr (kStoreBytes == 64) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(p), _mm512_load_si512(buf));
    } else if constexpr (kStoreBytes == 32) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(p),
                          _mm256_load_si256(reinterpret_cast<const __m256i*>(buf)));
    } else if constexpr (kStoreBytes == 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(p),
                       _mm_load_si128(reinterpret_cast<const __m128i*>(buf)));
    } else {
      __builtin_memcpy(p, buf, kStoreBytes);
    }
#else
    __builtin_memcpy(p, buf, kStoreBytes);
#endif
  }

  // Fewer than one vector of elements: staged through zero-padded vectors so that the lanes
  // compute exactly what the full-vector path computes.
  void partial(size_t begin, size_t n) const {
    alignas(64) unsigned char staged[kStoreBytes] = {};
    const size_t off = begin * sizeof(Storage), bytes = n * sizeof(Storage);
    __builtin_memcpy(staged, srcs[0] + off, bytes);
    Vec<A> acc = __builtin_bit_cast(Vec<A>, load<T>(staged));
    for (int s = 1; s < nsrcs; ++s) {
      __builtin_memcpy(staged, srcs[s] + off, bytes);
      acc = Op::apply(acc, __builtin_bit_cast(Vec<A>, load<T>(staged)));
    }
    store<T>(staged, finish(acc));
    __builtin_memcpy(dst + off, staged, bytes);
  }

  void run(size_t begin, size_t end, bool stream) const {
    size_t head = 0;
    const auto addr = reinterpret_cast<uintptr_t>(dst + begin * sizeof(Storage));
    // Streaming stores need aligned destinations: peel elements until dst is aligned.
    stream = stream && RD_HAVE_STREAMING_STORES && kStoreBytes >= 16 && addr % sizeof(Storage) == 0;
    if (stream) {
      head = ((kStoreBytes - addr % kStoreBytes) % kStoreBytes) / sizeof(Storage);
      if (head > end - begin) head = end - begin;
      if (head != 0) partial(begin, head);
    }
    const size_t first = begin + head;
    const size_t vectors = (end - first) / kLanesPer;
    if (stream) {
      bulk<true>(first, vectors);
#if RD_HAVE_STREAMING_STORES
      _mm_sfence();  // make the non-temporal stores visible before the caller reads dst
#endif
    } else {
      bulk<false>(first, vectors);
    }
    const size_t done = first + vectors * kLanesPer;
    if (done < end) partial(done, end - done);
  }
};

template <class T, class Op>
void runTyped(const ReduceRange& r) {
  const auto* const* srcs = reinterpret_cast<const unsigned char* const*>(r.srcs);
  auto* dst = static_cast<unsigned char*>(r.dst);
  if (r.avg_divisor != 0) {
    RangeKernel<T, Op, true>::make(srcs, r.nsrcs, dst, r.avg_divisor).run(r.begin, r.end, r.stream);
  } else {
    RangeKernel<T, Op, false>::make(srcs, r.nsrcs, dst, 0).run(r.begin, r.end, r.stream);
  }
}

template <class T>
void runOp(const ReduceRange& r) {
  switch (r.op) {
    case rdSum:
    case rdAvg: return runTyped<T, Sum>(r);
    case rdProd: return runTyped<T, Prod>(r);
    case rdMin: return runTyped<T, Min>(r);
    case rdMax: return runTyped<T, Max>(r);
    case rdNumRedOps: break;
  }
}

}  // namespace

void reduceRange(const ReduceRange& r) {
  switch (r.dtype) {
    case rdInt8: return runOp<int8_t>(r);
    case rdUint8: return runOp<uint8_t>(r);
    case rdInt32: return runOp<int32_t>(r);
    case rdUint32: return runOp<uint32_t>(r);
    case rdInt64: return runOp<int64_t>(r);
    case rdUint64: return runOp<uint64_t>(r);
    case rdFloat16: return runOp<Fp16>(r);
    case rdFloat32: return runOp<float>(r);
    case rdFloat64: return runOp<double>(r);
    case rdBfloat16: return runOp<Bf16>(r);
    case rdNumDataTypes: break;
  }
}

}  // namespace rd::kernels::cpu::RD_ISA_NAMESPACE
