// SPDX-License-Identifier: BSD-3-Clause
#include "reduction_server/reduce_comm.h"

#include <algorithm>
#include <chrono>
#include <iterator>

#include "common/log.h"
#include "common/status.h"
#include "common/trace.h"
#include "cpu/cpu_reduce.h"
#include "protocol/compression.h"
#include "reduction_server/quota.h"
#include "reduction_server/slot.h"

namespace rd::server {

std::string namedRanks(const std::vector<uint32_t>& ranks) {
  std::string s;
  for (uint32_t r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return (ranks.size() == 1 ? "rank " : "ranks ") + s;
}

namespace {

bool sameSignature(const wire::Header& a, const wire::Header& b) {
  // A held result (failover) is the same operation's frame.
  const auto flags = [](const wire::Header& h) { return h.flags & ~wire::kFlagHeldResult; };
  return a.coll == b.coll && a.dtype == b.dtype && a.op == b.op && a.count == b.count &&
         a.root == b.root && flags(a) == flags(b) && a.chunk_bytes == b.chunk_bytes;
}

// One reduction pass of a slot, runnable on any thread: a plain reduction, or a wide sum.
struct Fold {
  std::vector<const void*> srcs;
  bool wide = false;
  kernels::ReduceArgs args;
  kernels::WideSumArgs wide_args;

  rdResult_t run(std::string* error, double* seconds) {
    const auto start = std::chrono::steady_clock::now();
    rdResult_t status = rdSuccess;
    if (wide) {
      wide_args.srcs = srcs.data();
      status = kernels::cpu::wideSum(wide_args);
    } else {
      args.srcs = srcs.data();
      status = kernels::cpu::reduce(args);
    }
    if (status != rdSuccess) *error = lastError();
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return status;
  }
};

std::string describe(const wire::Header& h) {
  std::string s = wire::collName(h.coll);
  s += " count " + std::to_string(h.count) + " " +
       rdDataTypeName(static_cast<rdDataType_t>(h.dtype));
  if ((h.flags & wire::kFlagWideSum) != 0) s += " (float32 on the wire as that)";
  if (h.coll == static_cast<uint8_t>(wire::Coll::kAllReduce) ||
      h.coll == static_cast<uint8_t>(wire::Coll::kReduceScatter)) {
    s += std::string(" ") + rdRedOpName(static_cast<rdRedOp_t>(h.op));
  }
  if (h.coll == static_cast<uint8_t>(wire::Coll::kBroadcast))
    s += " root " + std::to_string(h.root);
  return s;
}

}  // namespace

ReduceComm::ReduceComm(const wire::CommShape& shape, uint32_t timeout_ms, uint32_t heartbeat_ms,
                       uint16_t flags, transport::Transport* transport, BufferPool* pool,
                       Executor* executor, std::string reducer_name, uint64_t state_bytes,
                       uint64_t quota_bytes, std::shared_ptr<ReducerCounters> counters)
    : shape_(shape),
      timeout_ms_(timeout_ms),
      heartbeat_ms_(heartbeat_ms),
      flags_(flags),
      transport_(transport),
      pool_(pool),
      executor_(executor),
      name_(std::move(reducer_name)),
      state_bytes_(state_bytes),
      quota_bytes_(quota_bytes),
      held_(std::make_shared<uint64_t>(state_bytes)),
      counters_(counters ? std::move(counters) : std::make_shared<ReducerCounters>()),
      ranks_(shape.nranks),
      left_(shape.nranks, 0),
      ops_remembered_(opsRemembered(shape.nranks)),
      released_later_(shape.nranks) {}

ReduceComm::~ReduceComm() {
  for (auto& [key, slot] : slots_) dropSlot(slot);
  *held_ -= state_bytes_;
  pool_->unreserve(state_bytes_);
}

void ReduceComm::dropSlot(const std::shared_ptr<Slot>& slot) {
  slot->dead = true;
  // Held eager payloads go back to the transport here, on its thread; one a running reduction
  // reads goes when that reduction reports back.
  if (!slot->reducing) {
    slot->held.clear();
    slot->pending.clear();
    slot->pending_index.clear();
  }
  slot->releaseIfIdle();
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

namespace {

// Once its last result send completes, a chunk's spans go to the timeline: served (the whole),
// gather (from the first contribution to the last), reduce (to the result), send.
void traceServed(const Slot& slot) {
  trace::Tracer* tracer = trace::Tracer::get();
  if (tracer == nullptr) return;
  trace::Span span;
  span.track = slot.sig.chunk;
  span.comm = slot.sig.comm_id;
  span.op = slot.sig.seq;
  span.chunk = slot.sig.chunk;
  span.bytes = slot.bytes;
  const Clock::time_point sent = Clock::now();
  const Clock::time_point last_in = std::max(slot.first_in, slot.last_in);
  const std::pair<const char*, std::pair<Clock::time_point, Clock::time_point>> spans[] = {
      {"served", {slot.first_in, sent}},
      {"gather", {slot.first_in, last_in}},
      {"reduce", {last_in, std::max(last_in, slot.reduced)}},
      {"send", {std::max(last_in, slot.reduced), sent}}};
  for (size_t i = 0; i < std::size(spans); ++i) {
    span.name = spans[i].first;
    span.category = i == 0 ? "chunk" : "phase";
    span.begin = spans[i].second.first;
    span.end = spans[i].second.second;
    tracer->record(span);
  }
}

void resultSent(const std::shared_ptr<Slot>& slot) {
  if (--slot->sends == 0) traceServed(*slot);
  slot->releaseIfIdle();
}

}  // namespace

ReduceComm::Outcome ReduceComm::contribute(const wire::Header& h, uint32_t conn_rank,
                                           transport::Payload& payload, std::string* why) {
  wire::Geometry g;
  wire::ChunkSpan span;
  if (wire::checkDataFrame(h, shape_, conn_rank, &g, &span, why) != rdSuccess ||
      !wire::checkCompression(h, wire::wireDtypeOfHelloFlags(flags_), why)) {
    return Outcome::kBadFrame;
  }
  if (h.seq < first_seq_) {
    *why = "operation " + std::to_string(h.seq) + " precedes " + std::to_string(first_seq_) +
           ", the first this replacement reducer serves";
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
  ++counters_->chunks_received;
  counters_->bytes_received += h.payload_bytes;
  const bool held = (h.flags & wire::kFlagHeldResult) != 0;
  const bool arrival_order = (flags_ & wire::kFlagDeterministic) == 0;
  if (!held && arrival_order && slot->expected > 1 && slot->span.elems != 0 &&
      payload.keepsData()) {
    // Eager bytes: folded straight from the transport's buffer, which is kept until then.
    slot->land(index);
    const void* bytes = payload.data();
    addPending(slot, index, bytes, std::move(payload));
    return Outcome::kAccepted;
  }
  ++slot->in_flight;
  auto self = shared_from_this();
  payload.receiveInto(slot->slice(index), [self, slot, index, held](rdResult_t status) {
    if (held && status == rdSuccess && !slot->dead) {
      // Never folded: it is the answer, once every other frame is here too.
      --slot->in_flight;
      slot->land(index);
      if (slot->held_result < 0) slot->held_result = static_cast<int>(index);
      self->finishIfComplete(slot);
      return;
    }
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
  const bool reduces = h.coll == static_cast<uint8_t>(wire::Coll::kAllReduce) ||
                       h.coll == static_cast<uint8_t>(wire::Coll::kReduceScatter);
  slot->wide = (h.flags & wire::kFlagWideSum) != 0 && reduces && slot->expected > 1;
  if (slot->wide) {
    slot->buffer_bytes = Slot::accOffset(slot->bytes, slot->expected) + span.elems * sizeof(float);
  }
  slot->state_bytes = slotStateBytes(slot->expected);
  const uint64_t need = slot->buffer_bytes + slot->state_bytes;
  if (need > quota_bytes_ - state_bytes_) {
    *why = "chunk needs " + std::to_string(need) + " bytes, more than this communicator's share (" +
           std::to_string(quota_bytes_) + " bytes) of the reducer's memory";
    return nullptr;
  }
  if (slots_.size() >= maxOpenChunks(shape_.nranks)) {
    *why = "more than " + std::to_string(maxOpenChunks(shape_.nranks)) +
           " chunks open at once: more than the ranks' windows allow";
    return nullptr;
  }
  // Past its share the communicator's own contributions wait; its slots finishing frees it.
  if (*held_ + need > quota_bytes_ || !pool_->reserve(slot->state_bytes)) {
    *no_memory = true;
    return nullptr;
  }
  slot->buffer = static_cast<char*>(pool_->acquire(slot->buffer_bytes));
  if (slot->buffer == nullptr) {
    pool_->unreserve(slot->state_bytes);
    *no_memory = true;
    return nullptr;
  }
  *held_ += need;
  slot->comm_held = held_;
  slot->first_in = Clock::now();
  slot->deadline = slot->first_in + std::chrono::milliseconds(timeout_ms_);
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
  slot->land(index);
  if (slot->expected == 1 || slot->span.elems == 0) {
    finishIfComplete(slot);
    return;
  }
  if ((flags_ & wire::kFlagDeterministic) == 0) {
    addPending(slot, index, slot->slice(index), transport::Payload());
  } else if (slot->held_result >= 0) {
    finishIfComplete(slot);  // a held result answers: nothing to reduce
  } else if (slot->delivered == slot->expected) {
    // Rank order: one reduction over every slice, once all are here.
    for (uint32_t i = 0; i < slot->expected; ++i) {
      slot->pending_index.push_back(i);
      slot->pending.push_back(slot->slice(i));
    }
    reduceNext(slot);
  }
}

void ReduceComm::addPending(const std::shared_ptr<Slot>& slot, uint32_t index, const void* bytes,
                            transport::Payload payload) {
  slot->pending_index.push_back(index);
  slot->pending.push_back(bytes);
  if (payload) slot->held.push_back(std::move(payload));
  reduceNext(slot);
  // With a held result nothing waits for the reduction (a lone eager contribution would wait
  // for a partner that never comes).
  if (slot->held_result >= 0) finishIfComplete(slot);
}

void ReduceComm::reduceNext(const std::shared_ptr<Slot>& slot) {
  if (slot->reducing || slot->dead || slot->pending.empty()) return;
  const bool last = slot->folded + slot->pending.size() == slot->expected;
  // The first contribution becomes the running result as it is, when it sits in its slice.
  if (slot->result < 0 && slot->pending.size() == 1 && !last) {
    uint32_t index = slot->pending_index.front();
    if (slot->pending.front() != slot->slice(index)) return;  // eager: wait for a partner
    slot->result = static_cast<int>(index);
    slot->folded = 1;
    slot->pending.clear();
    slot->pending_index.clear();
    return;
  }
  // One pass: the running result (if any) and everything pending, into the result's slice
  // (wide: into the float32 sum, or rounded into the result's slice by the last pass).
  std::vector<const void*> srcs;
  const float* acc = slot->wide && slot->acc_ready ? slot->acc() : nullptr;
  if (slot->result < 0) {
    slot->result = static_cast<int>(slot->pending_index.front());
  } else if (acc == nullptr) {
    srcs.push_back(slot->slice(static_cast<uint32_t>(slot->result)));
  }
  srcs.insert(srcs.end(), slot->pending.begin(), slot->pending.end());
  const auto count = static_cast<uint32_t>(slot->pending.size());
  slot->pending.clear();
  slot->pending_index.clear();
  Fold fold;
  fold.srcs = std::move(srcs);
  fold.wide = slot->wide;
  char* result = slot->slice(static_cast<uint32_t>(slot->result));
  if (slot->wide) {
    kernels::WideSumArgs& w = fold.wide_args;
    w.acc = acc;
    w.nsrcs = static_cast<int>(fold.srcs.size());
    w.narrow = static_cast<rdDataType_t>(slot->sig.dtype);
    w.count = slot->span.elems;
    w.narrow_out = last;
    w.dst = last ? static_cast<void*>(result) : slot->acc();
    if (last && slot->sig.op == rdAvg) w.scale = 1.0f / static_cast<float>(slot->expected);
    slot->acc_ready = !last;
  } else {
    kernels::ReduceArgs& args = fold.args;
    args.nsrcs = static_cast<int>(fold.srcs.size());
    args.dst = result;
    args.count = slot->span.elems;
    args.dtype = static_cast<rdDataType_t>(slot->sig.dtype);
    args.op = static_cast<rdRedOp_t>(slot->sig.op);
    args.avg_divisor = slot->expected;
    args.finalize_avg = last;  // avg scales once, in the pass that adds the last contribution
  }
  slot->reducing = true;
  auto run = [fold = std::move(fold)](std::string* error, double* seconds) mutable {
    return fold.run(error, seconds);
  };
  if (slot->bytes < kOffloadBytes || executor_ == nullptr) {
    std::string error;
    double seconds = 0;
    rdResult_t status = run(&error, &seconds);
    afterReduce(slot, count, status, error, seconds);
    return;
  }
  auto self = shared_from_this();
  executor_->submit([self, slot, count, run = std::move(run)]() mutable {
    std::string error;
    double seconds = 0;
    rdResult_t status = run(&error, &seconds);
    self->transport_->post([self, slot, count, status, error, seconds] {
      self->afterReduce(slot, count, status, error, seconds);
    });
  });
}

void ReduceComm::afterReduce(const std::shared_ptr<Slot>& slot, uint32_t count, rdResult_t status,
                             const std::string& error, double seconds) {
  slot->reducing = false;
  ++counters_->reductions;
  counters_->reduce_seconds += seconds;
  slot->folded += count;
  // Eager payloads the pass read go back to the transport; ones that came meanwhile wait.
  if (slot->dead || slot->pending.empty()) {
    slot->held.clear();
  } else {
    for (size_t i = 0; i < slot->held.size();) {
      const void* bytes = slot->held[i].data();
      bool waiting =
          std::find(slot->pending.begin(), slot->pending.end(), bytes) != slot->pending.end();
      if (waiting) {
        ++i;
      } else {
        slot->held.erase(slot->held.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }
  if (slot->dead) {
    dropSlot(slot);
    return;
  }
  if (status != rdSuccess) {
    failOp(slot->sig.seq, rdInternalError, "reduction failed: " + error);
    return;
  }
  if (slot->folded == slot->expected || slot->held_result >= 0) {
    finishIfComplete(slot);
  } else {
    reduceNext(slot);
  }
}

void ReduceComm::finishIfComplete(const std::shared_ptr<Slot>& slot) {
  if (slot->dead || slot->reducing) return;
  const uint64_t seq = slot->sig.seq;
  bool any_done = false;
  for (uint32_t r = 0; r < shape_.nranks; ++r) {
    if (!wire::contributes(slot->geometry, slot->sig.chunk, r)) continue;
    if (slot->landed[slot->indexOf(r)] == 0 && !isDone(seq, r)) return;
    any_done = any_done || isDone(seq, r);
  }
  const bool reduced =
      slot->expected == 1 || slot->span.elems == 0 || slot->folded == slot->expected;
  if (slot->held_result >= 0 || reduced) {
    // Contributions a held result made moot go back to the transport now.
    slot->pending.clear();
    slot->pending_index.clear();
    slot->held.clear();
    sendResults(slot);
    return;
  }
  if (any_done) {
    // A rank completed the operation, so every rank holds every result: this chunk is moot.
    discardSlot(slot);
  }
  // Otherwise the reduction finishes it (deterministic mode: once every slice is here).
}

void ReduceComm::sendResults(const std::shared_ptr<Slot>& slot) {
  int answer = slot->held_result >= 0 ? slot->held_result : slot->result;
  const char* result = slot->slice(answer < 0 ? 0 : static_cast<uint32_t>(answer));
  const wire::Geometry& g = slot->geometry;
  wire::Header out = slot->sig;
  out.epoch = shape_.epoch;
  out.flags &= ~wire::kFlagHeldResult;
  removeSlot({slot->sig.seq, slot->sig.chunk});
  slot->dead = true;
  slot->reduced = Clock::now();
  ++chunks_served_;
  countServed(slot->sig.seq);
  // Sends may complete inline (acks, small results): hold the buffer until all are posted.
  ++slot->sends;
  for (uint32_t r = 0; r < shape_.nranks; ++r) {
    bool gets_result = wire::receivesResult(g, out.chunk, r);
    if (!gets_result && !wire::contributes(g, out.chunk, r)) continue;
    if (ranks_[r].conn == 0) continue;
    transport::ConnId to = ranks_[r].result_conn != 0 ? ranks_[r].result_conn : ranks_[r].conn;
    out.type = static_cast<uint8_t>(gets_result ? wire::MsgType::kResult : wire::MsgType::kAck);
    out.rank = r;
    carryReleased(r, &out);
    out.payload_bytes = gets_result ? slot->bytes : 0;
    counters_->bytes_sent += out.payload_bytes;
    ++slot->sends;
    transport_->send(to, &out, sizeof out, gets_result ? result : nullptr, out.payload_bytes,
                     [slot](rdResult_t) { resultSent(slot); });
  }
  resultSent(slot);
}

std::vector<std::shared_ptr<Slot>> ReduceComm::slotsOf(uint64_t seq) const {
  std::vector<std::shared_ptr<Slot>> slots;
  for (auto it = slots_.lower_bound({seq, 0}); it != slots_.end() && it->first.first == seq; ++it) {
    slots.push_back(it->second);
  }
  return slots;
}

void ReduceComm::discardSlot(const std::shared_ptr<Slot>& slot) {
  removeSlot({slot->sig.seq, slot->sig.chunk});
  dropSlot(slot);
}

void ReduceComm::removeSlot(const Key& key) {
  if (slots_.erase(key) == 0) return;
  auto it = slots_per_op_.find(key.first);
  if (it != slots_per_op_.end() && --it->second == 0) {
    slots_per_op_.erase(it);
    signatures_.erase(key.first);
  }
}

void ReduceComm::countServed(uint64_t seq) {
  // An operation counts once, with its first chunk served here; operations end roughly in
  // order, so the recent ones are enough to tell.
  if (!served_ops_.insert(seq).second) return;
  ++counters_->ops_served;
  while (served_ops_.size() > kServedOpsRemembered) served_ops_.erase(served_ops_.begin());
}

}  // namespace rd::server
