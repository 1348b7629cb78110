// SPDX-License-Identifier: BSD-3-Clause
// One collective operation in flight on a communicator. Operations live on the progress thread:
// they start, receive the messages addressed to their sequence number, watch their own timeout,
// and complete their Request exactly once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "collectives/request.h"
#include "protocol/wire.h"
#include "transport/transport.h"

namespace rd::coll {

class Communicator;
using Clock = std::chrono::steady_clock;

/** The collectives of the C API. */
enum class Collective : uint8_t { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kBarrier };

/** How a collective travels on the wire: a barrier is an empty all-reduce. */
inline wire::Coll wireColl(Collective c) {
  switch (c) {
    case Collective::kReduceScatter: return wire::Coll::kReduceScatter;
    case Collective::kAllGather: return wire::Coll::kAllGather;
    case Collective::kBroadcast: return wire::Coll::kBroadcast;
    case Collective::kAllReduce:
    case Collective::kBarrier: break;
  }
  return wire::Coll::kAllReduce;
}

/** What the caller asked for. */
struct OpDesc {
  Collective coll = Collective::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  uint64_t count = 0;  // all-reduce / broadcast: elements; RS: recvcount; AG: sendcount
  rdDataType_t dtype = rdFloat32;
  rdRedOp_t op = rdSum;
  uint32_t root = 0;
  rdAlgorithm_t algorithm = rdAlgoDefault;  // chosen by selectAlgorithm when posted
  // For collectives run as a ring all-reduce (ring_composite.h): memory the operation owns,
  // and what turns its result into the caller's (run before the request completes).
  std::shared_ptr<void> scratch;
  std::function<void()> on_success;
};

class Operation : public std::enable_shared_from_this<Operation> {
 public:
  Operation(Communicator* comm, OpDesc desc, uint64_t seq, std::shared_ptr<Request> request)
      : comm_(comm), desc_(std::move(desc)), seq_(seq), request_(std::move(request)) {}
  virtual ~Operation() = default;

  /** Sends what can be sent; may complete at once (count 0, one rank). */
  virtual void start() = 0;

  /** A message for this operation's sequence number. */
  virtual void onMessage(transport::ConnId conn, const wire::Header& h,
                         transport::Payload& payload) = 0;

  /** Called about every 100 ms: fails the operation when its peers went silent. */
  virtual void onTick(Clock::time_point now) = 0;

  /** Fails the operation (communicator failed, aborted, error from a reducer). */
  virtual void fail(rdResult_t status, const std::string& reason) = 0;

  /** True once the request completed and no transfer touches the user's buffers any more. */
  virtual bool finished() const = 0;

  /**
   * Whether losing @p conn, a ring neighbour's connection, breaks this operation (those that do
   * not use the ring never need one).
   */
  virtual bool needsConnection(transport::ConnId /*conn*/) const { return false; }

  /**
   * Data reducer @p m was lost and the communicator goes on without it (docs/failover.md): the
   * chunks it served go to their new reducers. Only operations that use reducers act.
   */
  virtual void onReducerLost(uint32_t /*m*/) {}

  uint64_t seq() const { return seq_; }

 protected:
  Communicator* comm_;
  OpDesc desc_;
  uint64_t seq_;
  std::shared_ptr<Request> request_;
};

}  // namespace rd::coll
