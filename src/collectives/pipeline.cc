// SPDX-License-Identifier: BSD-3-Clause
#include "collectives/pipeline.h"

#include <algorithm>

#include "collectives/communicator.h"
#include "common/limits.h"

namespace rd::coll {

namespace {

uint64_t ceilDiv(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

// The chunk-size cap of an auto-sized communicator: each rank's window of chunks toward one
// reducer is its share of the ingress budget, in whole 4 KiB pages.
uint64_t autoCap(const CommConfig& config) {
  if (config.reducers_on_loopback) return kLoopbackChunkBytes;
  const uint64_t n = std::max<uint32_t>(config.nranks, 1);
  const uint64_t share = config.ingress_bytes / (n * effectiveWindow(config));
  const uint64_t page = limits::kMinChunkBytes;
  return std::clamp(share / page * page, page, kAutoMaxChunkBytes);
}

}  // namespace

uint32_t effectiveWindow(const CommConfig& config) {
  return config.window != 0 ? config.window : kAutoWindow;
}

uint64_t maxChunkBytes(const CommConfig& config) {
  return config.chunk_bytes != 0 ? config.chunk_bytes : autoCap(config);
}

uint64_t ringPieceBytes(const CommConfig& config) {
  return config.chunk_bytes != 0 ? config.chunk_bytes : kRingAutoPieceBytes;
}

Pipeline reductionServerPipeline(const CommConfig& config, uint64_t buffer_bytes,
                                 size_t elem_size) {
  const uint64_t reducers = std::max<size_t>(config.reducers.size(), 1);
  elem_size = std::max<size_t>(elem_size, 1);
  Pipeline p;
  p.window = effectiveWindow(config);
  const uint64_t per_reducer = ceilDiv(buffer_bytes, reducers);
  uint64_t chunk = 0;
  if (config.chunk_bytes != 0 || config.reducers_on_loopback) {
    // An explicit size, or one host's, is used as it is; a buffer still spreads over every
    // reducer.
    chunk = std::min(maxChunkBytes(config), std::max(per_reducer, kMinPartBytes));
  } else {
    const uint64_t cut = std::max(
        {ceilDiv(per_reducer, kDepth), std::min(per_reducer, kMinCutChunkBytes), kMinPartBytes});
    chunk = std::min(autoCap(config), cut);
  }
  p.chunk_bytes = std::max<uint64_t>(elem_size, chunk / elem_size * elem_size);
  return p;
}

}  // namespace rd::coll
