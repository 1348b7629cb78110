// SPDX-License-Identifier: BSD-3-Clause
// `reducectl trace merge`: the timelines a job's processes wrote (LIBREDUCE_TRACE, one Chrome
// trace JSON each) joined into one file that chrome://tracing or Perfetto opens, the ranks
// listed first in rank order, then the reducers.
#pragma once

#include <string>
#include <vector>

namespace rd::orch {

/** What merging read. */
struct TraceMergeReport {
  int files = 0;                     // merged
  std::vector<std::string> refused;  // "PATH: why", for each file that was not a timeline
};

/**
 * Joins the timelines in @p inputs (files, or directories whose libreduce-*.json are read) into
 * @p output. Each process gets a pid of its own in the merged file (processes of two machines
 * may share one). False when nothing could be merged or the output cannot be written (@p error
 * says why); files that are not timelines are named in the report and left out.
 */
bool mergeTraces(const std::vector<std::string>& inputs, const std::string& output,
                 TraceMergeReport* report, std::string* error);

/** `reducectl trace merge INPUT... -o FILE`. */
int runTraceCommand(int argc, char** argv);

}  // namespace rd::orch
