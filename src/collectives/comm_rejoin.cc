// SPDX-License-Identifier: BSD-3-Clause
// Re-admission of a replacement reducer (docs/failover.md). A rank that lost reducer m connects
// to its address again every kRejoinRetry and joins with kFlagRejoin. A replacement listening
// there authenticates it as at the first join; the rank then names the first operation it has
// not started (kResume) and holds its operations from there. Once every rank resumed, the
// replacement answers kJoined with the largest of those numbers, E: every rank routes operations
// before E without it and operations from E with it, whatever moment each learned of it.
#include <algorithm>
#include <cstring>

#include "collectives/communicator.h"
#include "common/events.h"
#include "common/log.h"

namespace rd::coll {

const std::vector<uint8_t>& Communicator::aliveFor(uint64_t seq) {
  bool later = false;
  for (size_t m = 0; m < alive_.size(); ++m) later = later || admitted_from_[m] > seq;
  if (!later) return alive_;
  alive_scratch_ = alive_;
  for (size_t m = 0; m < alive_.size(); ++m) {
    if (admitted_from_[m] > seq) alive_scratch_[m] = 0;
  }
  return alive_scratch_;
}

uint64_t Communicator::firstUnstarted() const {
  return held_.empty() ? next_seq_ : held_.front()->seq();
}

void Communicator::tryRejoins(Clock::time_point now) {
  if (!failover() || aborted_ || leaving_ || joined_links_ < links_.size()) return;
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (failure_status_ != rdSuccess) return;
  }
  for (uint32_t m = 0; m < servers(); ++m) {
    if (alive_[m] != 0) continue;
    Rejoin& r = rejoins_[m];
    if (r.stage != Rejoin::Stage::kIdle) {
      if (now >= r.deadline) rejoinFailed(m, "no answer to the rejoin");
      continue;
    }
    if (now < r.retry_at) continue;
    r.stage = Rejoin::Stage::kConnecting;
    r.deadline = now + kRejoinAnswer;
    for (uint32_t link : {m, m + servers()}) {
      if (transport_->connect(links_[link].address, &links_[link].conn, laneOf(links_[link])) !=
          rdSuccess) {
        links_[link].conn = 0;
        rejoinFailed(m, lastError());
        break;
      }
      sendHello(link);
    }
  }
}

void Communicator::onRejoinMessage(uint32_t index, const wire::Header& h, transport::Payload& p) {
  const uint32_t m = index % servers();
  Rejoin& r = rejoins_[m];
  ReducerLink& link = links_[index];
  auto type = static_cast<wire::MsgType>(h.type);
  const auto* bytes = static_cast<const char*>(p.data());
  if (type == wire::MsgType::kChallenge && bytes != nullptr && p.size() == wire::kNonceBytes) {
    onJoinMessage(index, h, p);  // the same authentication as at the first join
    return;
  }
  if (type == wire::MsgType::kWelcome && !link.welcomed && reducerProved(index, p)) {
    link.welcomed = true;
    if (index >= servers()) return;
    // Authenticated: from here on this rank starts no operation until the replacement says
    // from which one it serves.
    r.stage = Rejoin::Stage::kResumed;
    r.deadline = Clock::now() + std::chrono::milliseconds(2 * config_.timeout_ms);
    r.resume_seq = firstUnstarted();
    ++resumes_pending_;
    wire::Header resume = header(wire::MsgType::kResume, index);
    resume.seq = r.resume_seq;
    transport_->send(link.conn, &resume, sizeof resume, nullptr, 0, nullptr);
    return;
  }
  if (type == wire::MsgType::kJoined && link.welcomed && h.epoch != 0 &&
      r.stage == Rejoin::Stage::kResumed && h.seq >= r.resume_seq) {
    link.epoch = h.epoch;
    admitted_from_[m] = h.seq;
    if (links_[m].epoch == 0 || links_[m + servers()].epoch == 0) return;
    alive_[m] = 1;
    r = Rejoin{};
    --resumes_pending_;
    links_[m].last_heard = links_[m + servers()].last_heard = Clock::now();
    RD_LOG_WARN("rank %u: %s is back: it serves operations from %llu on", config_.rank,
                reducerName(m).c_str(), static_cast<unsigned long long>(admitted_from_[m]));
    events::record("reducerBack",
                   eventFields(m) + ", \"fromOperation\": " + std::to_string(admitted_from_[m]));
    releaseHeld();
    return;
  }
  std::string why = type == wire::MsgType::kWelcome
                        ? std::string("could not prove the job secret")
                        : std::string("answered the rejoin with ") + wire::typeName(h.type);
  if ((type == wire::MsgType::kReject || type == wire::MsgType::kError) && bytes != nullptr) {
    why += ": " + std::string(bytes, std::min<size_t>(p.size(), wire::kMaxReasonBytes));
  }
  rejoinFailed(m, why);
}

void Communicator::rejoinFailed(uint32_t m, const std::string& why) {
  Rejoin& r = rejoins_[m];
  RD_LOG_DEBUG("rank %u: rejoining %s failed: %s", config_.rank, reducerName(m).c_str(),
               why.c_str());
  dropLinks(m);
  const bool was_holding = r.stage == Rejoin::Stage::kResumed;
  admitted_from_[m] = 0;
  const uint32_t failures = r.failures + 1;
  r = Rejoin{};
  r.failures = failures;
  // Every second at first; a reducer away for long is tried less often.
  r.retry_at = Clock::now() + (failures < kRejoinFastTries ? kRejoinRetry : 10 * kRejoinRetry);
  if (was_holding) {
    --resumes_pending_;
    releaseHeld();
  }
}

void Communicator::releaseHeld() {
  while (resumes_pending_ == 0 && !held_.empty()) {
    std::shared_ptr<Operation> op = std::move(held_.front());
    held_.pop_front();
    startOp(op);
  }
}

}  // namespace rd::coll
