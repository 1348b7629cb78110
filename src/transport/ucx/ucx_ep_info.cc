// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ucx/ucx_ep_info.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace rd::transport {

namespace {

// One lane as UCX 1.13 prints it:
//   "#   lane[1]:  5:cma/memory.0 md[4]   -> md[4]/cma/sysdev[255] rma_bw#0 wireup"
// The "RESOURCE:TL/DEVICE.PATH" word names it; the words after "->" are its roles.
bool laneTransport(const std::string& line, std::string* name) {
  const size_t lane = line.find("lane[");
  if (lane == std::string::npos) return false;
  const size_t colon = line.find("]:", lane);
  if (colon == std::string::npos) return false;
  std::istringstream words(line.substr(colon + 2));
  std::string resource;
  if (!(words >> resource)) return false;
  const size_t tl = resource.find(':');
  const size_t slash = resource.find('/');
  if (tl == std::string::npos || slash == std::string::npos || slash < tl) return false;
  std::string tl_device = resource.substr(tl + 1);
  const size_t path = tl_device.rfind('.');
  if (path != std::string::npos && path > tl_device.find('/')) tl_device.resize(path);
  // Roles: a lane with a data role ("am", "am_bw#0", "rma_bw#1", "rma", "amo", "tag") counts;
  // one that is there only for the wire-up does not.
  const size_t arrow = line.find("->", colon);
  if (arrow == std::string::npos) return false;
  std::istringstream roles(line.substr(arrow + 2));
  std::string role;
  roles >> role;  // the remote memory domain
  bool carries_data = false;
  while (roles >> role) {
    if (role != "wireup" && role != "keepalive") carries_data = true;
  }
  if (!carries_data) return false;
  *name = tl_device;
  return true;
}

}  // namespace

std::string transportsFromEpInfo(const std::string& printed) {
  std::vector<std::string> seen;
  std::istringstream lines(printed);
  std::string line;
  std::string joined;
  while (std::getline(lines, line)) {
    std::string name;
    if (!laneTransport(line, &name)) continue;
    bool repeat = false;
    for (const std::string& s : seen) repeat = repeat || s == name;
    if (repeat) continue;
    seen.push_back(name);
    joined += (joined.empty() ? "" : "+") + name;
  }
  return joined;
}

std::string endpointTransports(ucp_ep_h ep) {
  char* text = nullptr;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return "";
  ucp_ep_print_info(ep, stream);
  std::fclose(stream);
  std::string printed(text, size);
  std::free(text);
  return transportsFromEpInfo(printed);
}

}  // namespace rd::transport
