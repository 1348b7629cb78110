#include "perf/exact_data.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace rd::perf {

bool isFloat(rdDataType_t d) {
  return d == rdFloat16 || d == rdBfloat16 || d == rdFloat32 || d == rdFloat64;
}

double exactValue(int rank, size_t i, rdDataType_t d, rdRedOp_t op) {
  auto h = static_cast<unsigned>(i * 7 + static_cast<size_t>(rank) * 13 + 5);
  if (op == rdProd) return 1 + (h % 5 == 0 ? 1 : 0);
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

// Relative spacing of floating values of dtype d (2 ULP = twice this).
double epsilonOf(rdDataType_t d) {
  switch (d) {
    case rdFloat16: return 1.0 / 1024;
    case rdBfloat16: return 1.0 / 128;
    case rdFloat32: return 1.0 / (1 << 23);
    default: return 1.0 / (1ull << 52);
  }
}

constexpr size_t kBlock = 4096;

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

void fillExact(void* buf, size_t count, int rank, size_t first, rdDataType_t d, rdRedOp_t op) {
  for (size_t i = 0; i < count; ++i) store(buf, i, exactValue(rank, first + i, d, op), d);
}

size_t countWrongReduction(const void* got, size_t count, size_t first, int nranks, rdDataType_t d,
                           rdRedOp_t op, rdDataType_t precision) {
  if (precision == rdNumDataTypes) precision = d;
  const size_t esize = rdDataTypeSize(d);
  std::vector<std::vector<char>> inputs(nranks, std::vector<char>(kBlock * esize));
  std::vector<const void*> srcs;
  for (auto& in : inputs) srcs.push_back(in.data());
  std::vector<char> want(kBlock * esize);
  const bool ulp = op == rdAvg && isFloat(d);
  size_t wrong = 0;
  for (size_t base = 0; base < count; base += kBlock) {
    size_t n = std::min(kBlock, count - base);
    for (int r = 0; r < nranks; ++r) fillExact(inputs[r].data(), n, r, first + base, d, op);
    if (rdLocalReduce(srcs.data(), nranks, want.data(), n, d, op) != rdSuccess) return count;
    const char* g = static_cast<const char*>(got) + base * esize;
    for (size_t i = 0; i < n; ++i) {
      if (std::memcmp(g + i * esize, want.data() + i * esize, esize) == 0) continue;
      double a = load(g, i, d), b = load(want.data(), i, d);
      if (!ulp || std::fabs(a - b) > 2 * epsilonOf(precision) * std::fabs(b)) ++wrong;
    }
  }
  return wrong;
}

size_t countWrongCopy(const void* got, size_t count, int rank, size_t first, rdDataType_t d,
                      rdRedOp_t op) {
  const size_t esize = rdDataTypeSize(d);
  std::vector<char> want(kBlock * esize);
  size_t wrong = 0;
  for (size_t base = 0; base < count; base += kBlock) {
    size_t n = std::min(kBlock, count - base);
    fillExact(want.data(), n, rank, first + base, d, op);
    const char* g = static_cast<const char*>(got) + base * esize;
    for (size_t i = 0; i < n; ++i) {
      wrong += std::memcmp(g + i * esize, want.data() + i * esize, esize) != 0 ? 1 : 0;
    }
  }
  return wrong;
}

}  // namespace rd::perf
