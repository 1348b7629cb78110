// SPDX-License-Identifier: BSD-3-Clause
// The bootstrap handshake: how two libreduce transports prove to each other that they share the
// job secret over a plain TCP connection, before either one learns anything it could use to
// reach the other's UCX worker. Sans-IO (bytes in, bytes out), so the fuzzer drives it directly.
//
//   connector -> listener   hello      connector nonce
//   listener  -> connector  challenge  listener nonce, listener proof
//   connector -> listener   auth       connector proof, connector tag, connector worker address
//   listener  -> connector  welcome    listener tag, listener worker address
// A side whose peer's proof is wrong sends refused instead of its next frame, and closes.
//
// proof = HMAC-SHA256(secret, "libreduce-bootstrap-v1" | role | connector nonce | listener
// nonce). Each side checks the other's proof before it sends its worker address, and both
// nonces are fresh, so a recorded handshake replays to nothing. A tag is the random 64-bit name
// a side gives the connection: the peer puts it on every message it sends there.
//
// Frames: a 12-byte header {magic "LRBS", version, type, body length}, checked before anything
// of the body is kept; each type has a fixed body length or a cap, so one connection buffers at
// most one frame of at most kMaxFrameBody bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/auth.h"
#include "libreduce/reduce.h"

namespace rd::transport::bootstrap {

inline constexpr uint32_t kMagic = 0x5342524c;  // "LRBS" as bytes on the wire
inline constexpr uint16_t kVersion = 1;
inline constexpr size_t kHeaderBytes = 12;
// A UCX worker address with every TCP, shared-memory and RDMA device of a large host is a few
// KiB; the cap bounds what an unauthenticated peer can make a listener hold.
inline constexpr size_t kMaxWorkerAddress = 64 << 10;

enum class FrameType : uint16_t {
  kHello = 1,
  kChallenge = 2,
  kAuth = 3,
  kWelcome = 4,
  kRefused = 5,
};

/** What one side tells the other once authenticated. */
struct Endpoint {
  uint64_t tag = 0;
  std::string worker_address;
};

/** Encodes one frame (header and body). */
std::string encodeFrame(FrameType type, const std::string& body);

/**
 * Checks a frame header: magic, version, a type this side may receive now (@p expected, or
 * @p also, kHello when none) and a body length that type allows. On success *body_len holds
 * it; else false with why in *error.
 */
bool checkHeader(const uint8_t* header, FrameType expected, FrameType also, uint32_t* body_len,
                 std::string* error);

/** The proof @p listener_side (or the connector) sends for these nonces. */
auth::Mac bootstrapProof(bool listener_side, const std::string& secret,
                         const auth::Nonce& connector_nonce, const auth::Nonce& listener_nonce);

class Handshake {
 public:
  enum class Side { kConnector, kListener };
  enum class Status { kRunning, kDone, kFailed };

  /**
   * A handshake for one connection; @p local is what the peer gets once it has proven the
   * secret. A connector's hello is ready in takeOutput() at once.
   */
  Handshake(Side side, std::string secret, Endpoint local);

  /** Consumes bytes from the peer; output to send may appear in takeOutput(). */
  Status consume(const void* data, size_t len);

  /** Bytes to send to the peer now (moved out). */
  std::string takeOutput();

  Status status() const { return status_; }
  /** Why it failed, for logs ("" while running or done). */
  const std::string& error() const { return error_; }
  /** rdAuthFailed when a proof did not match, rdConnectionError for anything else. */
  rdResult_t failure() const { return failure_; }
  /** The peer's tag and worker address, once done. */
  const Endpoint& peer() const { return peer_; }
  /** Bytes held for a frame not complete yet. */
  size_t buffered() const { return in_.size(); }

 private:
  enum class Expect { kHello, kChallenge, kAuth, kWelcome, kNothing };

  void fail(rdResult_t status, std::string why);
  void onFrame(FrameType type, const uint8_t* body, size_t len);
  void onHello(const uint8_t* body, size_t len);
  void onChallenge(const uint8_t* body, size_t len);
  void onAuth(const uint8_t* body, size_t len);
  void onWelcome(const uint8_t* body, size_t len);
  std::string mismatch(bool from_listener, const auth::Mac& got) const;

  Side side_;
  std::string secret_;
  Endpoint local_;
  Endpoint peer_;
  auth::Nonce connector_nonce_{};
  auth::Nonce listener_nonce_{};
  Expect expect_;
  Status status_ = Status::kRunning;
  rdResult_t failure_ = rdSuccess;
  std::string error_;
  std::string in_;
  std::string out_;
};

}  // namespace rd::transport::bootstrap
