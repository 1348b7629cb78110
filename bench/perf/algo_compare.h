// SPDX-License-Identifier: BSD-3-Clause
// Several systems measured in the same processes, interleaved: for each size, every system warms
// up, then `rounds` rounds each time `iters` back-to-back calls of every system in turn (the
// order rotates by round). A comparison across separate launches compares process sets as much
// as systems: on one machine a fresh set of processes varies by more than the few percent being
// asked about (measured: rs at 8 KiB, 396-532 us per call over 7 launches). Here every system
// sees the same processes, connections, placement and moment.
//
// The first system is the one under comparison (say auto): each row gives its time against the
// fastest of the others, per round and as the ratio of the medians. All-reduce only.
#pragma once

#include <vector>

#include "perf/perf_runner.h"

namespace rd::perf {

/**
 * Runs the comparison and prints its table on rank 0 (and the JSON with -J). @p lineup lines
 * the ranks up and combines times (a communicator of its own, so the measured ones carry only
 * measured calls); @p systems are measured, the first against the rest. Returns the process
 * exit code: 0, 1 when a result was wrong, 2 when a call failed.
 */
int runCompare(Backend& lineup, const std::vector<Backend*>& systems, const Options& options,
               int rounds);

}  // namespace rd::perf
