// SPDX-License-Identifier: BSD-3-Clause
#include "transport/bootstrap/handshake.h"

#include <cstring>

namespace rd::transport::bootstrap {

namespace {

constexpr size_t kNonceBytes = sizeof(auth::Nonce);
constexpr size_t kMacBytes = sizeof(auth::Mac);
constexpr size_t kTagBytes = sizeof(uint64_t);
constexpr size_t kScopeBytes = sizeof(uint64_t);
constexpr uint32_t kRefusedWrongProof = 1;
constexpr uint32_t kRefusedNoScope = 2;

struct BodyLimits {
  size_t min;
  size_t max;
};

// What each frame's body may be: hello {nonce, scope}, challenge {nonce, proof}, auth {proof,
// tag, address}, welcome {MAC, tag, address}, refused {reason}.
BodyLimits limitsOf(FrameType type) {
  switch (type) {
    case FrameType::kHello: return {kNonceBytes + kScopeBytes, kNonceBytes + kScopeBytes};
    case FrameType::kChallenge: return {kNonceBytes + kMacBytes, kNonceBytes + kMacBytes};
    case FrameType::kAuth:
    case FrameType::kWelcome:
      return {kMacBytes + kTagBytes + 1, kMacBytes + kTagBytes + kMaxWorkerAddress};
    case FrameType::kRefused: return {sizeof(uint32_t), sizeof(uint32_t)};
  }
  return {1, 0};  // unknown: nothing fits
}

const char* nameOf(FrameType type) {
  switch (type) {
    case FrameType::kHello: return "hello";
    case FrameType::kChallenge: return "challenge";
    case FrameType::kAuth: return "auth";
    case FrameType::kWelcome: return "welcome";
    case FrameType::kRefused: return "refused";
  }
  return "unknown";
}

template <typename T>
void put(std::string* out, const T& value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <typename T>
T get(const uint8_t* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

std::string refusal(uint32_t why = kRefusedWrongProof) {
  std::string reason;
  put(&reason, why);
  return encodeFrame(FrameType::kRefused, reason);
}

// {MAC, tag, address}: the body of an auth or welcome frame.
std::string signedEndpoint(const auth::Mac& mac, const Endpoint& endpoint) {
  std::string body(reinterpret_cast<const char*>(mac.data()), kMacBytes);
  put(&body, endpoint.tag);
  body += endpoint.worker_address;
  return body;
}

Endpoint endpointOf(const uint8_t* body, size_t len) {
  Endpoint e;
  e.tag = get<uint64_t>(body + kMacBytes);
  e.worker_address.assign(reinterpret_cast<const char*>(body + kMacBytes + kTagBytes),
                          len - kMacBytes - kTagBytes);
  return e;
}

}  // namespace

std::string encodeFrame(FrameType type, const std::string& body) {
  std::string frame;
  frame.reserve(kHeaderBytes + body.size());
  put(&frame, kMagic);
  put(&frame, kVersion);
  put(&frame, static_cast<uint16_t>(type));
  put(&frame, static_cast<uint32_t>(body.size()));
  frame += body;
  return frame;
}

bool checkHeader(const uint8_t* header, FrameType expected, FrameType also, uint32_t* body_len,
                 std::string* error) {
  if (get<uint32_t>(header) != kMagic) {
    *error = "not a libreduce bootstrap frame (bad magic)";
    return false;
  }
  uint16_t version = get<uint16_t>(header + 4);
  if (version != kVersion) {
    *error = "bootstrap version " + std::to_string(version) + ", this side speaks " +
             std::to_string(kVersion);
    return false;
  }
  auto type = static_cast<FrameType>(get<uint16_t>(header + 6));
  if (type != expected && type != also) {
    *error = std::string("a bootstrap frame of type ") + std::to_string(static_cast<int>(type)) +
             " where " + nameOf(expected) + " belongs";
    return false;
  }
  uint32_t len = get<uint32_t>(header + 8);
  BodyLimits limits = limitsOf(type);
  if (len < limits.min || len > limits.max) {
    *error = std::string("a ") + nameOf(type) + " frame of " + std::to_string(len) +
             " bytes (allowed " + std::to_string(limits.min) + ".." + std::to_string(limits.max) +
             ")";
    return false;
  }
  *body_len = len;
  return true;
}

auth::Mac bootstrapMac(MacRole role, const std::string& key, const auth::Nonce& connector_nonce,
                       const auth::Nonce& listener_nonce, uint64_t scope,
                       const Endpoint* endpoint) {
  std::string msg = "libreduce-bootstrap-v2";
  msg += static_cast<char>(role);
  msg.append(reinterpret_cast<const char*>(connector_nonce.data()), connector_nonce.size());
  msg.append(reinterpret_cast<const char*>(listener_nonce.data()), listener_nonce.size());
  put(&msg, scope);
  if (endpoint != nullptr) {
    put(&msg, endpoint->tag);
    msg += endpoint->worker_address;
  }
  return auth::hmac(key, msg);
}

Handshake::Handshake(Side side, Keys keys, Endpoint local)
    : side_(side), keys_(std::move(keys)), local_(std::move(local)) {
  if (side_ == Side::kListener) {
    expect_ = Expect::kHello;
    return;
  }
  secret_ = keys_.secret;
  scope_ = local_.scope;
  expect_ = Expect::kChallenge;
  if (auth::randomBytes(connector_nonce_.data(), connector_nonce_.size()) != rdSuccess) {
    fail(rdSystemError, "no random bytes for the handshake nonce");
    return;
  }
  std::string hello(reinterpret_cast<const char*>(connector_nonce_.data()), kNonceBytes);
  put(&hello, scope_);
  out_ = encodeFrame(FrameType::kHello, hello);
}

auth::Mac Handshake::mac(MacRole role, const std::string& key, const Endpoint* endpoint) const {
  return bootstrapMac(role, key, connector_nonce_, listener_nonce_, scope_, endpoint);
}

std::string Handshake::takeOutput() {
  return std::move(out_);
}

void Handshake::fail(rdResult_t status, std::string why) {
  if (status_ == Status::kFailed) return;  // a done one fails too: bytes after its end
  status_ = Status::kFailed;
  failure_ = status;
  error_ = std::move(why);
  in_.clear();
}

Handshake::Status Handshake::consume(const void* data, size_t len) {
  if (status_ != Status::kRunning) {
    if (len > 0 && status_ == Status::kDone) fail(rdConnectionError, "bytes after the handshake");
    return status_;
  }
  in_.append(static_cast<const char*>(data), len);
  while (status_ == Status::kRunning && in_.size() >= kHeaderBytes) {
    static constexpr FrameType kByExpect[] = {FrameType::kHello, FrameType::kChallenge,
                                              FrameType::kAuth, FrameType::kWelcome};
    if (expect_ == Expect::kNothing) {
      fail(rdConnectionError, "bytes after the handshake");
      break;
    }
    FrameType expected = kByExpect[static_cast<int>(expect_)];
    // Either side may hear that it was refused instead of the next step.
    bool refusable = expect_ != Expect::kHello;
    FrameType also = refusable ? FrameType::kRefused : expected;
    uint32_t body_len = 0;
    std::string why;
    const auto* bytes = reinterpret_cast<const uint8_t*>(in_.data());
    if (!checkHeader(bytes, expected, also, &body_len, &why)) {
      fail(rdConnectionError, why);
      break;
    }
    if (in_.size() < kHeaderBytes + body_len) break;  // the rest of the frame is on its way
    onFrame(static_cast<FrameType>(get<uint16_t>(bytes + 6)), bytes + kHeaderBytes, body_len);
    if (status_ == Status::kFailed) break;
    in_.erase(0, kHeaderBytes + body_len);
  }
  if (status_ == Status::kDone && !in_.empty())
    fail(rdConnectionError, "bytes after the handshake");
  return status_;
}

void Handshake::onFrame(FrameType type, const uint8_t* body, size_t len) {
  switch (type) {
    case FrameType::kHello: onHello(body, len); break;
    case FrameType::kChallenge: onChallenge(body, len); break;
    case FrameType::kAuth: onAuth(body, len); break;
    case FrameType::kWelcome: onWelcome(body, len); break;
    case FrameType::kRefused: {
      uint32_t reason = get<uint32_t>(body);
      fail(rdAuthFailed,
           std::string("authentication failed: the ") +
               (side_ == Side::kListener ? "connecting peer" : "listener") +
               (reason == kRefusedWrongProof ? " refused our proof (its secret differs from ours)"
                : reason == kRefusedNoScope
                    ? " serves a shared reducer pool, which admits a connection only for a "
                      "named communicator, and this one named none"
                    : " refused the connection"));
      break;
    }
  }
}

// Which side lacks a secret, where that can be told: a side without one knows it, and a proof
// made with the empty key is recognizable. Two different secrets look alike from both sides.
std::string Handshake::mismatch(bool from_listener, const auth::Mac& got,
                                const Endpoint* endpoint) const {
  if (from_listener) {
    if (secret_.empty()) {
      return "authentication failed: the listener requires a job secret and this process has "
             "none (set LIBREDUCE_SECRET_FILE to the file the reducer was started with)";
    }
    if (auth::equal(got, mac(MacRole::kListener, ""))) {
      return "authentication failed: the listener has no job secret and this process has one "
             "(start the reducer with --secret-file, or unset LIBREDUCE_SECRET_FILE here)";
    }
    return std::string(
               "authentication failed: the listener's job secret differs from this "
               "process's") +
           (scope_ != 0 ? " (on a shared reducer pool: this process's key is not the job key "
                          "of the communicator it named)"
                        : "");
  }
  if (!keys_.pool_secret.empty()) {
    return "authentication failed: the connecting peer's key is not the job key of the "
           "communicator it named (" +
           std::to_string(scope_) + ") under this reducer pool's secret";
  }
  if (secret_.empty()) {
    return "authentication failed: the connecting peer has a job secret and this listener has "
           "none";
  }
  if (auth::equal(got, mac(MacRole::kConnector, "", endpoint))) {
    return "authentication failed: the connecting peer has no job secret and this listener "
           "requires one";
  }
  return "authentication failed: the connecting peer's job secret differs from this listener's";
}

void Handshake::onHello(const uint8_t* body, size_t /*len*/) {
  std::memcpy(connector_nonce_.data(), body, kNonceBytes);
  scope_ = get<uint64_t>(body + kNonceBytes);
  peer_.scope = scope_;
  if (keys_.pool_secret.empty()) {
    secret_ = keys_.secret;
  } else if (scope_ == 0) {
    out_ += refusal(kRefusedNoScope);
    fail(rdAuthFailed,
         "authentication failed: the connecting peer named no communicator, and this listener "
         "serves a shared reducer pool, which keys each connection by its communicator");
    return;
  } else {
    secret_ = auth::jobKey(keys_.pool_secret, scope_);
  }
  if (auth::randomBytes(listener_nonce_.data(), listener_nonce_.size()) != rdSuccess) {
    fail(rdSystemError, "no random bytes for the handshake nonce");
    return;
  }
  auth::Mac proof = mac(MacRole::kListener, secret_);
  std::string reply(reinterpret_cast<const char*>(listener_nonce_.data()), kNonceBytes);
  reply.append(reinterpret_cast<const char*>(proof.data()), kMacBytes);
  out_ += encodeFrame(FrameType::kChallenge, reply);
  expect_ = Expect::kAuth;
}

void Handshake::onChallenge(const uint8_t* body, size_t /*len*/) {
  std::memcpy(listener_nonce_.data(), body, kNonceBytes);
  auth::Mac got{};
  std::memcpy(got.data(), body + kNonceBytes, kMacBytes);
  if (!auth::equal(got, mac(MacRole::kListener, secret_))) {
    out_ += refusal();
    fail(rdAuthFailed, mismatch(true, got, nullptr));
    return;
  }
  out_ += encodeFrame(FrameType::kAuth,
                      signedEndpoint(mac(MacRole::kConnector, secret_, &local_), local_));
  expect_ = Expect::kWelcome;
}

void Handshake::onAuth(const uint8_t* body, size_t len) {
  auth::Mac got{};
  std::memcpy(got.data(), body, kMacBytes);
  Endpoint claimed = endpointOf(body, len);
  if (!auth::equal(got, mac(MacRole::kConnector, secret_, &claimed))) {
    out_ += refusal();
    fail(rdAuthFailed, mismatch(false, got, &claimed));
    return;
  }
  peer_.tag = claimed.tag;
  peer_.worker_address = std::move(claimed.worker_address);
  out_ += encodeFrame(FrameType::kWelcome,
                      signedEndpoint(mac(MacRole::kWelcome, secret_, &local_), local_));
  expect_ = Expect::kNothing;
  status_ = Status::kDone;
}

void Handshake::onWelcome(const uint8_t* body, size_t len) {
  auth::Mac got{};
  std::memcpy(got.data(), body, kMacBytes);
  Endpoint claimed = endpointOf(body, len);
  if (!auth::equal(got, mac(MacRole::kWelcome, secret_, &claimed))) {
    fail(rdAuthFailed,
         "authentication failed: the listener's welcome does not carry its proof "
         "of the tag and address in it (changed on the way?)");
    return;
  }
  peer_.tag = claimed.tag;
  peer_.worker_address = std::move(claimed.worker_address);
  expect_ = Expect::kNothing;
  status_ = Status::kDone;
}

}  // namespace rd::transport::bootstrap
