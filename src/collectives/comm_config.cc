// SPDX-License-Identifier: BSD-3-Clause
// Communicator settings from the LIBREDUCE_* table.

#include <sstream>

#include "collectives/communicator.h"
#include "common/algorithm.h"
#include "common/check.h"
#include "common/limits.h"
#include "common/settings.h"
#include "protocol/compression.h"

namespace rd::coll {

namespace {

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t a = item.find_first_not_of(" \t");
    size_t b = item.find_last_not_of(" \t");
    if (a != std::string::npos) out.push_back(item.substr(a, b - a + 1));
  }
  return out;
}

}  // namespace

rdResult_t parseReducerList(const std::string& text, std::vector<std::string>* out) {
  *out = splitList(text);
  for (const auto& address : *out) {
    std::string host;
    uint16_t port = 0;
    RD_CHECK(transport::splitAddress(address, &host, &port));
    if (port == 0) {
      return setErrorf(rdInvalidArgument, "reducer address '%s' needs a port", address.c_str());
    }
  }
  if (out->size() > limits::kMaxReducers) {
    return setErrorf(rdInvalidArgument, "%zu reducers: at most %u", out->size(),
                     limits::kMaxReducers);
  }
  return rdSuccess;
}

bool allOnLoopback(const std::vector<std::string>& reducers) {
  if (reducers.empty()) return false;
  for (const auto& address : reducers) {
    std::string host;
    uint16_t port = 0;
    if (transport::splitAddress(address, &host, &port) != rdSuccess) return false;
    if (!transport::isLoopbackHost(host)) return false;
  }
  return true;
}

rdResult_t configFromSettings(CommConfig* config) {
  using settings::Id;
  RD_CHECK(parseReducerList(settings::rawValue(Id::kReducers), &config->reducers));
  RD_CHECK(auth::secretFromSettings(&config->secret));
  // Only what was asked for: the communicator resolves it once every source is merged (the
  // unique id may bring the reducers this environment lacks).
  std::string algo;
  RD_CHECK(settings::readChoice(Id::kAlgo, &algo));
  if (!algorithmFromName(algo, &config->algorithm)) {
    return setErrorf(rdInternalError, "LIBREDUCE_ALGO=%s has no algorithm", algo.c_str());
  }
  uint64_t chunk = 0;
  RD_CHECK(settings::readSize(Id::kChunkBytes, &chunk));
  config->chunk_bytes = chunk;
  RD_CHECK(settings::readSize(Id::kIngressBytes, &config->ingress_bytes));
  int64_t value = 0;
  RD_CHECK(settings::readInt(Id::kWindow, &value));
  config->window = static_cast<uint32_t>(value);
  RD_CHECK(settings::readInt(Id::kTimeoutMs, &value));
  config->timeout_ms = static_cast<uint32_t>(value);
  RD_CHECK(settings::readInt(Id::kConnectTimeoutMs, &value));
  config->connect_timeout_ms = static_cast<uint32_t>(value);
  RD_CHECK(settings::readInt(Id::kHeartbeatMs, &value));
  config->heartbeat_ms = static_cast<uint32_t>(value);
  RD_CHECK(settings::readInt(Id::kFailover, &value));
  config->failover = value != 0;
  RD_CHECK(settings::readInt(Id::kDeterministic, &value));
  config->deterministic = value != 0;
  std::string wire;
  RD_CHECK(settings::readChoice(Id::kWireDtype, &wire));
  if (!wire::wireDtypeFromName(wire, &config->wire_dtype)) {
    return setErrorf(rdInternalError, "LIBREDUCE_WIRE_DTYPE=%s has no type", wire.c_str());
  }
  config->listen_host = settings::rawValue(Id::kListenHost);
  return rdSuccess;
}

}  // namespace rd::coll
