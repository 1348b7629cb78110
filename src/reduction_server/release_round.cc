// SPDX-License-Identifier: BSD-3-Clause
// Failover's release round on the reducer (docs/failover.md): which ranks have every answer of
// an operation (kLanded), which completed it after a loss (kDone), and the kReleased that tells
// every rank its buffers may go back. A rank that completed without waiting gets its kReleased
// on a later result, or alone at the next tick.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

#include "reduction_server/reduce_comm.h"

namespace rd::server {

namespace {
// How a rank is marked in an operation's landed_ / done_ entry.
constexpr uint8_t kWaits = 1;     // waits for kReleased
constexpr uint8_t kReturned = 2;  // completed already: its kReleased may wait for a result

// Marks @p rank in @p by_op[seq] with @p how; the marks once every rank is marked, else
// nothing. Old operations are forgotten.
std::vector<uint8_t> mark(std::map<uint64_t, ReduceComm::RankMarks>& by_op, uint64_t seq,
                          uint32_t rank, uint32_t nranks, size_t remembered, uint8_t how) {
  ReduceComm::RankMarks& marks = by_op[seq];
  if (marks.ranks.empty()) marks.since = Clock::now();
  std::vector<uint8_t>& ranks = marks.ranks;
  ranks.resize(nranks, 0);
  ranks[rank] = how;
  while (by_op.size() > remembered) by_op.erase(by_op.begin());
  if (!std::all_of(ranks.begin(), ranks.end(), [](uint8_t r) { return r != 0; })) return {};
  return ranks;
}
}  // namespace

bool ReduceComm::isDone(uint64_t seq, uint32_t rank) const {
  auto it = done_.find(seq);
  return it != done_.end() && rank < it->second.ranks.size() && it->second.ranks[rank] != 0;
}

void ReduceComm::landed(uint32_t rank, uint64_t seq, bool returned) {
  // Operations before a replacement's first are none of its business (a rank tells every live
  // reducer of the operations it completed).
  if (seq < first_seq_ || failed()) return;
  std::vector<uint8_t> marks =
      mark(landed_, seq, rank, shape_.nranks, ops_remembered_, returned ? kReturned : kWaits);
  if (marks.empty()) return;
  landed_.erase(seq);
  // Every rank holds every result of the operation: chunks of it still here (re-routed after
  // a loss, waiting for frames that ranks which completed it will never send) are moot.
  for (auto& slot : slotsOf(seq)) discardSlot(slot);
  wire::Header r =
      wire::makeHeader(wire::MsgType::kReleased, shape_.comm_id, shape_.epoch, 0, shape_.nranks);
  r.seq = seq;
  for (uint32_t to = 0; to < shape_.nranks; ++to) {
    if (marks[to] != kReturned) {
      sendTo(to, r);
      continue;
    }
    released_later_[to].push_back(seq);
    if (released_later_[to].size() > kReleasedLaterMax) sendReleasedLater(to);
  }
}

void ReduceComm::done(uint32_t rank, uint64_t seq) {
  if (failed() || seq < first_seq_) return;
  mark(done_, seq, rank, shape_.nranks, ops_remembered_, kWaits);
  for (auto& slot : slotsOf(seq)) finishIfComplete(slot);
  landed(rank, seq, false);  // a rank that completed had every answer
}

void ReduceComm::checkReleaseRounds(Clock::time_point now) {
  if (failed()) return;
  const auto timeout = std::chrono::milliseconds(timeout_ms_);
  for (auto it = landed_.begin(); it != landed_.end(); ++it) {
    if (now - it->second.since < timeout) continue;
    // The ranks that said nothing hold results the others wait on: frozen after their last
    // chunk left, or gone. Named here, the others learn it before their own timeout.
    std::vector<uint32_t> missing;
    for (uint32_t r = 0; r < it->second.ranks.size(); ++r) {
      if (it->second.ranks[r] == 0) missing.push_back(r);
    }
    const uint64_t seq = it->first;
    landed_.erase(it);
    failOp(seq, rdTimeout,
           namedRanks(missing) + " did not confirm the results of operation " +
               std::to_string(seq) + " within " + std::to_string(timeout_ms_) +
               " ms (the other ranks hold them all)");
    return;  // one a tick, as checkTimeouts
  }
}

void ReduceComm::carryReleased(uint32_t rank, wire::Header* h) {
  *h = wire::withoutCarried(*h);  // the header is reused for every rank
  std::deque<uint64_t>& waiting = released_later_[rank];
  if (!waiting.empty() && wire::carry(h, waiting.front())) waiting.pop_front();  // else the tick
}

void ReduceComm::sendReleasedLater(uint32_t rank) {
  wire::Header r =
      wire::makeHeader(wire::MsgType::kReleased, shape_.comm_id, shape_.epoch, 0, shape_.nranks);
  for (uint64_t seq : released_later_[rank]) {
    r.seq = seq;
    sendTo(rank, r);
  }
  released_later_[rank].clear();
}

void ReduceComm::sendReleasedLater() {
  for (uint32_t r = 0; r < released_later_.size(); ++r) sendReleasedLater(r);
}

}  // namespace rd::server
