// SPDX-License-Identifier: BSD-3-Clause
#include "reduction_server/lanes.h"

#include <algorithm>

#include "common/check.h"
#include "common/settings.h"
#include "common/status.h"

namespace rd::server {

rdResult_t ReducerLanes::start(const ServerOptions& options, int lanes, int reduce_threads,
                               std::unique_ptr<ReducerLanes>* out) {
  if (lanes < 1 || options.port + static_cast<uint32_t>(lanes) - 1 > 65535) {
    return setErrorf(rdInvalidArgument, "%d lanes do not fit from port %u", lanes, options.port);
  }
  int64_t spin_us = 0;
  RD_CHECK(settings::readInt(settings::Id::kSpinUs, &spin_us));
  std::unique_ptr<ReducerLanes> r(new ReducerLanes);
  r->executor_ = std::make_shared<Executor>(reduce_threads);
  for (int i = 0; i < lanes; ++i) {
    ServerOptions lane = options;
    lane.executor = r->executor_;
    lane.memory_limit = std::max<uint64_t>(options.memory_limit / lanes, 1);
    if (options.port != 0) lane.port = static_cast<uint16_t>(options.port + i);
    // The first lane runs on the engine asked for (the process's own by default); every other
    // on one of its own: a thread and a UCX worker per lane.
    if (i > 0 || !lane.engine) {
      lane.engine = i == 0 ? transport::ProgressEngine::shared()
                           : transport::ProgressEngine::create(static_cast<uint32_t>(spin_us));
    }
    r->engines_.push_back(lane.engine);
    std::unique_ptr<ReductionServer> server;
    RD_CHECK(ReductionServer::start(lane, &server));
    r->servers_.push_back(std::move(server));
  }
  *out = std::move(r);
  return rdSuccess;
}

ReducerLanes::~ReducerLanes() {
  servers_.clear();  // each stops its transport, after the reductions it started
  engines_.clear();
}

std::string ReducerLanes::addresses() const {
  std::string list;
  for (const auto& s : servers_) list += (list.empty() ? "" : ",") + s->address();
  return list;
}

}  // namespace rd::server
