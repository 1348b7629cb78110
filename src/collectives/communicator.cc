// SPDX-License-Identifier: BSD-3-Clause
#include "collectives/communicator.h"

#include <algorithm>
#include <cstring>

#include "collectives/algorithms/registry.h"
#include "collectives/host_address.h"
#include "collectives/pipeline.h"
#include "common/algorithm.h"
#include "common/check.h"
#include "common/dtype.h"
#include "common/limits.h"
#include "common/log.h"
#include "protocol/compression.h"

namespace rd::coll {

Communicator::Communicator(const CommConfig& config)
    : config_(config),
      p2p_(std::make_unique<PointToPoint>(this)),
      alive_(std::max<size_t>(1, config.reducers.size()), 1),
      landed_later_(alive_.size()),
      rejoins_(alive_.size()),
      admitted_from_(alive_.size(), 0) {}

rdResult_t Communicator::create(const CommConfig& config, std::unique_ptr<Communicator>* out) {
  if (config.nranks == 0 || config.rank >= config.nranks || config.nranks > limits::kMaxRanks) {
    return setErrorf(rdInvalidArgument, "rank %u of %u ranks is not valid", config.rank,
                     config.nranks);
  }
  if (config.reducers.empty() && config.rendezvous.empty()) {
    return setError(rdInvalidArgument, "no reducers and no rendezvous address given");
  }
  CommConfig resolved = config;
  resolved.reducers_on_loopback = allOnLoopback(config.reducers);
  // The one place the algorithm is decided: after every source of settings was merged.
  RD_CHECK(resolveAlgorithm(config.algorithm, !config.reducers.empty(), &resolved.algorithm));
  std::unique_ptr<Communicator> comm(new Communicator(resolved));
  RD_CHECK(comm->start());
  RD_CHECK(comm->join());
  *out = std::move(comm);
  return rdSuccess;
}

rdResult_t Communicator::start() {
  transport::Handlers h;
  h.on_message = [this](transport::ConnId c, const void* hdr, size_t len, transport::Payload p) {
    onMessage(c, hdr, len, std::move(p));
  };
  h.on_failure = [this](transport::ConnId c, rdResult_t status, const std::string& why) {
    onFailure(c, status, why);
  };
  h.on_tick = [this] { onTick(); };
  std::vector<std::string> targets = config_.reducers;
  if (targets.empty()) targets.push_back(config_.rendezvous);
  if (config_.listen_host.empty()) config_.listen_host = localAddressToward(targets.front());
  transport::Options topts;
  topts.name = "libreduce-rank" + std::to_string(config_.rank);
  topts.secret = config_.secret;
  topts.scope = config_.comm_id;  // on a shared pool the reducer keys the connection by it
  topts.local_host = config_.listen_host;
  RD_CHECK(transport::createTransport(config_.transport, config_.engine, topts, std::move(h),
                                      &transport_));
  for (bool result_channel : {false, true}) {
    for (const auto& address : targets) {
      ReducerLink link;
      link.address = address;
      link.result_channel = result_channel;
      links_.push_back(link);
    }
  }
  // Connection failures from here on are retried until the join deadline. The request exists
  // before the first connect: a failure that comes before join() (a wrong secret, found in the
  // bootstrap handshake) completes it, and join() returns that.
  join_request_ = std::make_shared<Request>();
  join_deadline_ = Clock::now() + std::chrono::milliseconds(config_.timeout_ms);
  if (std::any_of(links_.begin(), links_.end(),
                  [](const ReducerLink& l) { return l.result_channel; })) {
    RD_CHECK(transport_->prepareLane(transport::Lane::kSeparate));
  }
  return transport_->runSync([this] {
    RD_CHECK(transport_->listen(config_.listen_host, 0, &listen_address_));
    for (auto& link : links_) RD_CHECK(transport_->connect(link.address, &link.conn, laneOf(link)));
    return rdSuccess;
  });
}

transport::Lane Communicator::laneOf(const ReducerLink& link) {
  // Results stream in on a socket of their own: the rendezvous and flow-control messages that
  // answer them never wait behind this rank's contributions going out (and the other way).
  return link.result_channel ? transport::Lane::kSeparate : transport::Lane::kShared;
}

void Communicator::sendHello(uint32_t index) {
  ReducerLink& link = links_[index];
  link.nonce = auth::makeNonce();
  wire::HelloBody body;
  body.chunk_bytes = maxChunkBytes(config_);
  body.spread = std::max<uint32_t>(1, dataReducers());
  body.timeout_ms = config_.timeout_ms;
  body.algorithm = static_cast<uint32_t>(config_.algorithm);
  body.heartbeat_ms = limits::heartbeatPeriodMs(config_.heartbeat_ms);
  std::memcpy(body.nonce, link.nonce.data(), link.nonce.size());
  auto text = std::make_shared<std::string>(wire::encodeHello(body, listen_address_));
  wire::Header h = header(wire::MsgType::kHello, index);
  if (link.result_channel) h.flags |= wire::kFlagResultChannel;
  if (rejoining(index % servers())) h.flags |= wire::kFlagRejoin;
  h.flags |= wire::helloWireFlags(config_.wire_dtype);
  h.payload_bytes = text->size();
  transport_->send(link.conn, &h, sizeof h, text->data(), text->size(), [text](rdResult_t) {});
}

void Communicator::retryConnections(Clock::time_point now) {
  for (uint32_t i = 0; i < links_.size(); ++i) {
    ReducerLink& link = links_[i];
    if (link.conn != 0 || now < link.retry_at) continue;
    if (transport_->connect(link.address, &link.conn, laneOf(link)) != rdSuccess) {
      connectFailed(i, lastError());
      continue;
    }
    sendHello(i);
  }
}

rdResult_t Communicator::join() {
  transport_->post([this] {
    hellos_sent_ = true;
    for (uint32_t i = 0; i < links_.size(); ++i) sendHello(i);
  });
  // The reducers time a join out after timeout_ms and say who is missing: wait a little longer.
  rdResult_t st =
      join_request_->wait(static_cast<int>(config_.timeout_ms + config_.timeout_ms / 2));
  if (st == rdInProgress) {
    std::string pending;
    transport_->runSync([&] {
      for (uint32_t i = 0; i < links_.size(); ++i) {
        if (links_[i].epoch != 0) continue;
        uint32_t data_link = i % servers();
        if (links_[i].result_channel && links_[data_link].epoch == 0) continue;  // named once
        pending += (pending.empty() ? "" : ", ") + reducerName(i);
        if (!links_[i].last_error.empty()) pending += " (" + links_[i].last_error + ")";
      }
      return rdSuccess;
    });
    return setErrorf(rdTimeout, "rank %u: join not completed within %u ms by %s", config_.rank,
                     config_.timeout_ms, pending.c_str());
  }
  return st;
}

std::shared_ptr<char> Communicator::stagingBuffer() {
  if (staging_in_use_ >= 2 * effectiveWindow(config_)) return nullptr;
  char* raw = nullptr;
  if (!staging_free_.empty()) {
    raw = staging_free_.back();
    staging_free_.pop_back();
  } else {
    raw = new char[ringPieceBytes(config_)];
  }
  ++staging_in_use_;
  // Back to the free list when the last holder lets go (on the progress thread).
  return std::shared_ptr<char>(raw, [this](char* p) {
    --staging_in_use_;
    staging_free_.push_back(p);
  });
}

Communicator::~Communicator() {
  if (!transport_) return;
  // Tell the reducers this rank leaves (unless aborted), then drop every operation on the
  // progress thread: they hold payloads that belong to the transport.
  auto left = std::make_shared<Request>();
  transport_->post([this, left] {
    // From here on a connection that closes (a reducer drops a rank that left) is no loss.
    leaving_ = true;
    // Other ranks' copies wait for the release round of this rank's last operations.
    for (uint32_t m = 0; m < landed_later_.size(); ++m) sendLandedLater(m);
    auto done = [left] { left->complete(rdSuccess); };
    if (!aborted_ && failure_status_ == rdSuccess) {
      sendLeave(rdSuccess, "", done);
    } else {
      done();
    }
  });
  left->wait(500);
  transport_->runSync([this] {
    destroying_ = true;  // connections closed from here on are no news to tell the reducers
    for (auto& op : snapshot()) op->fail(rdAborted, "communicator destroyed");
    for (auto& op : held_) op->fail(rdAborted, "communicator destroyed");
    held_.clear();
    p2p_->failAll(rdAborted, "communicator destroyed");
    ops_.clear();
    early_.clear();
    return rdSuccess;
  });
  transport_->stop();  // messages still arriving reach handlers that use transport_
  transport_.reset();
  for (char* p : staging_free_) delete[] p;
}

std::string Communicator::reducerName(uint32_t link) const {
  if (config_.reducers.empty()) return "rendezvous " + links_[link].address;
  uint32_t reducer = link % servers();
  return "reducer " + std::to_string(reducer) + " (" + links_[link].address + ")";
}

bool Communicator::fromReducer(transport::ConnId conn, uint32_t reducer) const {
  return links_[reducer].conn == conn || links_[reducer + servers()].conn == conn;
}

wire::Header Communicator::header(wire::MsgType type, uint32_t reducer) const {
  uint32_t epoch = reducer != kNoReducer && reducer < links_.size() ? links_[reducer].epoch : 0;
  wire::Header h = wire::makeHeader(type, config_.comm_id, epoch, config_.rank, config_.nranks);
  if (config_.deterministic) h.flags |= wire::kFlagDeterministic;
  if (failover()) h.flags |= wire::kFlagFailover;
  return h;
}

int Communicator::linkOf(transport::ConnId conn) const {
  for (size_t i = 0; i < links_.size(); ++i) {
    if (links_[i].conn == conn) return static_cast<int>(i);
  }
  return -1;
}

void Communicator::onMessage(transport::ConnId conn, const void* header, size_t len,
                             transport::Payload p) {
  if (lost_conns_.count(conn) != 0) return;  // a lost reducer's last words
  wire::Header h;
  std::string why;
  int link = linkOf(conn);
  if (wire::parseHeader(header, len, p.size(), &h, &why) != rdSuccess ||
      h.comm_id != config_.comm_id) {
    std::string from = link >= 0 ? reducerName(link) : transport_->peerName(conn);
    failAll(rdProtocolError,
            "malformed message from " + from + ": " + (why.empty() ? "another communicator" : why));
    return;
  }
  if (link >= 0) links_[link].last_heard = Clock::now();
  auto type = static_cast<wire::MsgType>(h.type);
  if (type == wire::MsgType::kHeartbeat) return;  // it counted above
  if (type == wire::MsgType::kP2P) {
    p2p_->onMessage(conn, h, p);
    return;
  }
  if (type == wire::MsgType::kRing) {
    if (h.chunk == wire::kRingHelloChunk) {
      onRingHello(conn, h);
      return;
    }
    auto it = ops_.find(h.seq);
    if (it != ops_.end()) {
      it->second->onMessage(conn, h, p);
    } else if (notStarted(h.seq)) {
      early_[h.seq].push_back(EarlyMessage{conn, h, std::move(p)});
    }
    return;
  }
  if (link < 0) {
    failAll(rdProtocolError, std::string("unexpected ") + wire::typeName(h.type) + " from " +
                                 transport_->peerName(conn));
    return;
  }
  if (links_[link].epoch == 0 && rejoining(static_cast<uint32_t>(link) % servers())) {
    onRejoinMessage(static_cast<uint32_t>(link), h, p);
    return;
  }
  if (links_[link].epoch == 0) {
    onJoinMessage(static_cast<uint32_t>(link), h, p);
    return;
  }
  onReducerMessage(static_cast<uint32_t>(link), h, p);
}

void Communicator::onRingHello(transport::ConnId conn, const wire::Header& h) {
  uint32_t prev = prevRank();
  if (h.rank != prev) {
    failAll(rdProtocolError, "rank " + std::to_string(h.rank) +
                                 " opened a ring connection, but the previous rank is " +
                                 std::to_string(prev));
    return;
  }
  ring_prev_ = conn;
  ring_prev_lost_.clear();
}

void Communicator::onReducerMessage(uint32_t link, const wire::Header& h, transport::Payload& p) {
  auto type = static_cast<wire::MsgType>(h.type);
  if (type == wire::MsgType::kError) {
    // The rendezvous is not in the data path: its later news (a rank left) is moot.
    if (!config_.reducers.empty()) onReducerError(h, p);
    return;
  }
  if (h.epoch != links_[link].epoch) {
    failAll(rdProtocolError, reducerName(link) + " sent a message of another epoch");
    return;
  }
  if ((h.flags & wire::kFlagCarried) != 0 &&
      (type == wire::MsgType::kResult || type == wire::MsgType::kAck)) {
    onCarriedRelease(link, h, p);
    return;
  }
  auto it = ops_.find(h.seq);
  if (it != ops_.end()) {
    it->second->onMessage(links_[link].conn, h, p);
    reapFinished();
  } else if (notStarted(h.seq)) {
    // All-gather and broadcast results do not wait for this rank: they may come first.
    early_[h.seq].push_back(EarlyMessage{links_[link].conn, h, std::move(p)});
  }
}

void Communicator::onCarriedRelease(uint32_t link, const wire::Header& h, transport::Payload& p) {
  wire::Header released = h;
  released.type = static_cast<uint8_t>(wire::MsgType::kReleased);
  released.seq = wire::carriedSeq(h);
  released.flags = 0;
  released.status = 0;
  released.payload_bytes = 0;
  if (auto it = ops_.find(released.seq); it != ops_.end()) {
    transport::Payload none;
    it->second->onMessage(links_[link].conn, released, none);
  }
  onReducerMessage(link, wire::withoutCarried(h), p);
}

void Communicator::onReducerError(const wire::Header& h, transport::Payload& p) {
  const auto* bytes = static_cast<const char*>(p.data());
  std::string text = bytes != nullptr ? std::string(bytes, p.size()) : std::string();
  auto status = static_cast<rdResult_t>(h.status < 0 ? h.status : rdRemoteError);
  if (h.seq == wire::kSeqAllOps) {
    failAll(status, text);
  } else if (auto it = ops_.find(h.seq); it != ops_.end()) {
    it->second->fail(status, text);
    reapFinished();
  } else if (notStarted(h.seq)) {
    // The operation failed on the reducer before this rank posted it (another rank's arguments
    // differed): fail it as soon as it is posted.
    early_errors_[h.seq] = {status, text};
  }
}

std::vector<std::shared_ptr<Operation>> Communicator::snapshot() const {
  // Operations may fail the communicator (and so remove operations) from inside a loop.
  std::vector<std::shared_ptr<Operation>> ops;
  for (const auto& [seq, op] : ops_) ops.push_back(op);
  return ops;
}

void Communicator::reapFinished() {
  for (auto it = ops_.begin(); it != ops_.end();) {
    it = it->second->finished() ? ops_.erase(it) : std::next(it);
  }
  if (!recoveries_.empty()) checkRecoveries();
}

void Communicator::onTick() {
  auto now = Clock::now();
  if (holding_failure_ && now >= notice_deadline_) releaseFailure();
  if (hellos_sent_ && joined_links_ < links_.size()) retryConnections(now);
  heartbeat(now);
  for (uint32_t m = 0; m < landed_later_.size(); ++m) sendLandedLater(m);
  tryRejoins(now);
  for (auto& op : snapshot()) op->onTick(now);
  p2p_->onTick(now);
  reapFinished();
}

bool Communicator::tuned(const OpDesc& desc) const {
  // Deterministic communicators do not measure: a timing-dependent choice would change the bits.
  // Compressed operations run rs: the ring does not compress.
  return config_.algorithm == rdAlgoDefault && !config_.reducers.empty() &&
         !config_.deterministic && config_.nranks > 1 && desc.coll == Collective::kAllReduce &&
         desc.count != 0 && travelType(desc) == desc.dtype;
}

rdDataType_t Communicator::travelType(const OpDesc& desc) const {
  return wire::travelType(wireColl(desc.coll), desc.dtype, desc.op, config_.wire_dtype);
}

rdResult_t Communicator::post(const OpDesc& asked, std::shared_ptr<Request>* request) {
  if (!tuned(asked)) return postAs(asked, config_.algorithm, request);
  // One caller at a time through the tuner: every rank takes each size class's steps at the
  // same calls.
  std::lock_guard<std::mutex> lock(tuner_mu_);
  const uint32_t size_class = AutoTuner::sizeClass(asked.count * dtypeSize(asked.dtype));
  rdAlgorithm_t algorithm = rdAlgoReductionServer;
  auto posted = Clock::now();
  switch (tuner_.next(size_class, &algorithm)) {
    case AutoTuner::Step::kTrial:
      RD_CHECK(postAs(asked, algorithm, request));
      tuner_.record(size_class, algorithm, posted, *request);
      return rdSuccess;
    case AutoTuner::Step::kSum: {
      // Every rank's time of each run goes out with this call (max); the next one reads it.
      std::shared_ptr<AutoTuner::Times> times =
          tuner_.trialTimes(size_class, static_cast<int>(config_.timeout_ms));
      OpDesc sum;
      sum.send = times->data();
      sum.recv = times->data();
      sum.count = times->size();
      sum.dtype = rdFloat64;
      sum.op = rdMax;  // each run's longest time over the ranks (auto_tuner.h)
      std::shared_ptr<Request> summed;
      RD_CHECK(postAs(sum, rdAlgoReductionServer, &summed));
      tuner_.setSum(size_class, summed);
      break;
    }
    case AutoTuner::Step::kDecide: {
      std::array<double, 2> best{};
      RD_CHECK(tuner_.decide(size_class, &algorithm, &best));
      RD_LOG_INFO(
          "rank %u: auto runs all-reduces of %llu..%llu bytes with %s (per call in the best "
          "run after the first, longest over the ranks: rs %.3f ms, ring %.3f ms)",
          config_.rank, size_class == 0 ? 0ull : 1ull << (size_class - 1), (1ull << size_class) - 1,
          algorithmName(algorithm), best[0] * 1e3, best[1] * 1e3);
      break;
    }
    case AutoTuner::Step::kDecided: break;
  }
  return postAs(asked, algorithm, request);
}

rdResult_t Communicator::postAs(const OpDesc& asked, rdAlgorithm_t algorithm,
                                std::shared_ptr<Request>* request) {
  RD_CHECK(asyncError());
  if (aborted_) return setError(rdAborted, "communicator was aborted");
  OpDesc desc = asked;
  RD_CHECK(
      selectAlgorithm(algorithm, !config_.reducers.empty(), config_.rank, config_.nranks, &desc));
  const AlgorithmEntry* entry = findAlgorithm(desc.algorithm);
  if (entry == nullptr) return setError(rdInternalError, "no operation for the algorithm");
  auto req = std::make_shared<Request>();
  *request = req;
  recordWhenComplete(desc, req.get());
  transport_->post([this, desc, req, entry] {
    uint64_t seq = next_seq_++;
    req->setSeq(seq);
    if (completeIfFailed(*req)) return;
    auto op = entry->make(this, desc, seq, req);
    if (resumes_pending_ > 0 || !held_.empty()) {
      held_.push_back(std::move(op));  // a replacement reducer is being admitted
      return;
    }
    startOp(op);
  });
  return rdSuccess;
}

bool Communicator::completeIfFailed(Request& request) {
  std::lock_guard<std::mutex> lock(failure_mu_);
  if (failure_status_ == rdSuccess) return false;
  request.complete(failure_status_, failure_);
  return true;
}

rdResult_t Communicator::postPointToPoint(bool is_send, const P2PDesc& desc,
                                          std::shared_ptr<Request>* request) {
  RD_CHECK(asyncError());
  if (aborted_) return setError(rdAborted, "communicator was aborted");
  auto req = std::make_shared<Request>();
  *request = req;
  transport_->post([this, is_send, desc, req] {
    if (completeIfFailed(*req)) return;
    if (is_send) {
      p2p_->send(desc, req);
    } else {
      p2p_->receive(desc, req);
    }
  });
  return rdSuccess;
}

bool Communicator::cancelReceive(const std::shared_ptr<Request>& request) {
  if (request->test() != rdInProgress) return false;
  bool cancelled = false;
  transport_->runSync([&] {
    cancelled = p2p_->cancel(request);
    return rdSuccess;
  });
  return cancelled;
}

void Communicator::startOp(const std::shared_ptr<Operation>& op) {
  Operation* raw = op.get();
  uint64_t seq = op->seq();
  ops_[seq] = op;
  if (auto err = early_errors_.find(seq); err != early_errors_.end()) {
    raw->fail(err->second.first, err->second.second);
    early_errors_.erase(err);
  }
  raw->start();
  auto early = early_.find(seq);
  if (early != early_.end()) {
    auto messages = std::move(early->second);
    early_.erase(early);
    for (auto& m : messages) {
      if (raw->finished()) break;
      // A result a reducer lost since sent early: its chunk was re-routed (docs/failover.md).
      if (lost_conns_.count(m.conn) != 0) continue;
      raw->onMessage(m.conn, m.header, m.payload);
    }
  }
  reapFinished();
}

transport::ConnId Communicator::ringNext() {
  if (ring_next_ != 0) return ring_next_;
  uint32_t next = nextRank();
  if (transport_->connect(peer_addresses_.at(next), &ring_next_) != rdSuccess) {
    failAll(rdConnectionError,
            "cannot connect to ring neighbour rank " + std::to_string(next) + ": " + lastError());
    return 0;
  }
  wire::Header hello = header(wire::MsgType::kRing, kNoReducer);
  hello.chunk = wire::kRingHelloChunk;
  transport_->send(ring_next_, &hello, sizeof hello, nullptr, 0, nullptr);
  return ring_next_;
}

rdResult_t Communicator::reducerTransports(uint32_t reducer, std::string* out) {
  if (reducer >= dataReducers()) {
    return setError(rdInvalidArgument, "reducer " + std::to_string(reducer) + " of " +
                                           std::to_string(dataReducers()) +
                                           " in this communicator");
  }
  return transport_->runSync([&] {
    const std::string sent = transport_->linkTransports(links_.at(reducer).conn);
    const std::string results = transport_->linkTransports(links_.at(servers() + reducer).conn);
    *out = sent == results || results.empty() ? sent : sent + " (results: " + results + ")";
    return rdSuccess;
  });
}

}  // namespace rd::coll
