// SPDX-License-Identifier: BSD-3-Clause
// Refused bootstrap connections, logged once per peer address and then summarized: a port
// scanner, a health check or a flood gets one line per address and minute, never one per
// connection.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "transport/progress_engine.h"

namespace rd::transport::bootstrap {

class RefusalLog {
 public:
  /** @p owner names the listening process in every line ("reduce-server"). */
  explicit RefusalLog(std::string owner) : owner_(std::move(owner)) {}

  /** A connection from @p host was refused because of @p why. */
  void refused(const std::string& host, const std::string& why, Clock::time_point now);

  /** Summarizes what was held back for addresses whose minute is over. */
  void onTick(Clock::time_point now);

  /** Every refusal so far (tests, metrics). */
  uint64_t total() const { return total_; }

 private:
  struct PerHost {
    Clock::time_point since;  // start of this address's quiet minute
    uint64_t held_back = 0;   // refusals not logged since then
    std::string last_why;
  };

  std::string owner_;
  std::unordered_map<std::string, PerHost> hosts_;
  uint64_t total_ = 0;
};

}  // namespace rd::transport::bootstrap
