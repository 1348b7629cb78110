// SPDX-License-Identifier: BSD-3-Clause
#include "protocol/wire.h"

#include <cstring>

#include "common/algorithm.h"
#include "common/dtype.h"

namespace rd::wire {

namespace {

rdResult_t reject(std::string* why, std::string text) {
  *why = std::move(text);
  return rdProtocolError;
}

bool usesDataFields(MsgType t) {
  return t == MsgType::kData || t == MsgType::kResult || t == MsgType::kAck ||
         t == MsgType::kRing || t == MsgType::kP2P;
}

uint64_t payloadCap(MsgType t) {
  return usesDataFields(t) ? kMaxPayloadBytes : kMaxControlBytes;
}

}  // namespace

Header makeHeader(MsgType type, uint64_t comm_id, uint32_t epoch, uint32_t rank, uint32_t nranks) {
  Header h;
  h.type = static_cast<uint8_t>(type);
  h.comm_id = comm_id;
  h.epoch = epoch;
  h.rank = rank;
  h.nranks = nranks;
  return h;
}

const char* typeName(uint8_t type) {
  static const char* const kNames[] = {"invalid", "hello",    "challenge", "auth",   "welcome",
                                       "joined",  "reject",   "data",      "result", "ack",
                                       "error",   "leave",    "ring",      "p2p",    "heartbeat",
                                       "landed",  "released", "done",      "resume"};
  return type <= static_cast<uint8_t>(MsgType::kLast) ? kNames[type] : "invalid";
}

const char* collName(uint8_t coll) {
  static const char* const kNames[] = {"all-reduce", "reduce-scatter", "all-gather", "broadcast"};
  return coll <= static_cast<uint8_t>(Coll::kLast) ? kNames[coll] : "invalid";
}

rdResult_t parseHeader(const void* data, size_t len, size_t payload_len, Header* out,
                       std::string* why) {
  if (data == nullptr || len < sizeof(Header)) {
    return reject(why, "truncated header (" + std::to_string(len) + " of " +
                           std::to_string(sizeof(Header)) + " bytes)");
  }
  if (len != sizeof(Header)) return reject(why, "header of unexpected size " + std::to_string(len));
  Header h;
  std::memcpy(&h, data, sizeof h);  // the transport gives no alignment guarantee
  if (h.magic != kMagic) return reject(why, "bad magic");
  if (h.version != kVersion) {
    return reject(why, "protocol version " + std::to_string(h.version) + ", expected " +
                           std::to_string(kVersion));
  }
  if (h.type == 0 || h.type > static_cast<uint8_t>(MsgType::kLast)) {
    return reject(why, "unknown message type " + std::to_string(h.type));
  }
  auto type = static_cast<MsgType>(h.type);
  if (h.nranks == 0 || h.nranks > limits::kMaxRanks) {
    return reject(why, "rank count " + std::to_string(h.nranks) + " out of range");
  }
  if (h.rank >= h.nranks) return reject(why, "rank " + std::to_string(h.rank) + " out of range");
  if ((type == MsgType::kHeartbeat || type == MsgType::kLanded || type == MsgType::kReleased ||
       type == MsgType::kDone || type == MsgType::kResume) &&
      h.payload_bytes != 0) {
    return reject(why, std::string(typeName(h.type)) + " with a payload");
  }
  if (h.payload_bytes > payloadCap(type)) {
    return reject(why, "payload of " + std::to_string(h.payload_bytes) + " bytes over the cap");
  }
  if (h.payload_bytes != payload_len) {
    return reject(why, "header announces " + std::to_string(h.payload_bytes) +
                           " payload bytes, message carries " + std::to_string(payload_len));
  }
  if (usesDataFields(type)) {
    if (!validDtype(h.dtype)) return reject(why, "unknown dtype " + std::to_string(h.dtype));
    if (!validRedOp(h.op)) return reject(why, "unknown op " + std::to_string(h.op));
    if (h.coll > static_cast<uint8_t>(Coll::kLast)) {
      return reject(why, "unknown collective " + std::to_string(h.coll));
    }
  }
  *out = h;
  return rdSuccess;
}

std::string encodeHello(const HelloBody& hello, const std::string& address) {
  HelloBody body = hello;
  body.address_len = static_cast<uint32_t>(address.size());
  std::string out(reinterpret_cast<const char*>(&body), sizeof body);
  out += address;
  return out;
}

rdResult_t decodeHello(const void* data, size_t len, HelloBody* out, std::string* address,
                       std::string* why) {
  if (data == nullptr || len < sizeof(HelloBody)) return reject(why, "truncated hello");
  HelloBody body;
  std::memcpy(&body, data, sizeof body);
  if (body.address_len > kMaxAddressBytes || len != sizeof body + body.address_len) {
    return reject(why, "hello length does not match its address");
  }
  if (body.chunk_bytes < limits::kMinChunkBytes || body.chunk_bytes > limits::kMaxChunkBytes) {
    return reject(why, "chunk size " + std::to_string(body.chunk_bytes) + " out of range");
  }
  if (body.spread == 0 || body.spread > limits::kMaxReducers) {
    return reject(why, "reducer count " + std::to_string(body.spread) + " out of range");
  }
  if (!validAlgorithm(static_cast<int>(body.algorithm))) {
    return reject(why, "algorithm " + std::to_string(body.algorithm) + " out of range");
  }
  if (body.heartbeat_ms > limits::kMaxTimeoutMs || body.reserved != 0) {
    return reject(why, "heartbeat period " + std::to_string(body.heartbeat_ms) + " out of range");
  }
  address->assign(static_cast<const char*>(data) + sizeof body, body.address_len);
  *out = body;
  return rdSuccess;
}

std::string encodeAddresses(const std::string* addresses, uint32_t nranks) {
  std::string out;
  for (uint32_t r = 0; r < nranks; ++r) {
    auto n = static_cast<uint16_t>(addresses[r].size());
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out += addresses[r];
  }
  return out;
}

rdResult_t decodeAddresses(const void* data, size_t len, uint32_t nranks, std::string* out,
                           std::string* why) {
  const auto* p = static_cast<const char*>(data);
  size_t at = 0;
  for (uint32_t r = 0; r < nranks; ++r) {
    uint16_t n = 0;
    if (len - at < sizeof n) return reject(why, "truncated address list");
    std::memcpy(&n, p + at, sizeof n);
    at += sizeof n;
    if (n > kMaxAddressBytes || len - at < n) return reject(why, "truncated address list");
    out[r].assign(p + at, n);
    at += n;
  }
  if (at != len) return reject(why, "trailing bytes after the address list");
  return rdSuccess;
}

}  // namespace rd::wire
