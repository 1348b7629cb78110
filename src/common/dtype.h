// SPDX-License-Identifier: BSD-3-Clause
// The element types and reduction operators as data: size and name of each, defined once for
// the C API (rdDataTypeSize, rdDataTypeName, rdRedOpName), the wire protocol and the kernels.
#pragma once

#include <cstddef>

#include "libreduce/reduce.h"

namespace rd {

/** Bytes per element of @p dtype; 0 when @p dtype is not a valid type. */
size_t dtypeSize(rdDataType_t dtype);

/** "float32", "bfloat16", ...; "invalid" when @p dtype is not a valid type. */
const char* dtypeName(rdDataType_t dtype);

/** "sum", "avg", ...; "invalid" when @p op is not a valid operator. */
const char* redOpName(rdRedOp_t op);

/** True for a value of the rdDataType_t enum (not rdNumDataTypes). */
inline bool validDtype(int dtype) {
  return dtype >= 0 && dtype < rdNumDataTypes;
}

/** True for a value of the rdRedOp_t enum (not rdNumRedOps). */
inline bool validRedOp(int op) {
  return op >= 0 && op < rdNumRedOps;
}

}  // namespace rd
