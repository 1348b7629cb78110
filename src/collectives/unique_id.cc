// SPDX-License-Identifier: BSD-3-Clause
#include "collectives/unique_id.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "collectives/host_address.h"
#include "common/algorithm.h"
#include "common/auth.h"
#include "common/check.h"
#include "common/settings.h"
#include "protocol/compression.h"

namespace rd::coll {

namespace {

constexpr const char* kIdTag = "libreduce-id-v1";
// Stands for the secret in an id that left it out: every rank takes its own from its settings.
constexpr const char* kSecretFromSettings = "env";

std::string hex(const std::string& bytes) {
  static const char* const kDigits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

bool unhex(const std::string& text, std::string* out) {
  if (text.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < text.size(); i += 2) {
    char* end = nullptr;
    std::string pair = text.substr(i, 2);
    long v = std::strtol(pair.c_str(), &end, 16);
    if (*end != '\0') return false;
    out->push_back(static_cast<char>(v));
  }
  return true;
}

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : fallback;
}

// A field of rdCommConfig_t that overrides a setting: 0 keeps the setting, any other value must
// lie in the setting's range (the bounds of common/limits.h).
template <typename T>
rdResult_t overrideSetting(settings::Id id, int64_t value, T* out) {
  if (value == 0) return rdSuccess;
  const settings::Setting& s = settings::info(id);
  if (value < s.min || (s.max != settings::kUnbounded && value > s.max)) {
    return setErrorf(rdInvalidArgument, "%s %lld is not in 0 (the setting) or %s", s.name,
                     static_cast<long long>(value), settings::allowedText(s).c_str());
  }
  *out = static_cast<T>(value);
  return rdSuccess;
}

}  // namespace

rdResult_t makeUniqueId(const std::string& reducers, const std::string& secret,
                        const RendezvousStarter& rendezvous, rdUniqueId* id,
                        const std::string& reached_from) {
  uint64_t comm_id = 0;
  RD_CHECK(auth::randomBytes(&comm_id, sizeof comm_id));
  return makeUniqueIdWithCommId(reducers, secret, comm_id, rendezvous, id, "ucx", reached_from);
}

rdResult_t makeUniqueIdWithCommId(const std::string& reducers, const std::string& secret,
                                  uint64_t comm_id, const RendezvousStarter& start_rendezvous,
                                  rdUniqueId* id, const std::string& transport,
                                  const std::string& reached_from) {
  if (id == nullptr) return setError(rdInvalidArgument, "id is NULL");
  std::vector<std::string> list;
  RD_CHECK(parseReducerList(reducers, &list));
  std::string rendezvous;
  if (list.empty()) {
    if (!start_rendezvous) return setError(rdUnsupported, "no rendezvous service in this program");
    RD_CHECK(start_rendezvous(RendezvousRequest{transport, routableHost(reached_from), 0, secret},
                              &rendezvous));
  }
  std::string text = std::string(kIdTag) + ";" + std::to_string(comm_id | 1) + ";" + hex(secret) +
                     ";" + rendezvous + ";" + reducers;
  if (text.size() >= sizeof id->internal) {
    return setError(rdInvalidArgument, "reducer list and secret do not fit in a unique id");
  }
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, text.data(), text.size());
  return rdSuccess;
}

rdResult_t readUniqueId(const rdUniqueId& id, CommConfig* config) {
  std::string text(id.internal, strnlen(id.internal, sizeof id.internal));
  std::vector<std::string> parts;
  size_t start = 0;
  for (int i = 0; i < 4; ++i) {
    size_t semi = text.find(';', start);
    if (semi == std::string::npos) break;
    parts.push_back(text.substr(start, semi - start));
    start = semi + 1;
  }
  parts.push_back(text.substr(start));
  std::string secret;
  bool secret_from_settings = parts.size() == 5 && parts[2] == kSecretFromSettings;
  if (parts.size() != 5 || parts[0] != kIdTag ||
      (!secret_from_settings && !unhex(parts[2], &secret))) {
    return setError(rdInvalidArgument, "not a libreduce unique id (use rdGetUniqueId)");
  }
  config->comm_id = std::strtoull(parts[1].c_str(), nullptr, 10);
  if (!secret_from_settings) {
    config->secret = secret;
  } else if (config->secret.empty()) {
    return setError(rdInvalidArgument,
                    "this unique id leaves the job secret to each rank, and this rank has none: "
                    "set LIBREDUCE_SECRET_FILE (or LIBREDUCE_SECRET)");
  }
  config->rendezvous = parts[3];
  // The id defines the communicator: its reducers replace whatever this rank's environment says.
  RD_CHECK(parseReducerList(parts[4], &config->reducers));
  return rdSuccess;
}

rdResult_t stripSecret(rdUniqueId* id) {
  if (id == nullptr) return setError(rdInvalidArgument, "id is NULL");
  CommConfig probe;
  probe.secret = "x";  // an id that already left the secret out reads fine
  RD_CHECK(readUniqueId(*id, &probe));
  std::string text(id->internal, strnlen(id->internal, sizeof id->internal));
  size_t first = text.find(';');
  size_t second = text.find(';', first + 1);
  size_t third = text.find(';', second + 1);
  if (third == second + 1) return rdSuccess;  // no secret to remove
  text.replace(second + 1, third - second - 1, kSecretFromSettings);
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, text.data(), text.size());
  return rdSuccess;
}

rdResult_t applyConfig(const rdCommConfig_t* user, CommConfig* config) {
  if (user == nullptr) return rdSuccess;
  // Callers built against an older header know the fields before wire_dtype.
  if (user->size != sizeof(rdCommConfig_t) && user->size != offsetof(rdCommConfig_t, wire_dtype)) {
    return setError(rdInvalidArgument,
                    "rdCommConfig_t.size is wrong: start from "
                    "RD_COMM_CONFIG_INITIALIZER");
  }
  RD_CHECK(overrideSetting(settings::Id::kChunkBytes, static_cast<int64_t>(user->chunk_bytes),
                           &config->chunk_bytes));
  RD_CHECK(overrideSetting(settings::Id::kWindow, user->window, &config->window));
  RD_CHECK(overrideSetting(settings::Id::kTimeoutMs, user->timeout_ms, &config->timeout_ms));
  if (user->deterministic >= 0) config->deterministic = user->deterministic != 0;
  if (!validAlgorithm(user->algorithm)) {
    return setErrorf(rdInvalidArgument, "algorithm %d is not an rdAlgorithm_t",
                     static_cast<int>(user->algorithm));
  }
  if (user->algorithm != rdAlgoDefault) config->algorithm = user->algorithm;
  if (user->size < sizeof(rdCommConfig_t) || user->wire_dtype == -1) return rdSuccess;
  if (!wire::validWireDtype(user->wire_dtype)) {
    return setErrorf(rdInvalidArgument,
                     "rdCommConfig_t.wire_dtype %d is not one of -1, rdFloat32 (none), "
                     "rdBfloat16, rdFloat16",
                     user->wire_dtype);
  }
  config->wire_dtype = static_cast<rdDataType_t>(user->wire_dtype);
  return rdSuccess;
}

rdResult_t configFromLauncherEnv(const RendezvousStarter& start_rendezvous, CommConfig* config) {
  using settings::Id;
  int64_t rank = -1, size = -1;
  RD_CHECK(settings::readInt(Id::kRank, &rank));
  RD_CHECK(settings::readInt(Id::kWorldSize, &size));
  if (rank < 0) rank = std::atoll(envOr("RANK", "-1").c_str());
  if (size < 0) size = std::atoll(envOr("WORLD_SIZE", "-1").c_str());
  if (size < 1 || rank < 0 || rank >= size) {
    return setErrorf(rdInvalidArgument,
                     "rank %lld of %lld from the environment is not valid: set RANK and "
                     "WORLD_SIZE (or LIBREDUCE_RANK and LIBREDUCE_WORLD_SIZE)",
                     static_cast<long long>(rank), static_cast<long long>(size));
  }
  config->rank = static_cast<uint32_t>(rank);
  config->nranks = static_cast<uint32_t>(size);
  std::string master = envOr("MASTER_ADDR", "");
  std::string master_port = envOr("MASTER_PORT", "");
  std::string comm_text = settings::rawValue(Id::kCommId);
  const bool explicit_id = !comm_text.empty();
  if (!explicit_id && !master.empty()) comm_text = master + ":" + master_port;
  if (comm_text.empty()) {
    return setError(rdInvalidArgument,
                    "no communicator id: set LIBREDUCE_COMM_ID (or MASTER_ADDR)");
  }
  // Without an explicit id, this one only names the draw of the real one at the rendezvous.
  config->comm_id = auth::commIdOfText(comm_text);
  if (config->reducers.empty() || !explicit_id) {
    // Rank 0 serves the rendezvous one port above MASTER_PORT (torch's store owns MASTER_PORT
    // itself): the ring's join point, or where the communicator's id is drawn.
    int port = std::atoi(master_port.c_str());
    if (master.empty() || port <= 0 || port >= 65535) {
      return setError(rdInvalidArgument,
                      config->reducers.empty()
                          ? "no reducers (LIBREDUCE_REDUCERS) and no MASTER_ADDR / MASTER_PORT "
                            "for a ring rendezvous"
                          : "no LIBREDUCE_COMM_ID, and no MASTER_PORT for rank 0 to draw a "
                            "communicator id at (MASTER_PORT + 1)");
    }
    const std::string at = master + ":" + std::to_string(port + 1);
    (config->reducers.empty() ? config->rendezvous : config->id_rendezvous) = at;
    if (config->rank == 0) {
      if (!start_rendezvous) {
        return setError(rdUnsupported, "no rendezvous service in this program");
      }
      std::string address;
      RD_CHECK(start_rendezvous(RendezvousRequest{config->transport, master,
                                                  static_cast<uint16_t>(port + 1), config->secret},
                                &address));
    }
  }
  return rdSuccess;
}

rdResult_t drawCommId(CommConfig* config) {
  // Each draw meets at an id of its own: the n-th communicator this process makes from the
  // environment is every rank's n-th, and the last draw's may still be leaving the rendezvous.
  static std::atomic<uint64_t> draws{0};
  CommConfig ring = *config;
  ring.comm_id = auth::commIdOfText(std::to_string(config->comm_id) + "/draw" +
                                    std::to_string(draws.fetch_add(1)));
  ring.reducers.clear();
  ring.rendezvous = config->id_rendezvous;
  ring.id_rendezvous.clear();
  ring.algorithm = rdAlgoRing;
  std::unique_ptr<Communicator> draw;
  if (rdResult_t st = Communicator::create(ring, &draw); st != rdSuccess) {
    return setErrorf(st,
                     "drawing the communicator id at rank 0's rendezvous %s (or set "
                     "LIBREDUCE_COMM_ID): %s",
                     config->id_rendezvous.c_str(), lastError().c_str());
  }
  config->comm_id = draw->drawnId();
  config->id_rendezvous.clear();
  return rdSuccess;
}

}  // namespace rd::coll
