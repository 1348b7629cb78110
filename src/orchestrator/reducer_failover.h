// SPDX-License-Identifier: BSD-3-Clause
// reducectl and reducer failover (docs/failover.md): whether a job's ranks go on without a lost
// reducer, how often a reducer is replaced, and the record of each failover: what the backend saw
// of the reducer (its end, its replacement) merged with rank 0's LIBREDUCE_EVENTS_FILE
// (common/events.h).
#pragma once

#include <string>
#include <vector>

#include "orchestrator/job_spec.h"

namespace rd::orch {

/** How many times in an attempt a lost reducer is started again (then the job goes without). */
constexpr int kReducerReplacements = 3;

/**
 * Whether the ranks of @p spec go on without a lost reducer: two or more reducers, and
 * LIBREDUCE_FAILOVER (reducectl's environment, unless the spec's libreduce settings say) not 0.
 */
bool reducersFailOver(const JobSpec& spec);

/**
 * Whether a lost reducer of @p spec is started again at its address: the pool runs the built-in
 * reduce-server (a custom command or container may listen elsewhere) and the ranks fail over.
 */
bool reducersReplaced(const JobSpec& spec);

/** Where rank @p replica ("primary-0") of the job in @p output_dir appends its events. */
std::string rankEventsFile(const std::string& output_dir, const std::string& replica);

/** Seconds since the epoch @p seconds ago (a job's start, from its duration). */
double epochSecondsAgo(double seconds);

/**
 * A reducer lost while the job ran, which the ranks went on without (docs/failover.md): when,
 * why, and its replacement. Times are seconds since the job started; -1 = not (yet).
 */
struct FailoverRecord {
  std::string reducer;  // "reducer-1"
  std::string address;  // where it listened (and its replacement listens)
  double lost_at_s = -1;
  std::string cause;            // "killed by SIGKILL"
  double replaced_at_s = -1;    // its replacement started
  double back_ready_at_s = -1;  // the replacement is listening (the ranks re-admit it)
  // As rank 0 saw it (its LIBREDUCE_EVENTS_FILE; -1 = no event): how long the reducer was
  // silent before the loss was found, how long the operations in flight then took, and from
  // which operation a replacement served again.
  long silent_ms = -1;
  long stalled_ms = -1;
  long readmitted_from_op = -1;
  double readmitted_at_s = -1;
};

/**
 * Appends to @p attempt_dir/failovers that reducer @p replica ended with @p cause and a
 * replacement started at @p address (one line; the Slurm wrapper writes it, the backend reads
 * it with readReducerLosses).
 */
void recordReducerLoss(const std::string& attempt_dir, const std::string& replica,
                       const std::string& address, const std::string& cause);

/** The losses recordReducerLoss wrote in @p attempt_dir, as records (times from the job's start).
 */
void readReducerLosses(const std::string& attempt_dir, double job_start_epoch_s,
                       std::vector<FailoverRecord>* failovers);

/**
 * Reads rank 0's event lines (rankEventsFile of the job in @p output_dir; a missing file: none)
 * and fills @p failovers: each
 * "reducerLost" matches the oldest record of the same address that has no rank's view yet (or
 * adds one: a reducer the ranks left that reducectl saw running, e.g. frozen), then
 * "reducerRecovered" and "reducerBack" complete it. @p job_start_epoch_s: the job's start, in
 * seconds since the epoch. A malformed line is skipped and named in @p warning.
 */
void mergeRankEvents(const JobSpec& spec, const std::string& output_dir, double job_start_epoch_s,
                     std::vector<FailoverRecord>* failovers, std::string* warning);

}  // namespace rd::orch
