// SPDX-License-Identifier: BSD-3-Clause
#include "collectives/point_to_point.h"

#include <algorithm>
#include <vector>

#include "collectives/communicator.h"
#include "common/dtype.h"
#include "common/limits.h"

namespace rd::coll {

namespace {

uint32_t pieceCount(uint64_t bytes, uint64_t piece_bytes) {
  return bytes == 0 ? 1 : static_cast<uint32_t>((bytes + piece_bytes - 1) / piece_bytes);
}

uint64_t pieceLength(uint64_t bytes, uint64_t piece_bytes, uint32_t piece) {
  uint64_t start = uint64_t{piece} * piece_bytes;
  return std::min(piece_bytes, bytes - start);
}

std::string elements(uint64_t count, rdDataType_t dtype) {
  return std::to_string(count) + " elements of " + dtypeName(dtype);
}

}  // namespace

std::string PointToPoint::describe(const char* what, int32_t peer, uint32_t tag) {
  std::string who = peer == kAnySource ? "any rank" : "rank " + std::to_string(peer);
  return std::string(what) + " " + who + " (tag " + std::to_string(static_cast<int32_t>(tag)) + ")";
}

PointToPoint::Peer& PointToPoint::peer(uint32_t rank) {
  return peers_[rank];
}

std::string PointToPoint::peerName(uint32_t rank) const {
  return "rank " + std::to_string(rank) + " (" + comm_->peerAddress(rank) + ")";
}

transport::ConnId PointToPoint::connectionTo(uint32_t rank) {
  Peer& p = peer(rank);
  if (p.out != 0) return p.out;
  transport::ConnId conn = 0;
  if (comm_->transport().connect(comm_->peerAddress(rank), &conn) != rdSuccess) {
    markLost(rank, "cannot connect to " + peerName(rank) + ": " + lastError());
    return 0;
  }
  p.out = conn;
  return conn;
}

int32_t PointToPoint::rankOf(transport::ConnId conn) const {
  for (const auto& [rank, p] : peers_) {
    if (p.out == conn || std::find(p.in.begin(), p.in.end(), conn) != p.in.end()) {
      return static_cast<int32_t>(rank);
    }
  }
  return -1;
}

void PointToPoint::send(const P2PDesc& desc, std::shared_ptr<Request> request) {
  const auto to = static_cast<uint32_t>(desc.peer);
  Peer& p = peer(to);
  transport::ConnId conn = p.lost.empty() ? connectionTo(to) : 0;
  if (conn == 0) {
    request->complete(rdConnectionError, describe("send to", desc.peer, desc.tag) + ": " + p.lost);
    return;
  }
  const uint64_t bytes = desc.count * dtypeSize(desc.dtype);
  const uint32_t pieces = pieceCount(bytes, wire::kP2PPieceBytes);
  const uint64_t seq = p.next_send_seq++;
  const auto key = std::make_pair(to, seq);
  const auto timeout = std::chrono::milliseconds(comm_->config().timeout_ms);
  sends_[key] = PendingSend{desc.tag, pieces, Clock::now() + timeout, std::move(request)};
  for (uint32_t i = 0; i < pieces; ++i) {
    wire::Header h = comm_->header(wire::MsgType::kP2P, Communicator::kNoReducer);
    h.dtype = static_cast<uint8_t>(desc.dtype);
    h.root = desc.tag;
    h.seq = seq;
    h.count = desc.count;
    h.chunk = i;
    h.chunk_bytes = static_cast<uint32_t>(wire::kP2PPieceBytes);
    h.payload_bytes = pieceLength(bytes, wire::kP2PPieceBytes, i);
    const char* data = static_cast<const char*>(desc.buffer) + uint64_t{i} * wire::kP2PPieceBytes;
    comm_->transport().send(conn, &h, sizeof h, data, h.payload_bytes, [this, key](rdResult_t st) {
      auto it = sends_.find(key);
      if (it == sends_.end()) return;  // failed or timed out already
      if (st != rdSuccess) {
        it->second.request->complete(
            st, describe("send to", static_cast<int32_t>(key.first), it->second.tag) +
                    " failed: " + rdGetErrorString(st));
        sends_.erase(it);
      } else if (--it->second.pieces_left == 0) {
        it->second.request->complete(rdSuccess);
        sends_.erase(it);
      }
    });
  }
}

void PointToPoint::receive(const P2PDesc& desc, std::shared_ptr<Request> request) {
  const auto timeout = std::chrono::milliseconds(comm_->config().timeout_ms);
  auto r = std::make_shared<PendingReceive>(
      PendingReceive{desc, Clock::now() + timeout, std::move(request)});
  if (tryMatch(r)) return;
  if (desc.peer != kAnySource) {
    const auto from = static_cast<uint32_t>(desc.peer);
    // Our own connection to the sender tells us when it dies, even before it sent anything.
    if (peer(from).lost.empty()) connectionTo(from);
    const Peer& p = peer(from);
    if (!p.lost.empty() && Clock::now() >= p.lost_at + kLostGrace) {
      r->request->complete(rdConnectionError,
                           describe("receive from", desc.peer, desc.tag) + ": " + p.lost);
      return;
    }
  }
  receives_.push_back(std::move(r));
}

bool PointToPoint::cancel(const std::shared_ptr<Request>& request) {
  auto it = std::find_if(receives_.begin(), receives_.end(),
                         [&](const auto& r) { return r->request == request; });
  if (it == receives_.end()) return false;
  (*it)->request->complete(
      rdAborted, describe("receive from", (*it)->desc.peer, (*it)->desc.tag) + ": cancelled");
  receives_.erase(it);
  return true;
}

bool PointToPoint::matches(const PendingReceive& r, uint32_t from, const Message& m) const {
  return (r.desc.peer == kAnySource || r.desc.peer == static_cast<int32_t>(from)) &&
         r.desc.tag == m.tag;
}

bool PointToPoint::tryMatch(const std::shared_ptr<PendingReceive>& receive) {
  // The earliest message that may match: per sender in the order sent, across senders in the
  // order they arrived.
  uint32_t best_from = 0;
  uint64_t best_seq = 0;
  const Message* best = nullptr;
  for (auto& [from, p] : peers_) {
    for (auto& [seq, m] : p.messages) {
      if (seq >= p.announced) break;
      if (m.receive || m.failed || !matches(*receive, from, m)) continue;
      if (best == nullptr || m.arrival < best->arrival) {
        best = &m;
        best_from = from;
        best_seq = seq;
      }
      break;  // later messages of this sender come after this one
    }
  }
  if (best == nullptr) return false;
  bind(best_from, best_seq, peers_[best_from].messages[best_seq], receive);
  return true;
}

void PointToPoint::bind(uint32_t from, uint64_t seq, Message& m,
                        std::shared_ptr<PendingReceive> receive) {
  const P2PDesc& want = receive->desc;
  receive->request->setSource(static_cast<int>(from));
  held_pieces_ -= m.held.size();
  auto held = std::move(m.held);
  m.held.clear();
  if (m.dtype != want.dtype || m.count != want.count) {
    receive->request->complete(rdInvalidArgument,
                               describe("receive from", want.peer, want.tag) + ": rank " +
                                   std::to_string(from) + " sent " + elements(m.count, m.dtype) +
                                   ", the receive expects " + elements(want.count, want.dtype));
    for (auto& piece : held) piece.second.discard();
    m.failed = true;
    if (m.allSeen()) peer(from).messages.erase(seq);
    return;
  }
  m.receive = std::move(receive);
  for (auto& [piece, payload] : held) land(from, seq, piece, std::move(payload));
}

void PointToPoint::land(uint32_t from, uint64_t seq, uint32_t piece, transport::Payload payload) {
  auto& messages = peer(from).messages;
  auto it = messages.find(seq);
  if (it == messages.end() || !it->second.receive) return;
  Message& m = it->second;
  if (payload.size() == 0) {
    onLanded(from, seq, rdSuccess);
    return;
  }
  char* dst = static_cast<char*>(m.receive->desc.buffer) + uint64_t{piece} * m.piece_bytes;
  payload.receiveInto(dst, [this, from, seq](rdResult_t st) { onLanded(from, seq, st); });
}

void PointToPoint::onLanded(uint32_t from, uint64_t seq, rdResult_t status) {
  auto& messages = peer(from).messages;
  auto it = messages.find(seq);
  if (it == messages.end() || !it->second.receive) return;
  Message& m = it->second;
  if (status != rdSuccess) {
    finishReceive(from, seq, status,
                  std::string("the data did not arrive: ") + rdGetErrorString(status));
  } else if (++m.landed == m.pieces) {
    finishReceive(from, seq, rdSuccess, "");
  }
}

void PointToPoint::finishReceive(uint32_t from, uint64_t seq, rdResult_t status,
                                 const std::string& error) {
  auto& messages = peer(from).messages;
  auto it = messages.find(seq);
  Message& m = it->second;
  std::shared_ptr<PendingReceive> r = std::move(m.receive);
  m.receive = nullptr;
  if (status == rdSuccess) {
    messages.erase(it);
    r->request->complete(rdSuccess);
    return;
  }
  m.failed = true;
  if (m.allSeen()) messages.erase(it);
  r->request->complete(status, describe("receive from", r->desc.peer, r->desc.tag) + ": " + error);
}

rdResult_t PointToPoint::checkPiece(transport::ConnId conn, const wire::Header& h,
                                    size_t payload_bytes, std::string* why) {
  const uint32_t me = comm_->config().rank;
  if (h.rank == me) {
    *why = "it claims to be this rank";
    return rdProtocolError;
  }
  int32_t bound = rankOf(conn);
  if (bound >= 0 && bound != static_cast<int32_t>(h.rank)) {
    *why = "rank " + std::to_string(bound) + "'s connection carries a message of rank " +
           std::to_string(h.rank);
    return rdProtocolError;
  }
  if (h.count > limits::kMaxCount || h.chunk_bytes == 0 || h.chunk_bytes > wire::kMaxPayloadBytes) {
    *why = "message of " + std::to_string(h.count) + " elements in pieces of " +
           std::to_string(h.chunk_bytes) + " bytes";
    return rdProtocolError;
  }
  const uint64_t bytes = h.count * dtypeSize(static_cast<rdDataType_t>(h.dtype));
  const uint32_t pieces = pieceCount(bytes, h.chunk_bytes);
  if (h.chunk >= pieces || payload_bytes != pieceLength(bytes, h.chunk_bytes, h.chunk)) {
    *why = "piece " + std::to_string(h.chunk) + " of " + std::to_string(payload_bytes) +
           " bytes does not fit a message of " + std::to_string(bytes) + " bytes";
    return rdProtocolError;
  }
  const Peer& p = peers_[h.rank];
  auto it = p.messages.find(h.seq);
  if (it == p.messages.end()) {
    if (h.seq < p.announced) {
      *why = "message " + std::to_string(h.seq) + " came again";
      return rdProtocolError;
    }
    if (h.seq - p.announced >= kMaxHeldPieces) {
      *why = "message " + std::to_string(h.seq) + " is too far ahead";
      return rdProtocolError;
    }
    return rdSuccess;
  }
  const Message& m = it->second;
  if (m.tag != h.root || m.dtype != h.dtype || m.count != h.count ||
      m.piece_bytes != h.chunk_bytes || m.seen[h.chunk] != 0) {
    *why = "piece " + std::to_string(h.chunk) + " of message " + std::to_string(h.seq) +
           " contradicts the earlier pieces";
    return rdProtocolError;
  }
  return rdSuccess;
}

void PointToPoint::onMessage(transport::ConnId conn, const wire::Header& h,
                             transport::Payload& payload) {
  std::string why;
  if (checkPiece(conn, h, payload.size(), &why) != rdSuccess) {
    comm_->failAll(rdProtocolError, "malformed point-to-point message from " +
                                        comm_->transport().peerName(conn) + ": " + why);
    return;
  }
  const uint32_t from = h.rank;
  Peer& p = peer(from);
  if (p.out != conn && std::find(p.in.begin(), p.in.end(), conn) == p.in.end()) {
    p.in.push_back(conn);
  }
  auto [it, fresh] = p.messages.try_emplace(h.seq);
  Message& m = it->second;
  if (fresh) {
    m.tag = h.root;
    m.dtype = static_cast<rdDataType_t>(h.dtype);
    m.count = h.count;
    m.piece_bytes = h.chunk_bytes;
    m.pieces = pieceCount(h.count * dtypeSize(m.dtype), m.piece_bytes);
    m.arrival = arrivals_++;
    m.seen.assign(m.pieces, 0);
  }
  takePiece(from, h.seq, m, h.chunk, std::move(payload));
  while (p.messages.count(p.announced) != 0) ++p.announced;
  matchArrived(from);
}

void PointToPoint::takePiece(uint32_t from, uint64_t seq, Message& m, uint32_t piece,
                             transport::Payload payload) {
  m.seen[piece] = 1;
  ++m.seen_count;
  if (m.receive) {
    land(from, seq, piece, std::move(payload));
    return;
  }
  if (m.failed) {
    payload.discard();
    if (m.allSeen()) peer(from).messages.erase(seq);
    return;
  }
  if (++held_pieces_ > kMaxHeldPieces) {
    comm_->failAll(rdProtocolError, peerName(from) + " sent more than " +
                                        std::to_string(kMaxHeldPieces) +
                                        " message pieces that no receive was posted for");
    return;
  }
  m.held.emplace_back(piece, std::move(payload));
}

void PointToPoint::matchArrived(uint32_t from) {
  Peer& p = peer(from);
  std::vector<uint64_t> waiting;
  for (auto& [seq, m] : p.messages) {
    if (seq >= p.announced) break;
    if (!m.receive && !m.failed) waiting.push_back(seq);
  }
  for (uint64_t seq : waiting) {
    auto it = p.messages.find(seq);
    if (it == p.messages.end() || it->second.receive || it->second.failed) continue;
    auto r = std::find_if(receives_.begin(), receives_.end(),
                          [&](const auto& receive) { return matches(*receive, from, it->second); });
    if (r == receives_.end()) continue;
    std::shared_ptr<PendingReceive> receive = std::move(*r);
    receives_.erase(r);
    bind(from, seq, it->second, std::move(receive));
  }
}

bool PointToPoint::onConnectionLost(transport::ConnId conn, const std::string& reason) {
  int32_t rank = rankOf(conn);
  if (rank < 0) return false;
  Peer& p = peer(static_cast<uint32_t>(rank));
  if (p.out == conn) p.out = 0;
  p.in.erase(std::remove(p.in.begin(), p.in.end(), conn), p.in.end());
  markLost(static_cast<uint32_t>(rank), "connection to " + peerName(rank) + " lost: " + reason);
  return true;
}

void PointToPoint::markLost(uint32_t rank, const std::string& reason) {
  Peer& p = peer(rank);
  if (p.lost.empty()) {
    p.lost = reason;
    p.lost_at = Clock::now();
  }
  for (auto it = sends_.begin(); it != sends_.end();) {
    if (it->first.first != rank) {
      ++it;
      continue;
    }
    it->second.request->complete(
        rdConnectionError,
        describe("send to", static_cast<int32_t>(rank), it->second.tag) + ": " + p.lost);
    it = sends_.erase(it);
  }
}

void PointToPoint::failReceivesFrom(uint32_t rank) {
  const Peer& p = peer(rank);
  for (auto it = receives_.begin(); it != receives_.end();) {
    if ((*it)->desc.peer != static_cast<int32_t>(rank)) {
      ++it;
      continue;
    }
    (*it)->request->complete(
        rdConnectionError,
        describe("receive from", (*it)->desc.peer, (*it)->desc.tag) + ": " + p.lost);
    it = receives_.erase(it);
  }
  std::vector<uint64_t> broken;
  for (auto& [seq, m] : p.messages) {
    if (m.receive && !m.allSeen()) broken.push_back(seq);
  }
  for (uint64_t seq : broken) finishReceive(rank, seq, rdConnectionError, p.lost);
}

void PointToPoint::onTick(Clock::time_point now) {
  for (auto& [rank, p] : peers_) {
    if (!p.lost.empty() && now >= p.lost_at + kLostGrace) failReceivesFrom(rank);
  }
  const std::string within =
      " within " + std::to_string(comm_->config().timeout_ms) + " ms (LIBREDUCE_TIMEOUT_MS)";
  for (auto it = sends_.begin(); it != sends_.end();) {
    if (now < it->second.deadline) {
      ++it;
      continue;
    }
    it->second.request->complete(
        rdTimeout, describe("send to", static_cast<int32_t>(it->first.first), it->second.tag) +
                       ": not received" + within);
    it = sends_.erase(it);
  }
  for (auto it = receives_.begin(); it != receives_.end();) {
    if (now < (*it)->deadline) {
      ++it;
      continue;
    }
    (*it)->request->complete(rdTimeout,
                             describe("receive from", (*it)->desc.peer, (*it)->desc.tag) +
                                 ": no message arrived" + within);
    it = receives_.erase(it);
  }
}

void PointToPoint::failAll(rdResult_t status, const std::string& reason) {
  for (auto& [key, send] : sends_) send.request->complete(status, reason);
  sends_.clear();
  for (auto& r : receives_) r->request->complete(status, reason);
  receives_.clear();
  for (auto& [rank, p] : peers_) {
    for (auto& [seq, m] : p.messages) {
      if (m.receive) m.receive->request->complete(status, reason);
      for (auto& piece : m.held) piece.second.discard();
    }
    p.messages.clear();
  }
  held_pieces_ = 0;
}

}  // namespace rd::coll
