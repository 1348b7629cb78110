/**
 * @file reduce.hpp
 * @brief Thin C++ layer over reduce.h: typed exceptions, type mapping, span-based reductions.
 *
 * Every C call that fails is turned into an rd::Error carrying the status and the detailed
 * message; nothing here adds behaviour beyond what the C API does.
 */
#ifndef LIBREDUCE_REDUCE_HPP
#define LIBREDUCE_REDUCE_HPP

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "libreduce/reduce.h"

namespace rd {

/** Exception thrown for every failed libreduce call. */
class Error : public std::runtime_error {
 public:
  Error(rdResult_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  /** The C status code of the failure. */
  rdResult_t status() const noexcept { return status_; }

 private:
  rdResult_t status_;
};

/** Throws rd::Error when @p status is an error; returns it otherwise (success or in progress). */
inline rdResult_t check(rdResult_t status) {
  if (status < 0) {
    std::string detail = rdGetLastError();
    std::string text = rdGetErrorString(status);
    throw Error(status, detail.empty() ? text : text + ": " + detail);
  }
  return status;
}

/** Maps a C++ element type to its rdDataType_t at compile time. */
template <typename T>
struct DataTypeOf;
template <>
struct DataTypeOf<int8_t> {
  static constexpr rdDataType_t value = rdInt8;
};
template <>
struct DataTypeOf<uint8_t> {
  static constexpr rdDataType_t value = rdUint8;
};
template <>
struct DataTypeOf<int32_t> {
  static constexpr rdDataType_t value = rdInt32;
};
template <>
struct DataTypeOf<uint32_t> {
  static constexpr rdDataType_t value = rdUint32;
};
template <>
struct DataTypeOf<int64_t> {
  static constexpr rdDataType_t value = rdInt64;
};
template <>
struct DataTypeOf<uint64_t> {
  static constexpr rdDataType_t value = rdUint64;
};
template <>
struct DataTypeOf<float> {
  static constexpr rdDataType_t value = rdFloat32;
};
template <>
struct DataTypeOf<double> {
  static constexpr rdDataType_t value = rdFloat64;
};

/**
 * Reduces equally sized spans into @p dst (see rdLocalReduce for the semantics).
 * Throws rd::Error(rdInvalidArgument) when a source is shorter than @p dst.
 */
template <typename T>
void localReduce(std::span<const std::span<const T>> srcs, std::span<T> dst, rdRedOp_t op) {
  std::vector<const void*> ptrs;
  ptrs.reserve(srcs.size());
  for (const auto& s : srcs) {
    if (s.size() < dst.size()) {
      throw Error(rdInvalidArgument, "rd::localReduce: a source is shorter than the destination");
    }
    ptrs.push_back(s.data());
  }
  check(rdLocalReduce(ptrs.data(), static_cast<int>(ptrs.size()), dst.data(), dst.size(),
                      DataTypeOf<T>::value, op));
}

/** Library version as "major.minor.patch". */
inline std::string versionString() {
  int code = 0;
  check(rdGetVersion(&code));
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

}  // namespace rd

#endif  // LIBREDUCE_REDUCE_HPP
