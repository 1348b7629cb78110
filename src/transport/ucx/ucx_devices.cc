// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ucx/ucx_devices.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "transport/transport.h"

namespace rd::transport {

namespace {

std::vector<std::string> entriesOf(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  closedir(d);
  return names;
}

// The RDMA ports of the NIC behind @p interface ("mlx5_0:1"), from sysfs: an IPoIB or RoCE
// interface and its verbs device share one PCI function.
std::string rdmaPortsOf(const std::string& interface) {
  std::string ports;
  for (const std::string& dev : entriesOf("/sys/class/net/" + interface + "/device/infiniband")) {
    for (const std::string& port : entriesOf("/sys/class/infiniband/" + dev + "/ports")) {
      ports.append(",").append(dev).append(":").append(port);
    }
  }
  return ports;
}

}  // namespace

std::string netDevicesFor(const std::string& local_host) {
  const char* user = std::getenv("UCX_NET_DEVICES");
  if (user != nullptr && *user != '\0') return "";
  sockaddr_in local{};
  if (local_host.empty() || resolveIpv4(local_host, 0, &local) != rdSuccess ||
      local.sin_addr.s_addr == htonl(INADDR_ANY)) {
    return "";
  }
  const in_addr want = local.sin_addr;
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return "";
  std::string interface;
  for (ifaddrs* i = all; i != nullptr && interface.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == want.s_addr) {
      interface = i->ifa_name;
    }
  }
  freeifaddrs(all);
  if (interface.empty()) {
    RD_LOG_DEBUG("%s is not an address of this machine: UCX may use every interface",
                 local_host.c_str());
    return "";
  }
  return interface + rdmaPortsOf(interface);
}

}  // namespace rd::transport
