// SPDX-License-Identifier: BSD-3-Clause
// One communicator (job) as a reducer sees it: the ranks' connections and a slot per
// (operation, chunk) that collects the contributions, reduces them and sends the result to every
// rank that needs it (slot.h). Large reductions run on the executor and report back through
// the transport's progress thread, which owns every other step; small ones run in place (they
// cost less than waking a thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/executor.h"
#include "protocol/chunking.h"
#include "protocol/wire.h"
#include "reduction_server/buffer_pool.h"
#include "reduction_server/slot.h"
#include "transport/liveness.h"
#include "transport/transport.h"

namespace rd::server {

/** "rank 2" or "ranks 1,3": the ranks an error names. */
std::string namedRanks(const std::vector<uint32_t>& ranks);

/** A reduction of at least this many destination bytes runs on the executor. */
constexpr size_t kOffloadBytes = 256 << 10;

/** What a reducer's communicators did, summed over all of them (its metrics). Progress thread. */
struct ReducerCounters {
  uint64_t chunks_received = 0;  // contributions taken
  uint64_t bytes_received = 0;   // their payload bytes
  uint64_t bytes_sent = 0;       // result payload bytes sent, every rank's
  uint64_t ops_served = 0;       // operations with a chunk served here
  uint64_t ops_failed = 0;
  uint64_t reductions = 0;  // reduction passes
  double reduce_seconds = 0;
};

struct RankLink {
  transport::ConnId conn = 0;         // contributions, control and errors; 0 once gone
  transport::ConnId result_conn = 0;  // results (the rank's result channel); 0 until joined
  bool joined = false;
  std::string address;             // the rank's ring listen address
  Clock::time_point last_heard{};  // the last message from it on either connection
};

class ReduceComm : public std::enable_shared_from_this<ReduceComm> {
 public:
  /**
   * @p heartbeat_ms: the period of heartbeats each way (limits::heartbeatPeriodMs); 0 none.
   * @p state_bytes: what the server reserved in @p pool for this communicator's own state
   * (quota.h), given back when it ends; @p quota_bytes: the most it may hold, that included.
   * @p counters: where it counts what it does (shared by the reducer's communicators).
   */
  ReduceComm(const wire::CommShape& shape, uint32_t timeout_ms, uint32_t heartbeat_ms,
             uint16_t flags, transport::Transport* transport, BufferPool* pool, Executor* executor,
             std::string reducer_name, uint64_t state_bytes, uint64_t quota_bytes,
             std::shared_ptr<ReducerCounters> counters = nullptr);
  ~ReduceComm();

  enum class Outcome { kAccepted, kNeedMemory, kBadFrame };

  /**
   * Takes one kData frame from the rank that @p conn_rank authenticated as. kNeedMemory: no slot
   * fits under the memory limit yet; the payload is untouched and the caller retries later.
   * kBadFrame: the frame breaks the protocol (@p why says how); close that connection.
   */
  Outcome contribute(const wire::Header& h, uint32_t conn_rank, transport::Payload& payload,
                     std::string* why);

  /** True when a slot for @p h's chunk exists: its contribution needs no more memory. */
  bool hasSlot(const wire::Header& h) const { return slots_.count({h.seq, h.chunk}) != 0; }

  /** Fails one operation on every rank: sends kError and drops its slots. */
  void failOp(uint64_t seq, rdResult_t status, const std::string& reason);

  /** Fails the whole communicator (a rank died or left): every rank still here is told. */
  void fail(rdResult_t status, const std::string& reason);

  /**
   * @p rank left normally (destroy): operations still waiting for it fail, naming it; the others
   * finish. Later operations that need it fail at once.
   */
  void rankLeft(uint32_t rank);

  /**
   * Failover's release round (docs/failover.md, release_round.cc): @p rank has every answer of
   * operation @p seq. Once every rank said so, every rank is told it may complete it
   * (kReleased): at once, or, for a rank that @p returned without waiting for it, on its next
   * result (carryReleased) or at the next tick (sendReleasedLater).
   */
  void landed(uint32_t rank, uint64_t seq, bool returned);
  /** Puts a kReleased waiting for @p rank into @p h, a result or ack to it, if one waits. */
  void carryReleased(uint32_t rank, wire::Header* h);
  /** Sends every kReleased still waiting for a result to carry it (each tick). */
  void sendReleasedLater();

  /**
   * After a loss, @p rank says it completed operation @p seq: it sends no frames for it any more,
   * and chunks of it wait only for the other ranks (who then all hold the results).
   */
  void done(uint32_t rank, uint64_t seq);

  /** Fails the operations whose slots waited longer than the timeout, naming missing ranks. */
  void checkTimeouts(Clock::time_point now);

  /**
   * Fails an operation whose release round waited longer than the timeout since its first
   * kLanded, naming the ranks that never said they hold its results (a rank frozen after its
   * last contribution left is found here, not by any slot).
   */
  void checkReleaseRounds(Clock::time_point now);

  /** How each rank is marked in one operation's release round, and since when it is open. */
  struct RankMarks {
    std::vector<uint8_t> ranks;
    Clock::time_point since;
  };

  /**
   * Once joined: sends the ranks their heartbeats, 4 per period, and fails the communicator when
   * a rank still in it sent nothing for a whole period (frozen or cut off), naming it.
   */
  void heartbeat(Clock::time_point now);

  /** Join progress, kept by the server. */
  uint32_t joined = 0;
  /** A random id drawn for this communicator, sent with kJoined (wire.h). */
  uint64_t drawn_id = 0;
  Clock::time_point join_deadline;

  // --- re-admission of a replacement reducer (docs/failover.md) ---
  /** This reducer replaces one the ranks lost: it joins at an operation boundary (kResume). */
  void startRejoin() { rejoining_ = true; }
  bool rejoining() const { return rejoining_; }
  /** @p rank starts operation @p seq next; true once every rank said so. */
  bool resume(uint32_t rank, uint64_t seq);
  /** A replacement still waits for some rank's kResume. */
  bool waitingForResume() const;
  /** The first operation this reducer serves: 0, or for a replacement the largest kResume. */
  uint64_t firstSeq() const { return first_seq_; }

  const wire::CommShape& shape() const { return shape_; }
  wire::CommShape& mutableShape() { return shape_; }
  std::vector<RankLink>& ranks() { return ranks_; }
  uint32_t timeoutMs() const { return timeout_ms_; }
  uint32_t heartbeatMs() const { return heartbeat_ms_; }
  uint16_t flags() const { return flags_; }
  bool failed() const { return !failure_.empty(); }
  /** When fail() was called (meaningful once failed()). */
  Clock::time_point failedAt() const { return failed_at_; }
  /** Bytes this communicator holds: its state, its slots' buffers and bookkeeping. */
  uint64_t memoryHeld() const { return *held_; }
  /** The most it may hold: its share of the reducer's memory (quota.h). */
  uint64_t quotaBytes() const { return quota_bytes_; }
  size_t slotCount() const { return slots_.size(); }
  /** Chunks whose result (or acknowledgement) went out. */
  uint64_t chunksServed() const { return chunks_served_; }

  /** Sends a header-only (or short text) message to @p rank (on its result channel if asked). */
  void sendTo(uint32_t rank, wire::Header h, const std::string& body = std::string(),
              bool result_channel = false);

 private:
  using Key = std::pair<uint64_t, uint32_t>;  // (seq, chunk)

  std::shared_ptr<Slot> createSlot(const wire::Header& h, const wire::Geometry& g,
                                   const wire::ChunkSpan& span, std::string* why, bool* no_memory);
  void onDelivered(const std::shared_ptr<Slot>& slot, uint32_t index, rdResult_t status);
  // Queues a contribution that is here for the reduction and starts what can start.
  void addPending(const std::shared_ptr<Slot>& slot, uint32_t index, const void* bytes,
                  transport::Payload payload);
  // Starts the next reduction of @p slot when none runs and one is due.
  void reduceNext(const std::shared_ptr<Slot>& slot);
  // A reduction of @p count contributions ended (progress thread).
  void afterReduce(const std::shared_ptr<Slot>& slot, uint32_t count, rdResult_t status,
                   const std::string& error, double seconds);
  // Counts operation @p seq as served, once.
  void countServed(uint64_t seq);
  void sendResults(const std::shared_ptr<Slot>& slot);
  // Sends the result once every contributor's frame is here (or that rank completed the
  // operation) and no reduction runs: the held result if one came, else the reduction's.
  void finishIfComplete(const std::shared_ptr<Slot>& slot);
  bool isDone(uint64_t seq, uint32_t rank) const;
  void dropSlot(const std::shared_ptr<Slot>& slot);
  void removeSlot(const Key& key);
  // Removes @p slot from the table and drops it (an operation failed, or it became moot).
  void discardSlot(const std::shared_ptr<Slot>& slot);
  // The slots of operation @p seq (a copy: callers may remove them).
  std::vector<std::shared_ptr<Slot>> slotsOf(uint64_t seq) const;
  bool checkSignature(const wire::Header& h);
  // Fails operation h.seq: @p first and @p h (two ranks' frames) disagree on its arguments.
  void failMismatch(const wire::Header& first, const wire::Header& h);
  wire::Header errorHeader(uint64_t seq, rdResult_t status) const;
  // Fails the slot's operation when a contributor it still waits for has left; true if so.
  bool failIfWaitingForLeft(const std::shared_ptr<Slot>& slot);

  wire::CommShape shape_;
  uint32_t timeout_ms_;
  uint32_t heartbeat_ms_;
  Clock::time_point heartbeat_sent_{};
  transport::SilenceWatch silence_watch_;
  uint16_t flags_;
  transport::Transport* transport_;
  BufferPool* pool_;
  Executor* executor_;
  std::string name_;
  uint64_t state_bytes_;
  uint64_t quota_bytes_;
  std::shared_ptr<uint64_t> held_;  // shared with its slots
  std::shared_ptr<ReducerCounters> counters_;
  std::set<uint64_t> served_ops_;  // recent operations counted as served
  static constexpr size_t kServedOpsRemembered = 1024;
  std::vector<RankLink> ranks_;
  std::string failure_;
  Clock::time_point failed_at_{};
  std::map<Key, std::shared_ptr<Slot>> slots_;
  std::unordered_map<uint64_t, wire::Header> signatures_;  // seq -> first frame seen
  std::unordered_map<uint64_t, uint32_t> slots_per_op_;
  std::set<uint64_t> failed_ops_;
  std::string last_op_failure_;  // "operation N failed: why", for a later failure of the comm
  std::vector<uint8_t> left_;    // per rank
  // Failover: ranks that said kLanded / kDone, per operation (the oldest dropped past a bound).
  std::map<uint64_t, RankMarks> landed_;
  std::map<uint64_t, RankMarks> done_;
  uint64_t ops_remembered_;  // quota.h: opsRemembered
  // kReleased waiting for a result to carry them, per rank; at most kReleasedLaterMax each
  // (every one holds a copy of results at its rank).
  std::vector<std::deque<uint64_t>> released_later_;
  static constexpr size_t kReleasedLaterMax = 16;
  void sendReleasedLater(uint32_t rank);
  bool rejoining_ = false;
  std::vector<uint8_t> resumed_;  // per rank, for a replacement
  uint64_t first_seq_ = 0;
  uint64_t chunks_served_ = 0;
};

}  // namespace rd::server
