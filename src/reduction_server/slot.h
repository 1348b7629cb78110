// SPDX-License-Identifier: BSD-3-Clause
// One (operation, chunk) on a reducer: the contributions of the ranks, the running result, and
// the result sends. Its memory comes from the BufferPool (one slice per contribution, side by
// side) and goes back once nothing receives into it, reduces in it or sends from it.
//
// Reducing: in arrival order (the default) every contribution is folded into the running result
// as soon as it is here; eager contributions are folded straight from the transport's buffer,
// never copied into their slice first. Deterministic mode lands every contribution in its slice
// and reduces them once, in rank order. Either way at most one reduction of a slot runs at a
// time, on the reducer's executor when it is large (ReduceComm).
//
// Wire compression (kFlagWideSum): the contributions are float32 values rounded to bfloat16 or
// float16. Their running sum is kept in float32 (`acc`, after the slices) and rounded once, into
// the result's slice, by the pass that adds the last contribution.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "protocol/chunking.h"
#include "protocol/wire.h"
#include "reduction_server/buffer_pool.h"
#include "transport/transport.h"

namespace rd::server {

using Clock = std::chrono::steady_clock;

struct Slot {
  wire::Header sig;         // the first contribution's header: what every other one must match
  wire::Geometry geometry;  // of the operation, derived from sig once
  wire::ChunkSpan span;
  size_t bytes = 0;       // one slice
  uint32_t expected = 0;  // contributions to wait for
  uint32_t delivered = 0;
  uint32_t in_flight = 0;       // payloads still being received into the buffer
  uint32_t sends = 0;           // result sends not yet completed
  std::vector<uint8_t> seen;    // header arrived
  std::vector<uint8_t> landed;  // payload fully received
  char* buffer = nullptr;
  size_t buffer_bytes = 0;
  BufferPool* pool = nullptr;
  // Bookkeeping bytes reserved in the pool for this slot, and the communicator's count of what it
  // holds (shared: a slot may outlive its communicator while its last sends complete).
  uint64_t state_bytes = 0;
  std::shared_ptr<uint64_t> comm_held;
  bool dead = false;  // dropped (failed) or finished: nothing may touch it but completions
  Clock::time_point deadline;
  // Its timeline: the first contribution's header, the last contribution landed, the result
  // ready to go (LIBREDUCE_TRACE).
  Clock::time_point first_in, last_in, reduced;

  // The reduction. `result` is the slice that holds the running result (-1: none yet), `folded`
  // how many contributions it holds. `pending` are contributions here and not yet folded (their
  // bytes: a slice, or an eager payload kept in `held` until the fold that reads it is done).
  int result = -1;
  uint32_t folded = 0;
  std::vector<uint32_t> pending_index;
  std::vector<const void*> pending;
  std::vector<transport::Payload> held;
  // Failover: the slice of a held result (kFlagHeldResult: a rank already had the chunk's result
  // from a reducer that was lost), which is sent as the result; -1: none.
  int held_result = -1;
  bool reducing = false;   // a fold is running: its buffers are in use
  bool wide = false;       // kFlagWideSum reduction: the running sum is float32, in acc()
  bool acc_ready = false;  // acc() holds the running sum (else the result's slice does)

  char* slice(uint32_t i) const { return buffer + static_cast<size_t>(i) * bytes; }
  // Contribution @p index is all here.
  void land(uint32_t index) {
    landed[index] = 1;
    ++delivered;
    last_in = Clock::now();
  }
  // The float32 running sum of a wide reduction: after the slices, on a cache line.
  static size_t accOffset(size_t bytes, uint32_t expected) {
    return (bytes * expected + 63) / 64 * 64;
  }
  float* acc() const { return reinterpret_cast<float*>(buffer + accOffset(bytes, expected)); }
  // Slice of @p rank's contribution: its own for reductions, the only one otherwise.
  uint32_t indexOf(uint32_t rank) const { return expected == 1 ? 0 : rank; }
  // Memory goes back only when nothing receives into it, reduces in it or sends from it.
  void releaseIfIdle() {
    if (dead && in_flight == 0 && sends == 0 && !reducing && buffer != nullptr) {
      *comm_held -= buffer_bytes + state_bytes;
      pool->unreserve(state_bytes);
      pool->release(buffer, buffer_bytes);
      buffer = nullptr;
    }
  }
};

}  // namespace rd::server
