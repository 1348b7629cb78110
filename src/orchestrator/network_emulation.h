// SPDX-License-Identifier: BSD-3-Clause
// Emulated per-host NICs for a local job (reducectl run --emulate-network, root only): every
// replica in its own network namespace with one link, capped in both directions at its pool's
// resources.nicGbps, all joined by a bridge. The namespaces come from the benchmark harness
// (bench/cluster/netns.py --create / --destroy), so jobs and benchmarks share one topology.
#pragma once

#include <string>
#include <vector>

#include "orchestrator/job_spec.h"

namespace rd::orch {

struct EmulatedHost {
  std::string netns;
  std::string address;  // 198.18.x.y, no port
};

struct EmulatedNetwork {
  std::string prefix;               // namespaces PREFIX-*
  std::vector<EmulatedHost> ranks;  // primary, workers, then evaluators, in that order
  std::vector<EmulatedHost> reducers;
  std::string destroy_command;  // a shell command that removes it all
};

/**
 * Builds the namespaces for @p spec with @p tool (the harness's netns.py). Link rates: the
 * workers' nicGbps (else the primary's) for the ranks and evaluators, the reducers' own (else the
 * same) for the reducers; a spec without any is refused. False with @p error: not root, no
 * `ip`, or what the tool said.
 */
bool createEmulatedNetwork(const JobSpec& spec, const std::string& tool, EmulatedNetwork* net,
                           std::string* error);

/** Removes the namespaces (and whatever still runs in them); false with the tool's message. */
bool destroyEmulatedNetwork(const EmulatedNetwork& net, std::string* error);

}  // namespace rd::orch
