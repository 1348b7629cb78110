// SPDX-License-Identifier: BSD-3-Clause
// How an operation's buffer is cut into chunks, which reducer serves each chunk, which ranks
// contribute to it and which receive its result. Workers and reducers both derive everything
// from the same few header fields, so they agree without exchanging any table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/wire.h"

namespace rd::wire {

// Largest element count an operation may announce: keeps every byte offset below 2^62.
constexpr uint64_t kMaxCount = limits::kMaxCount;

struct Geometry {
  Coll coll = Coll::kAllReduce;
  uint64_t count = 0;  // all-reduce / broadcast: whole buffer; RS / AG: per rank
  uint32_t nranks = 1;
  uint32_t root = 0;  // broadcast
  uint64_t chunk_elems = 1;
  uint64_t chunks_per_rank = 1;  // RS / AG: each rank's part is chunked on its own
  uint64_t nchunks = 1;          // always >= 1: a zero-count operation still has one chunk
};

struct ChunkSpan {
  uint64_t offset = 0;  // first element in the operation's full buffer
  uint64_t elems = 0;
  uint32_t owner = 0;  // RS / AG: the rank whose part holds the chunk
};

/**
 * Geometry for an operation cut into chunks of @p chunk_bytes (rounded down to whole elements,
 * at least one). Reduce-scatter and all-gather cut each rank's part on its own.
 */
Geometry makeGeometry(Coll coll, uint64_t count, uint32_t nranks, uint32_t root,
                      uint64_t chunk_bytes, size_t elem_size);

/** Elements of chunk @p k (k < nchunks). */
ChunkSpan chunkSpan(const Geometry& g, uint64_t k);

/** Does @p rank send a contribution for chunk @p k? */
bool contributes(const Geometry& g, uint64_t k, uint32_t rank);

/** Does @p rank receive chunk @p k's result (else, when it contributed, an ack)? */
bool receivesResult(const Geometry& g, uint64_t k, uint32_t rank);

/** Contributions a chunk waits for: every rank for all-reduce / reduce-scatter, else one. */
uint32_t contributorCount(const Geometry& g);

/** Reducer that serves chunk @p k of operation @p seq (spreads consecutive operations). */
inline uint32_t reducerFor(uint64_t k, uint64_t seq, uint32_t nreducers) {
  return static_cast<uint32_t>((k + seq) % nreducers);
}

/**
 * Reducer that serves chunk @p k of operation @p seq when only the reducers with
 * @p alive[m] != 0 are left (docs/failover.md): reducerFor while that one is alive, otherwise
 * the live reducer with the highest hash of (seq, k, reducer). A chunk moves only when its
 * reducer is lost, and to the same survivor whatever order the losses were learned in: two
 * ranks whose live sets differ agree on every chunk whose reducer both think alive.
 * @p alive must hold at least one live reducer.
 */
uint32_t routeChunk(uint64_t k, uint64_t seq, const std::vector<uint8_t>& alive);

/** What a reducer knows about a communicator, to check frames against. */
struct CommShape {
  uint64_t comm_id = 0;
  uint32_t epoch = 0;
  uint32_t nranks = 0;
  uint64_t max_chunk_bytes = 0;  // no operation's chunks are larger (what memory is sized for)
  uint32_t spread = 1;           // reducers the workers spread an operation over
  uint32_t algorithm = 0;        // rdAlgorithm_t the ranks resolved (the join checks they agree)
};

/**
 * Full check of a kData frame from @p conn_rank (the rank its connection authenticated as)
 * against the communicator: identity, epoch, rank, collective, dtype/op, count range, chunk
 * size within the cap, chunk index in range, sender is a contributor, payload length == chunk
 * elements x element size.
 * On success fills @p geometry and @p span.
 */
rdResult_t checkDataFrame(const Header& h, const CommShape& shape, uint32_t conn_rank,
                          Geometry* geometry, ChunkSpan* span, std::string* why);

}  // namespace rd::wire
