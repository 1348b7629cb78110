// SPDX-License-Identifier: BSD-3-Clause
#include "perf/exact_data.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace rd::perf {

namespace {

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

void fillExact(void* buf, size_t count, int rank, size_t first, rdDataType_t d, rdRedOp_t op,
               uint64_t salt) {
  for (size_t i = 0; i < count; ++i) store(buf, i, exactValue(rank, first + i, d, op, salt), d);
}

size_t countWrongReduction(const void* got, size_t count, size_t first, int nranks, rdDataType_t d,
                           rdRedOp_t op, rdDataType_t precision, uint64_t salt) {
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
    for (int r = 0; r < nranks; ++r) fillExact(inputs[r].data(), n, r, first + base, d, op, salt);
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
                      rdRedOp_t op, uint64_t salt) {
  const size_t esize = rdDataTypeSize(d);
  std::vector<char> want(kBlock * esize);
  size_t wrong = 0;
  for (size_t base = 0; base < count; base += kBlock) {
    size_t n = std::min(kBlock, count - base);
    fillExact(want.data(), n, rank, first + base, d, op, salt);
    const char* g = static_cast<const char*>(got) + base * esize;
    for (size_t i = 0; i < n; ++i) {
      wrong += std::memcmp(g + i * esize, want.data() + i * esize, esize) != 0 ? 1 : 0;
    }
  }
  return wrong;
}

}  // namespace rd::perf
