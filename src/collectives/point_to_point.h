// SPDX-License-Identifier: BSD-3-Clause
// Point-to-point messages between the ranks of a communicator (rdSend / rdRecv): tagged,
// received from one rank or from any, matched in the order each sender sent them (MPI's
// non-overtaking rule per sender and tag). They travel over worker-to-worker connections made
// on first use, in pieces of wire::kP2PPieceBytes (wire.h). A message that arrives before its
// receive is held (large pieces stay with the sender until then: the transport's rendezvous),
// up to kMaxHeldPieces. Every wait is bounded by the communicator's timeout, and a peer whose
// connection is lost fails what waits on it, naming it. Everything here runs on the progress
// thread; a lost peer or a timeout fails only the operations that involve it, never the
// communicator (its collectives notice on their own).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives/operation.h"
#include "collectives/request.h"
#include "protocol/wire.h"
#include "transport/transport.h"

namespace rd::coll {

/** What one send or receive asks for. */
struct P2PDesc {
  void* buffer = nullptr;  // const for a send
  uint64_t count = 0;
  rdDataType_t dtype = rdUint8;
  int32_t peer = 0;  // rank; kAnySource for a receive from any rank
  uint32_t tag = 0;
};

class PointToPoint {
 public:
  static constexpr int32_t kAnySource = -1;
  /** Pieces held for receives not posted yet, over all senders; more is a protocol error. */
  static constexpr size_t kMaxHeldPieces = 1 << 16;
  /**
   * How long receives from a peer whose connection was lost still wait: what it sent before it
   * went may still be on its way over another connection (ours to it can fail first).
   */
  static constexpr std::chrono::milliseconds kLostGrace{500};

  explicit PointToPoint(Communicator* comm) : comm_(comm) {}
  PointToPoint(const PointToPoint&) = delete;
  PointToPoint& operator=(const PointToPoint&) = delete;

  void send(const P2PDesc& desc, std::shared_ptr<Request> request);
  void receive(const P2PDesc& desc, std::shared_ptr<Request> request);

  /** Completes @p request with rdAborted if it is a receive no message matched yet. */
  bool cancel(const std::shared_ptr<Request>& request);

  /** A kP2P message from @p conn (its header already passed wire::parseHeader). */
  void onMessage(transport::ConnId conn, const wire::Header& h, transport::Payload& payload);

  /**
   * @p conn failed: fails what waits on its peer. Returns false when @p conn is not one of the
   * point-to-point connections (it may still be a ring neighbour's as well).
   */
  bool onConnectionLost(transport::ConnId conn, const std::string& reason);

  /** Fails what waited past the communicator's timeout. */
  void onTick(Clock::time_point now);

  /** Fails everything pending (communicator failed, aborted or destroyed) and drops held data. */
  void failAll(rdResult_t status, const std::string& reason);

 private:
  struct PendingSend {  // keyed by (peer, message number)
    uint32_t tag;
    uint32_t pieces_left;
    Clock::time_point deadline;
    std::shared_ptr<Request> request;
  };
  struct PendingReceive {
    P2PDesc desc;
    Clock::time_point deadline;
    std::shared_ptr<Request> request;
  };
  // A message of which at least one piece arrived.
  struct Message {
    uint32_t tag = 0;
    rdDataType_t dtype = rdUint8;
    uint64_t count = 0;
    uint64_t piece_bytes = 0;
    uint32_t pieces = 0;
    uint64_t arrival = 0;       // order among every sender's messages, for receives from any rank
    std::vector<uint8_t> seen;  // per piece
    uint32_t seen_count = 0;
    std::vector<std::pair<uint32_t, transport::Payload>> held;  // until a receive matches
    std::shared_ptr<PendingReceive> receive;                    // the receive it matched
    uint32_t landed = 0;
    bool failed = false;  // its receive failed: later pieces are dropped
    bool allSeen() const { return seen_count == pieces; }
  };
  // What is known about one other rank.
  struct Peer {
    transport::ConnId out = 0;          // our connection to it (sends; made on first use)
    std::vector<transport::ConnId> in;  // its connections to us
    uint64_t next_send_seq = 0;
    uint64_t announced = 0;                // every message below this number has shown a piece
    std::map<uint64_t, Message> messages;  // not yet fully received
    std::string lost;                      // why its connection is gone ("" while it is not)
    Clock::time_point lost_at{};           // when it was lost (receives wait kLostGrace more)
  };

  Peer& peer(uint32_t rank);
  transport::ConnId connectionTo(uint32_t rank);
  std::string peerName(uint32_t rank) const;
  int32_t rankOf(transport::ConnId conn) const;
  rdResult_t checkPiece(transport::ConnId conn, const wire::Header& h, size_t payload_bytes,
                        std::string* why);
  void takePiece(uint32_t from, uint64_t seq, Message& m, uint32_t piece,
                 transport::Payload payload);
  void matchArrived(uint32_t from);
  bool matches(const PendingReceive& r, uint32_t from, const Message& m) const;
  void bind(uint32_t from, uint64_t seq, Message& m, std::shared_ptr<PendingReceive> receive);
  bool tryMatch(const std::shared_ptr<PendingReceive>& receive);
  void land(uint32_t from, uint64_t seq, uint32_t piece, transport::Payload payload);
  void onLanded(uint32_t from, uint64_t seq, rdResult_t status);
  void finishReceive(uint32_t from, uint64_t seq, rdResult_t status, const std::string& error);
  // A connection to or from @p rank is gone: sends to it fail now, receives after kLostGrace.
  void markLost(uint32_t rank, const std::string& reason);
  void failReceivesFrom(uint32_t rank);
  static std::string describe(const char* what, int32_t peer, uint32_t tag);

  Communicator* comm_;
  std::map<uint32_t, Peer> peers_;
  std::deque<std::shared_ptr<PendingReceive>> receives_;        // not matched yet, in posted order
  std::map<std::pair<uint32_t, uint64_t>, PendingSend> sends_;  // (peer, seq)
  uint64_t arrivals_ = 0;
  size_t held_pieces_ = 0;
};

}  // namespace rd::coll
