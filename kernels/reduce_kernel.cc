// SPDX-License-Identifier: BSD-3-Clause
#include "reduce_kernel.h"

#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace rd::kernels {

rdResult_t validate(const ReduceArgs& args) {
  size_t esize = dtypeSize(args.dtype);
  if (esize == 0) {
    return setErrorf(rdInvalidArgument, "reduce: invalid data type %d",
                     static_cast<int>(args.dtype));
  }
  if (args.op < rdSum || args.op >= rdNumRedOps) {
    return setErrorf(rdInvalidArgument, "reduce: invalid operator %d", static_cast<int>(args.op));
  }
  if (args.nsrcs < 1 || args.srcs == nullptr) {
    return setErrorf(rdInvalidArgument, "reduce: need at least one source (nsrcs=%d)", args.nsrcs);
  }
  if (args.count == 0) return rdSuccess;
  if (args.count > SIZE_MAX / esize) {
    return setErrorf(rdInvalidArgument, "reduce: count %zu overflows the address space",
                     args.count);
  }
  if (args.dst == nullptr) return setError(rdInvalidArgument, "reduce: destination is NULL");
  const auto bytes = args.count * esize;
  const auto dst = reinterpret_cast<uintptr_t>(args.dst);
  for (int i = 0; i < args.nsrcs; ++i) {
    if (args.srcs[i] == nullptr)
      return setErrorf(rdInvalidArgument, "reduce: source %d is NULL", i);
    const auto src = reinterpret_cast<uintptr_t>(args.srcs[i]);
    if (src != dst && src < dst + bytes && dst < src + bytes) {
      return setErrorf(rdInvalidArgument,
                       "reduce: destination partially overlaps source %d (only dst == src allowed)",
                       i);
    }
  }
  return rdSuccess;
}

}  // namespace rd::kernels
