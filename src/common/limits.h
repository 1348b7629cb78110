// SPDX-License-Identifier: BSD-3-Clause
// Every numeric limit of libreduce, defined once: the settings table's ranges, the C API's
// argument checks, the wire protocol's validation, the reducer and the Python bindings all take
// them from here.
#pragma once

#include <cstdint>

namespace rd::limits {

/** Ranks in one communicator. */
constexpr uint32_t kMaxRanks = 65536;
/** Reducers one communicator spreads its chunks over. */
constexpr uint32_t kMaxReducers = 1024;

/** Range of LIBREDUCE_CHUNK_BYTES, and so of any data payload on the wire. */
constexpr uint64_t kMinChunkBytes = 4096;
constexpr uint64_t kMaxChunkBytes = 64ull << 20;

/** Chunks in flight per reducer (LIBREDUCE_WINDOW). */
constexpr uint32_t kMinWindow = 1;
constexpr uint32_t kMaxWindow = 64;

/** Longest wait for a peer (LIBREDUCE_TIMEOUT_MS). */
constexpr uint32_t kMinTimeoutMs = 100;
// A heartbeat period (LIBREDUCE_HEARTBEAT_MS) is at least this: peers look at their clocks once
// per progress tick (100 ms), and a period must hold several heartbeats.
constexpr uint32_t kMinHeartbeatMs = 200;
/** The heartbeat period a setting of @p ms gives: 0 (none) or at least kMinHeartbeatMs. */
constexpr uint32_t heartbeatPeriodMs(uint32_t ms) {
  return ms == 0 ? 0 : (ms < kMinHeartbeatMs ? kMinHeartbeatMs : ms);
}
constexpr uint32_t kMaxTimeoutMs = 86400000;

/** Largest element count one operation may announce: keeps every byte offset below 2^62. */
constexpr uint64_t kMaxCount = 1ull << 58;

}  // namespace rd::limits
