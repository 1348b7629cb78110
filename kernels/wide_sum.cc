// SPDX-License-Identifier: BSD-3-Clause
#include "wide_sum.h"

#include <cstdint>

#include "common/status.h"

namespace rd::kernels {

namespace {

bool overlapsPartially(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  if (x == y && a_bytes == b_bytes) return false;
  return x < y + b_bytes && y < x + a_bytes;
}

}  // namespace

rdResult_t validate(const WideSumArgs& args) {
  if (!isWireNarrowType(args.narrow)) {
    return setErrorf(rdInvalidArgument, "wide sum: %s is not a narrow wire type",
                     rdDataTypeName(args.narrow));
  }
  if (args.nsrcs < 0 || (args.nsrcs > 0 && args.srcs == nullptr) ||
      (args.nsrcs == 0 && args.acc == nullptr)) {
    return setErrorf(rdInvalidArgument, "wide sum: nothing to sum (nsrcs=%d, acc %s)", args.nsrcs,
                     args.acc == nullptr ? "NULL" : "set");
  }
  if (args.count == 0) return rdSuccess;
  if (args.count > SIZE_MAX / sizeof(float)) {
    return setErrorf(rdInvalidArgument, "wide sum: count %zu overflows the address space",
                     args.count);
  }
  if (args.dst == nullptr) return setError(rdInvalidArgument, "wide sum: destination is NULL");
  const size_t narrow_bytes = args.count * 2, wide_bytes = args.count * sizeof(float);
  const size_t dst_bytes = args.narrow_out ? narrow_bytes : wide_bytes;
  if (args.acc != nullptr && overlapsPartially(args.dst, dst_bytes, args.acc, wide_bytes)) {
    return setError(rdInvalidArgument, "wide sum: destination partially overlaps the accumulator");
  }
  for (int i = 0; i < args.nsrcs; ++i) {
    if (args.srcs[i] == nullptr) {
      return setErrorf(rdInvalidArgument, "wide sum: source %d is NULL", i);
    }
    if (overlapsPartially(args.dst, dst_bytes, args.srcs[i], narrow_bytes)) {
      return setErrorf(rdInvalidArgument, "wide sum: destination partially overlaps source %d", i);
    }
  }
  return rdSuccess;
}

}  // namespace rd::kernels
