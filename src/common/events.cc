// SPDX-License-Identifier: BSD-3-Clause
#include "common/events.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/json_text.h"
#include "common/log.h"
#include "common/settings.h"

namespace rd::events {

void record(const std::string& name, const std::string& fields) {
  static const std::string path = settings::rawValue(settings::Id::kEventsFile);
  if (path.empty()) return;
  double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  char time_text[32];
  std::snprintf(time_text, sizeof time_text, "%.3f", now);
  std::string line = "{\"event\": " + jsonString(name) + ", \"time\": " + time_text +
                     (fields.empty() ? "" : ", " + fields) + "}\n";
  // O_APPEND: one write per line keeps lines whole when threads of this process write at once.
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  int err = errno;
  if (fd >= 0) close(fd);
  static std::atomic<bool> warned{false};
  if (!ok && !warned.exchange(true)) {
    RD_LOG_WARN("cannot write events to %s (LIBREDUCE_EVENTS_FILE): %s", path.c_str(),
                std::strerror(err));
  }
}

}  // namespace rd::events
