// SPDX-License-Identifier: BSD-3-Clause
#include "common/status.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace rd {
namespace {
// A plain buffer, not a std::string: it has no destructor, so an error recorded after this
// thread's thread_local objects were destroyed (a destructor running from exit(), such as an
// in-process reducer's, whose engine refuses work once halted at exit) writes valid memory.
constexpr size_t kLastErrorCapacity = 4096;
thread_local char t_last_error[kLastErrorCapacity];

void storeLastError(const std::string& message) {
  static constexpr char kCut[] = " [...]";
  if (message.size() < kLastErrorCapacity) {
    std::memcpy(t_last_error, message.c_str(), message.size() + 1);
    return;
  }
  size_t kept = kLastErrorCapacity - sizeof kCut;
  std::memcpy(t_last_error, message.data(), kept);
  std::memcpy(t_last_error + kept, kCut, sizeof kCut);
}
}  // namespace

rdResult_t setError(rdResult_t status, const std::string& message) {
  RD_LOG_DEBUG("error %s: %s", rdGetErrorString(status), message.c_str());
  storeLastError(message);
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

std::string lastError() {
  return t_last_error;
}

void clearLastError() {
  t_last_error[0] = '\0';
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
  return rd::t_last_error;
}

rdResult_t rdGetVersion(int* version) {
  if (version == nullptr) return rd::setError(rdInvalidArgument, "rdGetVersion: version is NULL");
  *version = LIBREDUCE_VERSION_CODE;
  return rdSuccess;
}

}  // extern "C"
