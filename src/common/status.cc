#include "common/status.h"

#include <cstdarg>
#include <cstdio>

#include "common/log.h"

namespace rd {
namespace {
thread_local std::string t_last_error;
}  // namespace

rdResult_t setError(rdResult_t status, std::string message) {
  RD_LOG_DEBUG("error %s: %s", rdGetErrorString(status), message.c_str());
  t_last_error = std::move(message);
  return status;
}

rdResult_t setErrorf(rdResult_t status, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return setError(status, buf);
}

const std::string& lastError() {
  return t_last_error;
}

void clearLastError() {
  t_last_error.clear();
}

}  // namespace rd

extern "C" {

const char* rdGetErrorString(rdResult_t result) {
  switch (result) {
    case rdSuccess: return "success";
    case rdInProgress: return "operation in progress";
    case rdInvalidArgument: return "invalid argument";
    case rdInvalidUsage: return "invalid usage";
    case rdUnsupported: return "unsupported";
    case rdSystemError: return "system error";
    case rdOutOfMemory: return "out of memory";
    case rdInternalError: return "internal error";
    case rdTimeout: return "timeout";
    case rdRemoteError: return "remote peer error";
    case rdConnectionError: return "connection error";
    case rdAuthFailed: return "authentication failed";
    case rdAborted: return "communicator aborted";
    case rdProtocolError: return "protocol error";
    case rdCudaError: return "CUDA error";
  }
  return "unknown status";
}

const char* rdGetLastError(void) {
  return rd::lastError().c_str();
}

rdResult_t rdGetVersion(int* version) {
  if (version == nullptr) return rd::setError(rdInvalidArgument, "rdGetVersion: version is NULL");
  *version = LIBREDUCE_VERSION_CODE;
  return rdSuccess;
}

}  // extern "C"
