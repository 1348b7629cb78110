// SPDX-License-Identifier: BSD-3-Clause
// The Kubernetes backend: applies a job's manifests (kube_manifests.h) with kubectl where a
// cluster is reachable, follows the JobSet to its end (QUEUED until a pod runs, PROVISIONING
// until every reducer is Ready, RUNNING, then the JobSet's Completed or Failed condition),
// gathers the pods' logs into the job directory and deletes what it applied. Ctrl-C, SIGTERM
// and the job's timeout delete the JobSet (CANCELLED / FAILED).
#pragma once

#include <string>

#include "orchestrator/job_spec.h"
#include "orchestrator/kube_manifests.h"
#include "orchestrator/local_backend.h"

namespace rd::orch {

struct KubeRunOptions {
  RunOptions run;    // job id, quiet, notify_fd
  KubeOptions kube;  // images (the job id and secret are filled in here)
};

/** Runs @p spec on the cluster kubectl reaches; blocks the job signals while it runs. */
JobResult runKubeJob(const JobSpec& spec, const KubeRunOptions& options);

}  // namespace rd::orch
