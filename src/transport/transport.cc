#include "transport/transport.h"

#include <cstdlib>
#include <future>

#include "common/status.h"

namespace rd::transport {

rdResult_t Transport::runSync(const std::function<rdResult_t()>& fn) {
  if (onProgressThread()) return fn();
  struct Outcome {
    rdResult_t status;
    std::string error;
  };
  std::promise<Outcome> done;
  auto future = done.get_future();
  post([&] {
    rdResult_t status = fn();
    done.set_value({status, status < 0 ? lastError() : std::string()});
  });
  Outcome outcome = future.get();
  if (outcome.status < 0) return setError(outcome.status, outcome.error);
  return outcome.status;
}

rdResult_t splitAddress(const std::string& address, std::string* host, uint16_t* port) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return setErrorf(rdInvalidArgument, "address '%s' is not host:port", address.c_str());
  }
  char* end = nullptr;
  long value = std::strtol(address.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || value < 0 || value > 65535) {
    return setErrorf(rdInvalidArgument, "address '%s' has a bad port", address.c_str());
  }
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  *port = static_cast<uint16_t>(value);
  return rdSuccess;
}

}  // namespace rd::transport
