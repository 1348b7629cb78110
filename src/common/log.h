// SPDX-License-Identifier: BSD-3-Clause
// Logging: one line per message on stderr, filtered by LIBREDUCE_LOG_LEVEL
// (none, error, warn, info, debug, trace; default warn).
#pragma once

namespace rd::log {

enum class Level : int { kNone = 0, kError = 1, kWarn = 2, kInfo = 3, kDebug = 4, kTrace = 5 };

/** The active level, read from LIBREDUCE_LOG_LEVEL on first use. */
Level level();

/** Overrides the level (tests, daemons with a --log-level flag). */
void setLevel(Level level);

/** Parses "warn", "WARN" or "2"; returns false for anything else. */
bool parseLevel(const char* text, Level* out);

/** Writes one formatted line: "[libreduce <host>:<pid>] WARN file.cc:12 message". */
void write(Level level, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace rd::log

#define RD_LOG_AT(lvl, ...)                                            \
  do {                                                                 \
    if (static_cast<int>(lvl) <= static_cast<int>(::rd::log::level())) \
      ::rd::log::write(lvl, __FILE__, __LINE__, __VA_ARGS__);          \
  } while (0)
#define RD_LOG_ERROR(...) RD_LOG_AT(::rd::log::Level::kError, __VA_ARGS__)
#define RD_LOG_WARN(...) RD_LOG_AT(::rd::log::Level::kWarn, __VA_ARGS__)
#define RD_LOG_INFO(...) RD_LOG_AT(::rd::log::Level::kInfo, __VA_ARGS__)
#define RD_LOG_DEBUG(...) RD_LOG_AT(::rd::log::Level::kDebug, __VA_ARGS__)
#define RD_LOG_TRACE(...) RD_LOG_AT(::rd::log::Level::kTrace, __VA_ARGS__)
