// SPDX-License-Identifier: BSD-3-Clause
// State behind the opaque pointers the Net half gives NCCL: listen, send and recv comms,
// requests and memory handles. Fields marked "progress thread" are touched only there.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "libreduce/reduce.h"
#include "nccl_plugin/net_engine.h"
#include "transport/transport.h"

namespace rd::nccl::net {

/** What listen() writes into NCCL's handle: where to connect and which listen comm to join. */
struct NetHandle {
  uint32_t magic;
  uint32_t reserved;
  uint64_t listen_id;
  char address[112];  // "host:port" of the process's listener, NUL-terminated
};
static_assert(sizeof(NetHandle) <= kNcclNetHandleMaxSize, "NCCL's handle is 128 bytes");

/** Header of every message between a send comm and its recv comm. */
struct Frame {
  uint32_t magic;
  uint32_t kind;       // FrameKind
  uint64_t listen_id;  // kHello: the listen comm this connection is for
  int64_t tag;         // kData: NCCL's tag
};
enum FrameKind : uint32_t { kHello = 1, kData = 2 };

struct MemHandle {
  transport::MemRegion region = nullptr;
};

/** One isend or a group of up to kMaxRecvs receives. */
struct Request {
  std::shared_ptr<Request> self;  // NCCL's reference, dropped when test() reports the end
  std::atomic<int> pending{0};    // transfers not finished
  std::atomic<int> status{rdSuccess};
  std::mutex reason_mu;
  std::string reason;
  int n = 0;
  std::array<void*, kMaxRecvs> data{};
  std::array<size_t, kMaxRecvs> capacity{};
  std::array<int, kMaxRecvs> tags{};
  std::array<transport::MemRegion, kMaxRecvs> regions{};
  std::array<bool, kMaxRecvs> matched{};  // progress thread
  std::array<std::atomic<size_t>, kMaxRecvs> sizes{};

  /** Records the first failure; later ones keep it. */
  void fail(rdResult_t error, const std::string& why);
  /** One transfer ended with @p result. */
  void finishOne(rdResult_t result, const char* what);
};

struct SendComm {
  transport::ConnId conn = 0;
  std::string peer;  // "host:port" it connected to
  std::atomic<int> failed{rdSuccess};
  std::mutex reason_mu;
  std::string reason;
};

struct Unexpected {
  int64_t tag = 0;
  transport::Payload payload;
};

struct RecvComm {
  transport::ConnId conn = 0;
  std::string peer;
  rdResult_t failed = rdSuccess;                // progress thread
  std::string reason;                           // progress thread
  std::deque<std::shared_ptr<Request>> posted;  // progress thread: receives still unmatched
  std::deque<Unexpected> unexpected;            // progress thread: messages before their irecv
};

struct ListenComm {
  uint64_t id = 0;
  std::mutex mu;
  std::deque<RecvComm*> ready;  // connected, not yet accepted
};

constexpr uint32_t kHandleMagic = 0x6c724e31;  // "lrN1"
constexpr uint32_t kFrameMagic = 0x6c724e46;   // "lrNF"

}  // namespace rd::nccl::net
