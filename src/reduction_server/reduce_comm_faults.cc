// SPDX-License-Identifier: BSD-3-Clause
// What goes wrong in a communicator on a reducer: an operation that fails, a rank that left,
// a chunk that waited too long, a rank gone silent (not when the reducer itself was held up:
// transport/liveness.h); and a replacement reducer's resume.
#include <algorithm>
#include <string>
#include <vector>

#include "common/log.h"
#include "reduction_server/reduce_comm.h"

namespace rd::server {

void ReduceComm::failOp(uint64_t seq, rdResult_t status, const std::string& reason) {
  RD_LOG_INFO("reducer %s: comm %016llx operation %llu failed: %s", name_.c_str(),
              static_cast<unsigned long long>(shape_.comm_id), static_cast<unsigned long long>(seq),
              reason.c_str());
  failed_ops_.insert(seq);
  ++counters_->ops_failed;
  while (failed_ops_.size() > 4096) failed_ops_.erase(failed_ops_.begin());
  last_op_failure_ = "operation " + std::to_string(seq) + " failed: " + reason;
  for (auto& slot : slotsOf(seq)) discardSlot(slot);
  signatures_.erase(seq);
  landed_.erase(seq);  // its release round ends with it
  wire::Header e = errorHeader(seq, status);
  for (uint32_t r = 0; r < shape_.nranks; ++r) sendTo(r, e, "reducer " + name_ + ": " + reason);
}

void ReduceComm::fail(rdResult_t status, const std::string& reason) {
  if (failed()) return;
  failure_ = "reducer " + name_ + ": " + reason;
  failed_at_ = Clock::now();
  // A rank that leaves after an operation failed usually leaves because of it: say so, so that
  // a rank that had not posted that operation yet still learns the root cause.
  if (!last_op_failure_.empty()) failure_ += " (after " + last_op_failure_ + ")";
  RD_LOG_INFO("%s", failure_.c_str());
  for (auto& [key, slot] : slots_) dropSlot(slot);
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
      if (wire::contributes(slot->geometry, key.second, r) && slot->landed[slot->indexOf(r)] == 0 &&
          !isDone(key.first, r)) {
        missing.push_back(r);
      }
    }
    failOp(key.first, rdTimeout,
           namedRanks(missing) + " did not deliver chunk " + std::to_string(key.second) +
               " of operation " + std::to_string(key.first) + " within " +
               std::to_string(timeout_ms_) + " ms");
    return;  // failOp changed slots_; the next tick looks again
  }
}

void ReduceComm::heartbeat(Clock::time_point now) {
  const Clock::duration away = silence_watch_.look(now);
  for (RankLink& rank : ranks_) transport::SilenceWatch::credit(&rank.last_heard, away, now);
  if (heartbeat_ms_ == 0 || shape_.epoch == 0 || failed()) return;
  const auto period = std::chrono::milliseconds(heartbeat_ms_);
  if (now - heartbeat_sent_ >= period / 4) {
    heartbeat_sent_ = now;
    wire::Header h =
        wire::makeHeader(wire::MsgType::kHeartbeat, shape_.comm_id, shape_.epoch, 0, shape_.nranks);
    for (uint32_t r = 0; r < shape_.nranks; ++r) sendTo(r, h);
  }
  for (uint32_t r = 0; r < shape_.nranks; ++r) {
    if (ranks_[r].conn == 0 || left_[r] != 0 || now - ranks_[r].last_heard < period) continue;
    auto silent_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - ranks_[r].last_heard).count();
    fail(rdTimeout, "rank " + std::to_string(r) + " sent nothing for " + std::to_string(silent_ms) +
                        " ms (LIBREDUCE_HEARTBEAT_MS " + std::to_string(heartbeat_ms_) +
                        "): it is frozen, or the network to it is down");
    return;
  }
}

bool ReduceComm::resume(uint32_t rank, uint64_t seq) {
  resumed_.resize(shape_.nranks, 0);
  if (resumed_[rank] == 0) first_seq_ = std::max(first_seq_, seq);
  resumed_[rank] = 1;
  return !waitingForResume();
}

bool ReduceComm::waitingForResume() const {
  if (!rejoining_) return false;
  return resumed_.size() < shape_.nranks ||
         std::any_of(resumed_.begin(), resumed_.end(), [](uint8_t r) { return r == 0; });
}

}  // namespace rd::server
