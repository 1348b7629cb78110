// SPDX-License-Identifier: BSD-3-Clause
// reducectl: runs libreduce jobs described by a job spec.
//
//   reducectl run SPEC [--backend local|slurm] [--detach] [--quiet] [--job-id ID]
//                      [--reduce-server PATH] [--ready-timeout SEC] [--stop-grace SEC]
//                      [--emulate-network] [--netns-tool PATH] [--trace]
//   reducectl render --backend slurm|kubernetes SPEC
//   reducectl status JOB | reducectl cancel JOB [--wait SEC]
//   reducectl launch [--workers N] [--reducers M] [--algo NAME] [--timeout SEC] [--name NAME]
//                    [--output-dir DIR] [run options] -- PROGRAM [ARGS...]
//   reducectl tune SPEC [--job-id ID] [--quiet] [run options] | reducectl tune --resume DIR
//   reducectl validate SPEC
//   reducectl plan (SPEC | --workers N --worker-gbps G) [--reducer-gbps R] [--reducers K]
//                  [--bucket SIZE [--one-host CORES [--loopback]] [--json]]
//
// Exit status: 0 the job succeeded (or the spec is valid, the plan was made); 1 the job failed;
// 2 bad usage or a bad spec; 128 + N the job was cancelled by signal N.
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/algorithm.h"
#include "common/limits.h"
#include "libreduce/config.h"
#include "orchestrator/doctor.h"
#include "orchestrator/job_commands.h"
#include "orchestrator/job_files.h"
#include "orchestrator/job_spec.h"
#include "orchestrator/job_spec_reader.h"
#include "orchestrator/kube_backend.h"
#include "orchestrator/local_backend.h"
#include "orchestrator/plan_command.h"
#include "orchestrator/pool_key.h"
#include "orchestrator/reducectl_args.h"
#include "orchestrator/reducectl_usage.h"
#include "orchestrator/slurm_backend.h"
#include "orchestrator/slurm_replica.h"
#include "orchestrator/trace_merge.h"
#include "orchestrator/tuning/tuning_job.h"
#include "orchestrator/tuning/tuning_spec.h"

namespace {

using rd::orch::JobSpec;
using rd::orch::PoolKind;

using rd::orch::cli::Args;
using rd::orch::cli::die;
using rd::orch::cli::gbpsFlag;
using rd::orch::cli::intFlag;
using rd::orch::cli::kExitUsage;
using rd::orch::cli::loadOrDie;
using rd::orch::cli::parseArgs;

// Job names and ids become directory names: the displayName rule.
void requireJobName(const std::string& flag, const std::string& value) {
  if (!rd::orch::isJobName(value)) {
    die(flag + ": 1..128 characters of A-Z a-z 0-9 _ . - (got '" + value + "')");
  }
}

std::string oneWord(const Args& args, const char* command) {
  if (args.words.size() != 1) die(std::string(command) + " needs exactly one SPEC file");
  return args.words[0];
}

// The directory reducectl runs from ("" if unknown).
std::string selfDirectory() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

// The built-in reducer: beside reducectl (installed together, or both in the build's src/),
// else reduce-server from PATH.
std::string defaultReduceServer() {
  std::string sibling = selfDirectory() + "/reduce-server";
  if (access(sibling.c_str(), X_OK) == 0) return sibling;
  return "reduce-server";
}

// The trials plot script: this source tree's, else the installed copy (PREFIX/share/libreduce).
std::string defaultPlotTool() {
  if (access(RD_PLOT_TRIALS_DEFAULT, R_OK) == 0) return RD_PLOT_TRIALS_DEFAULT;
  return selfDirectory() + "/../" RD_DATADIR_RELATIVE "/libreduce/plot_trials.py";
}

bool runOption(const std::string& name, const std::string& value, rd::orch::RunOptions* options);

rd::orch::RunOptions defaultRunOptions() {
  rd::orch::RunOptions options;
  options.reduce_server = defaultReduceServer();
  options.netns_tool = RD_NETNS_TOOL_DEFAULT;
  return options;
}

// How run and launch start a job: the options, where, and whether reducectl waits for its end.
struct RunRequest {
  rd::orch::RunOptions options = defaultRunOptions();
  std::string backend = "local";  // local, slurm, kubernetes
  rd::orch::KubeOptions kube;     // the Kubernetes backend's images
  bool detach = false;
};

// The nodes run reducectl and reduce-server by the paths this reducectl has: the same
// installation on every node (or a shared one).
rd::orch::SlurmRunOptions slurmOptions(const rd::orch::RunOptions& options) {
  rd::orch::SlurmRunOptions slurm;
  slurm.run = options;
  slurm.reducectl = selfDirectory() + "/reducectl";
  if (slurm.run.reduce_server.find('/') != std::string::npos) {
    slurm.run.reduce_server = rd::orch::absolutePath(slurm.run.reduce_server);
  }
  return slurm;
}

rd::orch::JobResult runOnBackend(const JobSpec& spec, const RunRequest& request) {
  if (request.backend == "slurm") return rd::orch::runSlurmJob(spec, slurmOptions(request.options));
  if (request.backend == "kubernetes") {
    return rd::orch::runKubeJob(spec, {request.options, request.kube});
  }
  return rd::orch::runLocalJob(spec, request.options);
}

int startJob(const JobSpec& spec, RunRequest request) {
  if (request.backend != "local" && request.options.emulate_network) {
    die("--emulate-network is for the local backend (namespaces on this machine)");
  }
  if (request.backend != "local" && request.options.trace) {
    die("--trace is for the local backend (elsewhere: LIBREDUCE_TRACE in the spec's env, then "
        "reducectl trace merge)");
  }
  if (!request.detach) return runOnBackend(spec, request).exit_code;
  if (request.options.job_id.empty()) request.options.job_id = rd::orch::makeJobId(spec.name);
  request.options.quiet = true;
  std::string base = spec.base_output_dir.empty() ? "reducectl-jobs" : spec.base_output_dir;
  std::string output_dir = rd::orch::absolutePath(base) + "/" + request.options.job_id;
  return rd::orch::runDetached(request.options.job_id, output_dir, [&](int notify_fd) {
    RunRequest child = request;
    child.options.notify_fd = notify_fd;
    return runOnBackend(spec, child);
  });
}

// --backend, --detach and the Kubernetes images, then the options every job run takes.
bool requestOption(const std::string& name, const std::string& value, RunRequest* request) {
  if (name == "--backend") {
    if (value != "local" && value != "slurm" && value != "kubernetes") {
      die("--backend must be local, slurm or kubernetes (got '" + value + "')");
    }
    request->backend = value;
    return true;
  }
  if (name == "--reducer-image" || name == "--image") {
    (name == "--image" ? request->kube.image : request->kube.reducer_image) = value;
    return true;
  }
  if (name == "--detach") {
    request->detach = true;
    return true;
  }
  return runOption(name, value, &request->options);
}

// The options run and launch share; false for a flag that is not one of them.
bool runOption(const std::string& name, const std::string& value, rd::orch::RunOptions* options) {
  if (name == "--quiet") {
    options->quiet = true;
  } else if (name == "--job-id") {
    requireJobName(name, value);
    options->job_id = value;
  } else if (name == "--reduce-server") {
    options->reduce_server = value;
  } else if (name == "--ready-timeout") {
    options->ready_timeout_s = intFlag(name, value, 1, 3600);
  } else if (name == "--stop-grace") {
    options->stop_grace_s = intFlag(name, value, 0, 3600);
  } else if (name == "--emulate-network") {
    options->emulate_network = true;
  } else if (name == "--netns-tool") {
    options->netns_tool = value;
  } else if (name == "--trace") {
    options->trace = true;
  } else {
    return false;
  }
  return true;
}

const std::vector<std::string> kRunSwitches = {"--quiet", "--emulate-network", "--detach",
                                               "--trace"};

int cmdRun(int argc, char** argv) {
  Args args = parseArgs(argc, argv, 2, kRunSwitches);
  std::string path = oneWord(args, "run");
  RunRequest request;
  for (const auto& [name, value] : args.flags) {
    if (!requestOption(name, value, &request)) {
      die("unknown option " + name + " for run (see reducectl --help)");
    }
  }
  return startJob(loadOrDie(path), request);
}

// A job from the command line, torchrun style: PROGRAM as every rank, built-in reducers.
int cmdLaunch(int argc, char** argv) {
  int dash = 2;
  while (dash < argc && std::string(argv[dash]) != "--") ++dash;
  if (dash + 1 >= argc) die("launch needs -- PROGRAM [ARGS...]");
  Args args = parseArgs(dash, argv, 2, kRunSwitches);
  if (!args.words.empty()) die("launch: '" + args.words[0] + "' before --: options only there");
  JobSpec spec;
  spec.name = "launch";
  const char* tmp = std::getenv("TMPDIR");
  spec.base_output_dir =
      std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") + "/reducectl-jobs";
  spec.scheduling.timeout_s = 600;
  int ranks = 4, reducers = 2;
  std::string algo;
  rdAlgorithm_t chosen_algo = rdAlgoDefault;
  double nic_gbps = 0;
  RunRequest request;
  for (const auto& [name, value] : args.flags) {
    if (requestOption(name, value, &request)) continue;
    if (name == "--nic-gbps") {
      nic_gbps = gbpsFlag(name, value);
      continue;
    }
    if (name == "--workers") {
      ranks = intFlag(name, value, 1, 4096);
    } else if (name == "--reducers") {
      reducers = intFlag(name, value, 0, static_cast<int>(rd::limits::kMaxReducers));
    } else if (name == "--algo") {
      if (!rd::algorithmFromName(value, &chosen_algo)) {
        die("--algo must be " + rd::algorithmChoiceText() + " (got '" + value + "')");
      }
      algo = rd::algorithmName(chosen_algo);
    } else if (name == "--timeout") {
      spec.scheduling.timeout_s = intFlag(name, value, 1, 30 * 24 * 3600);
    } else if (name == "--name") {
      spec.name = value;
    } else if (name == "--output-dir") {
      spec.base_output_dir = value;
    } else {
      die("unknown option " + name + " for launch (see reducectl --help)");
    }
  }
  if (rd::algorithmInfo(chosen_algo).needs_reducers && reducers == 0) {
    die("--algo " + algo + " needs at least one reducer");
  }
  std::vector<std::string> command(argv + dash + 1, argv + argc);
  spec.pool(PoolKind::kPrimary).replica_count = 1;
  spec.pool(PoolKind::kPrimary).command = command;
  spec.pool(PoolKind::kWorkers).replica_count = ranks - 1;
  spec.pool(PoolKind::kWorkers).command = command;
  spec.pool(PoolKind::kReducers).replica_count = reducers;
  for (auto& pool : spec.pools) pool.nic_gbps = nic_gbps;
  if (!algo.empty()) spec.libreduce_env.emplace_back("LIBREDUCE_ALGO", algo);
  requireJobName("--name", spec.name);
  return startJob(spec, request);
}

std::string describeJob(const JobSpec& spec) {
  std::string out = "job '" + spec.name + "':";
  for (int p = 0; p < rd::orch::kPoolCount; ++p) {
    const auto& pool = spec.pools[p];
    if (pool.replica_count == 0) continue;
    out += std::string(" ") + rd::orch::poolName(static_cast<PoolKind>(p)) + " x" +
           std::to_string(pool.replica_count);
    if (!pool.container.image_uri.empty()) {
      out += " (image " + pool.container.image_uri + ")";
    } else if (static_cast<PoolKind>(p) == PoolKind::kReducers && pool.command.empty()) {
      out += " (built-in reduce-server)";
    }
    out += ",";
  }
  out.pop_back();
  const auto& s = spec.scheduling;
  out +=
      "; timeout " + (s.timeout_s > 0 ? std::to_string(s.timeout_s) + " s" : std::string("none"));
  out += "; restarts " + std::to_string(s.disable_retries ? 0 : s.max_restarts);
  if (s.max_restarts > 0 && !s.disable_retries) {
    out += s.restart_job_on_worker_restart ? " (whole job)" : " (failed replica)";
  }
  for (const auto& pool : spec.pools) {
    if (pool.replica_count > 0 && !pool.note.empty()) out += "\n  note: " + pool.note;
  }
  return out;
}

std::string readSpecOrDie(const std::string& path) {
  std::string text, error;
  if (!rd::orch::readSpecFile(path, "spec", &text, &error)) die(error);
  return text;
}

const char* algorithmText(rd::orch::tune::Algorithm a) {
  switch (a) {
    case rd::orch::tune::Algorithm::kGrid: return "grid search";
    case rd::orch::tune::Algorithm::kRandom: return "random search";
    case rd::orch::tune::Algorithm::kBayesian: return "Bayesian optimization";
  }
  return "?";
}

int cmdTune(int argc, char** argv) {
  Args args = parseArgs(argc, argv, 2, {"--quiet", "--emulate-network", "--trace"});
  rd::orch::tune::TuneOptions options;
  options.run = defaultRunOptions();
  options.plot_tool = defaultPlotTool();
  for (const auto& [name, value] : args.flags) {
    if (name == "--resume") {
      options.resume_dir = value;
    } else if (name == "--quiet") {
      options.quiet = true;
    } else if (!runOption(name, value, &options.run)) {
      die("unknown option " + name + " for tune (see reducectl --help)");
    }
  }
  options.job_id = options.run.job_id;
  options.run.job_id.clear();
  std::string path;
  if (!options.resume_dir.empty()) {
    if (!args.words.empty()) die("tune --resume DIR takes the spec kept in DIR, not another");
    path = options.resume_dir + "/" + rd::orch::tune::kKeptSpecName;
  } else {
    path = oneWord(args, "tune");
  }
  std::string text = readSpecOrDie(path);
  rd::orch::tune::TuningSpec spec;
  std::string error;
  if (!rd::orch::tune::parseTuningSpec(text, path, &spec, &error)) die(error);
  return rd::orch::tune::runTuningJob(spec, text, options);
}

// The backend's own rendering of @p spec: the Slurm batch script or the Kubernetes manifests;
// what either refuses (resources it cannot map, a TPU) is refused by validate --backend too.
bool renderForBackend(const JobSpec& spec, RunRequest* request, std::string* text,
                      std::string* error) {
  if (request->backend == "slurm") {
    return rd::orch::renderSlurmJob(spec, slurmOptions(request->options), text, error);
  }
  if (request->backend == "kubernetes") {
    request->kube.job_id = request->options.job_id.empty() ? spec.name : request->options.job_id;
    request->kube.secret = rd::orch::newSecret();
    return rd::orch::renderKubernetes(spec, request->kube, text, error);
  }
  die("render needs --backend slurm or --backend kubernetes");
}

int cmdValidate(int argc, char** argv) {
  Args args = parseArgs(argc, argv, 2, {});
  RunRequest request;
  for (const auto& [name, value] : args.flags) {
    if (name != "--backend" || !requestOption(name, value, &request)) {
      die("unknown option " + name + " for validate (it takes --backend NAME)");
    }
  }
  std::string path = oneWord(args, "validate");
  std::string text = readSpecOrDie(path);
  if (rd::orch::tune::looksLikeTuningSpec(text)) {
    if (request.backend != "local") die("tuning jobs run on the local backend only");
    rd::orch::tune::TuningSpec tuning;
    std::string error;
    if (!rd::orch::tune::parseTuningSpec(text, path, &tuning, &error)) die(error);
    std::printf(
        "%s: valid; tuning job '%s': %d trials, %d at once, %zu parameters, %s; each "
        "trial: %s\n",
        path.c_str(), tuning.name.c_str(), tuning.max_trials, tuning.parallel_trials,
        tuning.study.parameters.size(), algorithmText(tuning.study.algorithm),
        describeJob(tuning.trial).c_str());
    return 0;
  }
  JobSpec spec = loadOrDie(path);
  // Another backend checks what it alone maps (Slurm resources, Kubernetes images) by
  // rendering the job as run would, then dropping the text.
  if (request.backend != "local") {
    std::string rendered, error;
    if (!renderForBackend(spec, &request, &rendered, &error)) die(error);
  }
  std::printf("%s: valid for the %s backend; %s\n", path.c_str(), request.backend.c_str(),
              describeJob(spec).c_str());
  return 0;
}

// The Slurm batch script, or the Kubernetes manifests (with a fresh secret in its Secret).
int cmdRender(int argc, char** argv) {
  Args args = parseArgs(argc, argv, 2, {});
  RunRequest request;
  for (const auto& [name, value] : args.flags) {
    if (!requestOption(name, value, &request)) {
      die("unknown option " + name + " for render (see reducectl --help)");
    }
  }
  JobSpec spec = loadOrDie(oneWord(args, "render"));
  std::string text, error;
  if (!renderForBackend(spec, &request, &text, &error)) die(error);
  std::fputs(text.c_str(), stdout);
  return 0;
}

int cmdStatusOrCancel(int argc, char** argv, bool cancel) {
  Args args = parseArgs(argc, argv, 2, {});
  int wait_s = 120;
  for (const auto& [name, value] : args.flags) {
    if (!cancel || name != "--wait") die("unknown option " + name + " (see reducectl --help)");
    wait_s = intFlag(name, value, 1, 3600);
  }
  if (args.words.size() != 1) die("give one JOB: its id or its directory");
  return cancel ? rd::orch::cancelJob(args.words[0], wait_s)
                : rd::orch::showJobStatus(args.words[0]);
}

// Run by the Slurm backend's srun steps on the nodes, not by users.
int cmdSlurmReplica(int argc, char** argv) {
  Args args = parseArgs(argc, argv, 2, {});
  rd::orch::SlurmReplicaArgs replica;
  std::string pool;
  for (const auto& [name, value] : args.flags) {
    if (name == "--job-dir") {
      replica.job_dir = value;
    } else if (name == "--attempt") {
      replica.attempt = intFlag(name, value, 0, 1000);
    } else if (name == "--pool") {
      pool = value;
    } else if (name == "--ready-timeout") {
      replica.ready_timeout_s = intFlag(name, value, 1, 3600);
    } else if (name == "--reduce-server") {
      replica.reduce_server = value;
    } else {
      die("unknown option " + name + " for slurm-replica");
    }
  }
  bool known = false;
  for (int p = 0; p < rd::orch::kPoolCount; ++p) {
    if (pool == rd::orch::poolName(static_cast<PoolKind>(p))) {
      replica.pool = static_cast<PoolKind>(p);
      known = true;
    }
  }
  if (!known || replica.job_dir.empty()) die("slurm-replica needs --job-dir DIR --pool NAME");
  return rd::orch::runSlurmReplica(replica);
}

}  // namespace

int main(int argc, char** argv) {
  // A write to a pipe whose reader is gone (the orphan guard, a closed terminal) is an error
  // return, not the end of reducectl.
  signal(SIGPIPE, SIG_IGN);
  if (argc < 2) {
    rd::orch::printReducectlUsage(stderr);
    return kExitUsage;
  }
  std::string command = argv[1];
  if (command == "-h" || command == "--help" || command == "help") {
    rd::orch::printReducectlUsage(stdout);
    return 0;
  }
  if (command == "--version" || command == "version") {
    std::printf("reducectl %s\n", LIBREDUCE_VERSION_STRING);
    return 0;
  }
  if (command == "run" || command == "launch") {
    int code = command == "run" ? cmdRun(argc, argv) : cmdLaunch(argc, argv);
    // Everything was written by the display's writer, unless the terminal stopped reading: then
    // exit's flush of standard output could block for ever.
    std::fflush(stderr);
    _exit(code);
  }
  if (command == "tune") {
    int code = cmdTune(argc, argv);
    std::fflush(nullptr);
    _exit(code);
  }
  if (command == "validate") return cmdValidate(argc, argv);
  if (command == "plan") return rd::orch::runPlanCommand(argc, argv);
  if (command == "render") return cmdRender(argc, argv);
  if (command == "status" || command == "cancel") {
    return cmdStatusOrCancel(argc, argv, command == "cancel");
  }
  if (command == "slurm-replica") return cmdSlurmReplica(argc, argv);
  if (command == "pool") return rd::orch::runPoolCommand(argc, argv);
  if (command == "trace") return rd::orch::runTraceCommand(argc, argv);
  if (command == "doctor") {
    return rd::orch::runDoctorCommand(argc, argv, selfDirectory() + "/reduce-probe");
  }
  std::fprintf(stderr,
               "reducectl: unknown command '%s' (run, launch, tune, validate, plan, render, "
               "status, cancel, pool, trace, doctor)\n",
               command.c_str());
  rd::orch::printReducectlUsage(stderr);
  return kExitUsage;
}
