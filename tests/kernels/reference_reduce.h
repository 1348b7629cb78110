// SPDX-License-Identifier: BSD-3-Clause
// The scalar reference the kernels are tested against: one element at a time, written for
// clarity, following the semantics documented on rdLocalReduce.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/half_convert.h"
#include "libreduce/reduce.h"

namespace rd::test {

template <class T>
T loadAt(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(base) + i * sizeof(T), sizeof v);
  return v;
}

template <class T>
void storeAt(void* base, size_t i, T v) {
  std::memcpy(static_cast<unsigned char*>(base) + i * sizeof(T), &v, sizeof v);
}

template <class C>
C refCombine(C a, C b, rdRedOp_t op) {
  if constexpr (std::is_floating_point_v<C>) {
    switch (op) {
      case rdSum:
      case rdAvg: return a + b;
      case rdProd: return a * b;
      case rdMin: return std::isnan(a) ? a : (a < b ? a : b);
      case rdMax: return std::isnan(a) ? a : (a > b ? a : b);
      default: return a;
    }
  } else {
    using U = std::make_unsigned_t<C>;  // wrap-around arithmetic without UB
    switch (op) {
      case rdSum:
      case rdAvg: return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case rdProd: return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case rdMin: return a < b ? a : b;
      case rdMax: return a > b ? a : b;
      default: return a;
    }
  }
}

template <class C>
C refAvg(C sum, uint64_t divisor) {
  if constexpr (std::is_floating_point_v<C>) {
    return sum * (static_cast<C>(1) / static_cast<C>(divisor));
  } else if constexpr (std::is_signed_v<C>) {
    return static_cast<C>(static_cast<int64_t>(sum) / static_cast<int64_t>(divisor));
  } else {
    return static_cast<C>(static_cast<uint64_t>(sum) / divisor);
  }
}

// Storage T, computed as C, converted by the two functions.
template <class T, class C, C (*kIn)(T), T (*kOut)(C)>
void refReduceAs(const void* const* srcs, int n, void* dst, size_t count, rdRedOp_t op,
                 uint64_t divisor) {
  for (size_t i = 0; i < count; ++i) {
    C acc = kIn(loadAt<T>(srcs[0], i));
    for (int s = 1; s < n; ++s) acc = refCombine<C>(acc, kIn(loadAt<T>(srcs[s], i)), op);
    if (op == rdAvg && divisor != 0) acc = refAvg<C>(acc, divisor);
    storeAt<T>(dst, i, kOut(acc));
  }
}

template <class T>
T identity(T v) {
  return v;
}

/** dst = reduction of srcs; divisor == 0 means rdAvg is left as a sum (finalize_avg=false). */
inline void refReduce(const void* const* srcs, int n, void* dst, size_t count, rdDataType_t dtype,
                      rdRedOp_t op, uint64_t divisor) {
  switch (dtype) {
    case rdInt8:
      return refReduceAs<int8_t, int8_t, identity, identity>(srcs, n, dst, count, op, divisor);
    case rdUint8:
      return refReduceAs<uint8_t, uint8_t, identity, identity>(srcs, n, dst, count, op, divisor);
    case rdInt32:
      return refReduceAs<int32_t, int32_t, identity, identity>(srcs, n, dst, count, op, divisor);
    case rdUint32:
      return refReduceAs<uint32_t, uint32_t, identity, identity>(srcs, n, dst, count, op, divisor);
    case rdInt64:
      return refReduceAs<int64_t, int64_t, identity, identity>(srcs, n, dst, count, op, divisor);
    case rdUint64:
      return refReduceAs<uint64_t, uint64_t, identity, identity>(srcs, n, dst, count, op, divisor);
    case rdFloat32:
      return refReduceAs<float, float, identity, identity>(srcs, n, dst, count, op, divisor);
    case rdFloat64:
      return refReduceAs<double, double, identity, identity>(srcs, n, dst, count, op, divisor);
    case rdFloat16:
      return refReduceAs<uint16_t, float, kernels::halfToFloat, kernels::floatToHalf>(
          srcs, n, dst, count, op, divisor);
    case rdBfloat16:
      return refReduceAs<uint16_t, float, kernels::bf16ToFloat, kernels::floatToBf16>(
          srcs, n, dst, count, op, divisor);
    default: return;
  }
}

/** True when element i of a and b are equal bit for bit, or both NaN (any payload). */
inline bool sameElement(const void* a, const void* b, size_t i, rdDataType_t dtype) {
  switch (dtype) {
    case rdFloat32: {
      float x = loadAt<float>(a, i), y = loadAt<float>(b, i);
      return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, 4) == 0;
    }
    case rdFloat64: {
      double x = loadAt<double>(a, i), y = loadAt<double>(b, i);
      return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, 8) == 0;
    }
    case rdFloat16: {
      uint16_t x = loadAt<uint16_t>(a, i), y = loadAt<uint16_t>(b, i);
      return (std::isnan(kernels::halfToFloat(x)) && std::isnan(kernels::halfToFloat(y))) || x == y;
    }
    case rdBfloat16: {
      uint16_t x = loadAt<uint16_t>(a, i), y = loadAt<uint16_t>(b, i);
      return (std::isnan(kernels::bf16ToFloat(x)) && std::isnan(kernels::bf16ToFloat(y))) || x == y;
    }
    default: {
      size_t e = rdDataTypeSize(dtype);
      return std::memcmp(static_cast<const unsigned char*>(a) + i * e,
                         static_cast<const unsigned char*>(b) + i * e, e) == 0;
    }
  }
}

}  // namespace rd::test
