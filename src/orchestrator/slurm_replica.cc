// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/slurm_replica.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "orchestrator/container_runtime.h"
#include "orchestrator/job_files.h"
#include "orchestrator/job_spec_reader.h"
#include "orchestrator/reducer_failover.h"
#include "orchestrator/replica_env.h"
#include "orchestrator/replica_process.h"
#include "orchestrator/slurm_script.h"

namespace rd::orch {
namespace {

constexpr auto kRendezvousPoll = std::chrono::milliseconds(100);

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_forwarded = 0;  // the program was told to end: its end is no loss

// srun delivers SIGTERM (cancel, the attempt ending) to the task; the program gets it too.
void forwardSignal(int sig) {
  g_forwarded = 1;
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

int envInt(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  return *end == '\0' && v >= 0 && v < (1 << 30) ? static_cast<int>(v) : fallback;
}

std::string hostName() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "localhost";
  return host;
}

struct Replica {
  JobSpec spec;
  JobLayout layout;
  ReplicaId id;
  std::string name;
  std::string attempt_dir;
};

std::string replicaName(PoolKind pool, int index) {
  return std::string(poolName(pool)) + "-" + std::to_string(index);
}

[[noreturn]] void giveUp(const Replica& r, const std::string& message) {
  std::fprintf(stderr, "reducectl slurm-replica: %s: %s\n", r.name.c_str(), message.c_str());
  writeFileAtomically(r.attempt_dir + "/exit/" + r.name, "1 not started: " + message + "\n");
  std::exit(1);
}

// Every reducer's ready address and every other replica's published address, or the missing
// ones when the deadline passes.
bool gatherAddresses(Replica& r, int timeout_s, std::string* missing) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    missing->clear();
    for (int p = 0; p < kPoolCount; ++p) {
      auto kind = static_cast<PoolKind>(p);
      for (int i = 0; i < r.spec.pools[p].replica_count; ++i) {
        std::string& slot = r.layout.addresses[p][i];
        if (!slot.empty()) continue;
        std::string name = replicaName(kind, i);
        slot = kind == PoolKind::kReducers ? readyAddress(r.attempt_dir + "/ready/" + name)
                                           : readyAddress(r.attempt_dir + "/addr/" + name);
        if (slot.empty()) *missing += (missing->empty() ? "" : ", ") + name;
      }
    }
    if (missing->empty()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kRendezvousPoll);
  }
}

// Runs @p argv with @p env in the foreground (stdio inherited: srun collects it), forwarding
// the signals srun sends; returns the wait status.
int runProgram(const std::vector<std::string>& argv,
               const std::vector<std::pair<std::string, std::string>>& env,
               const std::string& working_dir, std::string* error) {
  std::vector<std::string> env_text;
  env_text.reserve(env.size());
  for (const auto& [k, v] : env) env_text.push_back(std::string(k).append("=").append(v));
  std::vector<char*> argp, envp;
  argp.reserve(argv.size() + 1);
  envp.reserve(env_text.size() + 1);
  for (const auto& a : argv) argp.push_back(const_cast<char*>(a.c_str()));
  for (const auto& e : env_text) envp.push_back(const_cast<char*>(e.c_str()));
  argp.push_back(nullptr);
  envp.push_back(nullptr);
  struct sigaction forward {};
  forward.sa_handler = forwardSignal;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2}) sigaction(sig, &forward, nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2}) signal(sig, SIG_DFL);
    if (!working_dir.empty() && chdir(working_dir.c_str()) != 0) {
      std::fprintf(stderr, "reducectl slurm-replica: working directory %s: %s\n",
                   working_dir.c_str(), std::strerror(errno));
      _exit(127);
    }
    execvpe(argp[0], argp.data(), envp.data());
    std::fprintf(stderr, "reducectl slurm-replica: cannot run %s: %s\n", argp[0],
                 std::strerror(errno));
    _exit(127);
  }
  g_child = pid;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  return status;
}

// torchrun's placement from Slurm's: the primary alone on its node (node 0), the workers'
// nodes after it.
void placeRank(Replica& r) {
  int node_id = envInt("SLURM_NODEID", 0);
  const char* per_node = std::getenv("SLURM_STEP_TASKS_PER_NODE");
  int local_world = tasksOnNode(per_node != nullptr ? per_node : "", node_id);
  r.id.local_rank = envInt("SLURM_LOCALID", 0);
  r.id.local_world_size = local_world > 0 ? local_world : 1;
  bool after_primary =
      r.id.pool == PoolKind::kWorkers && r.spec.pool(PoolKind::kPrimary).replica_count > 0;
  r.id.node_rank = node_id + (after_primary ? 1 : 0);
}

}  // namespace

std::string slurmSpecFile(const std::string& job_dir) {
  return job_dir + "/reducectl/slurm/job-spec.json";
}

std::string slurmSecretFile(const std::string& job_dir) {
  return job_dir + "/reducectl/secret";
}

int tasksOnNode(const std::string& tasks_per_node, int node_id) {
  // "2(x3),1": three nodes with 2 tasks, then one with 1.
  size_t pos = 0;
  int node = 0;
  while (pos < tasks_per_node.size()) {
    size_t comma = tasks_per_node.find(',', pos);
    std::string item =
        tasks_per_node.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    int tasks = std::atoi(item.c_str());
    int repeat = 1;
    size_t x = item.find("(x");
    if (x != std::string::npos) repeat = std::atoi(item.c_str() + x + 2);
    if (node_id < node + repeat) return tasks;
    node += repeat;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return 0;
}

int runSlurmReplica(const SlurmReplicaArgs& args) {
  Replica r;
  r.id.pool = args.pool;
  r.id.index = envInt("SLURM_PROCID", -1);
  r.name = replicaName(args.pool, r.id.index);
  r.attempt_dir = slurmAttemptDir(args.job_dir, args.attempt);
  if (r.id.index < 0) {
    std::fprintf(stderr, "reducectl slurm-replica: SLURM_PROCID is not set: run by srun only\n");
    return 1;
  }
  std::string error;
  if (!loadJobSpec(slurmSpecFile(args.job_dir), &r.spec, &error)) giveUp(r, error);
  const PoolSpec& pool = r.spec.pool(args.pool);
  if (r.id.index >= pool.replica_count) {
    giveUp(r, "index " + std::to_string(r.id.index) + " but the pool has " +
                  std::to_string(pool.replica_count) + " replicas");
  }
  r.layout.job_id = args.job_dir.substr(args.job_dir.rfind('/') + 1);
  r.layout.attempt = args.attempt;
  r.layout.output_dir = args.job_dir;
  r.layout.secret_file = slurmSecretFile(args.job_dir);
  r.layout.pool_key_file = r.spec.reducer_pool.key_file;  // made absolute by the submitter
  for (int p = 0; p < kPoolCount; ++p)
    r.layout.addresses[p].assign(r.spec.pools[p].replica_count, "");
  std::vector<std::string> argv = pool.command;
  std::string host = hostName();
  if (args.pool == PoolKind::kReducers) {
    std::string ready = r.attempt_dir + "/ready/" + r.name;
    if (argv.empty() && pool.container.image_uri.empty()) {
      argv = {args.reduce_server, "--listen",          host + ":0", "--ready-file", ready,
              "--secret-file",    r.layout.secret_file};
    }
  } else {
    bool rank0 = args.pool == rankZeroPool(r.spec) && r.id.index == 0;
    std::set<int> given;
    int port = reserveLocalPort(rank0, &given, true);
    if (port == 0) giveUp(r, "no free TCP port on " + host);
    writeFileAtomically(r.attempt_dir + "/addr/" + r.name,
                        "address=" + host + ":" + std::to_string(port) + "\n");
    std::string missing;
    if (!gatherAddresses(r, args.ready_timeout_s, &missing)) {
      giveUp(r, "not every replica reported within " + std::to_string(args.ready_timeout_s) +
                    " s (missing: " + missing + "); the job directory " + args.job_dir +
                    " must be on a filesystem every node sees");
    }
    if (isRankPool(args.pool)) placeRank(r);
  }
  auto own_env = pool.env;
  // Where the ranks tell of reducer failovers, for the job record (the spec's own setting wins).
  if (isRankPool(args.pool)) {
    own_env.emplace_back("LIBREDUCE_EVENTS_FILE", rankEventsFile(args.job_dir, r.name));
  }
  for (auto& kv : replicaEnvironment(r.spec, r.layout, r.id)) own_env.push_back(std::move(kv));
  if (args.pool == PoolKind::kReducers) {
    own_env.emplace_back("LIBREDUCE_READY_FILE", r.attempt_dir + "/ready/" + r.name);
  }
  auto env = inheritedEnvironment(environ);
  std::string working_dir = pool.working_dir;
  if (!pool.container.image_uri.empty()) {  // podman runs with the node's environment
    ContainerReplica c{
        containerName(r.layout.job_id, r.name), own_env, {args.job_dir}, {}, pool.working_dir};
    argv = podmanRunArgv(pool.container, c);
    working_dir.clear();
  } else {
    for (auto& kv : own_env) env.push_back(std::move(kv));
  }
  int status = runProgram(argv, env, working_dir, &error);
  // A built-in reducer lost during the job, while the ranks fail over: a replacement at its
  // address, which the ranks re-admit (docs/failover.md); the step goes on.
  const bool replaceable = args.pool == PoolKind::kReducers && reducersReplaced(r.spec);
  for (int replaced = 0;
       replaceable && status >= 0 && g_forwarded == 0 && replaced < kReducerReplacements;
       ++replaced) {
    const std::string ready = r.attempt_dir + "/ready/" + r.name;
    std::string address = readyAddress(ready);
    if (address.empty()) break;  // it never listened: not a loss the ranks went on from
    recordReducerLoss(r.attempt_dir, r.name, address, describeWaitStatus(status));
    std::fprintf(stderr,
                 "reducectl slurm-replica: %s %s: the ranks go on with the other reducers; "
                 "starting a replacement at %s (%d of %d)\n",
                 r.name.c_str(), describeWaitStatus(status).c_str(), address.c_str(), replaced + 1,
                 kReducerReplacements);
    unlink(ready.c_str());
    argv[2] = address;  // --listen
    status = runProgram(argv, env, working_dir, &error);
  }
  if (!pool.container.image_uri.empty()) {
    // A container whose podman client was stopped (the step's SIGTERM) may still run.
    if (std::system(podmanRemoveCommand(containerName(r.layout.job_id, r.name)).c_str()) < 0) {
      std::fprintf(stderr, "reducectl slurm-replica: %s: cannot run podman rm\n", r.name.c_str());
    }
  }
  if (status < 0) giveUp(r, error);
  int code = exitCodeOf(status);
  writeFileAtomically(r.attempt_dir + "/exit/" + r.name,
                      std::to_string(code) + " " + describeWaitStatus(status) + "\n");
  return code;
}

}  // namespace rd::orch
