// SPDX-License-Identifier: BSD-3-Clause
// What `reduce-server --metrics` serves: the reducer's counters and gauges in the Prometheus text
// format, named libreduce_reducer_* with units in the names (docs/observability.md), and the
// process's own CPU time and resident memory under the names every exporter uses.
#pragma once

#include <string>
#include <vector>

#include "reduction_server/server.h"

namespace rd::server {

/** Communicators listed one by one (those holding the most memory); the rest are counted. */
constexpr size_t kMaxCommsListed = 64;

/** Ways of carrying connections (tcp/eth0, ...) listed one by one; the rest are "other". */
constexpr size_t kMaxTransportsListed = 16;

/** The exposition text for a reducer whose lanes reported @p lanes (summed over them). */
std::string renderReducerMetrics(const std::vector<ServerStats>& lanes);

}  // namespace rd::server
