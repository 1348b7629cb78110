// SPDX-License-Identifier: BSD-3-Clause
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

/** An asynchronous operation; waits for it (bounded by the library's timeouts) when destroyed. */
class Request {
 public:
  explicit Request(rdRequest_t request) : request_(request) {}
  Request(Request&& other) noexcept : request_(other.request_) { other.request_ = nullptr; }
  Request& operator=(Request&&) = delete;
  Request(const Request&) = delete;
  ~Request() {
    if (request_ != nullptr) {
      rdRequestWait(request_, -1);
      rdRequestFree(request_);
    }
  }
  /** True when finished; throws rd::Error when the operation failed. */
  bool test() { return check(rdRequestTest(request_)) == rdSuccess; }
  /** Waits up to @p timeout_ms (-1 = until it ends); true when finished, throws on failure. */
  bool wait(int timeout_ms = -1) { return check(rdRequestWait(request_, timeout_ms)) == rdSuccess; }
  /** The rank a finished receive took its message from. */
  int source() const {
    int s = -1;
    check(rdRequestSource(request_, &s));
    return s;
  }

 private:
  rdRequest_t request_;
};

/** Owns an rdComm_t; collectives throw rd::Error with the library's message on failure. */
class Communicator {
 public:
  /** From the environment (LIBREDUCE_REDUCERS, RANK, WORLD_SIZE, ...). */
  static Communicator fromEnv() {
    rdComm_t comm = nullptr;
    check(rdCommInitFromEnv(&comm));
    return Communicator(comm);
  }
  /** NCCL style: every rank passes the id rank 0 got from rdGetUniqueId. */
  Communicator(int nranks, const rdUniqueId& id, int rank) {
    check(rdCommInitRank(&comm_, nranks, id, rank));
  }
  Communicator(Communicator&& other) noexcept : comm_(other.comm_) { other.comm_ = nullptr; }
  Communicator& operator=(Communicator&&) = delete;
  Communicator(const Communicator&) = delete;
  ~Communicator() {
    if (comm_ != nullptr) rdCommDestroy(comm_);
  }

  int rank() const {
    int r = 0;
    check(rdCommUserRank(comm_, &r));
    return r;
  }
  int size() const {
    int n = 0;
    check(rdCommCount(comm_, &n));
    return n;
  }
  template <typename T>
  void allReduce(const T* send, T* recv, size_t count, rdRedOp_t op = rdSum) {
    check(rdAllReduce(send, recv, count, DataTypeOf<T>::value, op, comm_));
  }
  template <typename T>
  Request allReduceAsync(const T* send, T* recv, size_t count, rdRedOp_t op = rdSum) {
    rdRequest_t request = nullptr;
    check(rdAllReduceAsync(send, recv, count, DataTypeOf<T>::value, op, comm_, &request));
    return Request(request);
  }
  template <typename T>
  void reduceScatter(const T* send, T* recv, size_t recvcount, rdRedOp_t op = rdSum) {
    check(rdReduceScatter(send, recv, recvcount, DataTypeOf<T>::value, op, comm_));
  }
  template <typename T>
  void allGather(const T* send, T* recv, size_t sendcount) {
    check(rdAllGather(send, recv, sendcount, DataTypeOf<T>::value, comm_));
  }
  template <typename T>
  void broadcast(const T* send, T* recv, size_t count, int root) {
    check(rdBroadcast(send, recv, count, DataTypeOf<T>::value, root, comm_));
  }
  void barrier() { check(rdBarrier(comm_)); }
  /** Point-to-point (rdSend): @p count elements to rank @p peer under @p tag. */
  template <typename T>
  void send(const T* data, size_t count, int peer, int tag = 0) {
    check(rdSend(data, count, DataTypeOf<T>::value, peer, tag, comm_));
  }
  /** Receives a message of exactly @p count elements (peer RD_ANY_SOURCE: any); its sender. */
  template <typename T>
  int recv(T* data, size_t count, int peer, int tag = 0) {
    int source = -1;
    check(rdRecv(data, count, DataTypeOf<T>::value, peer, tag, comm_, &source));
    return source;
  }
  template <typename T>
  Request sendAsync(const T* data, size_t count, int peer, int tag = 0) {
    rdRequest_t request = nullptr;
    check(rdSendAsync(data, count, DataTypeOf<T>::value, peer, tag, comm_, &request));
    return Request(request);
  }
  template <typename T>
  Request recvAsync(T* data, size_t count, int peer, int tag = 0) {
    rdRequest_t request = nullptr;
    check(rdRecvAsync(data, count, DataTypeOf<T>::value, peer, tag, comm_, &request));
    return Request(request);
  }
  /** Fails pending operations and stops talking to peers; returns at once. */
  void abort() { check(rdCommAbort(comm_)); }
  rdComm_t get() const { return comm_; }

 private:
  explicit Communicator(rdComm_t comm) : comm_(comm) {}
  rdComm_t comm_ = nullptr;
};

}  // namespace rd

#endif  // LIBREDUCE_REDUCE_HPP
