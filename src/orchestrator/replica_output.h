// SPDX-License-Identifier: BSD-3-Clause
// A replica's output as it arrives: every byte to its log file, whole lines to the terminal with
// its name in front, and its last few error lines kept for the job's cause and summary.
#pragma once

#include "orchestrator/job_display.h"
#include "orchestrator/job_record.h"

namespace rd::orch {

/**
 * Reads what the replica's standard output (or error, @p is_stderr) pipe holds. Normally one read
 * per call, so that a chatty replica does not hold up the others; @p final (the replica has
 * exited) reads what is there (at most a few MiB), flushes a last unterminated line and closes
 * the pipe.
 */
void drainReplicaOutput(Replica& r, bool is_stderr, bool final, JobDisplay& display);

}  // namespace rd::orch
