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

  const unsigned char* acc;
  const unsigned char* const* srcs;
  int nsrcs;
  unsigned char* dst;
  float scale;
  bool scaled;

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
    if constexpr (kNarrowOut) {
      store<T>(dst + i * 2, v);
    } else {
      store<float>(dst + i * 4, v);
    }
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

  void run(size_t begin, size_t end) const {
    size_t i = begin;
    for (; i + kUnroll * kLanesPer <= end; i += kUnroll * kLanesPer) {
      for (size_t u = 0; u < kUnroll; ++u) vector(i + u * kLanesPer);
    }
    for (; i + kLanesPer <= end; i += kLanesPer) vector(i);
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
  k.run(r.begin, r.end);
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
