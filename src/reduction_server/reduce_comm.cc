#include "reduction_server/reduce_comm.h"

#include <algorithm>

#include "common/log.h"
#include "common/status.h"
#include "cpu/cpu_reduce.h"

namespace rd::server {

// One (operation, chunk): the contributions land side by side in one buffer, one slice each.
struct Slot {
  wire::Header sig;         // the first contribution's header: what every other one must match
  wire::Geometry geometry;  // of the operation, derived from sig once
  wire::ChunkSpan span;
  size_t bytes = 0;       // one slice
  uint32_t expected = 0;  // contributions to wait for
  uint32_t delivered = 0;
  uint32_t in_flight = 0;       // payloads still being received into the buffer
  uint32_t sends = 0;           // result sends not yet completed
  std::vector<uint8_t> seen;    // header arrived
  std::vector<uint8_t> landed;  // payload fully received
  int accumulator = -1;         // slice holding the running result (arrival-order mode)
  char* buffer = nullptr;
  size_t buffer_bytes = 0;
  BufferPool* pool = nullptr;
  bool dead = false;  // dropped (failed) or finished: nothing may touch it but completions
  Clock::time_point deadline;

  char* slice(uint32_t i) const { return buffer + static_cast<size_t>(i) * bytes; }
  // Slice of @p rank's contribution: its own for reductions, the only one otherwise.
  uint32_t indexOf(uint32_t rank) const { return expected == 1 ? 0 : rank; }
  // Memory goes back only when no receive writes into it and no send reads from it.
  void releaseIfIdle() {
    if (dead && in_flight == 0 && sends == 0 && buffer != nullptr) {
      pool->release(buffer, buffer_bytes);
      buffer = nullptr;
    }
  }
};

namespace {

std::string rankList(const std::vector<uint32_t>& ranks) {
  std::string s;
  for (uint32_t r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s;
}

bool sameSignature(const wire::Header& a, const wire::Header& b) {
  return a.coll == b.coll && a.dtype == b.dtype && a.op == b.op && a.count == b.count &&
         a.root == b.root && a.flags == b.flags;
}

std::string describe(const wire::Header& h) {
  std::string s = wire::collName(h.coll);
  s += " count " + std::to_string(h.count) + " " +
       rdDataTypeName(static_cast<rdDataType_t>(h.dtype));
  if (h.coll == static_cast<uint8_t>(wire::Coll::kAllReduce) ||
      h.coll == static_cast<uint8_t>(wire::Coll::kReduceScatter)) {
    s += std::string(" ") + rdRedOpName(static_cast<rdRedOp_t>(h.op));
  }
  if (h.coll == static_cast<uint8_t>(wire::Coll::kBroadcast))
    s += " root " + std::to_string(h.root);
  return s;
}

}  // namespace

ReduceComm::ReduceComm(const wire::CommShape& shape, uint32_t timeout_ms, uint16_t flags,
                       transport::Transport* transport, BufferPool* pool, std::string reducer_name)
    : shape_(shape),
      timeout_ms_(timeout_ms),
      flags_(flags),
      transport_(transport),
      pool_(pool),
      name_(std::move(reducer_name)),
      ranks_(shape.nranks),
      left_(shape.nranks, 0) {}

ReduceComm::~ReduceComm() {
  for (auto& [key, slot] : slots_) {
    slot->dead = true;
    slot->releaseIfIdle();
  }
}

void ReduceComm::sendTo(uint32_t rank, wire::Header h, const std::string& body,
                        bool result_channel) {
  if (rank >= ranks_.size() || ranks_[rank].conn == 0) return;
  transport::ConnId to = result_channel ? ranks_[rank].result_conn : ranks_[rank].conn;
  if (to == 0) return;
  h.rank = rank;
  h.payload_bytes = body.size();
  // The body must outlive the send: keep it in the completion.
  auto text = std::make_shared<std::string>(body);
  transport_->send(to, &h, sizeof h, text->data(), text->size(), [text](rdResult_t) {});
}

wire::Header ReduceComm::errorHeader(uint64_t seq, rdResult_t status) const {
  wire::Header e =
      wire::makeHeader(wire::MsgType::kError, shape_.comm_id, shape_.epoch, 0, shape_.nranks);
  e.seq = seq;
  e.status = status;
  return e;
}

void ReduceComm::failMismatch(const wire::Header& first, const wire::Header& h) {
  failOp(h.seq, rdInvalidUsage,
         "ranks " + std::to_string(first.rank) + " and " + std::to_string(h.rank) +
             " called operation " + std::to_string(h.seq) +
             " with different arguments: " + describe(first) + " vs " + describe(h));
}

bool ReduceComm::checkSignature(const wire::Header& h) {
  auto [it, inserted] = signatures_.try_emplace(h.seq, h);
  if (inserted || sameSignature(it->second, h)) return true;
  failMismatch(it->second, h);
  return false;
}

ReduceComm::Outcome ReduceComm::contribute(const wire::Header& h, uint32_t conn_rank,
                                           transport::Payload& payload, std::string* why) {
  wire::Geometry g;
  wire::ChunkSpan span;
  if (wire::checkDataFrame(h, shape_, conn_rank, &g, &span, why) != rdSuccess) {
    return Outcome::kBadFrame;
  }
  if (failed()) {
    payload.discard();
    sendTo(h.rank, errorHeader(h.seq, rdRemoteError), failure_);
    return Outcome::kAccepted;
  }
  if (failed_ops_.count(h.seq) != 0 || !checkSignature(h)) {
    payload.discard();  // the ranks were already told why this operation failed
    return Outcome::kAccepted;
  }
  Key key{h.seq, h.chunk};
  auto it = slots_.find(key);
  std::shared_ptr<Slot> slot;
  if (it != slots_.end()) {
    slot = it->second;
    if (!sameSignature(slot->sig, h)) {
      failMismatch(slot->sig, h);
      payload.discard();
      return Outcome::kAccepted;
    }
  } else {
    bool no_memory = false;
    slot = createSlot(h, g, span, why, &no_memory);
    if (!slot) return no_memory ? Outcome::kNeedMemory : Outcome::kBadFrame;
  }
  uint32_t index = slot->indexOf(h.rank);
  if (failIfWaitingForLeft(slot)) {
    payload.discard();
    return Outcome::kAccepted;
  }
  if (slot->seen[index] != 0) {
    *why = "duplicate contribution to chunk " + std::to_string(h.chunk) + " of operation " +
           std::to_string(h.seq);
    return Outcome::kBadFrame;
  }
  slot->seen[index] = 1;
  ++slot->in_flight;
  auto self = shared_from_this();
  payload.receiveInto(slot->slice(index), [self, slot, index](rdResult_t status) {
    self->onDelivered(slot, index, status);
  });
  return Outcome::kAccepted;
}

std::shared_ptr<Slot> ReduceComm::createSlot(const wire::Header& h, const wire::Geometry& g,
                                             const wire::ChunkSpan& span, std::string* why,
                                             bool* no_memory) {
  auto slot = std::make_shared<Slot>();
  slot->sig = h;
  slot->geometry = g;
  slot->span = span;
  slot->bytes = h.payload_bytes;
  slot->expected = wire::contributorCount(g);
  slot->seen.assign(slot->expected, 0);
  slot->landed.assign(slot->expected, 0);
  slot->pool = pool_;
  slot->buffer_bytes = slot->bytes * slot->expected;
  if (slot->buffer_bytes > pool_->limit()) {
    *why = "chunk needs " + std::to_string(slot->buffer_bytes) +
           " bytes, more than the reducer's memory limit";
    return nullptr;
  }
  slot->buffer = static_cast<char*>(pool_->acquire(slot->buffer_bytes));
  if (slot->buffer == nullptr) {
    *no_memory = true;
    return nullptr;
  }
  slot->deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
  slots_[{h.seq, h.chunk}] = slot;
  ++slots_per_op_[h.seq];
  return slot;
}

void ReduceComm::onDelivered(const std::shared_ptr<Slot>& slot, uint32_t index, rdResult_t status) {
  --slot->in_flight;
  if (slot->dead || status != rdSuccess) {
    // A failed receive means the sender's connection broke: its failure handler fails the op.
    slot->releaseIfIdle();
    return;
  }
  ++slot->delivered;
  slot->landed[index] = 1;
  const auto dtype = static_cast<rdDataType_t>(slot->sig.dtype);
  const auto op = static_cast<rdRedOp_t>(slot->sig.op);
  bool in_order = (flags_ & wire::kFlagDeterministic) != 0;
  if (!in_order && slot->expected > 1 && slot->span.elems != 0) {
    // Arrival order: fold each contribution into the running result as soon as it lands.
    if (slot->accumulator < 0) {
      slot->accumulator = static_cast<int>(index);
    } else {
      const void* srcs[2] = {slot->slice(slot->accumulator), slot->slice(index)};
      kernels::ReduceArgs args{srcs,  2, slot->slice(slot->accumulator), slot->span.elems,
                               dtype, op};
      args.finalize_avg = false;
      if (kernels::cpu::reduce(args) != rdSuccess) {
        failOp(slot->sig.seq, rdInternalError, "reduction failed: " + lastError());
        return;
      }
    }
  }
  if (slot->delivered == slot->expected) finish(slot);
}

void ReduceComm::finish(const std::shared_ptr<Slot>& slot) {
  const auto dtype = static_cast<rdDataType_t>(slot->sig.dtype);
  const auto op = static_cast<rdRedOp_t>(slot->sig.op);
  const char* result = slot->slice(0);
  if (slot->expected > 1 && slot->span.elems != 0) {
    kernels::ReduceArgs args;
    std::vector<const void*> srcs;
    if (slot->accumulator >= 0) {
      // Arrival order: only avg's scaling is left.
      result = slot->slice(slot->accumulator);
      srcs.push_back(result);
      args.avg_divisor = slot->expected;
    } else {
      for (uint32_t i = 0; i < slot->expected; ++i) srcs.push_back(slot->slice(i));
    }
    args.srcs = srcs.data();
    args.nsrcs = static_cast<int>(srcs.size());
    args.dst = const_cast<char*>(result);
    args.count = slot->span.elems;
    args.dtype = dtype;
    args.op = op;
    bool needed = slot->accumulator < 0 || op == rdAvg;
    if (needed && kernels::cpu::reduce(args) != rdSuccess) {
      failOp(slot->sig.seq, rdInternalError, "reduction failed: " + lastError());
      return;
    }
  }
  const wire::Geometry& g = slot->geometry;
  wire::Header out = slot->sig;
  out.epoch = shape_.epoch;
  removeSlot({slot->sig.seq, slot->sig.chunk});
  slot->dead = true;
  // Sends may complete inline (acks, small results): hold the buffer until all are posted.
  ++slot->sends;
  for (uint32_t r = 0; r < shape_.nranks; ++r) {
    bool gets_result = wire::receivesResult(g, out.chunk, r);
    if (!gets_result && !wire::contributes(g, out.chunk, r)) continue;
    if (ranks_[r].conn == 0) continue;
    transport::ConnId to = ranks_[r].result_conn != 0 ? ranks_[r].result_conn : ranks_[r].conn;
    out.type = static_cast<uint8_t>(gets_result ? wire::MsgType::kResult : wire::MsgType::kAck);
    out.rank = r;
    out.payload_bytes = gets_result ? slot->bytes : 0;
    ++slot->sends;
    transport_->send(to, &out, sizeof out, gets_result ? result : nullptr, out.payload_bytes,
                     [slot](rdResult_t) {
                       --slot->sends;
                       slot->releaseIfIdle();
                     });
  }
  --slot->sends;
  slot->releaseIfIdle();
}

void ReduceComm::removeSlot(const Key& key) {
  if (slots_.erase(key) == 0) return;
  auto it = slots_per_op_.find(key.first);
  if (it != slots_per_op_.end() && --it->second == 0) {
    slots_per_op_.erase(it);
    signatures_.erase(key.first);
  }
}

void ReduceComm::failOp(uint64_t seq, rdResult_t status, const std::string& reason) {
  RD_LOG_INFO("reducer %s: comm %016llx operation %llu failed: %s", name_.c_str(),
              static_cast<unsigned long long>(shape_.comm_id), static_cast<unsigned long long>(seq),
              reason.c_str());
  failed_ops_.insert(seq);
  while (failed_ops_.size() > 4096) failed_ops_.erase(failed_ops_.begin());
  last_op_failure_ = "operation " + std::to_string(seq) + " failed: " + reason;
  for (auto it = slots_.lower_bound({seq, 0}); it != slots_.end() && it->first.first == seq;) {
    auto slot = it->second;
    ++it;
    removeSlot({slot->sig.seq, slot->sig.chunk});
    slot->dead = true;
    slot->releaseIfIdle();
  }
  signatures_.erase(seq);
  wire::Header e = errorHeader(seq, status);
  for (uint32_t r = 0; r < shape_.nranks; ++r) sendTo(r, e, "reducer " + name_ + ": " + reason);
}

void ReduceComm::fail(rdResult_t status, const std::string& reason) {
  if (failed()) return;
  failure_ = "reducer " + name_ + ": " + reason;
  // A rank that leaves after an operation failed usually leaves because of it: say so, so that
  // a rank that had not posted that operation yet still learns the root cause.
  if (!last_op_failure_.empty()) failure_ += " (after " + last_op_failure_ + ")";
  RD_LOG_INFO("%s", failure_.c_str());
  for (auto& [key, slot] : slots_) {
    slot->dead = true;
    slot->releaseIfIdle();
  }
  slots_.clear();
  slots_per_op_.clear();
  signatures_.clear();
  wire::Header e = errorHeader(wire::kSeqAllOps, status);
  for (uint32_t r = 0; r < shape_.nranks; ++r) sendTo(r, e, failure_);
}

bool ReduceComm::failIfWaitingForLeft(const std::shared_ptr<Slot>& slot) {
  for (uint32_t r = 0; r < shape_.nranks; ++r) {
    if (left_[r] != 0 && wire::contributes(slot->geometry, slot->sig.chunk, r) &&
        slot->seen[slot->indexOf(r)] == 0) {
      failOp(slot->sig.seq, rdRemoteError,
             "rank " + std::to_string(r) + " left the communicator before operation " +
                 std::to_string(slot->sig.seq));
      return true;
    }
  }
  return false;
}

void ReduceComm::rankLeft(uint32_t rank) {
  left_[rank] = 1;
  ranks_[rank].conn = 0;
  std::vector<std::shared_ptr<Slot>> open;
  for (auto& [key, slot] : slots_) open.push_back(slot);
  for (auto& slot : open) {
    if (!slot->dead) failIfWaitingForLeft(slot);
  }
}

void ReduceComm::checkTimeouts(Clock::time_point now) {
  for (auto& [key, slot] : slots_) {
    if (slot->deadline > now) continue;
    std::vector<uint32_t> missing;
    for (uint32_t r = 0; r < shape_.nranks; ++r) {
      // A frozen sender's header may be here while its data never arrives: count only data.
      if (wire::contributes(slot->geometry, key.second, r) && slot->landed[slot->indexOf(r)] == 0) {
        missing.push_back(r);
      }
    }
    std::string who =
        missing.size() == 1 ? "rank " + rankList(missing) : "ranks " + rankList(missing);
    failOp(key.first, rdTimeout,
           who + " did not deliver chunk " + std::to_string(key.second) + " of operation " +
               std::to_string(key.first) + " within " + std::to_string(timeout_ms_) + " ms");
    return;  // failOp changed slots_; the next tick looks again
  }
}

}  // namespace rd::server
