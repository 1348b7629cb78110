// SPDX-License-Identifier: BSD-3-Clause
#include "common/log.h"

#include <unistd.h>

#include <strings.h>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/settings.h"

namespace rd::log {
namespace {

constexpr const char* kNames[] = {"none", "error", "warn", "info", "debug", "trace"};

std::atomic<int> g_level{-1};  // -1: not read from the environment yet

const char* baseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

std::string hostName() {
  char name[256] = "";
  if (gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

}  // namespace

bool parseLevel(const char* text, Level* out) {
  if (text == nullptr) return false;
  for (int i = 0; i <= static_cast<int>(Level::kTrace); ++i) {
    if (strcasecmp(text, kNames[i]) == 0 || (text[0] == '0' + i && text[1] == '\0')) {
      *out = static_cast<Level>(i);
      return true;
    }
  }
  return false;
}

Level level() {
  int current = g_level.load(std::memory_order_relaxed);
  if (current >= 0) return static_cast<Level>(current);
  Level parsed = Level::kWarn;
  std::string text = settings::rawValue(settings::Id::kLogLevel);
  if (!parseLevel(text.c_str(), &parsed)) {
    std::fprintf(stderr,
                 "[libreduce] LIBREDUCE_LOG_LEVEL=%s is not one of "
                 "none/error/warn/info/debug/trace; using warn\n",
                 text.c_str());
    parsed = Level::kWarn;
  }
  g_level.store(static_cast<int>(parsed), std::memory_order_relaxed);
  return parsed;
}

void setLevel(Level level) {
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

void write(Level lvl, const char* file, int line, const char* fmt, ...) {
  static const std::string host = hostName();  // thread-safe one-time initialisation
  char message[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  // One fprintf per line keeps lines from different threads whole.
  std::fprintf(stderr, "[libreduce %s:%d] %s %s:%d %s\n", host.c_str(), static_cast<int>(getpid()),
               kNames[static_cast<int>(lvl)], baseName(file), line, message);
}

}  // namespace rd::log
