// SPDX-License-Identifier: BSD-3-Clause
#include "nccl_plugin/plugin_log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

#include "common/status.h"

namespace rd::nccl {

namespace {

std::atomic<ncclDebugLogger_t> g_logger{nullptr};

void emit(ncclDebugLogLevel level, unsigned long subsystem, const char* file, int line,
          const char* fmt, va_list args) {
  char text[1024];
  std::vsnprintf(text, sizeof text, fmt, args);
  ncclDebugLogger_t logger = g_logger.load();
  if (logger != nullptr) {
    logger(level, subsystem, file, line, "NET/libreduce: %s", text);
  } else if (level == NCCL_LOG_WARN) {
    std::fprintf(stderr, "NET/libreduce %s:%d WARN %s\n", file, line, text);
  }
}

}  // namespace

void setLogger(ncclDebugLogger_t logger) {
  ncclDebugLogger_t none = nullptr;
  if (logger != nullptr) g_logger.compare_exchange_strong(none, logger);
}

void logWarn(const char* file, int line, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  emit(NCCL_LOG_WARN, kNcclLogNet, file, line, fmt, args);
  va_end(args);
}

void logInfo(unsigned long subsystem, const char* file, int line, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  emit(NCCL_LOG_INFO, subsystem, file, line, fmt, args);
  va_end(args);
}

ncclResult_t toNccl(rdResult_t status) {
  switch (status) {
    case rdSuccess:
    case rdInProgress: return ncclSuccess;
    case rdInvalidArgument: return ncclInvalidArgument;
    case rdInvalidUsage:
    case rdUnsupported: return ncclInvalidUsage;
    case rdInternalError:
    case rdProtocolError: return ncclInternalError;
    case rdRemoteError:
    case rdConnectionError:
    case rdAuthFailed:
    case rdTimeout:
    case rdAborted: return ncclRemoteError;
    default: return ncclSystemError;
  }
}

ncclResult_t failWith(const char* file, int line, rdResult_t status, const std::string& what) {
  const std::string& detail = lastError();
  logWarn(file, line, "%s: %s%s%s", what.c_str(), rdGetErrorString(status),
          detail.empty() ? "" : ": ", detail.c_str());
  return toNccl(status);
}

}  // namespace rd::nccl
