// SPDX-License-Identifier: BSD-3-Clause
// Binds the reducer process (its threads and memory) to the CPUs closest to the network
// interface it listens on, with hwloc.
#pragma once

#include <string>

#include "libreduce/reduce.h"

namespace rd::server {

/**
 * Binds this process near the NIC that owns @p listen_host. Falls back to no binding, with a
 * message in @p report, when the interface has no locality (loopback, virtual devices) or hwloc
 * is not built in. @p report always says what was done.
 */
rdResult_t bindNearInterface(const std::string& listen_host, std::string* report);

}  // namespace rd::server
