// SPDX-License-Identifier: BSD-3-Clause
// How an operation is pipelined through the reducers: its chunk size and how many chunks each
// rank keeps in flight per reducer, chosen per operation from its size, the ranks and the
// reducers (explicit LIBREDUCE_CHUNK_BYTES / LIBREDUCE_WINDOW win).
//
// Why these choices (measured on the emulated cluster, bench/results):
//   - A reducer answers a chunk only once every rank's copy of it is in, so an operation pays a
//     fill and a drain: what is in flight when the last chunk leaves, about (window + 1) chunks
//     per reducer. With D chunks per reducer that costs about (window + 1) / D of the operation:
//     buffers are cut into at least kDepth chunks per reducer (128: about 4%; 8 left 16 MiB at
//     8 ranks on 100 Mbit/s links at 0.92 of the line rate, 128 at 0.96).
//   - n ranks send to each reducer at once. Everything they keep in flight queues at the
//     reducer's link (incast): past the link's queue, packets drop and TCP backs off. Each rank
//     keeps window x chunk <= LIBREDUCE_INGRESS_BYTES / n in flight per reducer.
//   - A window of 4 chunks covers a chunk's round trip (its send, the other ranks' copies, its
//     result) with one to spare; more only lengthens the queues.
//   - On one host (every reducer at a loopback address) no link is the limit: the CPUs are,
//     and a chunk costs each process it passes through system calls and a wake-up whatever its
//     size (on the 2-core benchmark machine about 50 us of the operation's time per chunk and
//     rank). Chunks are then kLoopbackChunkBytes whatever the depth: 4 ranks and 2 reducers
//     ran 1 MiB in 1.8 ms with them against 5.4 ms with the depth rule's 16 KiB chunks
//     (bench/results/latency-loopback-2026-12-05-chunks).
#pragma once

#include <cstddef>
#include <cstdint>

namespace rd::coll {

struct CommConfig;

struct Pipeline {
  uint64_t chunk_bytes = 0;  // goes in every frame of the operation (wire::Header::chunk_bytes)
  uint32_t window = 0;       // chunks in flight per reducer
};

/** Chunks per reducer a buffer is cut into at least (the fill / drain argument above). */
constexpr uint32_t kDepth = 128;
/** Window when LIBREDUCE_WINDOW is auto. */
constexpr uint32_t kAutoWindow = 4;
/**
 * Chunk of an auto-sized operation on one host: of 32 KiB to 256 KiB, 128 KiB took the least
 * time from 128 KiB to 8 MiB; 256 KiB chunks queue 4 MiB at each reducer and ran slower.
 */
constexpr uint64_t kLoopbackChunkBytes = 128 << 10;
/** Largest chunk an auto-sized operation uses. */
constexpr uint64_t kAutoMaxChunkBytes = 1ull << 20;
/**
 * Smallest chunk a buffer is cut into for depth, and smallest part of a small buffer given to
 * a reducer: a chunk costs each process it passes through a message (about 10 us of CPU on
 * the benchmark machine: syscalls and a wake-up), which below these sizes outweighs what the
 * pipelining or the extra reducer's link saves (bench/results: 4 KiB at 8 ranks took 1.4 ms as
 * 8 chunks of 512 B, 0.5 ms as one chunk). A buffer under kMinCutChunkBytes per reducer goes to
 * as many reducers as get kMinPartBytes each.
 */
constexpr uint64_t kMinCutChunkBytes = 16 << 10;
constexpr uint64_t kMinPartBytes = 4 << 10;

/**
 * Chunk size and window for an operation moving @p buffer_bytes per rank (the whole buffer:
 * all-reduce and broadcast count x element, reduce-scatter and all-gather count x element x
 * ranks) through @p config's reducers. The chunk is a whole number of @p elem_size elements.
 */
Pipeline reductionServerPipeline(const CommConfig& config, uint64_t buffer_bytes, size_t elem_size);

/**
 * The largest chunk any operation of @p config uses: what a rank announces at join and each
 * reducer sizes its memory check by.
 */
uint64_t maxChunkBytes(const CommConfig& config);

/**
 * Bytes per piece of a ring all-reduce: LIBREDUCE_CHUNK_BYTES, or kRingAutoPieceBytes when auto,
 * which the default LIBREDUCE_EAGER_BYTES sends eagerly: a piece that waited for a rendezvous
 * round trip would queue behind the data flowing the other way (n = 2 ran at half the link rate).
 */
constexpr uint64_t kRingAutoPieceBytes = 256 << 10;
uint64_t ringPieceBytes(const CommConfig& config);

/** Chunks in flight per reducer or ring neighbour (the ring's staging buffers: twice this). */
uint32_t effectiveWindow(const CommConfig& config);

}  // namespace rd::coll
