// SPDX-License-Identifier: BSD-3-Clause
// Deterministic test inputs for the kernel tests: random bit patterns for integers, random
// values in [-1, 1) for floating types, and small integers whose sums are exact in any order.
#pragma once

#include <cstdint>
#include <cstring>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include "cpu/half_convert.h"
#include "libreduce/reduce.h"

// Readable parameter values in GoogleTest listings ("float32" rather than "7").
inline void PrintTo(rdDataType_t dtype, std::ostream* os) {
  *os << rdDataTypeName(dtype);
}

namespace rd::test {

// The kernel test matrix every implementation (CPU ISAs, CUDA) is checked over.
inline constexpr size_t kCounts[] = {0, 1, 3, 31, 1000, (1u << 20) + 3};
inline constexpr int kSourceCounts[] = {1, 2, 3, 8, 17};
inline constexpr size_t kMaxCount = kCounts[std::size(kCounts) - 1];
inline constexpr int kMaxSources = kSourceCounts[std::size(kSourceCounts) - 1];

/** "float32 sum count=1000 nsrcs=3": names one case in failure messages. */
inline std::string describe(rdDataType_t t, rdRedOp_t op, size_t count, int n) {
  return std::string(rdDataTypeName(t)) + " " + rdRedOpName(op) +
         " count=" + std::to_string(count) + " nsrcs=" + std::to_string(n);
}

inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

inline const rdDataType_t kAllTypes[] = {rdInt8,   rdUint8,   rdInt32,   rdUint32,  rdInt64,
                                         rdUint64, rdFloat16, rdFloat32, rdFloat64, rdBfloat16};
inline const rdRedOp_t kAllOps[] = {rdSum, rdProd, rdMax, rdMin, rdAvg};

inline bool isFloating(rdDataType_t t) {
  return t == rdFloat16 || t == rdFloat32 || t == rdFloat64 || t == rdBfloat16;
}

/** Writes @p value (a float) as element i of a buffer of type @p dtype. */
inline void putFloat(void* base, size_t i, rdDataType_t dtype, double value) {
  auto* p = static_cast<unsigned char*>(base);
  switch (dtype) {
    case rdFloat32: {
      auto f = static_cast<float>(value);
      std::memcpy(p + 4 * i, &f, 4);
      return;
    }
    case rdFloat64: std::memcpy(p + 8 * i, &value, 8); return;
    case rdFloat16: {
      uint16_t h = kernels::floatToHalf(static_cast<float>(value));
      std::memcpy(p + 2 * i, &h, 2);
      return;
    }
    case rdBfloat16: {
      uint16_t h = kernels::floatToBf16(static_cast<float>(value));
      std::memcpy(p + 2 * i, &h, 2);
      return;
    }
    default: {  // integers: the value truncated to the element width
      auto v = static_cast<int64_t>(value);
      std::memcpy(p + rdDataTypeSize(dtype) * i, &v, rdDataTypeSize(dtype));
    }
  }
}

/** Reads element i as a double (integers exactly up to 2^53). */
inline double getAsDouble(const void* base, size_t i, rdDataType_t dtype) {
  const auto* p = static_cast<const unsigned char*>(base);
  switch (dtype) {
    case rdInt8: return static_cast<int8_t>(p[i]);
    case rdUint8: return p[i];
    case rdInt32: {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case rdUint32: {
      uint32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case rdInt64: {
      int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return static_cast<double>(v);
    }
    case rdUint64: {
      uint64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return static_cast<double>(v);
    }
    case rdFloat32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case rdFloat64: {
      double v;
      std::memcpy(&v, p + 8 * i, 8);
      return v;
    }
    case rdFloat16: {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return kernels::halfToFloat(v);
    }
    case rdBfloat16: {
      uint16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return kernels::bf16ToFloat(v);
    }
    default: return 0;
  }
}

/** Fills @p count elements with random data of @p dtype (full-range bits for integers). */
inline void fillRandom(void* base, size_t count, rdDataType_t dtype, uint64_t seed) {
  uint64_t state = seed;
  if (!isFloating(dtype)) {
    auto* p = static_cast<unsigned char*>(base);
    size_t bytes = count * rdDataTypeSize(dtype);
    for (size_t i = 0; i < bytes; i += 8) {
      uint64_t r = splitmix64(state);
      std::memcpy(p + i, &r, bytes - i < 8 ? bytes - i : 8);
    }
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;  // [0, 1)
    putFloat(base, i, dtype, 2.0 * u - 1.0);
  }
}

/** Fills with integers in [lo, hi]: sums of a few of them are exact in every type. */
inline void fillSmallInts(void* base, size_t count, rdDataType_t dtype, int lo, int hi,
                          uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = 0; i < count; ++i) {
    int v = lo + static_cast<int>(splitmix64(state) % static_cast<uint64_t>(hi - lo + 1));
    putFloat(base, i, dtype, v);
  }
}

/** Owns nsrcs source buffers and a destination of count elements, each at a byte offset. */
struct Buffers {
  std::vector<std::vector<unsigned char>> storage;
  std::vector<const void*> srcs;
  std::vector<unsigned char> dst_storage;
  void* dst = nullptr;

  Buffers(int nsrcs, size_t count, rdDataType_t dtype, size_t offset = 0) {
    size_t bytes = count * rdDataTypeSize(dtype) + offset + 64;
    storage.resize(static_cast<size_t>(nsrcs));
    for (int s = 0; s < nsrcs; ++s) {
      storage[static_cast<size_t>(s)].assign(bytes, 0);
      srcs.push_back(storage[static_cast<size_t>(s)].data() + offset);
    }
    dst_storage.assign(bytes, 0xAB);
    dst = dst_storage.data() + offset;
  }
  void* src(int s) { return const_cast<void*>(srcs[static_cast<size_t>(s)]); }
};

}  // namespace rd::test
