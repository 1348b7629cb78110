// SPDX-License-Identifier: BSD-3-Clause
// Replicas in containers: a pool with a containerSpec runs each replica with podman (`podman run`
// in the foreground, so the replica's process is podman's and its signals reach the container).
// The container shares the host's network (the addresses in CLUSTER_SPEC stay valid), mounts the
// job's directories at the same paths, and gets the replica's environment and nothing of the
// host's. Images are never pulled: they must be present locally.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "orchestrator/job_spec.h"

namespace rd::orch {

/** A container replica: its name (unique on the host), environment and mounts. */
struct ContainerReplica {
  std::string name;  // "reducectl-JOBID-worker-1"
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> read_write;  // directories mounted at the same path
  std::vector<std::string> read_only;
  std::string working_dir;  // empty: the image's
};

/** "reducectl-JOB-NAME" with characters podman refuses replaced. */
std::string containerName(const std::string& job_id, const std::string& replica);

/** The podman command line that runs @p replica of @p pool (which has a container image). */
std::vector<std::string> podmanRunArgv(const ContainerSpec& container,
                                       const ContainerReplica& replica);

/** The shell command that removes a replica's container, whatever state it is in. */
std::string podmanRemoveCommand(const std::string& name);

/**
 * Checks, before anything starts, that podman is there and that every image the job's pools
 * name is present locally; false with @p error saying which and what to do.
 */
bool checkContainerImages(const JobSpec& spec, std::string* error);

/** True when a pool of @p spec runs in containers. */
bool usesContainers(const JobSpec& spec);

}  // namespace rd::orch
