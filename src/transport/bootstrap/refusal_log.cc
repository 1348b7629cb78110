// SPDX-License-Identifier: BSD-3-Clause
#include "transport/bootstrap/refusal_log.h"

#include "common/log.h"

namespace rd::transport::bootstrap {

namespace {

constexpr auto kQuietPeriod = std::chrono::seconds(60);
// Addresses tracked one by one; the rest share one entry, so a flood from many addresses costs
// bounded memory and bounded lines too.
constexpr size_t kMaxHosts = 1024;
constexpr const char* kOtherHosts = "other addresses";

}  // namespace

void RefusalLog::refused(const std::string& host, const std::string& why, Clock::time_point now) {
  ++total_;
  const std::string& key = hosts_.count(host) || hosts_.size() < kMaxHosts ? host : kOtherHosts;
  auto [it, fresh] = hosts_.try_emplace(key);
  PerHost& h = it->second;
  if (fresh) {
    h.since = now;
    RD_LOG_WARN(
        "%s: refused a connection from %s: %s (more from there are summarized once a "
        "minute)",
        owner_.c_str(), key.c_str(), why.c_str());
    return;
  }
  ++h.held_back;
  h.last_why = why;
}

void RefusalLog::onTick(Clock::time_point now) {
  for (auto it = hosts_.begin(); it != hosts_.end();) {
    PerHost& h = it->second;
    if (now - h.since < kQuietPeriod) {
      ++it;
      continue;
    }
    if (h.held_back == 0) {  // a quiet minute: the next refusal is logged again
      it = hosts_.erase(it);
      continue;
    }
    RD_LOG_WARN("%s: refused %llu more connections from %s in the last minute (last: %s)",
                owner_.c_str(), static_cast<unsigned long long>(h.held_back), it->first.c_str(),
                h.last_why.c_str());
    h.held_back = 0;
    h.since = now;
    ++it;
  }
}

}  // namespace rd::transport::bootstrap
