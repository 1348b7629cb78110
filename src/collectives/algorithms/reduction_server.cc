// SPDX-License-Identifier: BSD-3-Clause
// The reduction-server algorithm ("rs"): the buffer is cut into chunks (protocol/chunking.h),
// each chunk goes to its reducer with at most `window` chunks in flight per reducer, and results
// are received straight into the output buffer while later chunks are still being sent. Runs
// every collective; a barrier is an empty all-reduce that every rank must send.
//
// With wire compression (protocol/compression.h) a chunk is rounded into a staging buffer just
// before it is sent (a window of them per reducer, reused) and a result is widened into the
// output as it lands.
#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/pipeline.h"
#include "common/dtype.h"
#include "cpu/cpu_reduce.h"
#include "protocol/chunking.h"
#include "protocol/compression.h"

namespace rd::coll {

namespace {

class ReducerOp final : public Operation {
 public:
  using Operation::Operation;

  void start() override;
  void onMessage(transport::ConnId conn, const wire::Header& h,
                 transport::Payload& payload) override;
  void onTick(Clock::time_point now) override;
  void fail(rdResult_t status, const std::string& reason) override;
  bool finished() const override { return completed_ && receiving_ == 0 && sending_ == 0; }
  void onReducerLost(uint32_t m) override;

 private:
  void pump(uint32_t reducer);
  // Whether @p conn is a live reducer's other than @p m (failover only).
  bool fromAnotherLiveReducer(transport::ConnId conn, uint32_t m) const;
  // Sends chunk @p k to reducer @p m (rounded into a staging buffer when compressed): this
  // rank's contribution, or the result it holds when the chunk was re-routed (failover).
  void sendChunk(uint32_t m, uint32_t k);
  // Takes the payload of result @p k into the output.
  void receiveResult(uint32_t m, uint32_t k, transport::Payload& payload);
  void resultLanded(uint32_t m, uint32_t k, rdResult_t status);
  // Removes @p k from @p queue; whether it was there.
  static bool takeQueued(std::deque<uint32_t>& queue, uint32_t k) {
    auto it = std::find(queue.begin(), queue.end(), k);
    if (it == queue.end()) return false;
    queue.erase(it);
    return true;
  }
  // An answer of chunk @p k from reducer @p m that is still wanted (not re-routed since).
  bool current(uint32_t m, uint32_t k) const { return target_[k] == m; }
  // Compression: the staging buffers and the all-gather's own part, rounded like the others.
  void prepareCompression();
  void succeedIfDone();
  // Failover: a small all-reduce hands its buffers back once every answer is here, before the
  // release round ends, answering for its results from a copy (docs/failover.md). Whether it
  // did.
  bool returnBeforeRelease();
  // Whether a result landing in the output could overwrite a contribution not yet sent again.
  bool overlapping() const;
  // The names of the reducers that @p which picks, for an error.
  std::string reducersWhere(const std::function<bool(uint32_t)>& which) const;
  // Whether an answer's echoed arguments are this rank's call.
  bool sameArguments(const wire::Header& h) const;
  // Byte offset of a chunk in the send / receive buffer (RS and AG buffers hold one rank's part).
  size_t sendOffset(const wire::ChunkSpan& s) const;
  size_t recvOffset(const wire::ChunkSpan& s) const;

  size_t esize_ = 0;
  rdDataType_t travel_ = rdFloat32;  // what the values travel as (compression.h)
  size_t wire_esize_ = 0;
  bool compressed_ = false;
  std::vector<char> staging_;                     // compressed: window chunks per reducer
  std::vector<std::vector<char*>> free_staging_;  // per reducer
  wire::Coll coll_ = wire::Coll::kAllReduce;
  wire::Geometry g_;
  Pipeline pipeline_;
  uint32_t nreducers_ = 0;
  std::vector<std::deque<uint32_t>> queue_;  // chunks still to send, per reducer
  // Chunks re-routed after a loss, per reducer: sent before the queue and past the window. Ranks
  // that learned of the loss at different points would otherwise fill their windows with
  // different chunks, each waiting for the other's (docs/failover.md).
  std::vector<std::deque<uint32_t>> resend_;
  // Chunks sent from queue_ and not answered, per reducer (re-sent chunks are not counted: the
  // window must keep moving while they wait for ranks that learned of a loss later).
  std::vector<uint32_t> in_flight_;
  std::vector<uint8_t> windowed_;  // per chunk: sent from queue_, counted in in_flight_
  // Sends handed to the transport and not complete, per reducer. At most kMaxPosted: a
  // connection then finishes its chunks one after the other, so a reducer can start on the
  // first before the rest of the window arrives (posted all at once, they share the link and
  // all land at the end of the window).
  std::vector<uint32_t> posted_;
  static constexpr uint32_t kMaxPosted = 2;
  std::vector<uint8_t> pumping_;  // per reducer: a send completing inside pump() must not re-enter
  // Per chunk: 0 no answer yet, kHeard its header is here (a result still landing), kCounted
  // counted in answered_count_.
  std::vector<uint8_t> answered_;
  static constexpr uint8_t kHeard = 1;
  static constexpr uint8_t kCounted = 2;
  // Failover (docs/failover.md): each chunk's reducer (wire::routeChunk; it changes when that
  // reducer is lost), whether this rank holds the chunk's result, and the release round.
  std::vector<uint32_t> target_;
  std::vector<uint8_t> holds_;
  bool in_place_ = false;  // send and receive buffers overlap: results land in staging first
  bool had_all_ = false;   // every answer was here once: kLanded went to landed_to_
  uint32_t landed_to_ = 0;
  bool released_ = false;
  bool rerouted_ = false;  // chunks were sent again after a loss
  // Returned before the release: the request completed, the results live on in kept_ (the
  // operation's buffers point there) until kReleased ends the operation.
  bool returned_ = false;
  std::vector<char> kept_;
  // Up to this many bytes the copy costs less than the release round's round trip (about
  // 85 us on loopback, bench/results/release-round-2026-12-03).
  static constexpr size_t kReturnBeforeReleaseBytes = 256 << 10;
  // Results from a chunk's new reducer that came before this rank learned its reducer was lost
  // (a rank that only receives sends it nothing first): taken once this rank learns it.
  struct Ahead {
    transport::ConnId conn;
    wire::Header header;
    transport::Payload payload;
  };
  std::vector<Ahead> ahead_;
  uint64_t expected_ = 0;  // results + acks this rank waits for
  uint64_t answered_count_ = 0;
  uint64_t answered_headers_ = 0;
  uint32_t receiving_ = 0;
  std::vector<uint32_t> receiving_from_;  // result payloads still landing, per reducer
  uint32_t sending_ = 0;
  bool completed_ = false;
  Clock::time_point last_progress_ = Clock::now();
  // A failure held back while every answer is here and only result bytes are landing.
  rdResult_t held_status_ = rdSuccess;
  std::string held_reason_;
};

std::string ReducerOp::reducersWhere(const std::function<bool(uint32_t)>& which) const {
  std::string names;
  for (uint32_t m = 0; m < nreducers_; ++m) {
    if (which(m)) names += (names.empty() ? "" : ", ") + comm_->reducerName(m);
  }
  return names;
}

size_t ReducerOp::sendOffset(const wire::ChunkSpan& s) const {
  uint64_t first = coll_ == wire::Coll::kAllGather ? s.offset - s.owner * g_.count : s.offset;
  return first * esize_;
}

size_t ReducerOp::recvOffset(const wire::ChunkSpan& s) const {
  uint64_t first = coll_ == wire::Coll::kReduceScatter ? s.offset - s.owner * g_.count : s.offset;
  return first * esize_;
}

void ReducerOp::start() {
  const CommConfig& cfg = comm_->config();
  esize_ = dtypeSize(desc_.dtype);
  coll_ = wireColl(desc_.coll);
  travel_ = comm_->travelType(desc_);
  wire_esize_ = dtypeSize(travel_);
  compressed_ = travel_ != desc_.dtype;
  nreducers_ = comm_->dataReducers();
  const bool per_rank = coll_ == wire::Coll::kReduceScatter || coll_ == wire::Coll::kAllGather;
  // Chunks are sized by the bytes that travel.
  const uint64_t buffer_bytes = desc_.count * wire_esize_ * (per_rank ? cfg.nranks : 1);
  pipeline_ = reductionServerPipeline(cfg, buffer_bytes, wire_esize_);
  g_ = wire::makeGeometry(coll_, desc_.count, cfg.nranks, desc_.root, pipeline_.chunk_bytes,
                          wire_esize_);
  if (g_.nchunks > UINT32_MAX) {
    fail(rdInvalidArgument, "operation of " + std::to_string(desc_.count) +
                                " elements needs too many chunks; raise LIBREDUCE_CHUNK_BYTES");
    return;
  }
  // The part this rank already holds is copied locally, never sent back to it.
  char* recv = static_cast<char*>(desc_.recv);
  const char* send = static_cast<const char*>(desc_.send);
  if (coll_ == wire::Coll::kAllGather) {
    char* mine = recv + static_cast<size_t>(cfg.rank) * desc_.count * esize_;
    if (mine != send && desc_.count != 0) std::memmove(mine, send, desc_.count * esize_);
    desc_.send = mine;
  } else if (coll_ == wire::Coll::kBroadcast && cfg.rank == desc_.root && send != recv &&
             desc_.count != 0) {
    std::memmove(recv, send, desc_.count * esize_);
  }
  if (compressed_) prepareCompression();
  if (completed_) return;
  queue_.assign(nreducers_, {});
  resend_.assign(nreducers_, {});
  in_flight_.assign(nreducers_, 0);
  posted_.assign(nreducers_, 0);
  pumping_.assign(nreducers_, 0);
  receiving_from_.assign(nreducers_, 0);
  answered_.assign(g_.nchunks, 0);
  windowed_.assign(g_.nchunks, 0);
  target_.assign(g_.nchunks, 0);
  holds_.assign(g_.nchunks, 0);
  if (comm_->failover()) in_place_ = overlapping();
  for (uint64_t k = 0; k < g_.nchunks; ++k) {
    bool gives = wire::contributes(g_, k, cfg.rank);
    target_[k] = comm_->route(seq_, k);
    if (gives) queue_[target_[k]].push_back(static_cast<uint32_t>(k));
    if (gives || wire::receivesResult(g_, k, cfg.rank)) ++expected_;
  }
  for (uint32_t m = 0; m < nreducers_; ++m) pump(m);
  succeedIfDone();
}

void ReducerOp::pump(uint32_t m) {
  if (pumping_[m] != 0) return;  // the loop below sees the freed slot
  pumping_[m] = 1;
  auto can_send = [&] {
    return !completed_ && posted_[m] < kMaxPosted && (!compressed_ || !free_staging_[m].empty());
  };
  while (can_send() && !resend_[m].empty()) {
    uint32_t k = resend_[m].front();
    resend_[m].pop_front();
    sendChunk(m, k);
  }
  while (can_send() && in_flight_[m] < pipeline_.window && !queue_[m].empty()) {
    uint32_t k = queue_[m].front();
    queue_[m].pop_front();
    windowed_[k] = 1;
    ++in_flight_[m];
    sendChunk(m, k);
  }
  pumping_[m] = 0;
}

void ReducerOp::sendChunk(uint32_t m, uint32_t k) {
  wire::ChunkSpan span = wire::chunkSpan(g_, k);
  wire::Header h = comm_->header(wire::MsgType::kData, m);
  h.coll = static_cast<uint8_t>(coll_);
  h.dtype = static_cast<uint8_t>(travel_);
  if (compressed_) h.flags |= wire::kFlagWideSum;
  h.op = static_cast<uint8_t>(desc_.op);
  h.count = desc_.count;
  h.root = desc_.root;
  h.chunk_bytes = static_cast<uint32_t>(pipeline_.chunk_bytes);
  h.seq = seq_;
  h.chunk = k;
  h.payload_bytes = span.elems * wire_esize_;
  comm_->carryLanded(m, &h);
  const char* bytes = static_cast<const char*>(desc_.send) + sendOffset(span);
  if (holds_[k] != 0) {  // re-routed, and the lost reducer's result is here: send that
    h.flags |= wire::kFlagHeldResult;
    bytes = static_cast<const char*>(desc_.recv) + recvOffset(span);
  }
  char* staged = nullptr;
  if (compressed_) {
    staged = free_staging_[m].back();
    free_staging_[m].pop_back();
    rdResult_t status = kernels::cpu::narrowFloats(reinterpret_cast<const float*>(bytes), staged,
                                                   span.elems, travel_);
    if (status != rdSuccess) {
      fail(status, "rounding a chunk for the wire failed: " + lastError());
      return;
    }
    bytes = staged;
  }
  ++posted_[m];
  ++sending_;
  request_->markSent();
  auto self = shared_from_this();
  comm_->transport().send(comm_->reducers()[m].conn, &h, sizeof h, bytes, h.payload_bytes,
                          [this, self, m, staged](rdResult_t) {
                            --sending_;
                            --posted_[m];
                            if (staged != nullptr) free_staging_[m].push_back(staged);
                            pump(m);
                          });
}

void ReducerOp::prepareCompression() {
  const size_t chunk = pipeline_.chunk_bytes;
  const size_t per_reducer = std::min<uint64_t>(pipeline_.window, g_.nchunks);
  staging_.resize(chunk * per_reducer * nreducers_);
  free_staging_.assign(nreducers_, {});
  for (uint32_t m = 0; m < nreducers_; ++m) {
    for (size_t i = 0; i < per_reducer; ++i) {
      free_staging_[m].push_back(staging_.data() + (m * per_reducer + i) * chunk);
    }
  }
  if (coll_ != wire::Coll::kAllGather || desc_.count == 0) return;
  // This rank's own part is rounded as every other rank receives it, so all ranks hold the
  // same output.
  auto* mine = static_cast<float*>(const_cast<void*>(desc_.send));
  std::vector<uint16_t> rounded(desc_.count);
  rdResult_t status = kernels::cpu::narrowFloats(mine, rounded.data(), desc_.count, travel_);
  if (status == rdSuccess) {
    status = kernels::cpu::widenToFloats(rounded.data(), mine, desc_.count, travel_);
  }
  if (status != rdSuccess) fail(status, "rounding the own part failed: " + lastError());
}

void ReducerOp::onMessage(transport::ConnId conn, const wire::Header& h,
                          transport::Payload& payload) {
  if (completed_) return;
  const uint32_t rank = comm_->config().rank;
  auto type = static_cast<wire::MsgType>(h.type);
  if (type == wire::MsgType::kReleased && comm_->failover()) {
    released_ = true;
    succeedIfDone();
    return;
  }
  uint32_t m = h.chunk < g_.nchunks ? target_[h.chunk] : 0;
  if (type == wire::MsgType::kResult && h.chunk < g_.nchunks && !comm_->fromReducer(conn, m) &&
      fromAnotherLiveReducer(conn, m)) {
    ahead_.push_back(Ahead{conn, h, std::move(payload)});
    return;
  }
  std::string problem;
  if (type != wire::MsgType::kResult && type != wire::MsgType::kAck) {
    problem = std::string("unexpected ") + wire::typeName(h.type) + " message";
  } else if (!sameArguments(h)) {
    // A rank that only receives (broadcast, all-gather) sends nothing the reducer could compare:
    // the answer echoes the arguments the reducer took, and this rank compares them here.
    fail(rdInvalidUsage, "rank " + std::to_string(rank) + " called operation " +
                             std::to_string(seq_) + " with different arguments than the ranks " +
                             comm_->reducerName(m) + " served it for");
    return;
  } else if (h.chunk >= g_.nchunks || answered_[h.chunk] != 0 || !comm_->fromReducer(conn, m)) {
    problem = "answer for chunk " + std::to_string(h.chunk) + " that it does not own or repeats";
  } else if (type == wire::MsgType::kResult &&
             (!wire::receivesResult(g_, h.chunk, rank) ||
              payload.size() != wire::chunkSpan(g_, h.chunk).elems * wire_esize_)) {
    problem = "result for chunk " + std::to_string(h.chunk) + " of the wrong size";
  } else if (type == wire::MsgType::kAck &&
             (!wire::contributes(g_, h.chunk, rank) || wire::receivesResult(g_, h.chunk, rank))) {
    problem = "acknowledgement for chunk " + std::to_string(h.chunk) + " it should not send";
  }
  if (!problem.empty()) {
    comm_->failAll(rdProtocolError, comm_->reducerName(m) + " sent an " + problem);
    return;
  }
  answered_[h.chunk] = kHeard;
  ++answered_headers_;
  last_progress_ = Clock::now();
  if (wire::contributes(g_, h.chunk, rank)) {
    if (windowed_[h.chunk] != 0) --in_flight_[m];
    windowed_[h.chunk] = 0;
    pump(m);
  }
  if (type == wire::MsgType::kAck) {
    answered_[h.chunk] = kCounted;
    ++answered_count_;
    succeedIfDone();
    return;
  }
  receiveResult(m, h.chunk, payload);
}

void ReducerOp::receiveResult(uint32_t m, uint32_t k, transport::Payload& payload) {
  const wire::ChunkSpan span = wire::chunkSpan(g_, k);
  ++receiving_;
  ++receiving_from_[m];
  char* dst = static_cast<char*>(desc_.recv) + recvOffset(span);
  auto self = shared_from_this();
  const void* eager = payload.data();
  if (!compressed_ && (eager != nullptr || !in_place_)) {
    payload.receiveInto(dst, [this, self, m, k](rdResult_t status) { resultLanded(m, k, status); });
    return;
  }
  if (eager != nullptr) {
    rdResult_t status =
        kernels::cpu::widenToFloats(eager, reinterpret_cast<float*>(dst), span.elems, travel_);
    payload.discard();
    resultLanded(m, k, status);
    return;
  }
  // Staged: compressed (widened on landing), or in place under failover (copied on landing, so
  // that a result cut off by its reducer's death never overwrites the contribution).
  auto staged = std::make_shared<std::vector<char>>(payload.size());
  payload.receiveInto(staged->data(),
                      [this, self, m, k, staged, dst, elems = span.elems](rdResult_t status) {
                        if (status == rdSuccess && current(m, k)) {
                          if (compressed_) {
                            status = kernels::cpu::widenToFloats(
                                staged->data(), reinterpret_cast<float*>(dst), elems, travel_);
                          } else {
                            std::memcpy(dst, staged->data(), staged->size());
                          }
                        }
                        resultLanded(m, k, status);
                      });
}

void ReducerOp::resultLanded(uint32_t m, uint32_t k, rdResult_t status) {
  --receiving_;
  --receiving_from_[m];
  last_progress_ = Clock::now();
  if (!current(m, k) || completed_) return;  // re-routed meanwhile: the new reducer answers
  if (status != rdSuccess && comm_->failover()) {
    // The reducer's connection broke: the communicator loses it next and re-routes the chunk.
    return;
  }
  if (status != rdSuccess) {
    fail(status, "rank " + std::to_string(comm_->config().rank) + ": receiving a result from " +
                     comm_->reducerName(m) + " failed");
    return;
  }
  holds_[k] = 1;
  answered_[k] = kCounted;
  request_->markLanded();
  ++answered_count_;
  succeedIfDone();
}

bool ReducerOp::sameArguments(const wire::Header& h) const {
  bool reduces = coll_ == wire::Coll::kAllReduce || coll_ == wire::Coll::kReduceScatter;
  return h.coll == static_cast<uint8_t>(coll_) && h.dtype == static_cast<uint8_t>(travel_) &&
         h.count == desc_.count && h.chunk_bytes == pipeline_.chunk_bytes &&
         (!reduces || h.op == static_cast<uint8_t>(desc_.op)) &&
         (coll_ != wire::Coll::kBroadcast || h.root == desc_.root);
}

void ReducerOp::succeedIfDone() {
  if (completed_) return;
  if (!comm_->failover()) {
    if (answered_count_ != expected_) return;
  } else {
    // The release round (docs/failover.md): the buffers go back only once every rank has every
    // result, which one kReleased proves. Answers re-routed after that are help for no one.
    if (!had_all_ && answered_count_ == expected_) {
      had_all_ = true;
      landed_to_ = comm_->route(seq_, 0);
      if (returnBeforeRelease()) {
        comm_->landedLater(landed_to_, seq_);  // no one waits for it: it rides on a later frame
      } else {
        comm_->sendControl(wire::MsgType::kLanded, landed_to_, seq_);
      }
    }
    if (!had_all_ || !released_) return;
    comm_->releasedOp(seq_);
    // What this rank sent again may wait at a survivor for ranks that completed meanwhile.
    if (rerouted_) {
      for (uint32_t m = 0; m < nreducers_; ++m) comm_->sendControl(wire::MsgType::kDone, m, seq_);
    }
  }
  completed_ = true;
  if (!returned_) request_->complete(rdSuccess);
}

bool ReducerOp::returnBeforeRelease() {
  const size_t bytes = desc_.count * esize_;
  if (coll_ != wire::Coll::kAllReduce || released_ || bytes > kReturnBeforeReleaseBytes) {
    return false;
  }
  const char* results = static_cast<const char*>(desc_.recv);
  kept_.assign(results, results + bytes);
  // Every chunk's result is held: after a loss this rank sends results only, from the copy, and
  // results sent back again land in staging first so that a cut-off one spoils nothing.
  desc_.send = kept_.data();
  desc_.recv = kept_.data();
  in_place_ = true;
  returned_ = true;
  request_->complete(rdSuccess);
  return true;
}

bool ReducerOp::overlapping() const {
  const bool per_rank = coll_ == wire::Coll::kReduceScatter;
  const size_t send_bytes = desc_.count * esize_ * (per_rank ? comm_->config().nranks : 1);
  const size_t recv_bytes = desc_.count * esize_;
  const char* send = static_cast<const char*>(desc_.send);
  const char* recv = static_cast<const char*>(desc_.recv);
  return send < recv + recv_bytes && recv < send + send_bytes;
}

void ReducerOp::onReducerLost(uint32_t m) {
  if (completed_) return;
  const uint32_t rank = comm_->config().rank;
  if (had_all_ && landed_to_ == m) {  // the release round goes on at the new release reducer
    landed_to_ = comm_->route(seq_, 0);
    comm_->sendControl(wire::MsgType::kLanded, landed_to_, seq_);
  }
  std::vector<uint8_t> touched(nreducers_, 0);
  for (uint32_t k = 0; k < g_.nchunks; ++k) {
    if (target_[k] != m) continue;
    const uint32_t t = comm_->route(seq_, k);
    target_[k] = t;
    const bool gives = wire::contributes(g_, k, rank);
    if (!gives && !wire::receivesResult(g_, k, rank)) continue;
    rerouted_ = true;
    if (takeQueued(queue_[m], k) || takeQueued(resend_[m], k)) {  // never sent
      resend_[t].push_back(k);
      touched[t] = 1;
      continue;
    }
    if (windowed_[k] != 0) --in_flight_[m];
    windowed_[k] = 0;
    if (answered_[k] != 0) --answered_headers_;
    if (answered_[k] == kCounted) --answered_count_;
    answered_[k] = 0;
    // Sent again (the result if this rank holds it), so that the new reducer hears from every
    // contributor; a rank that only receives waits for the new reducer's answer.
    if (gives) {
      resend_[t].push_back(k);
      touched[t] = 1;
    }
  }
  last_progress_ = Clock::now();
  for (uint32_t t = 0; t < nreducers_; ++t) {
    if (touched[t] != 0) pump(t);
  }
  std::vector<Ahead> ahead = std::move(ahead_);
  ahead_.clear();
  for (Ahead& a : ahead) {
    if (!completed_) onMessage(a.conn, a.header, a.payload);
  }
}

bool ReducerOp::fromAnotherLiveReducer(transport::ConnId conn, uint32_t m) const {
  if (!comm_->failover()) return false;
  for (uint32_t r = 0; r < nreducers_; ++r) {
    if (r != m && comm_->reducerAlive(r) && comm_->fromReducer(conn, r)) return true;
  }
  return false;
}

void ReducerOp::fail(rdResult_t status, const std::string& reason) {
  if (completed_) return;
  if (returned_) {  // the caller has its results: only the copy is left to give up
    completed_ = true;
    return;
  }
  // Every answer is here and only its bytes are still landing: a rank that left after this
  // operation (its leave overtakes our receives) must not fail it.
  // Held only while those bytes keep landing: onTick gives up on a stalled reducer.
  if (expected_ != 0 && answered_headers_ == expected_ && status != rdAborted) {
    if (held_status_ == rdSuccess) {
      held_status_ = status;
      held_reason_ = reason;
    }
    return;
  }
  completed_ = true;
  // A failure held while the results landed came first: what follows (a reducer dropping this
  // communicator because a rank that heard of it exited) is its consequence, not its cause.
  if (held_status_ != rdSuccess && status != rdAborted) {
    request_->complete(held_status_, held_reason_);
    return;
  }
  request_->complete(status, reason);
}

void ReducerOp::onTick(Clock::time_point now) {
  const uint32_t timeout = comm_->config().timeout_ms;
  const auto landing_stall = std::chrono::milliseconds(std::min<uint32_t>(timeout, 5000));
  if (!completed_ && !returned_ && held_status_ != rdSuccess &&
      now - last_progress_ >= landing_stall) {
    const std::string names = reducersWhere([&](uint32_t m) { return receiving_from_[m] != 0; });
    completed_ = true;
    if (!names.empty()) {
      held_reason_ +=
          "; results from " + names + " stopped landing in operation " + std::to_string(seq_);
    }
    request_->complete(held_status_, held_reason_);
    return;
  }
  // Reducers diagnose a missing rank after `timeout`; wait half as long again for their word,
  // and at least a few ticks: both sides only look at their clocks once a tick.
  const auto grace = std::max<std::chrono::milliseconds>(std::chrono::milliseconds(timeout / 2),
                                                         3 * transport::kTickInterval);
  const auto silence = std::chrono::milliseconds(timeout) + grace;
  if (completed_ || now - last_progress_ < silence) return;
  std::vector<uint8_t> silent(nreducers_, 0);
  for (uint64_t k = 0; k < g_.nchunks; ++k) {
    if (answered_[k] == 0 && (wire::contributes(g_, k, comm_->config().rank) ||
                              wire::receivesResult(g_, k, comm_->config().rank))) {
      silent[target_[k]] = 1;
    }
  }
  std::string names = reducersWhere([&](uint32_t m) { return silent[m] != 0; });
  std::string why;
  if (names.empty() && had_all_) {  // every result is here: the release round never ended
    names = comm_->reducerName(landed_to_);
    why =
        " (every result is here; the release never came: that reducer, or a rank it waits "
        "for, is stuck)";
  } else if (names.empty()) {  // every answer is here: results stopped landing
    names = reducersWhere([&](uint32_t m) { return receiving_from_[m] != 0; });
    why = " (its results stopped landing)";
  }
  comm_->failAll(rdTimeout, "operation " + std::to_string(seq_) + ": no answer from " + names +
                                " within " + std::to_string(silence.count()) + " ms" + why);
}

}  // namespace

std::shared_ptr<Operation> makeReductionServerOp(Communicator* comm, const OpDesc& desc,
                                                 uint64_t seq, std::shared_ptr<Request> request) {
  return std::make_shared<ReducerOp>(comm, desc, seq, std::move(request));
}

}  // namespace rd::coll
