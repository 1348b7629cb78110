#include "reduce_kernel.h"

#include <cstdint>

#include "common/status.h"

namespace rd::kernels {

size_t elementSize(rdDataType_t dtype) {
  switch (dtype) {
    case rdInt8:
    case rdUint8: return 1;
    case rdFloat16:
    case rdBfloat16: return 2;
    case rdInt32:
    case rdUint32:
    case rdFloat32: return 4;
    case rdInt64:
    case rdUint64:
    case rdFloat64: return 8;
    case rdNumDataTypes: break;
  }
  return 0;
}

rdResult_t validate(const ReduceArgs& args) {
  size_t esize = elementSize(args.dtype);
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

extern "C" {

size_t rdDataTypeSize(rdDataType_t dtype) {
  return rd::kernels::elementSize(dtype);
}

const char* rdDataTypeName(rdDataType_t dtype) {
  switch (dtype) {
    case rdInt8: return "int8";
    case rdUint8: return "uint8";
    case rdInt32: return "int32";
    case rdUint32: return "uint32";
    case rdInt64: return "int64";
    case rdUint64: return "uint64";
    case rdFloat16: return "float16";
    case rdFloat32: return "float32";
    case rdFloat64: return "float64";
    case rdBfloat16: return "bfloat16";
    case rdNumDataTypes: break;
  }
  return "invalid";
}

const char* rdRedOpName(rdRedOp_t op) {
  switch (op) {
    case rdSum: return "sum";
    case rdProd: return "prod";
    case rdMax: return "max";
    case rdMin: return "min";
    case rdAvg: return "avg";
    case rdNumRedOps: break;
  }
  return "invalid";
}

}  // extern "C"
