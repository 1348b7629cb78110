// SPDX-License-Identifier: BSD-3-Clause
// The reducectl job spec: worker pools modelled on Vertex AI's workerPoolSpecs (pool 0 primary,
// 1 workers, 2 reducers, 3 evaluators), job-level scheduling and libreduce settings. Parsed from
// YAML (JSON is accepted: it is YAML too) and validated in full before anything starts; every
// error names the field, its line and what is allowed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rd::orch {

/** The four pools, by their index in workerPoolSpecs. */
enum class PoolKind : int { kPrimary = 0, kWorkers = 1, kReducers = 2, kEvaluators = 3 };
inline constexpr int kPoolCount = 4;

/** "primary", "worker", "reducer", "evaluator": the name replicas are shown and logged under. */
const char* poolName(PoolKind kind);

/** Vertex's machineSpec: the machine each replica of a pool runs on (mapped by the Slurm backend).
 */
struct MachineSpec {
  std::string machine_type;      // "n1-standard-8"; empty: not given
  std::string accelerator_type;  // "NVIDIA_TESLA_V100"; empty: none
  int accelerator_count = 0;
  int line = 0;  // where machineSpec was given, for messages
};

/** A pool's Slurm resources (its component of the heterogeneous job); 0 / empty: not given. */
struct SlurmPoolSpec {
  int nodes = 0;           // --nodes
  int tasks_per_node = 0;  // --ntasks-per-node (one task is one replica)
  int cpus_per_task = 0;   // --cpus-per-task
  std::string gpus;        // --gres=gpu:GPUS ("2" or "a100:2")
  std::string memory;      // --mem per node ("8G", "512M")
  std::string partition;   // this pool's partition (reducers on CPU nodes); empty: the job's
};

/** Vertex's containerSpec: the pool's replicas run in a container of this image. */
struct ContainerSpec {
  std::string image_uri;             // empty: the pool runs a program on the host
  std::vector<std::string> command;  // replaces the image's entrypoint; empty: the image's own
  std::vector<std::string> args;     // the entrypoint's arguments; empty: the image's own
};

/** Vertex's diskSpec (checked; local replicas use the host's disks). */
struct DiskSpec {
  std::string boot_disk_type;  // pd-ssd, pd-standard, ...
  int boot_disk_size_gb = 0;
};

struct PoolSpec {
  int replica_count = 0;  // 0: the pool is absent ({} or not listed)
  // Program and arguments (command then args, both lists). Empty for the reducer pool: the
  // built-in reduce-server, and for a pool with a container (its command is the container's).
  // Other pools with replicas need a command.
  std::vector<std::string> command;
  std::vector<std::pair<std::string, std::string>> env;  // in spec order
  std::string working_dir;                               // empty: reducectl's working directory
  double nic_gbps = 0;  // resources.nicGbps: each replica's NIC; 0 = not given
  ContainerSpec container;
  MachineSpec machine;
  DiskSpec disk;
  SlurmPoolSpec slurm;
  std::string note;  // what reducectl changed while reading (a Vertex reducer image mapped)
  int line = 0;      // 1-based line of the pool in the spec, for messages
};

struct Scheduling {
  int64_t timeout_s = 0;  // whole job, from start to end; 0 = no limit
  // true: a failed replica restarts the whole job (every pool, fresh communicator); false: only
  // the failed replica is restarted.
  bool restart_job_on_worker_restart = false;
  int max_restarts = 0;  // restarts allowed in the job's life; 0 with disable_retries
  bool disable_retries = false;
};

/** The job-level Slurm settings (the backend's sbatch options); empty: Slurm's defaults. */
struct SlurmJobSpec {
  std::string partition, account, qos;
  int64_t time_limit_s = 0;                 // --time, rounded up to minutes; 0: the partition's
  std::vector<std::string> sbatch_options;  // more sbatch options, each one argument
};

/**
 * reducerPool: a reducer pool shared by jobs (reduce-server --pool-secret-file) that the job
 * attaches to instead of starting reducers of its own. Its ranks hold only this job's key,
 * `reducectl pool key COMM_ID` (docs/security.md).
 */
struct ReducerPoolRef {
  std::vector<std::string> addresses;  // host:port of each reducer; empty: no shared pool
  std::string key_file;                // the job key's file (owner-only)
  std::string comm_id;                 // the communicator id the key was made for
  bool attached() const { return !addresses.empty(); }
};

struct JobSpec {
  std::string name;             // displayName; [A-Za-z0-9_.-], 1..128 characters
  std::string base_output_dir;  // baseOutputDirectory; empty: ./reducectl-jobs
  std::array<PoolSpec, kPoolCount> pools;
  Scheduling scheduling;
  // libreduce settings as environment assignments (LIBREDUCE_CHUNK_BYTES=1M), each checked
  // against the settings table. The ones reducectl sets itself (reducers, secret, rank, ...) are
  // refused.
  std::vector<std::pair<std::string, std::string>> libreduce_env;
  SlurmJobSpec slurm;
  ReducerPoolRef reducer_pool;

  const PoolSpec& pool(PoolKind kind) const { return pools[static_cast<int>(kind)]; }
  PoolSpec& pool(PoolKind kind) { return pools[static_cast<int>(kind)]; }
};

/**
 * Parses and validates @p text. @p source names it in messages ("job.yaml"). On failure returns
 * false and sets @p error to "SOURCE:LINE:COLUMN: FIELD.PATH: what is wrong; what is allowed"
 * (unknown fields come with a did-you-mean when one is close).
 */
bool parseJobSpec(const std::string& text, const std::string& source, JobSpec* spec,
                  std::string* error);

/** The primary and the workers are the ranks (the torch process group); the others are not. */
bool isRankPool(PoolKind kind);

/** The pool holding rank 0: the primary's, or the workers' in a job without a primary. */
PoolKind rankZeroPool(const JobSpec& spec);

/** A job name or id: 1..128 of [A-Za-z0-9_.-], not "." or ".." (it names a directory). */
bool isJobName(const std::string& text);

/**
 * Reads the file at @p path and parses it; a file that cannot be read is an error too. Relative
 * paths in it (baseOutputDirectory, workingDir) are relative to the file's directory.
 */
bool loadJobSpec(const std::string& path, JobSpec* spec, std::string* error);

/** @p path relative to the directory of the spec file @p spec_path; absolute paths unchanged. */
std::string pathFromSpec(const std::string& spec_path, const std::string& path);

/** Makes @p spec's relative baseOutputDirectory and workingDirs relative to @p spec_path's
 * directory (the spec read from that file), so a job runs the same from any directory. */
void resolveSpecPaths(const std::string& spec_path, JobSpec* spec);

/** Parses a duration: "90", "90s", "10m", "1h30m", "7200s" (Vertex's form); false if malformed. */
bool parseDuration(const std::string& text, int64_t* seconds);

}  // namespace rd::orch
