// SPDX-License-Identifier: BSD-3-Clause
// The bootstrap handshake: how two libreduce transports prove to each other that they share the
// job secret over a plain TCP connection, before either one learns anything it could use to
// reach the other's UCX worker. Sans-IO (bytes in, bytes out), so the fuzzer drives it directly.
//
//   connector -> listener   hello      connector nonce, scope
//   listener  -> connector  challenge  listener nonce, listener proof
//   connector -> listener   auth       connector proof, connector tag, connector worker address
//   listener  -> connector  welcome    listener MAC, listener tag, listener worker address
// A side whose peer's proof is wrong sends refused instead of its next frame, and closes.
//
// MAC(role, ...) = HMAC-SHA256(key, "libreduce-bootstrap-v2" | role | connector nonce |
// listener nonce | scope [| tag | worker address]): the listener's proof (role L) covers the
// nonces and the scope; the connector's proof (C) and the welcome's MAC (W) also cover the tag
// and worker address they carry, so no one on the path can redirect a connection. Each side
// checks the other's proof before it sends its worker address, and both nonces are fresh, so a
// recorded handshake replays to nothing. A tag is the random 64-bit name a side gives the
// connection: the peer puts it on every message it sends there.
//
// The scope is the communicator the connector works for (0: none). The key is the job secret,
// except on a listener that serves a shared reducer pool: it holds the pool's secret and keys
// each handshake with the job key of the scope the connector named (auth::jobKey), refusing a
// connection that names none. A connector that holds one job's key and names another
// communicator fails the listener's proof, before any address moves.
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
inline constexpr uint16_t kVersion = 2;
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
  uint64_t scope = 0;  // a listener learns the connector's; 0: none named
};

/** What keys a handshake: the job secret, or on a shared pool's listener the pool's secret. */
struct Keys {
  std::string secret;
  std::string pool_secret;  // non-empty: key each handshake with jobKey(pool_secret, scope)
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

/** Who makes a MAC: the listener's proof, the connector's proof, the listener's welcome. */
enum class MacRole : char { kListener = 'L', kConnector = 'C', kWelcome = 'W' };

/** The MAC @p role sends; @p endpoint (tag, address) for kConnector and kWelcome only. */
auth::Mac bootstrapMac(MacRole role, const std::string& key, const auth::Nonce& connector_nonce,
                       const auth::Nonce& listener_nonce, uint64_t scope,
                       const Endpoint* endpoint = nullptr);

class Handshake {
 public:
  enum class Side { kConnector, kListener };
  enum class Status { kRunning, kDone, kFailed };

  /**
   * A handshake for one connection; @p local is what the peer gets once it has proven the
   * secret (a connector names @p local.scope in its hello). A connector's hello is ready in
   * takeOutput() at once.
   */
  Handshake(Side side, Keys keys, Endpoint local);
  Handshake(Side side, std::string secret, Endpoint local)
      : Handshake(side, Keys{std::move(secret), ""}, std::move(local)) {}

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
  std::string mismatch(bool from_listener, const auth::Mac& got, const Endpoint* endpoint) const;
  auth::Mac mac(MacRole role, const std::string& key, const Endpoint* endpoint = nullptr) const;

  Side side_;
  Keys keys_;
  std::string secret_;  // the key of this handshake, once known (a pool's: after the hello)
  uint64_t scope_ = 0;
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
