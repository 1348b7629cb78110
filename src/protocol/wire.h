// SPDX-License-Identifier: BSD-3-Clause
// The wire protocol between workers and reducers (and between ring neighbours): one fixed
// header per message, sent as the UCX active-message header, followed by an optional payload.
// Everything that arrives from the network is untrusted: parseHeader() and the check*()
// functions validate a frame completely before any field is used to size or index anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/limits.h"
#include "libreduce/reduce.h"

namespace rd::wire {

constexpr uint32_t kMagic = 0x31584452;  // "RDX1" in memory order
// 2: a result channel per worker and reducer (kFlagResultChannel), and HelloBody.spread.
// 3: HelloBody.algorithm (every rank of a communicator must run the same).
// 4: Header.chunk_bytes: the chunk size is chosen per operation; HelloBody.chunk_bytes its cap.
// 5: wire compression (protocol/compression.h): kFlagWideSum, kFlagWireBf16 / kFlagWireFp16.
// 6: point-to-point messages between workers (kP2P).
// 7: heartbeats (kHeartbeat) and HelloBody.heartbeat_ms.
// 8: reducer failover (docs/failover.md): kFlagHeldResult, kLanded, kReleased, kDone.
// 9: re-admission of a replacement reducer: kFlagRejoin, kResume.
// 10: the release round's messages ride on data and results (kFlagCarried, kFlagReturned).
constexpr uint16_t kVersion = 10;
// Hard cap on any payload: a chunk (LIBREDUCE_CHUNK_BYTES range).
constexpr uint64_t kMaxPayloadBytes = limits::kMaxChunkBytes;
constexpr uint64_t kMaxControlBytes = 64ull << 10;
// Reason texts (kLeave after a failure) are cut to this: small enough to be sent eagerly.
constexpr size_t kMaxReasonBytes = 1024;
constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;  // HMAC-SHA256

/** Header.seq of a kError that fails every operation of the communicator. */
constexpr uint64_t kSeqAllOps = UINT64_MAX;
/** Header.chunk of the kRing message that opens a ring connection: "I am rank h.rank". */
constexpr uint32_t kRingHelloChunk = UINT32_MAX;
/**
 * A kP2P message travels in pieces of Header.chunk_bytes (the last may be shorter). Each piece
 * carries the whole message's description: Header.rank the sender, Header.root the tag,
 * Header.seq the message's number among those from the sender to this receiver (from 0),
 * Header.count and Header.dtype its elements, Header.chunk the piece's index.
 */
constexpr uint64_t kP2PPieceBytes = 8ull << 20;

enum class MsgType : uint8_t {
  kHello = 1,       // worker -> reducer: join request (HelloBody)
  kChallenge = 2,   // reducer -> worker: reducer nonce (ChallengeBody)
  kAuth = 3,        // worker -> reducer: HMAC over both nonces (MacBody)
  kWelcome = 4,     // reducer -> worker: authenticated, reducer's own proof (MacBody)
  kJoined = 5,      // reducer -> worker: every rank joined; payload = the ranks' addresses;
                    // Header.count: a random id the reducer drew for the communicator (the
                    // ring rendezvous's is the id of the job it bootstraps: unique_id.h)
  kReject = 6,      // either way: join refused; payload = reason text; status in `status`
  kData = 7,        // worker -> reducer: one chunk contribution
  kResult = 8,      // reducer -> worker: one chunk result
  kAck = 9,         // reducer -> contributor that receives no result (reduce-scatter)
  kError = 10,      // reducer -> worker: operation `seq` failed; payload = reason text
  kLeave = 11,      // worker -> reducer: rank leaves the communicator (destroy / abort)
  kRing = 12,       // worker -> worker: one piece of a ring all-reduce step
  kP2P = 13,        // worker -> worker: one piece of a point-to-point message (P2PFields)
  kHeartbeat = 14,  // either way between a worker and a reducer: still here (no payload)
  // Failover's release round (docs/failover.md); header only, Header.seq the operation:
  kLanded = 15,    // worker -> release reducer: every answer of the operation is here
  kReleased = 16,  // reducer -> worker: every rank said kLanded; the buffers may go back
  kDone = 17,      // worker -> reducers, after a loss: this rank completed the operation
  // Re-admission (docs/failover.md), header only: after its welcome, a rank that rejoins a
  // replacement reducer names the first operation it has not started (Header.seq) and holds
  // operations from there; the replacement's kJoined then carries in Header.seq the first
  // operation it serves, the largest of those numbers.
  kResume = 18,  // worker -> replacement reducer
  kLast = kResume
};

enum class Coll : uint8_t {
  kAllReduce = 0,
  kReduceScatter = 1,
  kAllGather = 2,
  kBroadcast = 3,
  kLast = kBroadcast
};

/**
 * Header flags. kFlagResultChannel marks the kHello of a worker's second connection to a
 * reducer: the reducer sends that rank's results there. With one connection per direction of
 * bulk data, a rendezvous handshake (request-to-send / ready-to-receive) never queues behind
 * megabytes of data flowing the other way, so both directions of a link stay busy.
 *
 * kFlagWireBf16 / kFlagWireFp16 in a kHello: the communicator's wire type (compression.h).
 * kFlagWideSum in a kData / kResult / kAck: the values are float32 rounded to Header.dtype
 * (bfloat16 or float16); the reducer sums them in float32 and rounds the result once.
 */
enum : uint16_t {
  kFlagDeterministic = 1,
  kFlagResultChannel = 2,
  kFlagWideSum = 4,
  kFlagWireBf16 = 8,
  kFlagWireFp16 = 16,
  // kData of a chunk re-routed after a reducer was lost: the payload is the chunk's result, which
  // this rank already holds (the lost reducer sent it), not a contribution.
  kFlagHeldResult = 32,
  // Every message of a communicator that runs failover's release round (the join checks that
  // all ranks agree, as for kFlagDeterministic).
  kFlagFailover = 64,
  // kHello of a rank rejoining a reducer it lost (a replacement at the same address): the
  // reducer admits itself to a running communicator at an operation boundary (kResume).
  kFlagRejoin = 128,
  // Failover's release round carried by other frames (docs/failover.md): a kData carries the
  // kLanded of operation seq + status, a kResult or kAck the kReleased of operation
  // seq + status (Header.status, signed, is otherwise unused in these frames).
  kFlagCarried = 256,
  // kLanded (alone or carried) of a rank that completed the operation without waiting for its
  // kReleased: the reducer may carry that on a later result.
  kFlagReturned = 512,
};

// 72 bytes, host (little-endian) byte order: every supported host is little-endian.
struct Header {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint8_t type = 0;  // MsgType
  uint8_t coll = 0;  // Coll (kData / kResult / kAck / kRing)
  uint8_t dtype = 0;
  uint8_t op = 0;
  uint16_t flags = 0;
  uint32_t rank = 0;         // sender's rank (workers); recipient's rank (reducer replies)
  uint32_t nranks = 0;       // ranks in the communicator
  uint32_t epoch = 0;        // join generation the reducer assigned; 0 before kJoined
  uint32_t root = 0;         // broadcast root; ring step for kRing
  uint32_t chunk_bytes = 0;  // kData / kResult / kAck: the operation's chunk size
  uint64_t comm_id = 0;
  uint64_t seq = 0;    // operation number within the communicator
  uint64_t count = 0;  // elements: whole buffer (all-reduce, broadcast) or per rank (RS, AG)
  uint32_t chunk = 0;  // chunk index within the operation (piece index for kRing)
  int32_t status = 0;  // rdResult_t for kReject / kError
  uint64_t payload_bytes = 0;
};
static_assert(sizeof(Header) == 72, "wire header layout");

/** A header stamped with magic, version, type and the communicator's identity. */
Header makeHeader(MsgType type, uint64_t comm_id, uint32_t epoch, uint32_t rank, uint32_t nranks);

/**
 * Makes @p h carry operation @p seq (kFlagCarried: a kLanded on a kData, a kReleased on a kResult
 * or kAck), as its offset from h.seq in Header.status; false, and @p h unchanged, when the two
 * are too far apart for that.
 */
inline bool carry(Header* h, uint64_t seq) {
  const auto delta = static_cast<int64_t>(seq - h->seq);
  if (delta < INT32_MIN || delta > INT32_MAX) return false;
  h->flags |= kFlagCarried;
  h->status = static_cast<int32_t>(delta);
  return true;
}
/** The operation a frame with kFlagCarried carries. */
inline uint64_t carriedSeq(const Header& h) {
  return h.seq + static_cast<uint64_t>(static_cast<int64_t>(h.status));
}
/** @p h as it is without what it carries. */
inline Header withoutCarried(Header h) {
  h.flags &= ~kFlagCarried;
  h.status = 0;
  return h;
}

/**
 * Checks a received header: size, magic, version, type, dtype/op/coll where the type uses them,
 * rank < nranks <= kMaxRanks, payload length (as announced and as received) within the cap of
 * its type. On failure returns rdProtocolError and says why in @p why.
 */
rdResult_t parseHeader(const void* data, size_t len, size_t payload_len, Header* out,
                       std::string* why);

/** Name of a message type, for logs ("data", "hello", ...). */
const char* typeName(uint8_t type);

/** Name of a collective, for logs and errors ("all-reduce", ...; "invalid" out of range). */
const char* collName(uint8_t coll);

// --- join bodies -------------------------------------------------------------------------

/** kHello payload: what a worker announces when it joins. */
struct HelloBody {
  uint64_t chunk_bytes = 0;  // the largest chunk this rank's operations will use
  uint32_t timeout_ms = 0;
  uint32_t address_len = 0;  // bytes of the address text that follows the fixed part
  uint32_t spread = 1;       // reducers the worker spreads each operation over (>= 1)
  uint32_t algorithm = 0;    // the communicator's resolved rdAlgorithm_t (auto: rs or ring by size)
  uint32_t heartbeat_ms = 0;  // LIBREDUCE_HEARTBEAT_MS of the rank; 0 = no heartbeats
  uint32_t reserved = 0;      // 0
  uint8_t nonce[kNonceBytes] = {};
  // followed by address_len bytes: the worker's ring listen address "host:port" (may be empty)
};
constexpr size_t kMaxAddressBytes = 256;

/** Serializes a hello with its address text. */
std::string encodeHello(const HelloBody& hello, const std::string& address);

/** Parses and checks a kHello payload. */
rdResult_t decodeHello(const void* data, size_t len, HelloBody* out, std::string* address,
                       std::string* why);

/**
 * kJoined payload: the address of every rank, each as a 2-byte length then the text.
 * decodeAddresses checks that exactly @p nranks entries fill the payload.
 */
std::string encodeAddresses(const std::string* addresses, uint32_t nranks);
rdResult_t decodeAddresses(const void* data, size_t len, uint32_t nranks, std::string* out,
                           std::string* why);

}  // namespace rd::wire
