// SPDX-License-Identifier: BSD-3-Clause
#include "integration/tenant.h"

#include <gtest/gtest.h>

#include <cstring>

namespace rd::test {

Tenant::Tenant(Options options)
    : options_(std::move(options)),
      zeros_(std::make_shared<std::vector<char>>(options_.chunk_bytes)),
      comm_id_(
          auth::commIdOfText(options_.hello_comm.empty() ? options_.comm : options_.hello_comm)) {
  transport::Handlers h;
  h.on_message = [this](transport::ConnId c, const void* hdr, size_t len, transport::Payload p) {
    onMessage(c, hdr, len, std::move(p));
  };
  h.on_failure = [this](transport::ConnId c, rdResult_t, const std::string& why) {
    onFailure(c, why);
  };
  transport::Options topts;
  topts.name = "tenant";
  topts.secret = options_.key;
  topts.scope = auth::commIdOfText(options_.comm);  // the connections are its own job's
  EXPECT_EQ(transport::createTransport("ucx", nullptr, topts, std::move(h), &transport_),
            rdSuccess);
}

Tenant::~Tenant() {
  transport_->runSync([this] {
    for (auto conn : conns_) transport_->close(conn);
    return rdSuccess;
  });
  transport_->stop();
}

void Tenant::start() {
  const uint32_t n = options_.nranks;
  // A hello claiming many ranks is refused before any join: one rank's connections suffice.
  const uint32_t connected = std::min<uint32_t>(n, 64);
  conns_.assign(2 * static_cast<size_t>(connected), 0);
  nonces_.assign(conns_.size(), auth::Nonce{});
  transport_->runSync([&] {
    for (uint32_t i = 0; i < conns_.size(); ++i) {
      const transport::Lane lane =
          i % 2 == 0 ? transport::Lane::kShared : transport::Lane::kSeparate;
      if (transport_->connect(options_.reducer, &conns_[i], lane) != rdSuccess) return rdSuccess;
      wire::HelloBody body;
      body.chunk_bytes = options_.chunk_bytes;
      body.timeout_ms = 600000;  // holds what it takes as long as it may
      body.algorithm = rdAlgoReductionServer;
      nonces_[i] = auth::makeNonce();
      std::memcpy(body.nonce, nonces_[i].data(), nonces_[i].size());
      auto text = std::make_shared<std::string>(wire::encodeHello(body, ""));
      wire::Header hello = wire::makeHeader(wire::MsgType::kHello, comm_id_, 0, i / 2, n);
      if (i % 2 == 1) hello.flags |= wire::kFlagResultChannel;
      if (options_.failover) hello.flags |= wire::kFlagFailover;
      hello.payload_bytes = text->size();
      transport_->send(conns_[i], &hello, sizeof hello, text->data(), text->size(),
                       [text](rdResult_t) {});
    }
    return rdSuccess;
  });
}

uint32_t Tenant::rankOf(transport::ConnId conn) const {
  for (uint32_t i = 0; i < conns_.size(); ++i) {
    if (conns_[i] == conn) return i;
  }
  return UINT32_MAX;
}

void Tenant::onMessage(transport::ConnId conn, const void* header, size_t len,
                       transport::Payload p) {
  wire::Header h;
  if (len != sizeof h) return;
  std::memcpy(&h, header, sizeof h);
  const uint32_t index = rankOf(conn);
  const auto type = static_cast<wire::MsgType>(h.type);
  if (type == wire::MsgType::kChallenge && index != UINT32_MAX && p.size() == wire::kNonceBytes) {
    auth::Nonce reducer{};
    std::memcpy(reducer.data(), p.data(), reducer.size());
    auto proof = std::make_shared<auth::Mac>(auth::prove(auth::Role::kWorker, options_.key,
                                                         comm_id_, index / 2, options_.nranks,
                                                         nonces_[index], reducer));
    wire::Header a =
        wire::makeHeader(wire::MsgType::kAuth, comm_id_, 0, index / 2, options_.nranks);
    a.payload_bytes = proof->size();
    transport_->send(conn, &a, sizeof a, proof->data(), proof->size(), [proof](rdResult_t) {});
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (type == wire::MsgType::kJoined) {
    epoch_ = h.epoch;
    ++joined_;
  } else if (type == wire::MsgType::kReject || type == wire::MsgType::kError) {
    const auto* text = static_cast<const char*>(p.data());
    if (!turned_away_) status_ = static_cast<rdResult_t>(h.status);
    answer_ += (text != nullptr ? std::string(text, p.size()) : "") + "\n";
    turned_away_ = true;
  }
  p.discard();
  cv_.notify_all();
}

void Tenant::onFailure(transport::ConnId, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  answer_ += "closed: " + why + "\n";
  turned_away_ = true;
  cv_.notify_all();
}

bool Tenant::joined(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, limit, [&] { return turned_away_ || joined_ == conns_.size(); });
  return !turned_away_ && joined_ == conns_.size();
}

void Tenant::sendOpsAhead(uint64_t first, uint64_t stride, int ops) {
  transport_->runSync([&] {
    for (int i = 0; i < ops; ++i) {
      wire::Header d = wire::makeHeader(wire::MsgType::kData, comm_id_, epoch_, 0, options_.nranks);
      d.coll = static_cast<uint8_t>(wire::Coll::kAllReduce);
      d.dtype = rdFloat32;
      d.op = rdSum;
      d.seq = first + stride * static_cast<uint64_t>(i);
      d.count = options_.chunk_bytes / 4;
      d.chunk_bytes = static_cast<uint32_t>(options_.chunk_bytes);
      d.payload_bytes = options_.chunk_bytes;
      auto zeros = zeros_;
      transport_->send(conns_[0], &d, sizeof d, zeros->data(), zeros->size(),
                       [zeros](rdResult_t) {});
    }
    return rdSuccess;
  });
}

void Tenant::sendLanded(uint64_t first, int count, uint32_t epoch) {
  transport_->runSync([&] {
    for (int i = 0; i < count; ++i) {
      wire::Header l = wire::makeHeader(wire::MsgType::kLanded, comm_id_,
                                        epoch != 0 ? epoch : epoch_, 0, options_.nranks);
      l.seq = first + static_cast<uint64_t>(i);
      transport_->send(conns_[0], &l, sizeof l, nullptr, 0, [](rdResult_t) {});
    }
    return rdSuccess;
  });
}

bool Tenant::turnedAway(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, limit, [&] { return turned_away_; });
}

bool Tenant::heard(const std::string& text, std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, limit, [&] { return answer_.find(text) != std::string::npos; });
}

std::string Tenant::answer() {
  std::lock_guard<std::mutex> lock(mu_);
  return answer_;
}

rdResult_t Tenant::answerStatus() {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

}  // namespace rd::test
