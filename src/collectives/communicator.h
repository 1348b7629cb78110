// SPDX-License-Identifier: BSD-3-Clause
// The worker side of a communicator: its connections to the reducers (and ring neighbours),
// the join handshake, and the operations in flight. Public calls post work to the transport's
// progress thread and wait on a Request; everything else runs on that thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "collectives/algorithms/auto_tuner.h"
#include "collectives/operation.h"
#include "collectives/point_to_point.h"
#include "collectives/request.h"
#include "common/auth.h"
#include "protocol/chunking.h"
#include "protocol/wire.h"
#include "transport/liveness.h"
#include "transport/transport.h"

namespace rd::coll {

struct CommConfig {
  std::vector<std::string> reducers;  // data reducers; empty = ring only
  std::string rendezvous;             // join point when there are no reducers
  // Where rank 0 serves the draw of this job's random communicator id (drawCommId), or "".
  std::string id_rendezvous;
  std::string secret;
  uint64_t comm_id = 0;
  uint32_t rank = 0;
  uint32_t nranks = 1;
  uint64_t chunk_bytes = 0;          // 0 = auto (pipeline.h)
  uint32_t window = 0;               // 0 = auto
  uint64_t ingress_bytes = 1 << 20;  // LIBREDUCE_INGRESS_BYTES
  uint32_t timeout_ms = 60000;
  uint32_t connect_timeout_ms = 60000;  // LIBREDUCE_CONNECT_TIMEOUT_MS (join only)
  uint32_t heartbeat_ms = 5000;         // LIBREDUCE_HEARTBEAT_MS; 0 = none
  bool failover = true;                 // LIBREDUCE_FAILOVER (docs/failover.md)
  // As asked for until the communicator is created, which resolves it once (never auto after).
  rdAlgorithm_t algorithm = rdAlgoDefault;
  bool deterministic = false;
  // LIBREDUCE_WIRE_DTYPE: what float32 values travel as (protocol/compression.h); rdFloat32 =
  // as they are.
  rdDataType_t wire_dtype = rdFloat32;
  std::string listen_host;  // "" = derived from the first reducer / rendezvous
  // Every reducer is at a loopback address, so every rank and reducer shares one host
  // (pipeline.h); set by Communicator::create from `reducers`.
  bool reducers_on_loopback = false;
  std::string transport = "ucx";                      // createTransport's name
  std::shared_ptr<transport::ProgressEngine> engine;  // null = the process's shared one
};

/** Parses "host:port,host:port"; every entry needs a non-zero port. */
rdResult_t parseReducerList(const std::string& text, std::vector<std::string>* out);

/**
 * Whether every address of @p reducers ("host:port") names a loopback host as written
 * (127.0.0.0/8, ::1, localhost); false when empty. Only the text counts, never a name's
 * resolution, so every rank given the same list gets the same answer.
 */
bool allOnLoopback(const std::vector<std::string>& reducers);

/** Reads the LIBREDUCE_* settings into @p config (reducers, algorithm, chunking, timeout ...). */
rdResult_t configFromSettings(CommConfig* config);

class Communicator {
 public:
  /** Connects, authenticates and joins; blocks until joined, failed or timed out. */
  /**
   * Resolves the algorithm (resolveAlgorithm), connects, authenticates and joins; blocks until
   * joined, failed or timed out. Every rank's algorithm, chunk size and reducer count must agree.
   */
  static rdResult_t create(const CommConfig& config, std::unique_ptr<Communicator>* out);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /**
   * Posts an operation; @p request completes when it ends. With LIBREDUCE_ALGO=auto and
   * reducers, all-reduces go to rs or ring as the tuner measured (auto_tuner.h); two calls of
   * each size class wait: for the class's trials, then for the sum of every rank's times.
   */
  rdResult_t post(const OpDesc& desc, std::shared_ptr<Request>* request);

  /**
   * Posts a send (@p is_send) or a receive of a point-to-point message (point_to_point.h);
   * @p request completes when it ends. Not ordered with the collectives.
   */
  rdResult_t postPointToPoint(bool is_send, const P2PDesc& desc, std::shared_ptr<Request>* request);

  /** Cancels a receive no message matched yet (it fails with rdAborted); false otherwise. */
  bool cancelReceive(const std::shared_ptr<Request>& request);

  /** Fails everything pending with rdAborted and force-closes; returns at once. */
  void abort();

  /** rdSuccess while healthy, else the error that failed the communicator (sets last error). */
  rdResult_t asyncError();

  /**
   * The transports and devices this rank's connections to data reducer @p reducer use
   * (Transport::linkTransports): "tcp/eth0" when both go the same way, else
   * "CONTRIBUTIONS (results: RESULTS)"; "" while not known. rdInvalidArgument for a reducer
   * the communicator does not have. Thread-safe.
   */
  rdResult_t reducerTransports(uint32_t reducer, std::string* out);

  const CommConfig& config() const { return config_; }

  /** What the values of @p desc travel as to the reducers (wire compression, compression.h). */
  rdDataType_t travelType(const OpDesc& desc) const;

  /** What auto settled on for all-reduces of @p bytes; rdAlgoDefault while still measuring. */
  rdAlgorithm_t autoChoice(uint64_t bytes) { return tuner_.decided(AutoTuner::sizeClass(bytes)); }

  // --- failover (comm_failover.cc, docs/failover.md) ---
  /** Whether a lost reducer's chunks go to the others: LIBREDUCE_FAILOVER and 2+ reducers. */
  bool failover() const { return config_.failover && config_.reducers.size() > 1; }
  /** The reducer that serves chunk @p k of operation @p seq among those alive for it. */
  uint32_t route(uint64_t seq, uint64_t k) { return wire::routeChunk(k, seq, aliveFor(seq)); }
  /** Whether data reducer @p m is in the communicator now. */
  bool reducerAlive(uint32_t m) const { return alive_.at(m) != 0; }
  /**
   * Sends a header-only message about operation @p seq, with @p flags, to reducer (or
   * rendezvous) @p m if alive.
   */
  void sendControl(wire::MsgType type, uint32_t m, uint64_t seq, uint16_t flags = 0);
  /** An operation that ran the release round completed (kept to answer for it after a loss). */
  void releasedOp(uint64_t seq);
  /**
   * Operation @p seq returned before its release round: its kLanded for reducer @p m rides on
   * the next data frame to @p m (carryLanded), or goes alone at the next tick.
   */
  void landedLater(uint32_t m, uint64_t seq);
  /** Puts a kLanded waiting for reducer @p m into @p h, a data frame to it, if one waits. */
  void carryLanded(uint32_t m, wire::Header* h);

  /** Header reducer index of messages to ring neighbours (and stamps epoch 0). */
  static constexpr uint32_t kNoReducer = UINT32_MAX;

  // --- for operations (progress thread) ---
  /**
   * One connection to a reducer (or the rendezvous). Each server gets two: link i of the first
   * half carries this rank's contributions, control and errors; link i of the second half is
   * the result channel that brings the results back (see wire::kFlagResultChannel).
   */
  struct ReducerLink {
    std::string address;
    bool result_channel = false;
    transport::ConnId conn = 0;
    uint32_t epoch = 0;
    auth::Nonce nonce{};
    bool welcomed = false;
    Clock::time_point retry_at{};    // reconnect then (join only)
    Clock::time_point last_heard{};  // the last message from it (heartbeats included)
    std::string last_error;
    // Join only: since when every connection attempt failed (epoch = not failing), and when
    // to warn about it next.
    Clock::time_point unreachable_since{};
    Clock::time_point warn_at{};
  };
  transport::Transport& transport() { return *transport_; }
  std::vector<ReducerLink>& reducers() { return links_; }
  uint32_t dataReducers() const { return static_cast<uint32_t>(config_.reducers.size()); }
  /** Reducers (or the one rendezvous) this rank is connected to: half of reducers(). */
  uint32_t servers() const { return static_cast<uint32_t>(links_.size() / 2); }
  /** Whether @p conn is one of reducer @p reducer's two connections. */
  bool fromReducer(transport::ConnId conn, uint32_t reducer) const;
  /** Header stamped for a reducer (its epoch) or a ring peer (kNoReducer: epoch 0). */
  wire::Header header(wire::MsgType type, uint32_t reducer) const;
  /** The address rank @p rank listens on (from the join). */
  const std::string& peerAddress(uint32_t rank) const { return peer_addresses_.at(rank); }
  /** The random id the first reducer (or the rendezvous) drew for this communicator. */
  uint64_t drawnId() const { return drawn_id_; }
  /** Connection to the next rank in the ring (connects on first use); 0 when it failed. */
  transport::ConnId ringNext();
  /** Why the previous rank's connection is gone ("" while it is not), for later operations. */
  const std::string& ringPreviousLost() const { return ring_prev_lost_; }
  /** Name of the reducer behind @p link for messages: "reducer 1 (127.0.0.1:4000)". */
  std::string reducerName(uint32_t link) const;
  /**
   * A buffer of ringPieceBytes() for a ring piece in flight (reused, never zeroed), or null
   * when 2 x window are already in use: the caller holds the piece back until one returns.
   */
  std::shared_ptr<char> stagingBuffer();

  /**
   * Fails the communicator: every operation and every later call get this error. The first
   * failure is also sent to the reducers (they tell the other ranks the root cause); operations
   * fail once those notices left, or after kNoticeGrace.
   */
  void failAll(rdResult_t status, const std::string& reason);

 private:
  explicit Communicator(const CommConfig& config);
  rdResult_t start();
  rdResult_t join();
  void sendHello(uint32_t index);
  static transport::Lane laneOf(const ReducerLink& link);
  void retryConnections(Clock::time_point now);
  /**
   * A join connection on link @p index failed before the reducer proved itself: retried after
   * kConnectRetry, warned about after kUnreachableWarnAfter and every kUnreachableWarnEvery,
   * and the join fails naming the address once it stayed unreachable for connect_timeout_ms.
   */
  void connectFailed(uint32_t index, const std::string& reason);
  static constexpr std::chrono::milliseconds kConnectRetry{200};
  static constexpr std::chrono::milliseconds kUnreachableWarnAfter{2000};
  static constexpr std::chrono::milliseconds kUnreachableWarnEvery{10000};
  void onMessage(transport::ConnId conn, const void* header, size_t len, transport::Payload p);
  void onJoinMessage(uint32_t link, const wire::Header& h, transport::Payload& p);
  // Whether the kWelcome on link @p index carries the reducer's proof of the job secret.
  bool reducerProved(uint32_t index, const transport::Payload& welcome);
  void onFailure(transport::ConnId conn, rdResult_t status, const std::string& reason);
  void onRingFailure(transport::ConnId conn, const std::string& reason);
  void onRingHello(transport::ConnId conn, const wire::Header& h);
  // The ranks before and after this one around the ring.
  uint32_t prevRank() const { return (config_.rank + config_.nranks - 1) % config_.nranks; }
  uint32_t nextRank() const { return (config_.rank + 1) % config_.nranks; }
  void onReducerMessage(uint32_t link, const wire::Header& h, transport::Payload& p);
  void onReducerError(const wire::Header& h, transport::Payload& p);
  void onTick();
  // Reducer @p m is gone (connection lost, heartbeats stopped): with failover and a survivor,
  // its chunks go to the others; otherwise the communicator fails naming every lost reducer.
  void reducerLost(uint32_t m, rdResult_t status, const std::string& why);
  // Sends this rank's heartbeats and fails the communicator on a reducer that stopped sending
  // its own (comm_heartbeat.cc).
  void heartbeat(Clock::time_point now);
  // Closes both connections of reducer @p m for good (their late news is ignored).
  void dropLinks(uint32_t m);
  // Records each loss whose operations in flight all completed (events "reducerRecovered").
  void checkRecoveries();
  // Fields of a failover event about reducer @p m: "\"rank\": 0, \"reducer\": 1, ...".
  std::string eventFields(uint32_t m) const;
  // --- re-admission of a replacement reducer (comm_rejoin.cc, docs/failover.md) ---
  // The reducers that serve operation @p seq: the live ones admitted at or before it.
  const std::vector<uint8_t>& aliveFor(uint64_t seq);
  // Connects again to lost reducers whose retry time came.
  void tryRejoins(Clock::time_point now);
  // A join message from a reducer this rank is rejoining (link @p index).
  void onRejoinMessage(uint32_t index, const wire::Header& h, transport::Payload& p);
  // The rejoin of reducer @p m failed (refused, no answer, connection lost): tries again later.
  void rejoinFailed(uint32_t m, const std::string& why);
  // Whether reducer @p m is lost and this rank is trying to get it back.
  bool rejoining(uint32_t m) const { return failover() && m < servers() && alive_[m] == 0; }
  // Starts the operations held while replacements were being admitted, once none is.
  void releaseHeld();
  // The first operation not started here yet: the oldest held one, else the next to be posted.
  uint64_t firstUnstarted() const;
  // Whether operation @p seq has not started here yet (its messages wait in early_).
  bool notStarted(uint64_t seq) const { return seq >= firstUnstarted(); }
  void startOp(const std::shared_ptr<Operation>& op);
  // Whether the tuner picks the algorithm of @p desc (auto, with reducers, an all-reduce).
  bool tuned(const OpDesc& desc) const;
  // Posts @p desc to run with @p algorithm (or what selectAlgorithm picks for it).
  rdResult_t postAs(const OpDesc& desc, rdAlgorithm_t algorithm, std::shared_ptr<Request>* request);
  void reapFinished();
  // Completes @p request with the communicator's failure, if it has failed (progress thread).
  bool completeIfFailed(Request& request);
  // With LIBREDUCE_METRICS: the collective's time and size go to the process's metrics when
  // @p request completes (worker_metrics.h); with LIBREDUCE_TRACE, its spans to the timeline
  // (common/trace.h). comm_record.cc.
  void recordWhenComplete(const OpDesc& desc, Request* request) const;
  std::vector<std::shared_ptr<Operation>> snapshot() const;
  int linkOf(transport::ConnId conn) const;
  /**
   * Sends kLeave to every joined reducer: status rdSuccess for a clean leave, else this rank's
   * failure and @p reason. @p done runs once every send completed (maybe inline).
   */
  void sendLeave(rdResult_t status, const std::string& reason, const std::function<void()>& done);
  void releaseFailure();  // stops holding the failure back and fails every operation
  void failOperations();
  static constexpr std::chrono::milliseconds kNoticeGrace{300};

  CommConfig config_;
  std::unique_ptr<transport::Transport> transport_;
  std::string listen_address_;
  std::vector<ReducerLink> links_;
  std::vector<std::string> peer_addresses_;
  uint64_t drawn_id_ = 0;
  transport::ConnId ring_next_ = 0;
  transport::ConnId ring_prev_ = 0;  // known once the previous rank introduced its connection
  std::string ring_prev_lost_;
  std::unique_ptr<PointToPoint> p2p_;  // progress thread

  // Join progress (progress thread), reported through join_request_.
  uint32_t joined_links_ = 0;
  bool hellos_sent_ = false;  // from then on, lost connections are retried until the deadline
  Clock::time_point join_deadline_{};
  std::map<uint32_t, auth::Nonce> reducer_nonces_;
  std::shared_ptr<Request> join_request_;

  // Failover (progress thread): which data reducers are alive, why the others were lost, and
  // the last operations completed through the release round (docs/failover.md).
  std::vector<uint8_t> alive_;
  std::vector<std::string> lost_;
  std::deque<uint64_t> released_ops_;
  // kLanded of operations that returned before their release round, per data reducer, until a
  // frame carries them or the tick sends them (sendLandedLater). At most kLandedLaterMax wait:
  // each holds a copy of its results.
  std::vector<std::deque<uint64_t>> landed_later_;
  static constexpr size_t kLandedLaterMax = 16;
  void sendLandedLater(uint32_t m);
  // A result or ack that carries the kReleased of another operation: both are delivered.
  void onCarriedRelease(uint32_t link, const wire::Header& h, transport::Payload& p);
  std::set<transport::ConnId> lost_conns_;  // closed for a lost reducer: late news is ignored
  static constexpr size_t kReleasedOpsKept = 256;
  // Re-admission: per data reducer, where its rejoin stands; the first operation it serves
  // (0 = since the join); operations posted while a replacement waited for every rank.
  struct Rejoin {
    enum class Stage { kIdle, kConnecting, kResumed } stage = Stage::kIdle;
    Clock::time_point retry_at{};  // kIdle: connect then
    Clock::time_point deadline{};  // kConnecting, kResumed: give up then
    uint64_t resume_seq = 0;       // kResumed: the first operation this rank held
    uint32_t failures = 0;         // tries in a row that failed
  };
  std::vector<Rejoin> rejoins_;
  // A loss whose operations in flight (those before first_unaffected) have not all completed.
  struct Recovery {
    uint32_t reducer;
    Clock::time_point lost_at;
    uint64_t first_unaffected;
  };
  std::vector<Recovery> recoveries_;
  std::vector<uint64_t> admitted_from_;
  std::vector<uint8_t> alive_scratch_;
  std::deque<std::shared_ptr<Operation>> held_;
  uint32_t resumes_pending_ = 0;
  static constexpr std::chrono::milliseconds kRejoinRetry{1000};
  static constexpr std::chrono::milliseconds kRejoinAnswer{5000};
  static constexpr uint32_t kRejoinFastTries = 60;  // then every 10 kRejoinRetry
  static constexpr size_t kLostConnsKept = 1024;
  Clock::time_point heartbeat_sent_{};     // progress thread
  transport::SilenceWatch silence_watch_;  // progress thread
  uint64_t next_seq_ = 0;                  // progress thread
  std::mutex tuner_mu_;  // callers of post() that go through the tuner, one at a time
  AutoTuner tuner_;
  std::map<uint64_t, std::shared_ptr<Operation>> ops_;
  // Ring messages that arrive before their operation was posted here.
  struct EarlyMessage {
    transport::ConnId conn;
    wire::Header header;
    transport::Payload payload;
  };
  std::map<uint64_t, std::vector<EarlyMessage>> early_;
  std::map<uint64_t, std::pair<rdResult_t, std::string>> early_errors_;

  std::vector<char*> staging_free_;  // progress thread
  uint32_t staging_in_use_ = 0;

  std::mutex failure_mu_;
  rdResult_t failure_status_ = rdSuccess;
  std::string failure_;
  std::atomic<bool> aborted_{false};
  // The failure is held back from the operations while its notices to the reducers are being
  // sent (progress thread), until notice_deadline_ at the latest.
  bool holding_failure_ = false;
  bool destroying_ = false;
  bool leaving_ = false;  // destroy has begun: lost connections are no news (progress thread)
  Clock::time_point notice_deadline_{};
};

}  // namespace rd::coll
