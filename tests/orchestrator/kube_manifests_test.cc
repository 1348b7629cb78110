// SPDX-License-Identifier: BSD-3-Clause
// The Kubernetes names reducectl derives (the whole manifests are checked against a schema by
// test_reducectl_kubernetes.py).
#include "orchestrator/kube_manifests.h"

#include <gtest/gtest.h>

#include <string>

namespace rd::orch {
namespace {

TEST(KubeNames, JobSetNameIsAShortDnsLabel) {
  EXPECT_EQ(kubeJobSetName("quickstart-20261203-090000-ab12"), "quickstart-20261203-090000-ab1");
  EXPECT_EQ(kubeJobSetName("My_Job.v2"), "my-job-v2");
  EXPECT_EQ(kubeJobSetName("2026-run"), "j2026-run");  // a label starts with a letter here
  EXPECT_EQ(kubeJobSetName("--x--"), "x");
  EXPECT_EQ(kubeJobSetName("..."), "j");
  std::string long_id(200, 'a');
  EXPECT_EQ(kubeJobSetName(long_id).size(), 30u);
  // NAME-evaluators-0-4095.NAME: the pod's host name stays within 63 characters.
  std::string host = kubeHost(kubeJobSetName(long_id), PoolKind::kEvaluators, 4095);
  EXPECT_LE(host.substr(0, host.find('.')).size(), 63u);
}

TEST(KubeNames, HostsFollowTheHeadlessService) {
  EXPECT_EQ(kubeHost("job", PoolKind::kReducers, 3), "job-reducers-0-3.job");
  EXPECT_EQ(kubeHost("job", PoolKind::kPrimary, 0), "job-primary-0-0.job");
  EXPECT_STREQ(kubeReplicatedJobName(PoolKind::kWorkers), "workers");
}

TEST(KubeManifests, PortsAndSecretAreFixed) {
  JobSpec spec;
  std::string error;
  ASSERT_TRUE(
      parseJobSpec("displayName: k\nworkerPoolSpecs:\n  - replicaCount: 1\n"
                   "    command: [a]\n  - {}\n  - replicaCount: 2\n",
                   "job.yaml", &spec, &error))
      << error;
  KubeOptions options;
  options.job_id = "k";
  options.secret = "00ff";
  std::string yaml;
  ASSERT_TRUE(renderKubernetes(spec, options, &yaml, &error)) << error;
  EXPECT_NE(yaml.find("stringData: {secret: \"00ff\"}"), std::string::npos);
  EXPECT_NE(yaml.find("\"LIBREDUCE_REDUCERS\", value: \"k-reducers-0-0.k:29400,k-reducers-0-1.k:"
                      "29400\""),
            std::string::npos);
  EXPECT_NE(yaml.find("{name: \"MASTER_PORT\", value: \"29500\"}"), std::string::npos);
  EXPECT_NE(yaml.find("mountPath: /var/run/reducectl/secret"), std::string::npos);
  EXPECT_NE(yaml.find("defaultMode: 384"), std::string::npos);  // 0600
}

// Attached to a shared pool: no reducers of its own, the ranks' Secret is the job key (given as
// the secret by the backend), and they name the pool's reducers and the key's communicator.
TEST(KubeManifests, AJobOnASharedPoolStartsNoReducersAndMountsItsKey) {
  JobSpec spec;
  std::string error;
  ASSERT_TRUE(
      parseJobSpec("displayName: k\nworkerPoolSpecs:\n  - replicaCount: 1\n"
                   "    command: [a]\nreducerPool: {addresses: ['pool-0.infra:7000'], "
                   "keyFile: /keys/k.key, commId: team-k}\n",
                   "job.yaml", &spec, &error))
      << error;
  KubeOptions options;
  options.job_id = "k";
  options.secret = "a1b2";
  std::string yaml;
  ASSERT_TRUE(renderKubernetes(spec, options, &yaml, &error)) << error;
  EXPECT_EQ(yaml.find("name: reducers"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("stringData: {secret: \"a1b2\"}"), std::string::npos);
  EXPECT_NE(yaml.find("{name: \"LIBREDUCE_REDUCERS\", value: \"pool-0.infra:7000\"}"),
            std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("{name: \"LIBREDUCE_COMM_ID\", value: \"team-k\"}"), std::string::npos);
  EXPECT_NE(yaml.find("{name: \"LIBREDUCE_SECRET_FILE\", value: \"/var/run/reducectl/secret/"
                      "secret\"}"),
            std::string::npos);
}

}  // namespace
}  // namespace rd::orch
