// SPDX-License-Identifier: BSD-3-Clause
#include "common/host_limits.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/statvfs.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace rd::limits {

namespace {

uint64_t linesIn(const char* path) {
  std::ifstream in(path);
  uint64_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

uint64_t numberIn(const char* path) {
  std::ifstream in(path);
  uint64_t value = 0;
  in >> value;
  return value;
}

// Open descriptors below @p limit, found without opening one (at the limit there is none left).
uint64_t openDescriptors(uint64_t limit) {
  uint64_t n = 0;
  for (uint64_t fd = 0; fd < limit; ++fd) {
    if (fcntl(static_cast<int>(fd), F_GETFD) != -1) ++n;
  }
  return n;
}

void addIfNear(std::string* out, double share, const std::string& what, uint64_t used,
               uint64_t limit, const std::string& raise) {
  if (limit == 0 || static_cast<double>(used) < share * static_cast<double>(limit)) return;
  if (!out->empty()) *out += "; ";
  *out += what + ": " + std::to_string(used) + " of " + std::to_string(limit) + " (" + raise + ")";
}

}  // namespace

std::string hostLimitsNear(double share) {
  std::string near;
  rlimit files{};
  // An error path: probing up to a million descriptors costs well under a second.
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur <= (1u << 20)) {
    addIfNear(&near, share, "open files of this process", openDescriptors(files.rlim_cur),
              files.rlim_cur, "ulimit -n");
  }
  // /proc/sysvipc/shm has a header line, then a segment per line.
  const uint64_t segments = linesIn("/proc/sysvipc/shm");
  addIfNear(&near, share, "System V shared-memory segments of this host",
            segments > 0 ? segments - 1 : 0, numberIn("/proc/sys/kernel/shmmni"),
            "sysctl kernel.shmmni, or leave sysv out of UCX_TLS");
  addIfNear(&near, share, "memory maps of this process", linesIn("/proc/self/maps"),
            numberIn("/proc/sys/vm/max_map_count"), "sysctl vm.max_map_count");
  struct statvfs shm {};
  if (statvfs("/dev/shm", &shm) == 0 && shm.f_blocks > 0) {
    const uint64_t mib = shm.f_frsize / 1024;  // KiB per block, shown in MiB below
    addIfNear(&near, share, "/dev/shm MiB in use", (shm.f_blocks - shm.f_bavail) * mib / 1024,
              shm.f_blocks * mib / 1024, "a larger /dev/shm (mount -o remount,size=...)");
  }
  return near;
}

}  // namespace rd::limits
