// SPDX-License-Identifier: BSD-3-Clause
// Reducer failover on the worker side (docs/failover.md): the live reducer set, what happens when
// a reducer is lost, and the release round's bookkeeping that outlives an operation.
#include <algorithm>

#include "collectives/communicator.h"
#include "common/events.h"
#include "common/json_text.h"
#include "common/log.h"

namespace rd::coll {

void Communicator::sendControl(wire::MsgType type, uint32_t m, uint64_t seq, uint16_t flags) {
  if (m >= servers() || alive_[m] == 0 || links_[m].conn == 0) return;
  wire::Header h = header(type, m);
  h.seq = seq;
  h.flags |= flags;
  transport_->send(links_[m].conn, &h, sizeof h, nullptr, 0, nullptr);
}

void Communicator::releasedOp(uint64_t seq) {
  released_ops_.push_back(seq);
  if (released_ops_.size() > kReleasedOpsKept) released_ops_.pop_front();
}

void Communicator::landedLater(uint32_t m, uint64_t seq) {
  landed_later_.at(m).push_back(seq);
  if (landed_later_[m].size() > kLandedLaterMax) sendLandedLater(m);
}

void Communicator::carryLanded(uint32_t m, wire::Header* h) {
  std::deque<uint64_t>& waiting = landed_later_.at(m);
  if (!waiting.empty() && wire::carry(h, waiting.front())) waiting.pop_front();  // else the tick
}

void Communicator::sendLandedLater(uint32_t m) {
  for (uint64_t seq : landed_later_[m]) {
    sendControl(wire::MsgType::kLanded, m, seq, wire::kFlagReturned);
  }
  landed_later_[m].clear();
}

std::string Communicator::eventFields(uint32_t m) const {
  return "\"rank\": " + std::to_string(config_.rank) + ", \"reducer\": " + std::to_string(m) +
         ", \"address\": " + jsonString(links_[m].address);
}

void Communicator::checkRecoveries() {
  const uint64_t oldest = ops_.empty() ? UINT64_MAX : ops_.begin()->first;
  for (auto it = recoveries_.begin(); it != recoveries_.end();) {
    if (oldest < it->first_unaffected) {
      ++it;
      continue;
    }
    auto stalled =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - it->lost_at);
    events::record("reducerRecovered", eventFields(it->reducer) +
                                           ", \"stalledMs\": " + std::to_string(stalled.count()));
    it = recoveries_.erase(it);
  }
}

void Communicator::dropLinks(uint32_t m) {
  for (uint32_t link : {m, m + servers()}) {
    transport::ConnId conn = links_[link].conn;
    links_[link].conn = 0;
    links_[link].epoch = 0;  // joins again from the start if a replacement comes (comm_rejoin.cc)
    links_[link].welcomed = false;
    if (conn == 0) continue;
    lost_conns_.insert(conn);  // what the close reports, or still delivers, is no news
    // Connection ids only grow: the oldest have long been reported (retries add two a try).
    while (lost_conns_.size() > kLostConnsKept) lost_conns_.erase(lost_conns_.begin());
    transport_->close(conn);
  }
}

void Communicator::reducerLost(uint32_t m, rdResult_t status, const std::string& why) {
  if (m >= alive_.size() || alive_[m] == 0) return;
  lost_.push_back(reducerName(m) + ": " + why);
  alive_[m] = 0;
  const bool survivors = std::any_of(alive_.begin(), alive_.end(), [](uint8_t a) { return a; });
  if (!failover() || !survivors) {
    std::string all;
    for (const auto& lost : lost_) all += (all.empty() ? "" : "; ") + lost;
    failAll(status, (lost_.size() > 1 ? "every reducer was lost: " : "") + all);
    return;
  }
  RD_LOG_WARN("rank %u: %s; its chunks go to the other reducers", config_.rank,
              lost_.back().c_str());
  // What the failover cost: how long the reducer was silent before it was found lost, and
  // (once they complete) how long the operations in flight took from then on.
  const auto now = Clock::now();
  const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(
      now - std::max(links_[m].last_heard, links_[m + servers()].last_heard));
  events::record("reducerLost", eventFields(m) + ", \"reason\": " + jsonString(why) +
                                    ", \"silentMs\": " + std::to_string(silent.count()));
  dropLinks(m);
  landed_later_[m].clear();  // each operation sends its kLanded to the new release reducer
  rejoins_[m] = Rejoin{};
  rejoins_[m].retry_at = now + kRejoinRetry;
  recoveries_.push_back(Recovery{m, now, firstUnstarted()});
  // Operations this rank completed may be waited on by ranks that learn of the loss later: the
  // survivors hear that this rank holds every result of them (kDone).
  for (uint64_t seq : released_ops_) {
    for (uint32_t r = 0; r < dataReducers(); ++r) sendControl(wire::MsgType::kDone, r, seq);
  }
  for (auto& op : snapshot()) op->onReducerLost(m);
  reapFinished();
}

}  // namespace rd::coll
