// SPDX-License-Identifier: BSD-3-Clause
// The job spec's fields for running on a cluster: Vertex's machineSpec, a pool's Slurm
// resources and the job-level Slurm settings. Read strictly like the rest of the spec (types,
// ranges, unknown keys); how they map to Slurm is the Slurm backend's (slurm_script.h).
#pragma once

#include "orchestrator/job_spec.h"
#include "orchestrator/spec_fields.h"

namespace rd::orch {

/** machineSpec: {machineType, acceleratorType, acceleratorCount}. Throws spec::SpecError. */
MachineSpec readMachineSpec(const spec::Field& field);

/**
 * A pool's slurm: {nodes, tasksPerNode, cpusPerTask, gpus, memory, partition}, checked against the
 * pool's
 * @p replica_count (one task per replica). Throws spec::SpecError.
 */
SlurmPoolSpec readSlurmPool(const spec::Field& field, int replica_count);

/** diskSpec: {bootDiskType, bootDiskSizeGb}. Throws spec::SpecError. */
DiskSpec readDiskSpec(const spec::Field& field);

/** The job's slurm: {partition, account, qos, timeLimit, sbatchOptions}. Throws. */
SlurmJobSpec readSlurmJob(const spec::Field& field);

/** reducerPool: {addresses, keyFile, commId}, every address host:port. Throws. */
ReducerPoolRef readReducerPool(const spec::Field& field);

}  // namespace rd::orch
