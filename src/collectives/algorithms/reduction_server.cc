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

 private:
  void pump(uint32_t reducer);
  // Sends chunk @p k to reducer @p m (rounded into a staging buffer when compressed).
  void sendChunk(uint32_t m, uint32_t k);
  // Takes the payload of a result for @p span into the output.
  void receiveResult(uint32_t m, const wire::ChunkSpan& span, transport::Payload& payload);
  void resultLanded(uint32_t m, rdResult_t status);
  // Compression: the staging buffers and the all-gather's own part, rounded like the others.
  void prepareCompression();
  void succeedIfDone();
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
  std::vector<uint32_t> in_flight_;          // chunks sent and not answered, per reducer
  // Sends handed to the transport and not complete, per reducer. At most kMaxPosted: a
  // connection then finishes its chunks one after the other, so a reducer can start on the
  // first before the rest of the window arrives (posted all at once, they share the link and
  // all land at the end of the window).
  std::vector<uint32_t> posted_;
  static constexpr uint32_t kMaxPosted = 2;
  std::vector<uint8_t> pumping_;   // per reducer: a send completing inside pump() must not re-enter
  std::vector<uint8_t> answered_;  // per chunk
  uint64_t expected_ = 0;          // results + acks this rank waits for
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
  in_flight_.assign(nreducers_, 0);
  posted_.assign(nreducers_, 0);
  pumping_.assign(nreducers_, 0);
  receiving_from_.assign(nreducers_, 0);
  answered_.assign(g_.nchunks, 0);
  for (uint64_t k = 0; k < g_.nchunks; ++k) {
    bool gives = wire::contributes(g_, k, cfg.rank);
    if (gives) queue_[wire::reducerFor(k, seq_, nreducers_)].push_back(static_cast<uint32_t>(k));
    if (gives || wire::receivesResult(g_, k, cfg.rank)) ++expected_;
  }
  for (uint32_t m = 0; m < nreducers_; ++m) pump(m);
  succeedIfDone();
}

void ReducerOp::pump(uint32_t m) {
  if (pumping_[m] != 0) return;  // the loop below sees the freed slot
  pumping_[m] = 1;
  while (!completed_ && in_flight_[m] < pipeline_.window && posted_[m] < kMaxPosted &&
         !queue_[m].empty() && (!compressed_ || !free_staging_[m].empty())) {
    uint32_t k = queue_[m].front();
    queue_[m].pop_front();
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
  const char* bytes = static_cast<const char*>(desc_.send) + sendOffset(span);
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
  ++in_flight_[m];
  ++posted_[m];
  ++sending_;
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
  uint32_t m = h.chunk < g_.nchunks ? wire::reducerFor(h.chunk, seq_, nreducers_) : 0;
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
  answered_[h.chunk] = 1;
  ++answered_headers_;
  last_progress_ = Clock::now();
  if (wire::contributes(g_, h.chunk, rank)) {
    --in_flight_[m];
    pump(m);
  }
  if (type == wire::MsgType::kAck) {
    ++answered_count_;
    succeedIfDone();
    return;
  }
  receiveResult(m, wire::chunkSpan(g_, h.chunk), payload);
}

void ReducerOp::receiveResult(uint32_t m, const wire::ChunkSpan& span,
                              transport::Payload& payload) {
  ++receiving_;
  ++receiving_from_[m];
  char* dst = static_cast<char*>(desc_.recv) + recvOffset(span);
  auto self = shared_from_this();
  if (!compressed_) {
    payload.receiveInto(dst, [this, self, m](rdResult_t status) { resultLanded(m, status); });
    return;
  }
  if (const void* eager = payload.data(); eager != nullptr) {
    rdResult_t status =
        kernels::cpu::widenToFloats(eager, reinterpret_cast<float*>(dst), span.elems, travel_);
    payload.discard();
    resultLanded(m, status);
    return;
  }
  auto staged = std::make_shared<std::vector<char>>(payload.size());
  payload.receiveInto(staged->data(),
                      [this, self, m, staged, dst, elems = span.elems](rdResult_t status) {
                        if (status == rdSuccess) {
                          status = kernels::cpu::widenToFloats(
                              staged->data(), reinterpret_cast<float*>(dst), elems, travel_);
                        }
                        resultLanded(m, status);
                      });
}

void ReducerOp::resultLanded(uint32_t m, rdResult_t status) {
  --receiving_;
  --receiving_from_[m];
  last_progress_ = Clock::now();
  if (status != rdSuccess) {
    fail(status, "rank " + std::to_string(comm_->config().rank) + ": receiving a result from " +
                     comm_->reducerName(m) + " failed");
    return;
  }
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
  if (completed_ || answered_count_ != expected_) return;
  completed_ = true;
  request_->complete(rdSuccess);
}

void ReducerOp::fail(rdResult_t status, const std::string& reason) {
  if (completed_) return;
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
  request_->complete(status, reason);
}

void ReducerOp::onTick(Clock::time_point now) {
  const uint32_t timeout = comm_->config().timeout_ms;
  const auto landing_stall = std::chrono::milliseconds(std::min<uint32_t>(timeout, 5000));
  if (!completed_ && held_status_ != rdSuccess && now - last_progress_ >= landing_stall) {
    std::string names;
    for (uint32_t m = 0; m < nreducers_; ++m) {
      if (receiving_from_[m] != 0) names += (names.empty() ? "" : ", ") + comm_->reducerName(m);
    }
    completed_ = true;
    request_->complete(held_status_, held_reason_ + "; results from " + names +
                                         " stopped landing in operation " + std::to_string(seq_));
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
      silent[wire::reducerFor(k, seq_, nreducers_)] = 1;
    }
  }
  std::string names;
  for (uint32_t m = 0; m < nreducers_; ++m) {
    if (silent[m] != 0) names += (names.empty() ? "" : ", ") + comm_->reducerName(m);
  }
  comm_->failAll(rdTimeout, "operation " + std::to_string(seq_) + ": no answer from " + names +
                                " within " + std::to_string(silence.count()) + " ms");
}

}  // namespace

std::shared_ptr<Operation> makeReductionServerOp(Communicator* comm, const OpDesc& desc,
                                                 uint64_t seq, std::shared_ptr<Request> request) {
  return std::make_shared<ReducerOp>(comm, desc, seq, std::move(request));
}

}  // namespace rd::coll
