// SPDX-License-Identifier: BSD-3-Clause
// How a communicator fails: a lost reducer or neighbour, an error a reducer reports, an abort.
// The first failure is told to the reducers (so the other ranks learn the root cause) and then
// fails every operation; the communicator reports it on every later call.
#include "collectives/communicator.h"
#include "common/log.h"
#include "common/trace.h"

namespace rd::coll {

void Communicator::onFailure(transport::ConnId conn, rdResult_t status, const std::string& reason) {
  if (leaving_ || lost_conns_.count(conn) != 0) return;
  int link = linkOf(conn);
  if (link >= 0 && links_[link].epoch == 0 && rejoining(static_cast<uint32_t>(link) % servers())) {
    // Refused or unreachable, a wrong secret included: the communicator goes on without it.
    rejoinFailed(static_cast<uint32_t>(link) % servers(), reason);
    return;
  }
  if (link >= 0 && status == rdAuthFailed && !links_[link].welcomed) {
    // A wrong secret does not get right by trying again.
    failAll(rdAuthFailed, reducerName(link) + ": " + reason);
    return;
  }
  if (link >= 0 && links_[link].epoch == 0 && !aborted_ && Clock::now() < join_deadline_ &&
      !links_[link].welcomed) {
    // Not up yet (workers may start before their reducers or rank 0): try again until the
    // connect deadline, then report this address and the last error.
    connectFailed(static_cast<uint32_t>(link), reason);
    return;
  }
  if (link >= 0 && config_.reducers.empty() && links_[link].epoch != 0) {
    return;  // the rendezvous went away after the join: the ring does not need it
  }
  if (link >= 0 && !config_.reducers.empty() && links_[link].epoch != 0) {
    reducerLost(static_cast<uint32_t>(link) % servers(), rdConnectionError, reason);
    return;
  }
  if (link >= 0) {
    failAll(rdConnectionError, reducerName(link) + ": " + reason);
    return;
  }
  // A connection may serve point-to-point messages and the ring both.
  if (p2p_->onConnectionLost(conn, reason) && conn != ring_next_ && conn != ring_prev_) return;
  onRingFailure(conn, reason);
}

void Communicator::onRingFailure(transport::ConnId conn, const std::string& reason) {
  const bool next = conn == ring_next_;
  uint32_t neighbour = next ? nextRank() : prevRank();
  std::string what = "ring neighbour rank " + std::to_string(neighbour) + ": " + reason;
  if (next) ring_next_ = 0;
  bool needed = false;
  for (auto& op : snapshot()) needed = needed || op->needsConnection(conn);
  if (needed) {
    failAll(rdConnectionError, what);
    return;
  }
  // A neighbour that finished and left breaks nobody; an operation that needs it later fails at
  // its start (previous rank) or its connect (next rank), naming it.
  if (!next && (ring_prev_ == 0 || conn == ring_prev_)) {
    ring_prev_ = 0;
    ring_prev_lost_ = what;
  }
  RD_LOG_DEBUG("rank %u: %s (no operation needs it)", config_.rank, what.c_str());
}

void Communicator::failAll(rdResult_t status, const std::string& reason) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (failure_status_ == rdSuccess) {
      first = true;
      failure_status_ = status;
      failure_ = "rank " + std::to_string(config_.rank) + ": " + reason;
      RD_LOG_INFO("%s", failure_.c_str());
    }
  }
  // What led up to the failure can be read even if the process hangs or is killed next.
  if (first) trace::flushIfOn();
  // A process that exits on this error cuts its connections: hold the error back until the
  // reducers have the cause, or the other ranks would only learn that this rank vanished.
  if (first && status != rdAborted && !destroying_) {
    holding_failure_ = true;
    notice_deadline_ = Clock::now() + kNoticeGrace;
    sendLeave(status, reason, [this] {
      if (holding_failure_) releaseFailure();
    });
  }
  if (holding_failure_ && status != rdAborted) return;  // released by the notices or onTick
  releaseFailure();
}

void Communicator::sendLeave(rdResult_t status, const std::string& reason,
                             const std::function<void()>& done) {
  auto text = std::make_shared<std::string>(reason.substr(0, wire::kMaxReasonBytes));
  // One count per send plus one for this loop: sends may complete inline.
  auto remaining = std::make_shared<int>(1);
  auto release = [remaining, text, done] {
    if (--*remaining == 0) done();
  };
  for (uint32_t i = 0; i < links_.size(); ++i) {
    if (links_[i].epoch == 0 || links_[i].conn == 0) continue;
    wire::Header h = header(wire::MsgType::kLeave, i);
    h.status = status;
    h.payload_bytes = text->size();
    ++*remaining;
    transport_->send(links_[i].conn, &h, sizeof h, text->data(), text->size(),
                     [release](rdResult_t) { release(); });
  }
  release();
}

void Communicator::releaseFailure() {
  holding_failure_ = false;
  failOperations();
}

void Communicator::failOperations() {
  std::string reason;
  rdResult_t status = rdSuccess;
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    status = failure_status_;
    reason = failure_;
  }
  if (join_request_) join_request_->complete(status, reason);
  for (auto& op : snapshot()) op->fail(status, reason);
  std::deque<std::shared_ptr<Operation>> held = std::move(held_);
  held_.clear();
  for (auto& op : held) op->fail(status, reason);
  p2p_->failAll(status, reason);
  reapFinished();
}

rdResult_t Communicator::asyncError() {
  std::lock_guard<std::mutex> lock(failure_mu_);
  if (failure_status_ == rdSuccess) return rdSuccess;
  return setError(failure_status_, failure_);
}

void Communicator::abort() {
  aborted_ = true;
  transport_->post([this] {
    failAll(rdAborted, "communicator aborted");
    for (auto& link : links_) transport_->close(link.conn);
    if (ring_next_ != 0) transport_->close(ring_next_);
  });
}

}  // namespace rd::coll
