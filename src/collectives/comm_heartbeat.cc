// SPDX-License-Identifier: BSD-3-Clause
// Heartbeats between this rank and its reducers. A rank sends one on each reducer's data
// connection 4 times per period (LIBREDUCE_HEARTBEAT_MS) and expects the same of every reducer:
// anything from a reducer counts. A reducer that sent nothing for a whole period is frozen or cut
// off; it is named then, long before the operation timeout would. This rank's own stalls are
// not the reducers' silence (transport/liveness.h).
#include <algorithm>

#include "collectives/communicator.h"
#include "common/limits.h"

namespace rd::coll {

void Communicator::heartbeat(Clock::time_point now) {
  const uint32_t period_ms = limits::heartbeatPeriodMs(config_.heartbeat_ms);
  const Clock::duration away = silence_watch_.look(now);
  for (auto& link : links_) transport::SilenceWatch::credit(&link.last_heard, away, now);
  if (period_ms == 0 || joined_links_ < links_.size() || aborted_) return;
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (failure_status_ != rdSuccess) return;  // the reducers were told; nothing left to watch
  }
  const auto period = std::chrono::milliseconds(period_ms);
  if (now - heartbeat_sent_ >= period / 4) {
    heartbeat_sent_ = now;
    for (uint32_t i = 0; i < servers(); ++i) sendControl(wire::MsgType::kHeartbeat, i, 0);
  }
  // The rendezvous of a ring-only communicator is not in the data path: its silence is moot.
  if (config_.reducers.empty()) return;
  for (uint32_t i = 0; i < servers(); ++i) {
    if (!reducerAlive(i)) continue;
    Clock::time_point heard = std::max(links_[i].last_heard, links_[i + servers()].last_heard);
    if (now - heard < period) continue;
    auto silent_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - heard).count();
    reducerLost(i, rdTimeout,
                "sent nothing for " + std::to_string(silent_ms) + " ms (LIBREDUCE_HEARTBEAT_MS " +
                    std::to_string(period_ms) + "): it is frozen, or the network to it is down");
    return;
  }
}

}  // namespace rd::coll
