// SPDX-License-Identifier: BSD-3-Clause
// What one communicator may hold on a reducer that several jobs share (docs/security.md): its
// state is counted against the reducer's memory limit before it is allocated, and bounded by
// what an honest job can need, so that one tenant fails alone instead of starving the others.
#pragma once

#include <algorithm>
#include <cstdint>

#include "common/limits.h"

namespace rd::server {

struct Quota {
  uint32_t max_communicators = 256;  // communicators served at once
  uint32_t max_ranks = 4096;         // ranks per communicator
  uint32_t memory_percent = 50;      // of the memory limit, per communicator
};

/** Bytes of bookkeeping per chunk slot besides its buffer: the slot, its table entries and its
 *  per-contributor flags. */
constexpr uint64_t slotStateBytes(uint32_t contributors) {
  return 512 + 2ull * contributors;
}

/** Failover's release-round marks kept per communicator: at most this many bytes of flags in
 *  each of the two tables, and never fewer than kMinOpsRemembered operations. */
constexpr uint64_t kMarksBudgetBytes = 256 << 10;
constexpr uint64_t kMinOpsRemembered = 256;
constexpr uint64_t kMaxOpsRemembered = 4096;
constexpr uint64_t opsRemembered(uint32_t nranks) {
  return std::clamp<uint64_t>(kMarksBudgetBytes / std::max<uint32_t>(nranks, 1), kMinOpsRemembered,
                              kMaxOpsRemembered);
}

/** Bytes a communicator of @p nranks holds before its first chunk: per-rank links and queues,
 *  and with failover the release-round marks (each entry a map node and a flag per rank). */
constexpr uint64_t commStateBytes(uint32_t nranks, bool failover) {
  const uint64_t marks = failover ? 2 * opsRemembered(nranks) * (64ull + nranks) : 0;
  return 4096 + 1024ull * nranks + marks;
}

/** Chunk slots one communicator may have open: each waits on a chunk some rank keeps in its
 *  window (LIBREDUCE_WINDOW, at most kMaxWindow per reducer), twice that for slack. More is
 *  a protocol violation, and so is as many contributions waiting for memory. */
constexpr uint64_t maxOpenChunks(uint32_t nranks) {
  return std::max<uint64_t>(1024, 2ull * nranks * limits::kMaxWindow);
}

/** Eager payloads (held by the transport, outside the memory limit) one communicator may have
 *  waiting for memory: its memory share, or every rank's window of chunks up to the default
 *  eager size (LIBREDUCE_EAGER_BYTES, 256 KiB; larger ones wait at their sender), if more. */
constexpr uint64_t kDefaultEagerBytes = 256 << 10;
constexpr uint64_t maxWaitingEagerBytes(uint32_t nranks, uint64_t max_chunk_bytes, uint64_t share) {
  return std::max<uint64_t>(share, static_cast<uint64_t>(nranks) * limits::kMaxWindow *
                                       std::min(max_chunk_bytes, kDefaultEagerBytes));
}

}  // namespace rd::server
