// SPDX-License-Identifier: BSD-3-Clause
#include "buffer_args.h"

#include <array>
#include <string_view>

#include "libreduce/reduce.hpp"

namespace py = pybind11;

namespace rd::python {
namespace {

// The struct-module format of a buffer, without byte-order or alignment prefixes.
std::string_view bareFormat(const std::string& format) {
  std::string_view f = format;
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<' || f[0] == '!')) f.remove_prefix(1);
  return f;
}

// Integer formats differ in size between platforms ('l' is 4 or 8 bytes); go by item size.
bool dataTypeOfFormat(std::string_view format, size_t itemsize, rdDataType_t* dtype) {
  if (format.size() != 1) return false;
  char c = format[0];
  bool is_signed = c == 'b' || c == 'h' || c == 'i' || c == 'l' || c == 'q' || c == 'n';
  bool is_unsigned = c == 'B' || c == 'H' || c == 'I' || c == 'L' || c == 'Q' || c == 'N';
  if (is_signed || is_unsigned) {
    switch (itemsize) {
      case 1: *dtype = is_signed ? rdInt8 : rdUint8; return true;
      case 4: *dtype = is_signed ? rdInt32 : rdUint32; return true;
      case 8: *dtype = is_signed ? rdInt64 : rdUint64; return true;
      default: return false;  // 16-bit integers have no kernel
    }
  }
  if (c == 'c' || c == '?') {
    *dtype = rdUint8;
    return true;
  }
  if (c == 'e' && itemsize == 2) {
    *dtype = rdFloat16;
    return true;
  }
  if (c == 'f' && itemsize == 4) {
    *dtype = rdFloat32;
    return true;
  }
  if (c == 'd' && itemsize == 8) {
    *dtype = rdFloat64;
    return true;
  }
  return false;
}

// "int16 (format 'h')" for messages.
std::string formatName(const py::buffer_info& info) {
  std::string_view f = bareFormat(info.format);
  std::string bits = std::to_string(info.itemsize * 8);
  std::string kind = "format";
  if (f.size() == 1 && std::string_view("bhilqn").find(f[0]) != std::string_view::npos) {
    kind = "int" + bits;
  } else if (f.size() == 1 && std::string_view("BHILQN").find(f[0]) != std::string_view::npos) {
    kind = "uint" + bits;
  } else if (f.size() == 1 && std::string_view("efd").find(f[0]) != std::string_view::npos) {
    kind = "float" + bits;
  }
  return kind + " (format '" + info.format + "')";
}

bool isCContiguous(const py::buffer_info& info) {
  py::ssize_t expected = info.itemsize;
  for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
    if (info.shape[d] != 1 && info.strides[d] != expected) return false;
    expected *= info.shape[d];
  }
  return true;
}

}  // namespace

rdDataType_t dataTypeByName(const std::string& name) {
  for (int t = 0; t < rdNumDataTypes; ++t) {
    auto dtype = static_cast<rdDataType_t>(t);
    if (name == rdDataTypeName(dtype)) return dtype;
  }
  throw Error(rdInvalidArgument, "unknown dtype '" + name +
                                     "': expected int8, uint8, int32, uint32, int64, uint64, "
                                     "float16, float32, float64 or bfloat16");
}

rdRedOp_t redOpByName(const std::string& name) {
  if (name == "product") return rdProd;
  for (int o = 0; o < rdNumRedOps; ++o) {
    auto op = static_cast<rdRedOp_t>(o);
    if (name == rdRedOpName(op)) return op;
  }
  throw Error(rdInvalidArgument,
              "unknown reduction op '" + name + "': expected sum, avg, prod, min or max");
}

BufferArg bufferArg(const py::handle& object, const char* name, bool writable,
                    const std::string& dtype_override) {
  if (!PyObject_CheckBuffer(object.ptr())) {
    throw Error(rdInvalidArgument,
                std::string(name) +
                    " must support the buffer protocol (a numpy "
                    "array, bytearray, memoryview...), not " +
                    std::string(py::str(py::type::handle_of(object).attr("__name__"))));
  }
  BufferArg arg;
  try {
    arg.info = std::make_unique<py::buffer_info>(
        py::reinterpret_borrow<py::buffer>(object).request(writable));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_BufferError)) throw;
    throw Error(rdInvalidArgument, std::string(name) + " cannot be used" +
                                       (writable ? " as an output (it is read-only)" : "") + ": " +
                                       e.what());
  }
  const py::buffer_info& info = *arg.info;
  if (!isCContiguous(info)) {
    throw Error(rdInvalidArgument, std::string(name) +
                                       " must be C-contiguous (numpy: "
                                       "np.ascontiguousarray)");
  }
  if (dtype_override.empty()) {
    if (!dataTypeOfFormat(bareFormat(info.format), static_cast<size_t>(info.itemsize),
                          &arg.dtype)) {
      throw Error(rdUnsupported, std::string(name) + " holds " + formatName(info) +
                                     " elements, which libreduce cannot reduce; supported: int8, "
                                     "uint8, int32, uint32, int64, uint64, float16, float32, "
                                     "float64 (bfloat16 through dtype='bfloat16')");
    }
  } else {
    arg.dtype = dataTypeByName(dtype_override);
  }
  size_t bytes = static_cast<size_t>(info.size) * static_cast<size_t>(info.itemsize);
  size_t element = rdDataTypeSize(arg.dtype);
  if (bytes % element != 0) {
    throw Error(rdInvalidArgument, std::string(name) + " holds " + std::to_string(bytes) +
                                       " bytes, not a whole number of " +
                                       rdDataTypeName(arg.dtype) + " elements");
  }
  arg.data = info.ptr;
  arg.count = bytes / element;
  return arg;
}

}  // namespace rd::python
