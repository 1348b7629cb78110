// SPDX-License-Identifier: BSD-3-Clause
// Turning Python buffer-protocol objects (numpy arrays, bytearray, memoryview, array.array...)
// into the pointer, element count and element type a libreduce collective takes.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <string>

#include "libreduce/reduce.h"

namespace rd::python {

/** One buffer argument of a collective, held (and its exporter locked) while in use. */
struct BufferArg {
  std::unique_ptr<pybind11::buffer_info> info;
  void* data = nullptr;
  size_t count = 0;  // elements
  rdDataType_t dtype = rdUint8;
};

/**
 * Requests a C-contiguous view of @p object. @p name names the argument in errors;
 * @p writable asks for a writable view. @p dtype_override ("" = take the buffer's format) names
 * the element type for buffers whose format has no match (bfloat16 in a uint16 array).
 * Throws rd::Error(rdInvalidArgument) with a message naming the argument.
 */
BufferArg bufferArg(const pybind11::handle& object, const char* name, bool writable,
                    const std::string& dtype_override);

/** The libreduce element type with this name ("float32", "bfloat16", ...); throws if none. */
rdDataType_t dataTypeByName(const std::string& name);

/** The reduction operator with this name ("sum", "avg", "prod"/"product", "min", "max"). */
rdRedOp_t redOpByName(const std::string& name);

}  // namespace rd::python
