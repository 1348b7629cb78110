// SPDX-License-Identifier: BSD-3-Clause
#include "common/dtype.h"

#include <iterator>

namespace rd {
namespace {

struct DtypeInfo {
  rdDataType_t dtype;
  size_t size;
  const char* name;
};

// Indexed by rdDataType_t.
constexpr DtypeInfo kDtypes[] = {
    {rdInt8, 1, "int8"},         {rdUint8, 1, "uint8"},     {rdInt32, 4, "int32"},
    {rdUint32, 4, "uint32"},     {rdInt64, 8, "int64"},     {rdUint64, 8, "uint64"},
    {rdFloat16, 2, "float16"},   {rdFloat32, 4, "float32"}, {rdFloat64, 8, "float64"},
    {rdBfloat16, 2, "bfloat16"},
};
static_assert(std::size(kDtypes) == rdNumDataTypes, "one row per rdDataType_t");

// Indexed by rdRedOp_t.
constexpr const char* kOpNames[] = {"sum", "prod", "max", "min", "avg"};
static_assert(std::size(kOpNames) == rdNumRedOps, "one name per rdRedOp_t");

constexpr bool rowsInEnumOrder() {
  for (int i = 0; i < rdNumDataTypes; ++i) {
    if (kDtypes[i].dtype != i) return false;
  }
  return true;
}
static_assert(rowsInEnumOrder(), "kDtypes rows must follow rdDataType_t");

}  // namespace

size_t dtypeSize(rdDataType_t dtype) {
  return validDtype(dtype) ? kDtypes[dtype].size : 0;
}

const char* dtypeName(rdDataType_t dtype) {
  return validDtype(dtype) ? kDtypes[dtype].name : "invalid";
}

const char* redOpName(rdRedOp_t op) {
  return validRedOp(op) ? kOpNames[op] : "invalid";
}

}  // namespace rd

extern "C" {

size_t rdDataTypeSize(rdDataType_t dtype) {
  return rd::dtypeSize(dtype);
}

const char* rdDataTypeName(rdDataType_t dtype) {
  return rd::dtypeName(dtype);
}

const char* rdRedOpName(rdRedOp_t op) {
  return rd::redOpName(op);
}

}  // extern "C"
