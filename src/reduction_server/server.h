// SPDX-License-Identifier: BSD-3-Clause
// The reducer: accepts worker connections, authenticates them with the job secret, groups them
// into communicators and feeds their chunks to ReduceComm. Serves any number of communicators at
// once; a misbehaving connection is closed and everyone else keeps being served.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/auth.h"
#include "common/executor.h"
#include "reduction_server/buffer_pool.h"
#include "reduction_server/quota.h"
#include "reduction_server/reduce_comm.h"
#include "transport/transport.h"

namespace rd::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;                   // 0 = any free port
  uint64_t memory_limit = 1ull << 30;  // bytes of chunk buffers
  std::string secret;                  // job secret; "" = workers must not present one either
  // A shared pool's secret instead of one job's: every communicator is admitted with its own
  // job key, auth::jobKey(pool_secret, comm id), which its workers hold (docs/security.md).
  std::string pool_secret;
  std::string transport = "ucx";                      // createTransport's name
  std::shared_ptr<transport::ProgressEngine> engine;  // null = the process's shared one
  // Runs the large reductions; null: the server makes its own with reduce_threads threads.
  std::shared_ptr<Executor> executor;
  int reduce_threads = 2;
  Quota quota;  // what one communicator may hold (quota.h)
};

/** One communicator as the reducer's metrics show it. */
struct CommStats {
  uint64_t comm_id = 0;
  uint32_t ranks = 0;
  uint32_t connections = 0;  // of its ranks' connections, joined
  size_t open_chunks = 0;
  uint64_t memory_bytes = 0;  // held: state, chunk buffers, bookkeeping
  size_t waiting = 0;         // contributions waiting for memory
  bool failed = false;
};

struct ServerStats {
  size_t communicators = 0;
  size_t connections = 0;
  size_t slots = 0;
  size_t waiting_for_memory = 0;
  uint64_t memory_in_use = 0;
  uint64_t memory_peak = 0;          // the most chunk buffers ever held (in use plus cached)
  uint64_t waited_for_memory = 0;    // contributions that had to wait for memory, since start
  uint64_t chunks_served = 0;        // by the communicators still here
  uint64_t chunks_served_total = 0;  // since start, by every communicator
  uint64_t joins_refused = 0;        // since start: bad secret, mismatched settings, ...
  uint64_t comms_failed = 0;         // since start
  uint64_t memory_limit = 0;
  // Joins refused since start, by cause: a wrong key, memory (the quota or the pool), usage
  // (settings that differ between ranks, too many ranks, ...).
  uint64_t refused_authentication = 0;
  uint64_t refused_memory = 0;
  uint64_t refused_usage = 0;
  uint64_t connections_failed = 0;  // closed since start for a failure (protocol, loss, timeout)
  uint64_t rejoins = 0;             // communicators admitted as a replacement reducer
  uint64_t handshakes_refused = 0;  // connections the bootstrap handshake refused
  // Worker connections open now by what carries them (Transport::linkTransports: "tcp/eth0";
  // "unknown" while a link is still being set up).
  std::map<std::string, size_t> connections_by_transports;
  ReducerCounters totals;        // what every communicator did since start
  std::vector<CommStats> comms;  // each communicator here now
};

class ReductionServer {
 public:
  /** Starts listening; address() is valid on return. */
  static rdResult_t start(const ServerOptions& options, std::unique_ptr<ReductionServer>* out);
  ~ReductionServer();
  ReductionServer(const ReductionServer&) = delete;
  ReductionServer& operator=(const ReductionServer&) = delete;

  /** "host:port" the server accepts connections on. */
  const std::string& address() const { return address_; }

  /** A snapshot of the server's state (thread-safe). */
  ServerStats stats();

 private:
  // One worker connection, from hello to leave.
  struct Peer {
    enum class State { kNew, kChallenged, kJoined, kClosing } state = State::kNew;
    wire::Header hello;  // comm_id, rank, nranks
    wire::HelloBody body;
    std::string address;
    auth::Nonce reducer_nonce{};
    Clock::time_point deadline;
    std::shared_ptr<ReduceComm> comm;
    bool resultChannel() const { return (hello.flags & wire::kFlagResultChannel) != 0; }
  };
  struct Waiting {  // a contribution queued until memory frees up
    transport::ConnId conn;
    wire::Header header;
    transport::Payload payload;
    uint64_t held_bytes;  // of the transport's memory (an eager payload), else 0
  };
  struct WaitQueue {  // one communicator's
    std::deque<Waiting> items;
    uint64_t held_bytes = 0;
    void remove(std::deque<Waiting>::iterator* at) {
      held_bytes -= (*at)->held_bytes;
      *at = items.erase(*at);
    }
  };

  explicit ReductionServer(const ServerOptions& options);
  void onAccept(transport::ConnId conn, const std::string& peer);
  void onMessage(transport::ConnId conn, const void* header, size_t len, transport::Payload p);
  void onFailure(transport::ConnId conn, const std::string& reason);
  void onTick();

  void onHello(transport::ConnId conn, Peer& peer, const wire::Header& h, transport::Payload& p);
  void onAuth(transport::ConnId conn, Peer& peer, transport::Payload& p);
  void joinComm(transport::ConnId conn, Peer& peer);
  // A rank rejoining a replacement reducer named the first operation it has not started.
  void onResume(Peer& peer, const wire::Header& h);
  // Once every rank's two connections joined (and, for a replacement, every rank resumed):
  // sends every rank kJoined with the epoch, the ranks' addresses and the first operation.
  void finishJoin(ReduceComm& comm);
  // A kLanded or kDone of a joined rank (failover's release round).
  void onReleaseMark(transport::ConnId conn, Peer& peer, const wire::Header& h);
  // A new communicator for @p peer's hello, within the quotas; null when refused.
  std::shared_ptr<ReduceComm> createComm(transport::ConnId conn, Peer& peer, uint16_t flags);
  void onData(transport::ConnId conn, Peer& peer, const wire::Header& h, transport::Payload& p);
  // Retries the contributions waiting for memory, the communicators in turn (round robin).
  void drainWaiting();
  // One communicator's turn: contributions to open slots go in, and at most one new slot is
  // made. True when one was.
  bool drainTurn(WaitQueue& queue);
  // Closes the connections of communicators that failed a while ago (a peer that stopped
  // reading would otherwise pin their buffers).
  void closeFailedComms(Clock::time_point now);
  void reject(transport::ConnId conn, const wire::Header& h, rdResult_t status,
              const std::string& reason);
  // Why a connection goes: its rank left the communicator (destroy), or anything else, which
  // fails the rank's communicator.
  enum class Drop { kLeft, kFailed };
  void dropPeer(transport::ConnId conn, Drop cause, const std::string& reason);

  ServerOptions options_;
  std::string address_;
  BufferPool pool_;
  std::shared_ptr<Executor> executor_;
  std::unique_ptr<transport::Transport> transport_;
  std::unordered_map<transport::ConnId, Peer> peers_;
  std::unordered_map<uint64_t, std::shared_ptr<ReduceComm>> comms_;
  // Contributions waiting for memory, per communicator id, served in turn from after turn_.
  std::map<uint64_t, WaitQueue> waiting_;
  uint64_t turn_ = 0;
  uint64_t comms_failed_ = 0;
  uint64_t refused_authentication_ = 0;
  uint64_t refused_memory_ = 0;
  uint64_t refused_usage_ = 0;
  uint64_t connections_failed_ = 0;
  uint64_t rejoins_ = 0;
  std::shared_ptr<ReducerCounters> counters_ = std::make_shared<ReducerCounters>();
  uint32_t next_epoch_ = 1;
  uint64_t joins_refused_ = 0;
  uint64_t waited_for_memory_ = 0;
  uint64_t chunks_served_by_ended_ = 0;  // by communicators no longer here
  bool drain_posted_ = false;
};

}  // namespace rd::server
