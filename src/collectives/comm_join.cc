// The worker's half of the join handshake with each reducer:
//   hello -> challenge -> auth (our proof) -> welcome (the reducer's proof) -> joined (epoch and
//   every rank's address) or reject (reason).
#include <cstring>

#include "collectives/communicator.h"
#include "common/log.h"

namespace rd::coll {

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
