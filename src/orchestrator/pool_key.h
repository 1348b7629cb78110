// SPDX-License-Identifier: BSD-3-Clause
// `reducectl pool key`: the key one job's workers hold to use a shared reducer pool.
#pragma once

#include <string>

#include "orchestrator/job_spec.h"

namespace rd::orch {

/**
 * reducectl pool key COMM_ID --secret-file POOL_SECRET [--out FILE]: prints (or writes to FILE,
 * readable by its owner only) the job key of communicator COMM_ID (the text a job gives as
 * LIBREDUCE_COMM_ID) under the pool's secret, as reduce-server --pool-secret-file derives it.
 * Returns the exit status (0, or 2 with a message on stderr).
 */
int runPoolCommand(int argc, char** argv);

/**
 * The key of a job attached to a shared pool (reducerPool.keyFile), read once the file proved
 * private (owner-only) and not empty; false with @p error naming the file otherwise.
 */
bool readPoolKey(const ReducerPoolRef& pool, std::string* key, std::string* error);

}  // namespace rd::orch
