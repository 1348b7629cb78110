// SPDX-License-Identifier: BSD-3-Clause
#include "reduction_server/server.h"

#include <algorithm>
#include <cstring>

#include "common/algorithm.h"
#include "common/check.h"
#include "common/limits.h"
#include "common/log.h"

namespace rd::server {

namespace {
constexpr auto kHandshakeTimeout = std::chrono::seconds(30);

// A peer's reason text, safe to log and to forward: bounded, control characters replaced.
std::string printableText(const transport::Payload& p) {
  const auto* bytes = static_cast<const char*>(p.data());
  std::string text =
      bytes != nullptr ? std::string(bytes, std::min(p.size(), wire::kMaxReasonBytes)) : "";
  for (char& c : text) {
    if (c < 0x20 || c == 0x7f) c = '?';
  }
  return text.empty() ? "no reason given" : text;
}
}  // namespace

ReductionServer::ReductionServer(const ServerOptions& options)
    : options_(options),
      pool_(options.memory_limit),
      executor_(options.executor ? options.executor
                                 : std::make_shared<Executor>(options.reduce_threads)) {}

rdResult_t ReductionServer::start(const ServerOptions& options,
                                  std::unique_ptr<ReductionServer>* out) {
  std::unique_ptr<ReductionServer> s(new ReductionServer(options));
  ReductionServer* self = s.get();
  transport::Handlers h;
  h.on_accept = [self](transport::ConnId c, const std::string& peer) { self->onAccept(c, peer); };
  h.on_message = [self](transport::ConnId c, const void* hdr, size_t len, transport::Payload p) {
    self->onMessage(c, hdr, len, std::move(p));
  };
  h.on_failure = [self](transport::ConnId c, rdResult_t, const std::string& why) {
    self->onFailure(c, why);
  };
  h.on_tick = [self] { self->onTick(); };
  transport::Options topts;
  topts.name = "reduce-server";
  topts.secret = options.secret;
  topts.pool_secret = options.pool_secret;
  topts.local_host = options.host;
  RD_CHECK(transport::createTransport(options.transport, options.engine, topts, std::move(h),
                                      &s->transport_));
  // Memory freed in a send completion: retry the waiting contributions from the loop.
  self->pool_.setReleaseHook([self] {
    if (self->waiting_.empty() || self->drain_posted_) return;
    self->drain_posted_ = true;
    self->transport_->post([self] {
      self->drain_posted_ = false;
      self->drainWaiting();
    });
  });
  RD_CHECK(s->transport_->runSync(
      [&] { return s->transport_->listen(options.host, options.port, &s->address_); }));
  *out = std::move(s);
  return rdSuccess;
}

ReductionServer::~ReductionServer() {
  if (!transport_) return;
  // Held payloads and comms reference the transport: drop them on its thread first.
  transport_->runSync([this] {
    waiting_.clear();
    // A close may fail inline and drop the peer from peers_: close from a copy of the ids.
    std::vector<transport::ConnId> conns;
    conns.reserve(peers_.size());
    for (const auto& [conn, peer] : peers_) conns.push_back(conn);
    for (auto conn : conns) transport_->close(conn);
    peers_.clear();
    comms_.clear();
    return rdSuccess;
  });
  // Reductions still running report back through the transport: let them, and let what they
  // posted run, before it stops.
  executor_->drain();
  transport_->runSync([] { return rdSuccess; });
  transport_->stop();  // messages still arriving reach handlers that use transport_
  transport_.reset();
}

ServerStats ReductionServer::stats() {
  ServerStats s;
  transport_->runSync([&] {
    s.communicators = comms_.size();
    s.connections = peers_.size();
    for (auto& [id, comm] : comms_) {
      s.slots += comm->slotCount();
      s.chunks_served += comm->chunksServed();
    }
    for (auto& [id, queue] : waiting_) s.waiting_for_memory += queue.items.size();
    s.memory_in_use = pool_.inUse();
    s.memory_peak = pool_.peak();
    s.waited_for_memory = waited_for_memory_;
    s.chunks_served_total = chunks_served_by_ended_ + s.chunks_served;
    s.joins_refused = joins_refused_;
    s.comms_failed = comms_failed_;
    s.memory_limit = pool_.limit();
    s.refused_authentication = refused_authentication_;
    s.refused_memory = refused_memory_;
    s.refused_usage = refused_usage_;
    s.connections_failed = connections_failed_;
    s.rejoins = rejoins_;
    s.handshakes_refused = transport_->handshakesRefused();
    for (const auto& [conn, peer] : peers_) {
      const std::string carried_by = transport_->linkTransports(conn);
      ++s.connections_by_transports[carried_by.empty() ? "unknown" : carried_by];
    }
    s.totals = *counters_;
    for (auto& [id, comm] : comms_) {
      CommStats c;
      c.comm_id = id;
      c.ranks = comm->shape().nranks;
      c.connections = comm->joined;
      c.open_chunks = comm->slotCount();
      c.memory_bytes = comm->memoryHeld();
      c.failed = comm->failed();
      auto queue = waiting_.find(id);
      c.waiting = queue == waiting_.end() ? 0 : queue->second.items.size();
      s.comms.push_back(c);
    }
    return rdSuccess;
  });
  return s;
}

void ReductionServer::onAccept(transport::ConnId conn, const std::string& peer) {
  RD_LOG_DEBUG("reducer %s: connection from %s", address_.c_str(), peer.c_str());
  peers_[conn].deadline = Clock::now() + kHandshakeTimeout;
}

void ReductionServer::reject(transport::ConnId conn, const wire::Header& h, rdResult_t status,
                             const std::string& reason) {
  ++joins_refused_;
  ++(status == rdAuthFailed    ? refused_authentication_
     : status == rdOutOfMemory ? refused_memory_
                               : refused_usage_);
  RD_LOG_WARN("reducer %s: refused rank %u of comm %016llx from %s: %s", address_.c_str(), h.rank,
              static_cast<unsigned long long>(h.comm_id), transport_->peerName(conn).c_str(),
              reason.c_str());
  wire::Header r = wire::makeHeader(wire::MsgType::kReject, h.comm_id, 0, h.rank, h.nranks);
  r.status = status;
  auto text = std::make_shared<std::string>(reason);
  r.payload_bytes = text->size();
  transport_->send(conn, &r, sizeof r, text->data(), text->size(),
                   [this, conn, text](rdResult_t) { transport_->close(conn); });
  auto it = peers_.find(conn);
  if (it != peers_.end()) it->second.state = Peer::State::kClosing;
}

void ReductionServer::onMessage(transport::ConnId conn, const void* header, size_t len,
                                transport::Payload payload) {
  auto it = peers_.find(conn);
  if (it == peers_.end()) return;
  Peer& peer = it->second;
  wire::Header h;
  std::string why;
  if (wire::parseHeader(header, len, payload.size(), &h, &why) != rdSuccess) {
    dropPeer(conn, Drop::kFailed, "malformed frame: " + why);
    return;
  }
  auto type = static_cast<wire::MsgType>(h.type);
  using State = Peer::State;
  if (peer.state == State::kJoined) peer.comm->ranks()[peer.hello.rank].last_heard = Clock::now();
  if (type == wire::MsgType::kHeartbeat && peer.state == State::kJoined) return;  // counted
  if ((type == wire::MsgType::kLanded || type == wire::MsgType::kDone) &&
      peer.state == State::kJoined && !peer.resultChannel() &&
      (peer.comm->flags() & wire::kFlagFailover) != 0) {
    onReleaseMark(conn, peer, h);
    return;
  }
  if (type == wire::MsgType::kResume && peer.state == State::kJoined && !peer.resultChannel() &&
      peer.comm->rejoining() && peer.comm->shape().epoch == 0) {
    onResume(peer, h);
    return;
  }
  if (type == wire::MsgType::kHello && peer.state == State::kNew) {
    onHello(conn, peer, h, payload);
  } else if (type == wire::MsgType::kAuth && peer.state == State::kChallenged) {
    onAuth(conn, peer, payload);
  } else if (type == wire::MsgType::kData && peer.state == State::kJoined &&
             !peer.resultChannel()) {
    if ((h.flags & wire::kFlagCarried) == 0) {
      onData(conn, peer, h, payload);
      return;
    }
    // The frame carries the rank's kLanded of another operation: both are taken.
    if ((peer.comm->flags() & wire::kFlagFailover) != 0) {
      peer.comm->landed(peer.hello.rank, wire::carriedSeq(h), true);
    }
    onData(conn, peer, wire::withoutCarried(h), payload);
  } else if (type == wire::MsgType::kLeave && peer.state == State::kJoined &&
             peer.resultChannel()) {
    // The rank's data connection carries its leave or its failure notice.
    dropPeer(conn, Drop::kLeft, "closed its result channel");
  } else if (type == wire::MsgType::kLeave && peer.state == State::kJoined) {
    // A rank that failed says why: the other ranks then learn the root cause, not only that
    // this rank vanished.
    if (h.status == rdSuccess) {
      dropPeer(conn, Drop::kLeft, "left the communicator");
    } else {
      dropPeer(conn, Drop::kFailed, "failed: " + printableText(payload));
    }
  } else if (peer.state != State::kClosing) {
    dropPeer(conn, Drop::kFailed, std::string("unexpected ") + wire::typeName(h.type) + " message");
  }
}

void ReductionServer::onReleaseMark(transport::ConnId conn, Peer& peer, const wire::Header& h) {
  ReduceComm& comm = *peer.comm;
  // A mark of another epoch is not this communicator's; one for an operation before the first
  // a replacement serves is none of its business (a rank tells every live reducer).
  if (h.epoch != comm.shape().epoch) {
    dropPeer(conn, Drop::kFailed,
             "bad " + std::string(wire::typeName(h.type)) + ": epoch " + std::to_string(h.epoch) +
                 ", the communicator's is " + std::to_string(comm.shape().epoch));
    return;
  }
  if (h.type == static_cast<uint8_t>(wire::MsgType::kLanded)) {
    comm.landed(peer.hello.rank, h.seq, (h.flags & wire::kFlagReturned) != 0);
  } else {
    comm.done(peer.hello.rank, h.seq);
  }
}

void ReductionServer::onHello(transport::ConnId conn, Peer& peer, const wire::Header& h,
                              transport::Payload& p) {
  std::string why;
  const void* bytes = p.data();
  if (bytes == nullptr ||
      wire::decodeHello(bytes, p.size(), &peer.body, &peer.address, &why) != rdSuccess) {
    dropPeer(conn, Drop::kFailed, "bad hello: " + (why.empty() ? std::string("no body") : why));
    return;
  }
  peer.hello = h;
  peer.reducer_nonce = auth::makeNonce();
  peer.state = Peer::State::kChallenged;
  wire::Header c = wire::makeHeader(wire::MsgType::kChallenge, h.comm_id, 0, h.rank, h.nranks);
  auto nonce = std::make_shared<auth::Nonce>(peer.reducer_nonce);
  c.payload_bytes = nonce->size();
  transport_->send(conn, &c, sizeof c, nonce->data(), nonce->size(), [nonce](rdResult_t) {});
}

void ReductionServer::onAuth(transport::ConnId conn, Peer& peer, transport::Payload& p) {
  const void* bytes = p.data();
  if (bytes == nullptr || p.size() != wire::kMacBytes) {
    dropPeer(conn, Drop::kFailed, "bad authentication message");
    return;
  }
  auth::Mac got{};
  std::memcpy(got.data(), bytes, got.size());
  auth::Nonce worker_nonce{};
  std::memcpy(worker_nonce.data(), peer.body.nonce, worker_nonce.size());
  const wire::Header& h = peer.hello;
  // On a shared pool each communicator has its own key: a connection admitted for one job
  // cannot join another, whatever communicator its hello names.
  const std::string key = options_.pool_secret.empty()
                              ? options_.secret
                              : auth::jobKey(options_.pool_secret, h.comm_id);
  auth::Mac want = auth::prove(auth::Role::kWorker, key, h.comm_id, h.rank, h.nranks, worker_nonce,
                               peer.reducer_nonce);
  if (!auth::equal(got, want)) {
    reject(conn, h, rdAuthFailed,
           options_.pool_secret.empty()
               ? "authentication failed: the worker's job secret does not match this reducer's "
                 "(wrong or missing secret)"
               : "authentication failed: the worker's key is not the job key of the "
                 "communicator its hello names under this reducer pool's secret");
    return;
  }
  auto proof = std::make_shared<auth::Mac>(auth::prove(auth::Role::kReducer, key, h.comm_id, h.rank,
                                                       h.nranks, worker_nonce, peer.reducer_nonce));
  wire::Header w = wire::makeHeader(wire::MsgType::kWelcome, h.comm_id, 0, h.rank, h.nranks);
  w.payload_bytes = proof->size();
  transport_->send(conn, &w, sizeof w, proof->data(), proof->size(), [proof](rdResult_t) {});
  joinComm(conn, peer);
}

std::shared_ptr<ReduceComm> ReductionServer::createComm(transport::ConnId conn, Peer& peer,
                                                        uint16_t flags) {
  const wire::Header& h = peer.hello;
  const Quota& quota = options_.quota;
  if (h.nranks > quota.max_ranks) {
    reject(conn, h, rdInvalidUsage,
           std::to_string(h.nranks) + " ranks: this reducer admits at most " +
               std::to_string(quota.max_ranks) + " per communicator (reduce-server --max-ranks)");
    return nullptr;
  }
  if (comms_.size() >= quota.max_communicators) {
    reject(conn, h, rdOutOfMemory,
           "this reducer serves " + std::to_string(comms_.size()) +
               " communicators already, its most (reduce-server --max-communicators)");
    return nullptr;
  }
  // The communicator's state and one chunk from every rank must fit its share of the memory.
  const uint64_t share = pool_.limit() * quota.memory_percent / 100;
  const uint64_t state = commStateBytes(h.nranks, (flags & wire::kFlagFailover) != 0);
  const uint64_t one_round =
      static_cast<uint64_t>(h.nranks) * peer.body.chunk_bytes + slotStateBytes(h.nranks);
  if (state + one_round > share) {
    reject(conn, h, rdOutOfMemory,
           std::to_string(h.nranks) + " ranks x " + std::to_string(peer.body.chunk_bytes) +
               " byte chunks and their state (" + std::to_string(state + one_round) +
               " bytes) do not fit one communicator's share of the reducer's memory (" +
               std::to_string(quota.memory_percent) + "% of " + std::to_string(pool_.limit()) +
               " bytes); lower LIBREDUCE_CHUNK_BYTES");
    return nullptr;
  }
  if (!pool_.reserve(state)) {
    reject(conn, h, rdOutOfMemory,
           "the reducer's memory is taken by other communicators now; try again later");
    return nullptr;
  }
  wire::CommShape shape{h.comm_id,          0, h.nranks, peer.body.chunk_bytes, peer.body.spread,
                        peer.body.algorithm};
  uint32_t timeout =
      std::clamp<uint32_t>(peer.body.timeout_ms, limits::kMinTimeoutMs, limits::kMaxTimeoutMs);
  auto comm = std::make_shared<ReduceComm>(
      shape, timeout, limits::heartbeatPeriodMs(peer.body.heartbeat_ms), flags, transport_.get(),
      &pool_, executor_.get(), address_, state, share, counters_);
  comm->join_deadline = Clock::now() + std::chrono::milliseconds(timeout);
  const auth::Nonce random = auth::makeNonce();
  std::memcpy(&comm->drawn_id, random.data(), sizeof comm->drawn_id);
  comms_[h.comm_id] = comm;
  RD_LOG_INFO("reducer %s: comm %016llx: first rank %s (%u ranks, timeout %u ms)", address_.c_str(),
              static_cast<unsigned long long>(h.comm_id),
              (h.flags & wire::kFlagRejoin) != 0 ? "rejoining, as a replacement" : "joining",
              h.nranks, timeout);
  return comm;
}

void ReductionServer::joinComm(transport::ConnId conn, Peer& peer) {
  const wire::Header& h = peer.hello;
  const bool results = peer.resultChannel();
  const bool rejoin = (h.flags & wire::kFlagRejoin) != 0;
  const auto flags =
      static_cast<uint16_t>(h.flags & ~(wire::kFlagResultChannel | wire::kFlagRejoin));
  auto it = comms_.find(h.comm_id);
  std::shared_ptr<ReduceComm> comm;
  if (it == comms_.end()) {
    comm = createComm(conn, peer, flags);
    if (!comm) return;
    if (rejoin) {
      comm->startRejoin();
      ++rejoins_;
    }
  } else {
    comm = it->second;
    std::string problem;
    if (comm->failed() || comm->shape().epoch != 0) {
      problem = "communicator already running or failed; create a new one";
    } else if (comm->rejoining() != rejoin) {
      problem = rejoin ? "it rejoins a reducer the other ranks join afresh"
                       : "it joins afresh a reducer the other ranks rejoin";
    } else if (comm->shape().nranks != h.nranks) {
      problem = "rank count " + std::to_string(h.nranks) + " differs from the other ranks' " +
                std::to_string(comm->shape().nranks);
    } else if (comm->shape().max_chunk_bytes != peer.body.chunk_bytes || comm->flags() != flags) {
      problem =
          "its largest chunk (LIBREDUCE_CHUNK_BYTES, _WINDOW, _INGRESS_BYTES), "
          "LIBREDUCE_DETERMINISTIC, LIBREDUCE_FAILOVER or LIBREDUCE_WIRE_DTYPE differs from the "
          "other ranks'";
    } else if (comm->heartbeatMs() != limits::heartbeatPeriodMs(peer.body.heartbeat_ms)) {
      // Each rank sends at its own period: the reducer must expect the same of all.
      problem = "its LIBREDUCE_HEARTBEAT_MS (" + std::to_string(peer.body.heartbeat_ms) +
                ") differs from the other ranks' (" + std::to_string(comm->heartbeatMs()) + ")";
    } else if (comm->shape().spread != peer.body.spread) {
      problem = "its reducer list has " + std::to_string(peer.body.spread) +
                " reducers, the other ranks' " + std::to_string(comm->shape().spread);
    } else if (comm->shape().algorithm != peer.body.algorithm) {
      problem = std::string("its algorithm is ") +
                algorithmName(static_cast<rdAlgorithm_t>(peer.body.algorithm)) +
                ", the other ranks' " +
                algorithmName(static_cast<rdAlgorithm_t>(comm->shape().algorithm)) +
                " (LIBREDUCE_ALGO or rdCommConfig_t.algorithm differ)";
    } else if (results ? comm->ranks()[h.rank].result_conn != 0 : comm->ranks()[h.rank].joined) {
      problem = "rank " + std::to_string(h.rank) + " joined twice";
    }
    if (!problem.empty()) {
      reject(conn, h, rdInvalidUsage, problem);
      return;
    }
  }
  RankLink& link = comm->ranks()[h.rank];
  if (results) {
    link.result_conn = conn;
  } else {
    link.conn = conn;
    link.joined = true;
    link.address = peer.address;
  }
  peer.comm = comm;
  peer.state = Peer::State::kJoined;
  ++comm->joined;
  finishJoin(*comm);
}

void ReductionServer::onResume(Peer& peer, const wire::Header& h) {
  ReduceComm& comm = *peer.comm;
  if (comm.resume(peer.hello.rank, h.seq)) finishJoin(comm);
}

void ReductionServer::finishJoin(ReduceComm& comm) {
  const uint32_t nranks = comm.shape().nranks;
  if (comm.joined < 2 * nranks || comm.waitingForResume()) return;
  comm.mutableShape().epoch = next_epoch_++;
  for (RankLink& rank : comm.ranks()) rank.last_heard = Clock::now();
  std::vector<std::string> addresses;
  for (const auto& rank : comm.ranks()) addresses.push_back(rank.address);
  std::string list = wire::encodeAddresses(addresses.data(), nranks);
  wire::Header j =
      wire::makeHeader(wire::MsgType::kJoined, comm.shape().comm_id, comm.shape().epoch, 0, nranks);
  j.seq = comm.firstSeq();
  j.count = comm.drawn_id;
  for (uint32_t r = 0; r < nranks; ++r) {
    comm.sendTo(r, j, list);
    comm.sendTo(r, j, list, /*result_channel=*/true);
  }
  if (comm.rejoining()) {
    RD_LOG_INFO("reducer %s: comm %016llx: admitted as a replacement from operation %llu",
                address_.c_str(), static_cast<unsigned long long>(comm.shape().comm_id),
                static_cast<unsigned long long>(comm.firstSeq()));
  }
  RD_LOG_INFO("reducer %s: comm %016llx ready with %u ranks", address_.c_str(),
              static_cast<unsigned long long>(comm.shape().comm_id), nranks);
}

void ReductionServer::onFailure(transport::ConnId conn, const std::string& reason) {
  dropPeer(conn, Drop::kFailed, reason);
}

void ReductionServer::dropPeer(transport::ConnId conn, Drop cause, const std::string& reason) {
  auto it = peers_.find(conn);
  if (it == peers_.end()) return;
  Peer peer = std::move(it->second);
  peers_.erase(it);
  if (cause == Drop::kFailed && peer.state != Peer::State::kClosing) ++connections_failed_;
  transport_->close(conn);
  if (auto queue = waiting_.find(peer.hello.comm_id); queue != waiting_.end()) {
    WaitQueue& q = queue->second;
    for (auto w = q.items.begin(); w != q.items.end();) {
      if (w->conn == conn) {
        q.remove(&w);
      } else {
        ++w;
      }
    }
  }
  const wire::Header& h = peer.hello;
  if (peer.state != Peer::State::kJoined) {
    RD_LOG_WARN("reducer %s: closed connection from %s: %s", address_.c_str(),
                transport_->peerName(conn).c_str(), reason.c_str());
    return;
  }
  auto& comm = peer.comm;
  const bool left = cause == Drop::kLeft;
  std::string text = "rank " + std::to_string(h.rank) + " " + reason;
  if (peer.resultChannel()) {
    comm->ranks()[h.rank].result_conn = 0;
    // Closed after a leave, or after the rank is gone anyway: nothing more to do. Otherwise
    // the rank lost a connection, which is its failure.
    if (left || comm->ranks()[h.rank].conn == 0) return;
    text = "rank " + std::to_string(h.rank) + " lost its result channel: " + reason;
  }
  if (!left) RD_LOG_WARN("reducer %s: %s", address_.c_str(), text.c_str());
  if (left) {
    comm->rankLeft(h.rank);
  } else {
    comm->ranks()[h.rank].conn = 0;
    comm->fail(rdRemoteError, text);
  }
  bool anyone = std::any_of(comm->ranks().begin(), comm->ranks().end(),
                            [](const RankLink& l) { return l.conn != 0; });
  auto cit = comms_.find(h.comm_id);
  if (!anyone && cit != comms_.end() && cit->second == comm) {
    chunks_served_by_ended_ += comm->chunksServed();
    if (comm->failed()) ++comms_failed_;
    comms_.erase(cit);
  }
}

void ReductionServer::onTick() {
  auto now = Clock::now();
  std::vector<transport::ConnId> stale;
  for (auto& [conn, peer] : peers_) {
    if (peer.state != Peer::State::kJoined && peer.deadline < now) stale.push_back(conn);
  }
  for (auto conn : stale) dropPeer(conn, Drop::kFailed, "did not finish joining in time");
  // A copy: what a communicator sends may fail inline, and the dropped connection may end it
  // (dropPeer erases it from comms_) while the loop is still on it.
  std::vector<std::shared_ptr<ReduceComm>> comms;
  comms.reserve(comms_.size());
  for (const auto& [id, comm] : comms_) comms.push_back(comm);
  for (const auto& comm : comms) {
    if (comm->shape().epoch == 0 && !comm->failed() && comm->join_deadline < now) {
      std::string missing;
      int count = 0;
      for (uint32_t r = 0; r < comm->shape().nranks; ++r) {
        const RankLink& link = comm->ranks()[r];
        if (link.joined && link.result_conn != 0) continue;
        missing += (missing.empty() ? "" : ",") + std::to_string(r);
        ++count;
      }
      comm->fail(rdTimeout, (count == 1 ? "rank " : "ranks ") + missing + " did not join within " +
                                std::to_string(comm->timeoutMs()) + " ms");
    }
    comm->checkTimeouts(now);
    comm->checkReleaseRounds(now);
    comm->heartbeat(now);
    comm->sendReleasedLater();
  }
  closeFailedComms(now);
  drainWaiting();
}

void ReductionServer::closeFailedComms(Clock::time_point now) {
  // Long enough for the ranks to read why; then a failed communicator gives back everything,
  // whether or not its ranks ever close their side.
  constexpr auto kLinger = std::chrono::seconds(2);
  std::vector<transport::ConnId> closing;
  for (auto& [conn, peer] : peers_) {
    if (peer.state == Peer::State::kJoined && peer.comm->failed() &&
        now - peer.comm->failedAt() >= kLinger) {
      closing.push_back(conn);
    }
  }
  for (auto conn : closing) dropPeer(conn, Drop::kFailed, "was closed: its communicator failed");
}

}  // namespace rd::server
