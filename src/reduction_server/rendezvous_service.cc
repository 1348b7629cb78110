// SPDX-License-Identifier: BSD-3-Clause
#include "reduction_server/rendezvous_service.h"

#include <map>
#include <memory>
#include <mutex>

#include "common/auth.h"
#include "reduction_server/server.h"

namespace rd::server {

rdResult_t startRendezvous(const coll::RendezvousRequest& request, std::string* address) {
  // Communicators of one job share it; it lives until the process exits (ranks of later
  // communicators may still join through it), and stops cleanly then: before OpenSSL's own
  // clean-up, which is therefore registered first.
  auth::initCrypto();
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<ReductionServer>> services;
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = request.transport + "/" + request.secret;
  std::unique_ptr<ReductionServer>& service = services[key];
  if (!service) {
    ServerOptions options;
    options.host = request.host;
    options.port = request.port;
    options.secret = request.secret;
    options.transport = request.transport;
    // Ranks only join here (ring data goes between them): the limit counts their state, never
    // a chunk, so no chunk size a ring accepts may be refused for want of memory.
    options.memory_limit = 1ull << 40;
    options.quota.memory_percent = 100;
    rdResult_t started = ReductionServer::start(options, &service);
    if (started != rdSuccess) {
      services.erase(key);
      return started;
    }
  }
  *address = service->address();
  return rdSuccess;
}

}  // namespace rd::server
