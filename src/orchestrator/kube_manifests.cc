// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/kube_manifests.h"

#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "common/json_text.h"
#include "orchestrator/machine_types.h"
#include "orchestrator/replica_env.h"

namespace rd::orch {
namespace {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The environment contract is replicaEnvironment's, built once per pool with stand-ins for what
// only the pod knows: its completion index and the JobSet's restart count. The stand-ins are
// numbers (they sit where numbers go in CLUSTER_SPEC) that no real value reaches, then become
// Kubernetes' $(VAR) references, which the kubelet expands from the variables defined before.
constexpr int kIndexStandIn = 881100991;
constexpr int kAttemptStandIn = 771100991;
constexpr const char* kIndexVar = "REDUCECTL_INDEX";
constexpr const char* kAttemptVar = "REDUCECTL_RESTART_ATTEMPT";
constexpr const char* kReadyFile = "/tmp/reducectl-ready";
constexpr int kSecretFileMode = 0600;

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// One YAML line: @p depth levels of two spaces.
void line(std::string* out, int depth, const std::string& text) {
  out->append(static_cast<size_t>(depth) * 2, ' ').append(text).append("\n");
}

std::string labels(const std::string& jobset, const std::string& job_id) {
  return "{\"app.kubernetes.io/managed-by\": \"reducectl\", \"reducectl/job\": " +
         jsonString(jobset) + ", \"reducectl/job-id\": " + jsonString(job_id) + "}";
}

// Where the pool's program and image come from: its containerSpec, else its command in the
// default image, else (the reducers) the built-in reducer.
struct PodProgram {
  std::string image;
  std::vector<std::string> command, args;
};

bool poolProgram(const JobSpec& spec, PoolKind kind, const KubeOptions& o, PodProgram* p,
                 std::string* error) {
  const PoolSpec& pool = spec.pool(kind);
  if (!pool.container.image_uri.empty()) {
    *p = {pool.container.image_uri, pool.container.command, pool.container.args};
  } else if (!pool.command.empty()) {
    *p = {o.image, pool.command, {}};
  } else {
    *p = {o.reducer_image,
          {"reduce-server"},
          {"--listen", "0.0.0.0:" + std::to_string(kKubeReducerPort)}};
  }
  // The workers' RANK is their index + 1 (the primary is 0): a shell in the container adds it.
  bool offset_rank = kind == PoolKind::kWorkers && spec.pool(PoolKind::kPrimary).replica_count > 0;
  if (!offset_rank) return true;
  if (p->command.empty()) {
    *error =
        "the worker pool runs its image's own entrypoint, but on Kubernetes a worker's "
        "RANK (its index + 1) is set by a shell that then runs the command: give "
        "containerSpec.command";
    return false;
  }
  std::vector<std::string> program = p->command;
  program.insert(program.end(), p->args.begin(), p->args.end());
  p->command = {"/bin/sh", "-c",
                std::string("export RANK=$$((") + kIndexVar + " + 1)) NODE_RANK=$$((" + kIndexVar +
                    " + 1)); exec \"$$@\"",
                "reducectl-rank"};
  p->args = program;
  return true;
}

EnvList poolEnvironment(const JobSpec& spec, PoolKind kind, const JobLayout& layout) {
  ReplicaId id;
  id.pool = kind;
  id.index = kIndexStandIn;
  id.local_rank = 0;  // one rank per pod
  id.local_world_size = 1;
  bool offset_rank = kind == PoolKind::kWorkers && spec.pool(PoolKind::kPrimary).replica_count > 0;
  id.node_rank = kIndexStandIn;
  EnvList env = spec.pool(kind).env;
  for (auto& kv : replicaEnvironment(spec, layout, id)) {
    if (offset_rank && (kv.first == "RANK" || kv.first == "NODE_RANK")) continue;  // the shell's
    env.push_back(std::move(kv));
  }
  if (kind == PoolKind::kReducers) env.emplace_back("LIBREDUCE_READY_FILE", kReadyFile);
  for (auto& kv : env) {
    kv.second =
        replaced(kv.second, std::to_string(kIndexStandIn), std::string("$(") + kIndexVar + ")");
    kv.second =
        replaced(kv.second, std::to_string(kAttemptStandIn), std::string("$(") + kAttemptVar + ")");
  }
  return env;
}

void writeEnv(std::string* out, int depth, const EnvList& env) {
  line(out, depth, "env:");
  line(out, depth, std::string("- name: ") + kIndexVar);
  line(out, depth + 1,
       "valueFrom: {fieldRef: {fieldPath: \"metadata.annotations['batch.kubernetes.io/"
       "job-completion-index']\"}}");
  line(out, depth, std::string("- name: ") + kAttemptVar);
  line(out, depth + 1,
       "valueFrom: {fieldRef: {fieldPath: \"metadata.labels['jobset.sigs.k8s.io/"
       "restart-attempt']\"}}");
  for (const auto& [key, value] : env) {
    line(out, depth, "- {name: " + jsonString(key) + ", value: " + jsonString(value) + "}");
  }
}

void writeResources(std::string* out, int depth, const MachineShape& shape) {
  if (shape.vcpus == 0 && shape.gpus == 0) return;
  std::string requests, limits;
  if (shape.vcpus > 0) {
    requests = "cpu: \"" + std::to_string(shape.vcpus) + "\", memory: \"" +
               std::to_string(shape.memory_mb) + "Mi\"";
    limits = "memory: \"" + std::to_string(shape.memory_mb) + "Mi\"";
  }
  if (shape.gpus > 0) {
    limits += std::string(limits.empty() ? "" : ", ") + "nvidia.com/gpu: \"" +
              std::to_string(shape.gpus) + "\"";
  }
  line(out, depth, "resources:");
  if (!requests.empty()) line(out, depth + 1, "requests: {" + requests + "}");
  line(out, depth + 1, "limits: {" + limits + "}");
}

bool writeReplicatedJob(std::string* out, const JobSpec& spec, PoolKind kind, const KubeOptions& o,
                        const JobLayout& layout, bool depends_on_reducers, std::string* error) {
  const PoolSpec& pool = spec.pool(kind);
  PodProgram program;
  MachineShape shape;
  std::string machine_error;
  if (!poolProgram(spec, kind, o, &program, error)) return false;
  if (!machineShape(pool.machine, &shape, &machine_error)) {
    *error = std::string("the ") + poolName(kind) + " pool's machineSpec: " + machine_error;
    return false;
  }
  std::string jobset = kubeJobSetName(o.job_id);
  std::string count = std::to_string(pool.replica_count);
  line(out, 1, std::string("- name: ") + kubeReplicatedJobName(kind));
  line(out, 2, "replicas: 1");
  if (depends_on_reducers) line(out, 2, "dependsOn: [{name: reducers, status: Ready}]");
  line(out, 2, "template:");
  line(out, 3, "spec:");
  line(out, 4, "completionMode: Indexed");
  line(out, 4, "completions: " + count);
  line(out, 4, "parallelism: " + count);
  line(out, 4, "backoffLimit: 0");  // a failed pod fails the job: the JobSet's policy restarts
  if (spec.scheduling.timeout_s > 0) {
    line(out, 4, "activeDeadlineSeconds: " + std::to_string(spec.scheduling.timeout_s));
  }
  line(out, 4, "template:");
  line(out, 5, "metadata: {labels: " + labels(jobset, o.job_id) + "}");
  line(out, 5, "spec:");
  line(out, 6, "restartPolicy: Never");
  line(out, 6, "containers:");
  line(out, 6, std::string("- name: ") + poolName(kind));
  line(out, 7, "image: " + jsonString(program.image));
  if (!program.command.empty()) line(out, 7, "command: " + jsonStringArray(program.command));
  if (!program.args.empty()) line(out, 7, "args: " + jsonStringArray(program.args));
  if (!pool.working_dir.empty()) line(out, 7, "workingDir: " + jsonString(pool.working_dir));
  writeEnv(out, 7, poolEnvironment(spec, kind, layout));
  if (kind == PoolKind::kReducers) {
    line(out, 7,
         "ports: [{name: reducer, containerPort: " + std::to_string(kKubeReducerPort) + "}]");
    // Ready once it accepts connections: reduce-server writes its ready line then.
    line(out, 7,
         "readinessProbe: {exec: {command: [test, -s, " + std::string(kReadyFile) +
             "]}, periodSeconds: 1}");
  } else if (isRankPool(kind)) {
    line(out, 7, "ports: [{name: master, containerPort: " + std::to_string(kKubeRankPort) + "}]");
  }
  writeResources(out, 7, shape);
  line(out, 7,
       "volumeMounts: [{name: job-secret, mountPath: " + std::string(kKubeSecretDir) +
           ", readOnly: true}]");
  line(out, 6, "volumes:");
  line(out, 6, "- name: job-secret");
  line(out, 7,
       "secret: {secretName: " + jobset +
           "-secret, defaultMode: " + std::to_string(kSecretFileMode) + "}");
  return true;
}

JobLayout kubeLayout(const JobSpec& spec, const KubeOptions& o) {
  JobLayout layout;
  layout.job_id = o.job_id;
  layout.attempt = kAttemptStandIn;
  std::string base = spec.base_output_dir.empty() ? "reducectl-jobs" : spec.base_output_dir;
  layout.output_dir = base + "/" + o.job_id;
  layout.secret_file = std::string(kKubeSecretDir) + "/secret";
  if (spec.reducer_pool.attached())
    layout.pool_key_file = layout.secret_file;  // the Secret holds the key
  std::string jobset = kubeJobSetName(o.job_id);
  for (int p = 0; p < kPoolCount; ++p) {
    auto kind = static_cast<PoolKind>(p);
    int port = kind == PoolKind::kReducers ? kKubeReducerPort : kKubeRankPort;
    for (int i = 0; i < spec.pools[p].replica_count; ++i) {
      layout.addresses[p].push_back(kubeHost(jobset, kind, i) + ":" + std::to_string(port));
    }
  }
  return layout;
}

}  // namespace

std::string kubeJobSetName(const std::string& job_id) {
  std::string name;
  for (char c : job_id) {
    auto u = static_cast<unsigned char>(c);
    name += std::isalnum(u) != 0 ? static_cast<char>(std::tolower(u)) : '-';
  }
  if (name.size() > 30) name = name.substr(0, 30);
  while (!name.empty() && name.back() == '-') name.pop_back();
  size_t first = name.find_first_not_of('-');
  name = first == std::string::npos ? "" : name.substr(first);
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) != 0) name = "j" + name;
  return name;
}

const char* kubeReplicatedJobName(PoolKind pool) {
  switch (pool) {
    case PoolKind::kPrimary: return "primary";
    case PoolKind::kWorkers: return "workers";
    case PoolKind::kReducers: return "reducers";
    case PoolKind::kEvaluators: return "evaluators";
  }
  return "workers";
}

std::string kubeHost(const std::string& jobset, PoolKind pool, int index) {
  return jobset + "-" + kubeReplicatedJobName(pool) + "-0-" + std::to_string(index) + "." + jobset;
}

bool renderKubernetes(const JobSpec& spec, const KubeOptions& o, std::string* yaml,
                      std::string* error) {
  std::string jobset = kubeJobSetName(o.job_id);
  std::string out = "# reducectl: job " + spec.name + " (" + o.job_id + ") as a JobSet\n";
  out += "apiVersion: v1\nkind: Secret\n";
  out += "metadata: {name: " + jobset + "-secret, labels: " + labels(jobset, o.job_id) + "}\n";
  out += "type: Opaque\nstringData: {secret: " + jsonString(o.secret) + "}\n---\n";
  out += "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\n";
  out += "metadata: {name: " + jobset + ", labels: " + labels(jobset, o.job_id) + "}\n";
  out += "spec:\n";
  // Stable host names NAME-POOL-0-I.NAME, resolvable before the pods are ready (the ranks are
  // listed in CLUSTER_SPEC before they start).
  line(&out, 1,
       "network: {enableDNSHostnames: true, subdomain: " + jobset +
           ", publishNotReadyAddresses: true}");
  bool has_primary = spec.pool(PoolKind::kPrimary).replica_count > 0;
  line(&out, 1,
       std::string("successPolicy: {operator: ") + (has_primary ? "Any" : "All") +
           ", targetReplicatedJobs: [" + (has_primary ? "primary" : "workers") + "]}");
  const Scheduling& s = spec.scheduling;
  line(&out, 1,
       "failurePolicy: {maxRestarts: " + std::to_string(s.disable_retries ? 0 : s.max_restarts) +
           "}");
  line(&out, 1, "replicatedJobs:");
  // The reducers first: dependsOn may only name an earlier replicatedJob.
  const PoolKind order[] = {PoolKind::kReducers, PoolKind::kPrimary, PoolKind::kWorkers,
                            PoolKind::kEvaluators};
  bool reducers = spec.pool(PoolKind::kReducers).replica_count > 0;
  JobLayout layout = kubeLayout(spec, o);
  for (PoolKind kind : order) {
    if (spec.pool(kind).replica_count == 0) continue;
    bool depends = reducers && kind != PoolKind::kReducers;
    if (!writeReplicatedJob(&out, spec, kind, o, layout, depends, error)) return false;
  }
  *yaml = std::move(out);
  return true;
}

}  // namespace rd::orch
