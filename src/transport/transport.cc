// SPDX-License-Identifier: BSD-3-Clause
#include "transport/transport.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <cstdlib>
#include <cstring>

#include "common/status.h"
#include "transport/loopback/loopback_transport.h"
#include "transport/ucx/ucx_transport.h"

namespace rd::transport {

namespace {

using Factory = rdResult_t (*)(std::shared_ptr<ProgressEngine> engine, const Options& options,
                               Handlers handlers, std::unique_ptr<Transport>* out);

struct TransportEntry {
  const char* name;
  Factory create;
};

// Every transport, by the name createTransport takes.
constexpr TransportEntry kTransports[] = {
    {"ucx", &createUcxTransport},
    {"loopback", &loopback::createLoopbackTransport},
};

}  // namespace

std::string transportNames() {
  std::string names;
  for (const TransportEntry& t : kTransports)
    names += (names.empty() ? "" : ", ") + std::string(t.name);
  return names;
}

rdResult_t createTransport(const std::string& name, std::shared_ptr<ProgressEngine> engine,
                           const Options& options, Handlers handlers,
                           std::unique_ptr<Transport>* out) {
  if (!engine) engine = ProgressEngine::shared();
  for (const TransportEntry& t : kTransports) {
    if (name == t.name) return t.create(std::move(engine), options, std::move(handlers), out);
  }
  return setErrorf(rdInvalidArgument, "no transport '%s' (have %s)", name.c_str(),
                   transportNames().c_str());
}

rdResult_t splitAddress(const std::string& address, std::string* host, uint16_t* port) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return setErrorf(rdInvalidArgument, "address '%s' is not host:port", address.c_str());
  }
  char* end = nullptr;
  long value = std::strtol(address.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || value < 0 || value > 65535) {
    return setErrorf(rdInvalidArgument, "address '%s' has a bad port", address.c_str());
  }
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  *port = static_cast<uint16_t>(value);
  return rdSuccess;
}

bool isLoopbackHost(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  return host == "localhost" ||
         (inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) ||
         (inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6));
}

rdResult_t resolveIpv4(const std::string& host, uint16_t port, sockaddr_in* out) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.empty() ? "0.0.0.0" : host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    return setErrorf(rdInvalidArgument, "cannot resolve host '%s': %s", host.c_str(),
                     gai_strerror(rc));
  }
  std::memcpy(out, found->ai_addr, sizeof *out);
  out->sin_port = htons(port);
  freeaddrinfo(found);
  return rdSuccess;
}

}  // namespace rd::transport
