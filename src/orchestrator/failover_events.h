// The ranks' side of reducer failovers in the job record: rank 0's LIBREDUCE_EVENTS_FILE
// (common/events.h) merged into what reducectl saw of its reducers (docs/failover.md).
#pragma once

#include <string>
#include <vector>

#include "orchestrator/job_record.h"

namespace rd::orch {

/**
 * Reads the event lines at @p path (a missing file: none) and fills @p failovers: each
 * "reducerLost" matches the oldest record of the same address that has no rank's view yet (or
 * adds one: a reducer the ranks left that reducectl saw running, e.g. frozen), then
 * "reducerRecovered" and "reducerBack" complete it. @p job_start_epoch_s: the job's start, in
 * seconds since the epoch. A malformed line is skipped and named in @p warning.
 */
void mergeRankEvents(const std::string& path, double job_start_epoch_s,
                     std::vector<FailoverRecord>* failovers, std::string* warning);

}  // namespace rd::orch
