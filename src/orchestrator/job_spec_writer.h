// SPDX-License-Identifier: BSD-3-Clause
// A parsed job spec written back as a spec (JSON, which the spec reader reads: JSON is YAML), so
// that processes started elsewhere (the Slurm backend's replicas, on other nodes) read the same
// job, including one made from the command line (reducectl launch).
#pragma once

#include <string>

#include "orchestrator/job_spec.h"

namespace rd::orch {

/**
 * @p spec as a job spec document: displayName, baseOutputDirectory, the pools (replicaCount,
 * command, containerSpec, env, workingDir, resources), scheduling and libreduce. Cluster fields
 * (machineSpec, slurm) are left out: they are used before the replicas start. parseJobSpec of the
 * result gives back the same pools, scheduling and settings.
 */
std::string jobSpecDocument(const JobSpec& spec);

}  // namespace rd::orch
