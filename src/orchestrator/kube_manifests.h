// SPDX-License-Identifier: BSD-3-Clause
// The Kubernetes backend's manifests: a job spec as a JobSet (jobset.x-k8s.io/v1alpha2) with one
// replicatedJob per pool (reducers first; the other pools start once the reducers are Ready), the
// job secret as a Secret mounted as a file, and the local backend's environment contract, with
// every address known in advance from the JobSet's headless service (fixed ports) and each
// replica's index from its pod's completion index.
#pragma once

#include <string>

#include "orchestrator/job_spec.h"

namespace rd::orch {

struct KubeOptions {
  std::string job_id;  // CLOUD_ML_JOB_ID; the JobSet's name is made from it
  std::string secret;  // the job secret (hex) the Secret holds
  std::string reducer_image = "localhost/libreduce-reducer:latest";  // the built-in reducer
  std::string image = "localhost/libreduce-trainer:latest";  // pools with a command, no image
};

inline constexpr int kKubeRankPort = 29500;     // MASTER_PORT (+1: the ring's rendezvous)
inline constexpr int kKubeReducerPort = 29400;  // every reducer's listening port
inline constexpr const char* kKubeSecretDir = "/var/run/reducectl/secret";

/** The JobSet's name for @p job_id: a DNS label of at most 30 characters (pod host names of
 *  NAME-POOL-0-INDEX stay within 63). */
std::string kubeJobSetName(const std::string& job_id);

/** "NAME-workers-0-3.NAME": replica @p index of @p pool's pod, as the headless service names it. */
std::string kubeHost(const std::string& jobset, PoolKind pool, int index);

/** The replicatedJob of @p pool: primary, workers, reducers, evaluators. */
const char* kubeReplicatedJobName(PoolKind pool);

/** The manifests (multi-document YAML): the Secret, then the JobSet. */
bool renderKubernetes(const JobSpec& spec, const KubeOptions& options, std::string* yaml,
                      std::string* error);

}  // namespace rd::orch
