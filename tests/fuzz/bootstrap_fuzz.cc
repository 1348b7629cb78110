// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the bootstrap handshake (src/transport/bootstrap/handshake.h), the first
// thing every listening port parses. The input's first byte picks a mode; the second sets the
// size of the pieces the rest arrives in (TCP splits bytes anywhere):
//   0  the listener, every byte from the fuzzer;
//   1  the connector, every byte (after its hello) from the fuzzer;
//   2  the listener, after a correct hello: the fuzzer supplies the tag and worker address of
//      the auth frame, whose proof over them is made here, and whatever follows;
//   3  the connector, after a correct challenge made here: the fuzzer supplies the tag and
//      worker address of the welcome, whose MAC over them is made here, and whatever follows.
// Besides "no crash, no sanitizer report" it checks what the handshake promises: without the
// secret no input completes it; a side holds at most one frame; a failure says why; a completed
// one reports exactly the worker address that was sent.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "transport/bootstrap/handshake.h"

namespace {

using namespace rd::transport::bootstrap;

const std::string kSecret = "fuzz-secret";
constexpr size_t kMaxHeld = kHeaderBytes + 32 + 8 + kMaxWorkerAddress;

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "bootstrap_fuzz: broken invariant: %s\n", what);
    std::abort();
  }
}

Handshake::Status feed(Handshake& h, const uint8_t* data, size_t len, size_t piece) {
  Handshake::Status st = h.status();
  for (size_t at = 0; at < len; at += piece) {
    st = h.consume(data + at, std::min(piece, len - at));
    require(h.buffered() <= kMaxHeld, "more than one frame held");
    (void)h.takeOutput();
  }
  if (st == Handshake::Status::kFailed) require(!h.error().empty(), "failed without a reason");
  return st;
}

rd::auth::Nonce nonceFrom(const std::string& frame, size_t at) {
  rd::auth::Nonce n{};
  std::memcpy(n.data(), frame.data() + at, n.size());
  return n;
}

std::string bytesOf(const void* p, size_t n) {
  return std::string(static_cast<const char*>(p), n);
}

// The fuzzer's bytes as a tag and a worker address (up to the cap), and what trails them.
struct Claimed {
  Endpoint endpoint;
  size_t used = 0;  // bytes of data the endpoint took
};
Claimed claimedFrom(const uint8_t* data, size_t len) {
  Claimed c;
  c.used = std::min(len, 8 + kMaxWorkerAddress);
  if (c.used >= 8) {
    std::memcpy(&c.endpoint.tag, data, 8);
    c.endpoint.worker_address = bytesOf(data + 8, c.used - 8);
  }
  return c;
}

// {MAC, fuzzer's bytes} as a frame of @p type, then the bytes past the cap.
std::string signedFrame(FrameType type, const rd::auth::Mac& mac, const uint8_t* data, size_t len,
                        size_t used) {
  std::string frame = encodeFrame(type, bytesOf(mac.data(), mac.size()) + bytesOf(data, used));
  return frame + bytesOf(data + used, len - used);
}

// Mode 2: a correct connector up to the proof; the fuzzer's bytes are what it claims.
void listenerPastProof(const uint8_t* data, size_t len, size_t piece) {
  Handshake listener(Handshake::Side::kListener, kSecret, Endpoint{7, "listener-address"});
  rd::auth::Nonce cn{};
  cn.fill(0x42);
  std::string hello = encodeFrame(FrameType::kHello,
                                  bytesOf(cn.data(), cn.size()) + bytesOf("\5\0\0\0\0\0\0\0", 8));
  require(listener.consume(hello.data(), hello.size()) == Handshake::Status::kRunning,
          "a correct hello refused");
  std::string challenge = listener.takeOutput();
  require(challenge.size() == kHeaderBytes + 64, "no challenge after a hello");
  rd::auth::Nonce ln = nonceFrom(challenge, kHeaderBytes);
  Claimed c = claimedFrom(data, len);
  rd::auth::Mac proof = bootstrapMac(MacRole::kConnector, kSecret, cn, ln, 5, &c.endpoint);
  std::string auth = signedFrame(FrameType::kAuth, proof, data, len, c.used);
  Handshake::Status st =
      feed(listener, reinterpret_cast<const uint8_t*>(auth.data()), auth.size(), piece);
  if (c.used > 8 && c.used == len) {
    require(st == Handshake::Status::kDone, "a correct auth frame refused");
    require(listener.peer().worker_address == c.endpoint.worker_address,
            "reported worker address differs from the one sent");
    require(listener.peer().scope == 5, "reported scope differs from the one named");
  }
}

// Mode 3: a correct listener's challenge; the fuzzer's bytes are what its welcome claims.
void connectorPastChallenge(const uint8_t* data, size_t len, size_t piece) {
  Handshake connector(Handshake::Side::kConnector, kSecret, Endpoint{9, "connector-address"});
  std::string hello = connector.takeOutput();
  require(hello.size() == kHeaderBytes + 40, "no hello from a connector");
  rd::auth::Nonce cn = nonceFrom(hello, kHeaderBytes);
  rd::auth::Nonce ln{};
  ln.fill(0x17);
  rd::auth::Mac proof = bootstrapMac(MacRole::kListener, kSecret, cn, ln, 0);
  std::string challenge = encodeFrame(
      FrameType::kChallenge, bytesOf(ln.data(), ln.size()) + bytesOf(proof.data(), proof.size()));
  require(connector.consume(challenge.data(), challenge.size()) == Handshake::Status::kRunning,
          "a correct challenge refused");
  require(!connector.takeOutput().empty(), "no auth frame after a correct challenge");
  Claimed c = claimedFrom(data, len);
  rd::auth::Mac mac = bootstrapMac(MacRole::kWelcome, kSecret, cn, ln, 0, &c.endpoint);
  std::string welcome = signedFrame(FrameType::kWelcome, mac, data, len, c.used);
  Handshake::Status st =
      feed(connector, reinterpret_cast<const uint8_t*>(welcome.data()), welcome.size(), piece);
  if (c.used > 8 && c.used == len) {
    require(st == Handshake::Status::kDone, "a correct welcome refused");
    require(connector.peer().worker_address == c.endpoint.worker_address,
            "reported worker address differs from the one sent");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int mode = data[0] % 4;
  const size_t piece = 1 + data[1];
  const uint8_t* rest = data + 2;
  const size_t len = size - 2;
  switch (mode) {
    case 0: {
      Handshake listener(Handshake::Side::kListener, kSecret, Endpoint{1, "address"});
      require(feed(listener, rest, len, piece) != Handshake::Status::kDone,
              "a listener completed without the secret");
      break;
    }
    case 1: {
      Handshake connector(Handshake::Side::kConnector, kSecret, Endpoint{2, "address"});
      (void)connector.takeOutput();
      require(feed(connector, rest, len, piece) != Handshake::Status::kDone,
              "a connector completed without the secret");
      break;
    }
    case 2: listenerPastProof(rest, len, piece); break;
    default: connectorPastChallenge(rest, len, piece); break;
  }
  return 0;
}
