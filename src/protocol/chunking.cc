// SPDX-License-Identifier: BSD-3-Clause
#include "protocol/chunking.h"

#include <algorithm>

#include "common/dtype.h"
#include "common/status.h"

namespace rd::wire {

namespace {
uint64_t ceilDiv(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

rdResult_t reject(std::string* why, std::string text) {
  *why = std::move(text);
  return rdProtocolError;
}
}  // namespace

Geometry makeGeometry(Coll coll, uint64_t count, uint32_t nranks, uint32_t root,
                      uint64_t chunk_bytes, size_t elem_size) {
  Geometry g;
  g.coll = coll;
  g.count = count;
  g.nranks = std::max<uint32_t>(nranks, 1);
  g.root = root;
  elem_size = std::max<size_t>(elem_size, 1);
  g.chunk_elems = std::max<uint64_t>(1, chunk_bytes / elem_size);
  uint64_t per_part = std::max<uint64_t>(1, ceilDiv(count, g.chunk_elems));
  bool per_rank = coll == Coll::kReduceScatter || coll == Coll::kAllGather;
  g.chunks_per_rank = per_rank ? per_part : 0;
  g.nchunks = per_rank ? per_part * g.nranks : per_part;
  return g;
}

ChunkSpan chunkSpan(const Geometry& g, uint64_t k) {
  ChunkSpan s;
  uint64_t local = k;
  if (g.chunks_per_rank != 0) {
    s.owner = static_cast<uint32_t>(k / g.chunks_per_rank);
    local = k % g.chunks_per_rank;
  }
  uint64_t start = local * g.chunk_elems;
  s.elems = start >= g.count ? 0 : std::min(g.chunk_elems, g.count - start);
  s.offset = static_cast<uint64_t>(s.owner) * g.count + start;
  return s;
}

bool contributes(const Geometry& g, uint64_t k, uint32_t rank) {
  switch (g.coll) {
    case Coll::kAllReduce:
    case Coll::kReduceScatter: return true;
    case Coll::kAllGather: return chunkSpan(g, k).owner == rank;
    case Coll::kBroadcast: return rank == g.root;
  }
  return false;
}

bool receivesResult(const Geometry& g, uint64_t k, uint32_t rank) {
  switch (g.coll) {
    case Coll::kAllReduce: return true;
    case Coll::kReduceScatter: return chunkSpan(g, k).owner == rank;
    // The source of a gathered or broadcast chunk already holds it.
    case Coll::kAllGather: return chunkSpan(g, k).owner != rank;
    case Coll::kBroadcast: return rank != g.root;
  }
  return false;
}

uint32_t contributorCount(const Geometry& g) {
  return (g.coll == Coll::kAllReduce || g.coll == Coll::kReduceScatter) ? g.nranks : 1;
}

rdResult_t checkDataFrame(const Header& h, const CommShape& shape, uint32_t conn_rank,
                          Geometry* geometry, ChunkSpan* span, std::string* why) {
  if (h.type != static_cast<uint8_t>(MsgType::kData)) return reject(why, "not a data frame");
  if (shape.nranks == 0 || h.dtype >= rdNumDataTypes || h.op >= rdNumRedOps ||
      h.coll > static_cast<uint8_t>(Coll::kLast)) {
    return reject(why, "frame fields out of range");
  }
  if (h.comm_id != shape.comm_id) return reject(why, "frame for another communicator");
  if (h.epoch != shape.epoch) {
    return reject(why, "stale epoch " + std::to_string(h.epoch) + " (current " +
                           std::to_string(shape.epoch) + ")");
  }
  if (h.nranks != shape.nranks) return reject(why, "rank count differs from the join");
  if (h.rank != conn_rank) {
    return reject(why, "rank " + std::to_string(h.rank) + " sent on the connection of rank " +
                           std::to_string(conn_rank));
  }
  if (h.count > kMaxCount) return reject(why, "element count over the limit");
  if (h.coll == static_cast<uint8_t>(Coll::kBroadcast) && h.root >= h.nranks) {
    return reject(why, "broadcast root out of range");
  }
  size_t esize = dtypeSize(static_cast<rdDataType_t>(h.dtype));
  if (h.coll == static_cast<uint8_t>(Coll::kReduceScatter) ||
      h.coll == static_cast<uint8_t>(Coll::kAllGather)) {
    if (h.count > kMaxCount / h.nranks) return reject(why, "element count over the limit");
  }
  if (h.chunk_bytes < esize || h.chunk_bytes > shape.max_chunk_bytes) {
    return reject(why, "chunk size " + std::to_string(h.chunk_bytes) +
                           " out of range (1 element.." + std::to_string(shape.max_chunk_bytes) +
                           " bytes)");
  }
  *geometry =
      makeGeometry(static_cast<Coll>(h.coll), h.count, h.nranks, h.root, h.chunk_bytes, esize);
  if (h.chunk >= geometry->nchunks) {
    return reject(why, "chunk " + std::to_string(h.chunk) + " out of range (" +
                           std::to_string(geometry->nchunks) + " chunks)");
  }
  if (!contributes(*geometry, h.chunk, h.rank)) {
    return reject(why, "rank " + std::to_string(h.rank) + " does not contribute to chunk " +
                           std::to_string(h.chunk));
  }
  *span = chunkSpan(*geometry, h.chunk);
  if (h.payload_bytes != span->elems * esize) {
    return reject(why, "payload of " + std::to_string(h.payload_bytes) + " bytes, chunk needs " +
                           std::to_string(span->elems * esize));
  }
  return rdSuccess;
}

namespace {
// splitmix64's finalizer: every input bit moves every output bit.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

uint32_t routeChunk(uint64_t k, uint64_t seq, const std::vector<uint8_t>& alive) {
  const auto n = static_cast<uint32_t>(alive.size());
  uint32_t home = reducerFor(k, seq, n);
  if (alive[home] != 0) return home;
  uint32_t best = home;
  uint64_t best_weight = 0;
  const uint64_t key = mix(mix(seq) ^ k);
  for (uint32_t m = 0; m < n; ++m) {
    if (alive[m] == 0) continue;
    uint64_t weight = mix(key ^ (static_cast<uint64_t>(m) << 32 | m));
    if (best == home || weight > best_weight) {
      best = m;
      best_weight = weight;
    }
  }
  return best;
}

}  // namespace rd::wire
