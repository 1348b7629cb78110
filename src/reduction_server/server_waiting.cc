// SPDX-License-Identifier: BSD-3-Clause
// The reducer's contributions that wait for memory: kept per communicator in arrival order,
// bounded by the ranks' windows, and served round robin between communicators as memory frees.
#include <string>
#include <vector>

#include "reduction_server/server.h"

namespace rd::server {

void ReductionServer::onData(transport::ConnId conn, Peer& peer, const wire::Header& h,
                             transport::Payload& p) {
  // Contributions that need a new slot keep their arrival order behind their communicator's
  // ones waiting for memory; one for a slot that exists needs none and goes in at once: the
  // slot's memory comes back only when its last contribution lands (queued behind, the two would
  // wait for each other for ever).
  const uint64_t id = peer.comm->shape().comm_id;
  auto queue = waiting_.find(id);
  const bool behind = queue != waiting_.end() && !queue->second.items.empty();
  std::string why;
  auto outcome = behind && !peer.comm->hasSlot(h)
                     ? ReduceComm::Outcome::kNeedMemory
                     : peer.comm->contribute(h, peer.hello.rank, p, &why);
  if (outcome == ReduceComm::Outcome::kBadFrame) {
    dropPeer(conn, Drop::kFailed, "bad data frame: " + why);
    return;
  }
  if (outcome != ReduceComm::Outcome::kNeedMemory) return;
  WaitQueue& waiting = waiting_[id];
  // Each waiting contribution is a chunk in some rank's window: more breaks the protocol. The
  // eager ones hold the transport's memory, bounded too (quota.h).
  const wire::CommShape& shape = peer.comm->shape();
  const uint64_t held = p.keepsData() ? p.size() : 0;
  if (waiting.items.size() >= maxOpenChunks(shape.nranks) ||
      waiting.held_bytes + held >
          maxWaitingEagerBytes(shape.nranks, shape.max_chunk_bytes, peer.comm->quotaBytes())) {
    dropPeer(conn, Drop::kFailed,
             std::to_string(waiting.items.size()) + " contributions (" +
                 std::to_string(waiting.held_bytes) +
                 " bytes) wait for memory already: more than the ranks' windows allow");
    return;
  }
  waiting.items.push_back(Waiting{conn, h, std::move(p), held});
  waiting.held_bytes += held;
  ++waited_for_memory_;
}

void ReductionServer::drainWaiting() {
  // Memory freed goes round the communicators that wait: each makes at most one new slot per
  // round, starting after the one served last, so one job's backlog never holds up another's.
  bool made_one = true;
  while (made_one && !waiting_.empty()) {
    made_one = false;
    auto it = waiting_.upper_bound(turn_);
    for (size_t n = waiting_.size(); n > 0; --n) {
      if (it == waiting_.end()) it = waiting_.begin();
      if (drainTurn(it->second)) {
        made_one = true;
        turn_ = it->first;
      }
      it = it->second.items.empty() ? waiting_.erase(it) : std::next(it);
    }
  }
}

bool ReductionServer::drainTurn(WaitQueue& queue) {
  bool made_slot = false;
  bool blocked = false;
  std::vector<transport::ConnId> bad;
  std::string why;
  for (auto w = queue.items.begin(); w != queue.items.end();) {
    auto it = peers_.find(w->conn);
    if (it == peers_.end() || it->second.state != Peer::State::kJoined) {
      queue.remove(&w);
      continue;
    }
    ReduceComm& comm = *it->second.comm;
    const bool new_slot = !comm.hasSlot(w->header);
    if (new_slot && (blocked || made_slot)) {
      ++w;
      continue;
    }
    auto outcome = comm.contribute(w->header, it->second.hello.rank, w->payload, &why);
    if (outcome == ReduceComm::Outcome::kNeedMemory) {
      blocked = true;
      ++w;
      continue;
    }
    if (outcome == ReduceComm::Outcome::kBadFrame) bad.push_back(w->conn);
    made_slot = made_slot || (new_slot && outcome == ReduceComm::Outcome::kAccepted);
    queue.remove(&w);
  }
  for (transport::ConnId conn : bad) dropPeer(conn, Drop::kFailed, "bad data frame: " + why);
  return made_slot;
}

}  // namespace rd::server
