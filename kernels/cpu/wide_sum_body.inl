// SPDX-License-Identifier: BSD-3-Clause
// The wide-sum kernels (kernels/wide_sum.h), compiled once per instruction set after
// reduce_body.inl, whose vector types and narrow loads / stores they share.
//
// The vector path and the element-wise tail compute the same bits: both widen exactly, add in
// float32 in the same order, and round with conversions that agree bit for bit
// (cpu/half_convert.h).

namespace rd::kernels::cpu::RD_ISA_NAMESPACE {
namespace {

template <class T>
inline float widenOne(const unsigned char* p) {
  uint16_t raw = 0;
  __builtin_memcpy(&raw, p, 2);
  if constexpr (__is_same(T, Bf16)) {
    return bf16ToFloat(raw);
  } else {
    return halfToFloat(raw);
  }
}

template <class T>
inline void narrowOne(unsigned char* p, float v) {
  const uint16_t raw = __is_same(T, Bf16) ? floatToBf16(v) : floatToHalf(v);
  __builtin_memcpy(p, &raw, 2);
}

// T: the narrow type (Bf16, Fp16); kAcc: the sum starts from the float32 values in acc;
// kNarrowOut: the result is rounded to T, else stored as float32.
template <class T, bool kAcc, bool kNarrowOut>
struct WideSumKernel {
  static constexpr size_t kLanesPer = kLanes<float>;
  // Independent vectors per step: enough loads in flight to hide memory latency.
  static constexpr size_t kUnroll = 4;
  static constexpr size_t kOutElem = kNarrowOut ? 2 : 4;
  static constexpr size_t kOutBytes = kLanesPer * kOutElem;

  const unsigned char* acc;
  const unsigned char* const* srcs;
  int nsrcs;
  unsigned char* dst;
  float scale;
  bool scaled;

  template <bool kStream = false>
  void vector(size_t i) const {
    Vec<float> v;
    int s = 0;
    if constexpr (kAcc) {
      v = load<float>(acc + i * 4);
    } else {
      v = load<T>(srcs[s++] + i * 2);
    }
    for (; s < nsrcs; ++s) v = v + load<T>(srcs[s] + i * 2);
    if (scaled) v = v * scale;
    if constexpr (kStream) {
      alignas(64) unsigned char buf[kOutBytes];
      put(buf, v);
      streamOut(dst + i * kOutElem, buf);
    } else {
      put(dst + i * kOutElem, v);
    }
  }

  static void put(unsigned char* p, Vec<float> v) {
    if constexpr (kNarrowOut) {
      store<T>(p, v);
    } else {
      store<float>(p, v);
    }
  }

  static void streamOut(unsigned char* p, const unsigned char* buf) {
#if RD_HAVE_STREAMING_STORES
    if constexpr (kOutBytes == 64) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(p), _mm512_load_si512(buf));
    } else if constexpr (kOutBytes == 32) {
      _mm256_stream_si256(reinterpret_cast<__m256i*>(p),
                          _mm256_load_si256(reinterpret_cast<const __m256i*>(buf)));
    } else if constexpr (kOutBytes == 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(p),
                       _mm_load_si128(reinterpret_cast<const __m128i*>(buf)));
    } else {
      __builtin_memcpy(p, buf, kOutBytes);
    }
#else
    __builtin_memcpy(p, buf, kOutBytes);
#endif
  }

  void element(size_t i) const {
    float v = 0;
    int s = 0;
    if constexpr (kAcc) {
      __builtin_memcpy(&v, acc + i * 4, 4);
    } else {
      v = widenOne<T>(srcs[s++] + i * 2);
    }
    for (; s < nsrcs; ++s) v = v + widenOne<T>(srcs[s] + i * 2);
    if (scaled) v = v * scale;
    if constexpr (kNarrowOut) {
      narrowOne<T>(dst + i * 2, v);
    } else {
      __builtin_memcpy(dst + i * 4, &v, 4);
    }
  }

  template <bool kStream>
  size_t bulk(size_t i, size_t end) const {
    for (; i + kUnroll * kLanesPer <= end; i += kUnroll * kLanesPer) {
      for (size_t u = 0; u < kUnroll; ++u) vector<kStream>(i + u * kLanesPer);
    }
    for (; i + kLanesPer <= end; i += kLanesPer) vector<kStream>(i);
    return i;
  }

  // Large destinations (beyond the caches) take non-temporal stores, as memcpy does: a plain
  // store first reads the line it writes. Elements are peeled until the stores are aligned.
  void run(size_t begin, size_t end, bool stream) const {
    size_t i = begin;
    const auto addr = [&](size_t k) { return reinterpret_cast<uintptr_t>(dst + k * kOutElem); };
    stream = stream && RD_HAVE_STREAMING_STORES && kOutBytes >= 16 && addr(i) % kOutElem == 0;
    if (stream) {
      while (i < end && addr(i) % kOutBytes != 0) element(i++);
      i = bulk<true>(i, end);
#if RD_HAVE_STREAMING_STORES
      _mm_sfence();  // make the non-temporal stores visible before the caller reads dst
#endif
    } else {
      i = bulk<false>(i, end);
    }
    for (; i < end; ++i) element(i);
  }
};

template <class T, bool kAcc, bool kNarrowOut>
void runWide(const WideSumRange& r) {
  WideSumKernel<T, kAcc, kNarrowOut> k{static_cast<const unsigned char*>(r.acc),
                                       reinterpret_cast<const unsigned char* const*>(r.srcs),
                                       r.nsrcs,
                                       static_cast<unsigned char*>(r.dst),
                                       r.scale,
                                       r.scale != 1.0f};
  k.run(r.begin, r.end, r.stream);
}

template <class T>
void runWideOf(const WideSumRange& r) {
  if (r.acc != nullptr) {
    return r.narrow_out ? runWide<T, true, true>(r) : runWide<T, true, false>(r);
  }
  return r.narrow_out ? runWide<T, false, true>(r) : runWide<T, false, false>(r);
}

}  // namespace

void wideSumRange(const WideSumRange& r) {
  if (r.narrow == rdBfloat16) {
    runWideOf<Bf16>(r);
  } else {
    runWideOf<Fp16>(r);
  }
}

}  // namespace rd::kernels::cpu::RD_ISA_NAMESPACE
