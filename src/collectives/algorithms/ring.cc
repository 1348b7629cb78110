// SPDX-License-Identifier: BSD-3-Clause
// The ring algorithm ("ring"): all-reduce between the workers, over the same transport: the
// baseline every figure is compared with, and the algorithm when no reducers are given. The buffer
// is cut into nranks segments; 2(n-1) steps (reduce-scatter, then all-gather) each pass one segment
// to the next rank. Segments are sent in pieces (pipeline.h), and each piece is forwarded as soon
// as it arrives, so the steps overlap like a pipeline.
#include <cstring>
#include <deque>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/pipeline.h"
#include "common/dtype.h"
#include "cpu/cpu_reduce.h"

namespace rd::coll {

namespace {

class RingOp final : public Operation {
 public:
  using Operation::Operation;

  void start() override;
  void onMessage(transport::ConnId conn, const wire::Header& h,
                 transport::Payload& payload) override;
  void onTick(Clock::time_point now) override;
  void fail(rdResult_t status, const std::string& reason) override;
  bool finished() const override { return completed_ && receiving_ == 0 && sending_ == 0; }
  bool needsConnection(transport::ConnId conn) const override;

 private:
  uint32_t n() const { return comm_->config().nranks; }
  uint32_t mod(int64_t v) const { return static_cast<uint32_t>(((v % n()) + n()) % n()); }
  // Segment this rank sends / receives at step t (t < n-1: reduce-scatter; then all-gather).
  uint32_t sendSeg(uint32_t t) const {
    int64_t r = comm_->config().rank;
    return t + 1 < n() ? mod(r - t) : mod(r + 1 - (t - (n() - 1)));
  }
  uint32_t recvSeg(uint32_t t) const {
    int64_t r = comm_->config().rank;
    return t + 1 < n() ? mod(r - t - 1) : mod(r - (t - (n() - 1)));
  }
  uint64_t segStart(uint32_t s) const { return desc_.count * s / n(); }
  uint64_t segElems(uint32_t s) const { return segStart(s + 1) - segStart(s); }
  uint32_t pieces(uint32_t s) const {
    uint64_t e = segElems(s);
    return static_cast<uint32_t>(e == 0 ? 0 : (e + piece_elems_ - 1) / piece_elems_);
  }
  char* piecePtr(uint32_t s, uint32_t p) const {
    return static_cast<char*>(desc_.recv) + (segStart(s) + uint64_t{p} * piece_elems_) * esize_;
  }
  uint64_t pieceElems(uint32_t s, uint32_t p) const {
    return std::min<uint64_t>(piece_elems_, segElems(s) - uint64_t{p} * piece_elems_);
  }
  void sendPiece(uint32_t step, uint32_t piece);
  void absorb(uint32_t step, uint32_t piece, const void* data);
  void succeedIfDone();
  void fetchHeld();

  struct Held {  // a large piece waiting for a staging buffer
    uint32_t step;
    uint32_t piece;
    transport::Payload payload;
  };
  std::deque<Held> held_;
  size_t esize_ = 0;
  uint64_t piece_elems_ = 1;
  uint32_t steps_ = 0;
  uint64_t expected_ = 0;  // pieces to receive over all steps
  uint64_t received_ = 0;
  uint64_t to_send_ = 0;  // pieces to send over all steps
  uint64_t sent_ = 0;
  // Which pieces arrived (index: first piece of the step + piece): each counts once, and one
  // that comes twice is a protocol error, never a second fold into the sum.
  std::vector<uint64_t> step_first_;
  std::vector<uint8_t> arrived_;
  uint32_t receiving_ = 0;
  uint32_t sending_ = 0;
  bool completed_ = false;
  transport::ConnId next_ = 0;
  Clock::time_point last_progress_ = Clock::now();
};

void RingOp::start() {
  esize_ = dtypeSize(desc_.dtype);
  piece_elems_ = std::max<uint64_t>(1, ringPieceBytes(comm_->config()) / esize_);
  if (desc_.send != desc_.recv && desc_.count != 0) {
    std::memcpy(desc_.recv, desc_.send, desc_.count * esize_);
  }
  steps_ = 2 * (n() - 1);
  if (n() == 1 || desc_.count == 0) {
    if (n() > 1) {
      // Still a synchronization point, like the reducer path: one empty message each way.
      steps_ = 0;
    }
    succeedIfDone();
    return;
  }
  for (uint32_t t = 0; t < steps_; ++t) {
    step_first_.push_back(expected_);
    expected_ += pieces(recvSeg(t));
    to_send_ += pieces(sendSeg(t));
  }
  arrived_.assign(expected_, 0);
  if (std::string lost = comm_->ringPreviousLost(); !lost.empty()) {
    fail(rdConnectionError, lost);
    return;
  }
  next_ = comm_->ringNext();
  if (next_ == 0) return;  // ringNext failed the communicator
  for (uint32_t p = 0; p < pieces(sendSeg(0)); ++p) sendPiece(0, p);
}

void RingOp::sendPiece(uint32_t step, uint32_t piece) {
  if (completed_) return;
  uint32_t s = sendSeg(step);
  wire::Header h = comm_->header(wire::MsgType::kRing, Communicator::kNoReducer);
  h.dtype = static_cast<uint8_t>(desc_.dtype);
  h.op = static_cast<uint8_t>(desc_.op);
  h.count = desc_.count;
  h.seq = seq_;
  h.root = step;
  h.chunk = piece;
  h.payload_bytes = pieceElems(s, piece) * esize_;
  ++sending_;
  ++sent_;
  request_->markSent();
  auto self = shared_from_this();
  // Large pieces are pulled by the neighbour later: the operation is done, and the caller may
  // reuse the buffer, only when every send completed.
  comm_->transport().send(next_, &h, sizeof h, piecePtr(s, piece), h.payload_bytes,
                          [this, self](rdResult_t) {
                            --sending_;
                            succeedIfDone();
                          });
}

void RingOp::absorb(uint32_t step, uint32_t piece, const void* data) {
  uint32_t s = recvSeg(step);
  char* dst = piecePtr(s, piece);
  uint64_t elems = pieceElems(s, piece);
  if (step + 1 < n()) {
    // Reduce-scatter: fold the incoming partial result into ours. The last fold completes
    // this segment; avg scales it there, once.
    const void* srcs[2] = {dst, data};
    kernels::ReduceArgs args{srcs, 2, dst, elems, desc_.dtype, desc_.op};
    bool last = step + 2 == n();
    args.finalize_avg = last;
    args.avg_divisor = n();
    if (kernels::cpu::reduce(args) != rdSuccess) {
      comm_->failAll(rdInternalError, "ring reduction failed: " + lastError());
      return;
    }
  } else if (data != dst) {
    std::memcpy(dst, data, elems * esize_);
  }
  ++received_;
  request_->markLanded();
  last_progress_ = Clock::now();
  if (step + 1 < steps_) sendPiece(step + 1, piece);
  succeedIfDone();
}

void RingOp::onMessage(transport::ConnId, const wire::Header& h, transport::Payload& payload) {
  if (completed_) return;
  uint32_t step = h.root;
  uint32_t prev = mod(static_cast<int64_t>(comm_->config().rank) - 1);
  bool ok = h.rank == prev && step < steps_ && h.chunk < pieces(recvSeg(step)) &&
            h.count == desc_.count && h.dtype == static_cast<uint8_t>(desc_.dtype) &&
            h.op == static_cast<uint8_t>(desc_.op) &&
            payload.size() == pieceElems(recvSeg(step), h.chunk) * esize_;
  if (!ok) {
    comm_->failAll(rdInvalidUsage,
                   "ring operation " + std::to_string(seq_) + ": rank " + std::to_string(h.rank) +
                       " sent a piece that does not match this rank's call (different count, "
                       "dtype or op?)");
    return;
  }
  uint8_t& arrived = arrived_[step_first_[step] + h.chunk];
  if (arrived != 0) {
    comm_->failAll(rdProtocolError, "ring operation " + std::to_string(seq_) + ": rank " +
                                        std::to_string(h.rank) + " sent piece " +
                                        std::to_string(h.chunk) + " of step " +
                                        std::to_string(step) + " twice");
    return;
  }
  arrived = 1;
  if (payload.data() != nullptr || payload.size() == 0) {
    absorb(step, h.chunk, payload.data());
    payload.discard();
    return;
  }
  held_.push_back(Held{step, h.chunk, std::move(payload)});
  fetchHeld();
}

void RingOp::fetchHeld() {
  while (!held_.empty() && !completed_) {
    Held& next = held_.front();
    // Large piece: all-gather pieces land in place; reduce-scatter pieces need a staging buffer,
    // and wait for one when 2 x window are in flight (bounded memory, warm buffers).
    bool in_place = next.step + 1 >= n();
    std::shared_ptr<char> staging = in_place ? nullptr : comm_->stagingBuffer();
    if (!in_place && !staging) return;
    uint32_t step = next.step, piece = next.piece;
    transport::Payload payload = std::move(next.payload);
    held_.pop_front();
    char* dst = in_place ? piecePtr(recvSeg(step), piece) : staging.get();
    ++receiving_;
    auto self = shared_from_this();
    payload.receiveInto(dst, [this, self, staging, dst, step, piece](rdResult_t status) mutable {
      --receiving_;
      if (completed_) return;
      if (status != rdSuccess) {
        fail(status, "receiving from ring neighbour failed");
        return;
      }
      absorb(step, piece, dst);
      staging.reset();
      fetchHeld();
    });
  }
}

bool RingOp::needsConnection(transport::ConnId conn) const {
  if (completed_) return false;
  // The link to the next rank until every piece went out; the one from the previous rank until
  // every piece came in. A neighbour that finished and left breaks neither.
  if (conn == next_) return sending_ != 0 || sent_ < to_send_;
  return received_ < expected_ || receiving_ != 0;
}

void RingOp::succeedIfDone() {
  if (completed_ || received_ != expected_ || sending_ != 0) return;
  completed_ = true;
  if (desc_.on_success) desc_.on_success();
  request_->complete(rdSuccess);
}

void RingOp::fail(rdResult_t status, const std::string& reason) {
  if (completed_) return;
  completed_ = true;
  request_->complete(status, reason);
}

void RingOp::onTick(Clock::time_point now) {
  const uint32_t timeout = comm_->config().timeout_ms;
  if (completed_ || now - last_progress_ < std::chrono::milliseconds(timeout)) return;
  uint32_t prev = mod(static_cast<int64_t>(comm_->config().rank) - 1);
  comm_->failAll(rdTimeout, "ring operation " + std::to_string(seq_) + ": rank " +
                                std::to_string(prev) + " sent nothing within " +
                                std::to_string(timeout) + " ms");
}

}  // namespace

std::shared_ptr<Operation> makeRingOp(Communicator* comm, const OpDesc& desc, uint64_t seq,
                                      std::shared_ptr<Request> request) {
  return std::make_shared<RingOp>(comm, desc, seq, std::move(request));
}

}  // namespace rd::coll
