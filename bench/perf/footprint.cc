// SPDX-License-Identifier: BSD-3-Clause
#include "perf/footprint.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace rd::perf {

namespace {

// The number after "Name:" in /proc/self/status (kB for the memory fields), 0 if absent.
long statusField(const char* name) {
  std::ifstream in("/proc/self/status");
  const size_t len = std::strlen(name);
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, len, name) == 0 && line.size() > len && line[len] == ':') {
      return std::strtol(line.c_str() + len + 1, nullptr, 10);
    }
  }
  return 0;
}

}  // namespace

void readProcessCost(Footprint* f) {
  f->peak_rss_kib = statusField("VmHWM");
  f->threads = static_cast<int>(statusField("Threads"));
  f->open_files = 0;
  f->sockets = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  const int own = dirfd(dir);  // the listing's own descriptor is not the process's cost
  char target[64];
  for (dirent* e = readdir(dir); e != nullptr; e = readdir(dir)) {
    if (e->d_name[0] == '.' || std::atoi(e->d_name) == own) continue;
    ++f->open_files;
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n >= 7 && std::strncmp(target, "socket:", 7) == 0) ++f->sockets;
  }
  closedir(dir);
}

bool appendFootprint(const std::string& path, const Footprint& f) {
  char line[256];
  const int n = std::snprintf(line, sizeof line,
                              "rank=%d nranks=%d communicators=%d join_ms=%.1f peak_rss_kib=%ld "
                              "open_files=%d sockets=%d threads=%d\n",
                              f.rank, f.nranks, f.communicators, f.join_ms, f.peak_rss_kib,
                              f.open_files, f.sockets, f.threads);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool whole = write(fd, line, static_cast<size_t>(n)) == n;
  close(fd);
  return whole;
}

}  // namespace rd::perf
