// SPDX-License-Identifier: BSD-3-Clause
// The worker's half of the join handshake with each reducer:
//   hello -> challenge -> auth (our proof) -> welcome (the reducer's proof) -> joined (epoch and
//   every rank's address) or reject (reason).
#include <algorithm>
#include <cstring>

#include "collectives/communicator.h"
#include "common/log.h"

namespace rd::coll {

void Communicator::connectFailed(uint32_t index, const std::string& reason) {
  ReducerLink& link = links_[index];
  const Clock::time_point now = Clock::now();
  link.conn = 0;
  link.last_error = reason;
  link.retry_at = now + kConnectRetry;
  if (link.unreachable_since == Clock::time_point{}) {
    link.unreachable_since = now;
    link.warn_at = now + kUnreachableWarnAfter;
  }
  const auto limit =
      std::chrono::milliseconds(std::min(config_.connect_timeout_ms, config_.timeout_ms));
  const auto for_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - link.unreachable_since);
  // A loopback address reaches only the host that made the id: the usual cause when ranks on
  // other hosts cannot connect.
  const std::string hint =
      allOnLoopback({link.address})
          ? " (a loopback address: only ranks on the host that published it can reach it; "
            "set LIBREDUCE_LISTEN_HOST there to an address the other hosts reach)"
          : "";
  if (for_ms >= limit) {
    failAll(rdConnectionError, "cannot connect to " + reducerName(index) + " within " +
                                   std::to_string(limit.count()) + " ms: " + reason + hint +
                                   " (LIBREDUCE_CONNECT_TIMEOUT_MS)");
    return;
  }
  if (now >= link.warn_at) {
    link.warn_at = now + kUnreachableWarnEvery;
    RD_LOG_WARN("rank %u: cannot connect to %s for %lld ms (%s)%s; retrying for up to %lld ms",
                config_.rank, reducerName(index).c_str(), static_cast<long long>(for_ms.count()),
                reason.c_str(), hint.c_str(), static_cast<long long>(limit.count()));
  }
}

bool Communicator::reducerProved(uint32_t index, const transport::Payload& welcome) {
  const auto* bytes = static_cast<const char*>(welcome.data());
  if (bytes == nullptr || welcome.size() != wire::kMacBytes) return false;
  auth::Mac got{};
  std::memcpy(got.data(), bytes, got.size());
  auth::Mac want = auth::prove(auth::Role::kReducer, config_.secret, config_.comm_id, config_.rank,
                               config_.nranks, links_[index].nonce, reducer_nonces_[index]);
  return auth::equal(got, want);
}

void Communicator::onJoinMessage(uint32_t index, const wire::Header& h, transport::Payload& p) {
  ReducerLink& link = links_[index];
  auto type = static_cast<wire::MsgType>(h.type);
  const auto* bytes = static_cast<const char*>(p.data());
  auto text = [&] { return bytes ? std::string(bytes, p.size()) : std::string(); };
  switch (type) {
    case wire::MsgType::kChallenge: {
      if (bytes == nullptr || p.size() != wire::kNonceBytes) break;
      auth::Nonce reducer_nonce{};
      std::memcpy(reducer_nonce.data(), bytes, reducer_nonce.size());
      link.welcomed = false;
      auto proof = std::make_shared<auth::Mac>(
          auth::prove(auth::Role::kWorker, config_.secret, config_.comm_id, config_.rank,
                      config_.nranks, link.nonce, reducer_nonce));
      reducer_nonces_[index] = reducer_nonce;  // to check the reducer's proof in the welcome
      wire::Header a = header(wire::MsgType::kAuth, index);
      a.payload_bytes = proof->size();
      transport_->send(link.conn, &a, sizeof a, proof->data(), proof->size(),
                       [proof](rdResult_t) {});
      return;
    }
    case wire::MsgType::kWelcome: {
      if (bytes == nullptr || p.size() != wire::kMacBytes) break;
      if (!reducerProved(index, p)) {
        failAll(rdAuthFailed, reducerName(index) +
                                  " could not prove the job secret: it runs with a different "
                                  "secret (or none)");
        return;
      }
      link.welcomed = true;
      link.unreachable_since = {};
      return;
    }
    case wire::MsgType::kJoined: {
      if (!link.welcomed || h.epoch == 0) break;
      if (index == 0) {
        peer_addresses_.assign(config_.nranks, std::string());
        std::string why;
        if (wire::decodeAddresses(bytes, bytes ? p.size() : 0, config_.nranks,
                                  peer_addresses_.data(), &why) != rdSuccess) {
          failAll(rdProtocolError, reducerName(index) + " sent a bad address list: " + why);
          return;
        }
      }
      link.epoch = h.epoch;
      if (index == 0) drawn_id_ = h.count;
      if (++joined_links_ == links_.size()) join_request_->complete(rdSuccess);
      return;
    }
    case wire::MsgType::kReject:
    case wire::MsgType::kError: {
      auto status = static_cast<rdResult_t>(h.status < 0 ? h.status : rdRemoteError);
      failAll(status, reducerName(index) + " refused the join: " + text());
      return;
    }
    default: break;
  }
  failAll(rdProtocolError, reducerName(index) + " sent an unexpected " + wire::typeName(h.type) +
                               " message during the join");
}

}  // namespace rd::coll
