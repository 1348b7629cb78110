// SPDX-License-Identifier: BSD-3-Clause
#include "collectives/host_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/log.h"
#include "common/settings.h"
#include "transport/transport.h"

namespace rd::coll {

namespace {

bool isLoopback(const std::string& ipv4) {
  return ipv4.rfind("127.", 0) == 0;
}

// Whether @p host names loopback as written (not a name that happens to resolve to it here).
bool namesLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || isLoopback(host);
}

// The interface that holds the IPv4 default route (/proc/net/route: destination 00000000),
// "" if none.
std::string defaultRouteInterface() {
  std::ifstream routes("/proc/net/route");
  std::string line;
  std::getline(routes, line);  // the header
  while (std::getline(routes, line)) {
    std::istringstream fields(line);
    std::string name, destination;
    if (fields >> name >> destination && destination == "00000000") return name;
  }
  return "";
}

// The IPv4 address of an interface that is up and not loopback: @p preferred's when it has
// one, else the first such interface's; "" if there is none.
std::string interfaceAddress(const std::string& preferred) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string first, chosen;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    if ((it->ifa_flags & IFF_UP) == 0 || (it->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
    if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof text) == nullptr) continue;
    if (first.empty()) first = text;
    if (chosen.empty() && !preferred.empty() && preferred == it->ifa_name) chosen = text;
  }
  freeifaddrs(list);
  return chosen.empty() ? first : chosen;
}

}  // namespace

std::string localAddressToward(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  if (transport::splitAddress(address, &host, &port) != rdSuccess) return "127.0.0.1";
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) {
    return "127.0.0.1";
  }
  auto* target = reinterpret_cast<sockaddr_in*>(found->ai_addr);
  target->sin_port = htons(port == 0 ? 9 : port);
  std::string local = "127.0.0.1";
  // A UDP "connect" sends nothing; it only asks the kernel which source address it would use.
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in me{};
    socklen_t len = sizeof me;
    char text[INET_ADDRSTRLEN] = {};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0 &&
        inet_ntop(AF_INET, &me.sin_addr, text, sizeof text) != nullptr) {
      local = text;
    }
  }
  if (fd >= 0) ::close(fd);
  freeaddrinfo(found);
  return local;
}

std::string routableHost(const std::string& peer) {
  std::string configured = settings::rawValue(settings::Id::kListenHost);
  if (!configured.empty()) return configured;
  const char* master = std::getenv("MASTER_ADDR");
  for (const std::string& toward : {peer, std::string(master != nullptr ? master : "")}) {
    if (toward.empty()) continue;
    std::string local = localAddressToward(toward + ":9");
    // A loopback peer means one host. A host name that resolves to loopback here is this
    // host's own name in Debian's /etc/hosts: the others reach it at a real address.
    if (!isLoopback(local) || namesLoopback(toward)) return local;
  }
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) {
    std::string local = localAddressToward(std::string(name) + ":9");
    if (!isLoopback(local)) return local;
  }
  std::string address = interfaceAddress(defaultRouteInterface());
  if (!address.empty()) return address;
  RD_LOG_WARN(
      "this host has no address but loopback: the rendezvous listens on 127.0.0.1, which ranks on "
      "other hosts cannot reach (set LIBREDUCE_LISTEN_HOST)");
  return "127.0.0.1";
}

}  // namespace rd::coll
