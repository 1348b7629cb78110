// SPDX-License-Identifier: BSD-3-Clause
#include "reduction_server/binding.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include "libreduce/config.h"
#if LIBREDUCE_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace rd::server {

namespace {

// The interface whose IPv4 address is @p host ("" when none, e.g. 0.0.0.0).
std::string interfaceOf(const std::string& host) {
  in_addr want{};
  if (inet_pton(AF_INET, host.c_str(), &want) != 1) return "";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (in->sin_addr.s_addr == want.s_addr) {
      name = i->ifa_name;
      break;
    }
  }
  freeifaddrs(list);
  return name;
}

}  // namespace

rdResult_t bindNearInterface(const std::string& listen_host, std::string* report) {
  std::string ifname = interfaceOf(listen_host);
#if LIBREDUCE_HAVE_HWLOC
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0) {
    *report = "not bound: hwloc_topology_init failed";
    return rdSuccess;
  }
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  hwloc_topology_load(topo);
  hwloc_obj_t osdev = nullptr;
  hwloc_obj_t found = nullptr;
  while ((osdev = hwloc_get_next_osdev(topo, osdev)) != nullptr) {
    if (osdev->name != nullptr && ifname == osdev->name) {
      found = osdev;
      break;
    }
  }
  hwloc_obj_t near = found != nullptr ? hwloc_get_non_io_ancestor_obj(topo, found) : nullptr;
  if (near == nullptr || near->cpuset == nullptr) {
    *report = "not bound: interface '" + (ifname.empty() ? listen_host : ifname) +
              "' has no CPU locality (loopback or virtual); running on every CPU";
    hwloc_topology_destroy(topo);
    return rdSuccess;
  }
  char* text = nullptr;
  hwloc_bitmap_list_asprintf(&text, near->cpuset);
  int cpu_rc = hwloc_set_cpubind(topo, near->cpuset, HWLOC_CPUBIND_PROCESS);
  int mem_rc = hwloc_set_membind(topo, near->cpuset, HWLOC_MEMBIND_BIND,
                                 HWLOC_MEMBIND_PROCESS | HWLOC_MEMBIND_MIGRATE);
  *report = "bound near " + ifname + " to CPUs " + (text != nullptr ? text : "?") +
            (cpu_rc == 0 ? "" : " (cpu binding failed)") +
            (mem_rc == 0 ? "" : " (memory binding not supported)");
  free(text);
  hwloc_topology_destroy(topo);
  return rdSuccess;
#else
  *report = "not bound: built without hwloc (interface " + ifname + ")";
  return rdSuccess;
#endif
}

}  // namespace rd::server
