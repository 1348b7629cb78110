// SPDX-License-Identifier: BSD-3-Clause
// The ring rendezvous: without reducers the ranks still join through one service, which checks
// their arguments and hands every rank the others' ring addresses. It is a reducer that serves
// joins only, run inside rank 0's process (or the process that made the unique id). The worker
// side does not link the reducer: the library's entry points pass in how to start one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "libreduce/reduce.h"

namespace rd::coll {

struct RendezvousRequest {
  std::string transport = "ucx";  // createTransport's name
  std::string host;
  uint16_t port = 0;  // 0 = any free port
  std::string secret;
};

/**
 * Starts (or finds, one per process and secret) the rendezvous service; gives the address ranks
 * join at. It lives until the process exits.
 */
using RendezvousStarter =
    std::function<rdResult_t(const RendezvousRequest& request, std::string* address)>;

}  // namespace rd::coll
