// SPDX-License-Identifier: BSD-3-Clause
#include "perf/exact_values.h"

#include <cstring>

namespace rd::perf {

bool isFloat(rdDataType_t d) {
  return d == rdFloat16 || d == rdBfloat16 || d == rdFloat32 || d == rdFloat64;
}

uint64_t mix(uint64_t key) {
  uint64_t z = key + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double exactValue(int rank, size_t i, rdDataType_t d, rdRedOp_t op, uint64_t salt) {
  const uint64_t index = i + salt;
  const auto r = static_cast<uint64_t>(rank);
  // Products: a 2 at every fifth rank from a phase the element draws, 1 elsewhere, so that no
  // product of n ranks passes 2^(n/5 + 1) (exact in every dtype, whatever the order).
  if (op == rdProd) return (mix(index) + r) % 5 == 0 ? 2 : 1;
  const uint64_t h = mix(index * 0x100000001b3ull ^ (r << 48) ^ r);
  bool is_unsigned = d == rdUint8 || d == rdUint32 || d == rdUint64;
  // bfloat16 holds integers exactly only up to 256: keep sums of many ranks below that.
  if (d == rdBfloat16) return static_cast<double>(h % 4);
  return is_unsigned ? static_cast<double>(h % 9)
                     : static_cast<double>(static_cast<int>(h % 9) - 4);
}

namespace {

uint16_t toHalfBits(double v, rdDataType_t d) {
  auto f = static_cast<float>(v);
  if (d == rdBfloat16) {
    uint32_t u = 0;
    std::memcpy(&u, &f, 4);
    return static_cast<uint16_t>(u >> 16);  // inputs are exact in bf16
  }
  auto h = static_cast<_Float16>(f);
  uint16_t bits = 0;
  std::memcpy(&bits, &h, 2);
  return bits;
}

}  // namespace

void store(void* buf, size_t i, double v, rdDataType_t d) {
  switch (d) {
    case rdInt8: static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v); break;
    case rdUint8: static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v); break;
    case rdInt32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v); break;
    case rdUint32: static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(v); break;
    case rdInt64: static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v); break;
    case rdUint64: static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(v); break;
    case rdFloat16:
    case rdBfloat16: static_cast<uint16_t*>(buf)[i] = toHalfBits(v, d); break;
    case rdFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case rdFloat64: static_cast<double*>(buf)[i] = v; break;
    default: break;
  }
}

double load(const void* buf, size_t i, rdDataType_t d) {
  switch (d) {
    case rdInt8: return static_cast<const int8_t*>(buf)[i];
    case rdUint8: return static_cast<const uint8_t*>(buf)[i];
    case rdInt32: return static_cast<const int32_t*>(buf)[i];
    case rdUint32: return static_cast<const uint32_t*>(buf)[i];
    case rdInt64: return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case rdUint64: return static_cast<double>(static_cast<const uint64_t*>(buf)[i]);
    case rdFloat32: return static_cast<const float*>(buf)[i];
    case rdFloat64: return static_cast<const double*>(buf)[i];
    case rdFloat16: {
      _Float16 h;
      std::memcpy(&h, static_cast<const uint16_t*>(buf) + i, 2);
      return static_cast<double>(h);
    }
    case rdBfloat16: {
      uint32_t u = static_cast<uint32_t>(static_cast<const uint16_t*>(buf)[i]) << 16;
      float f = 0;
      std::memcpy(&f, &u, 4);
      return f;
    }
    default: return 0;
  }
}

}  // namespace rd::perf
