// SPDX-License-Identifier: BSD-3-Clause
// `reducectl pool key`: the key one job's workers hold to use a shared reducer pool.
#pragma once

namespace rd::orch {

/**
 * reducectl pool key COMM_ID --secret-file POOL_SECRET [--out FILE]: prints (or writes to FILE,
 * readable by its owner only) the job key of communicator COMM_ID (the text a job gives as
 * LIBREDUCE_COMM_ID) under the pool's secret, as reduce-server --pool-secret-file derives it.
 * Returns the exit status (0, or 2 with a message on stderr).
 */
int runPoolCommand(int argc, char** argv);

}  // namespace rd::orch
