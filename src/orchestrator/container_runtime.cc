// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/container_runtime.h"

#include <sys/wait.h>

#include <cctype>
#include <cstdlib>
#include <string>

#include "common/json_text.h"
#include "orchestrator/external_command.h"

namespace rd::orch {
namespace {

// Exit status of a shell command, its output dropped.
int quietly(const std::string& command) {
  int status = std::system((command + " >/dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

}  // namespace

std::string containerName(const std::string& job_id, const std::string& replica) {
  std::string name = "reducectl-" + job_id + "-" + replica;
  for (char& c : name) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
    if (!ok) c = '-';
  }
  return name;
}

std::vector<std::string> podmanRunArgv(const ContainerSpec& container,
                                       const ContainerReplica& replica) {
  // --init: a small init as the container's first process passes SIGTERM on to the program
  // (which, as process 1, would ignore it without a handler) and reaps what it leaves.
  std::vector<std::string> argv = {"podman",         "run",    "--rm",   "--pull=never",
                                   "--network=host", "--init", "--name", replica.name};
  for (const auto& [key, value] : replica.env) {
    argv.push_back(std::string("--env=").append(key).append("=").append(value));
  }
  for (const auto& dir : replica.read_write) {
    argv.push_back(std::string("--volume=").append(dir).append(":").append(dir));
  }
  for (const auto& dir : replica.read_only) {
    argv.push_back(std::string("--volume=").append(dir).append(":").append(dir).append(":ro"));
  }
  if (!replica.working_dir.empty()) argv.push_back("--workdir=" + replica.working_dir);
  // Vertex's command replaces the image's entrypoint (and with it the image's arguments).
  if (!container.command.empty())
    argv.push_back("--entrypoint=" + jsonStringArray(container.command));
  argv.push_back(container.image_uri);
  argv.insert(argv.end(), container.args.begin(), container.args.end());
  return argv;
}

std::string podmanRemoveCommand(const std::string& name) {
  return "podman rm --force --time 0 " + shellQuoted(name) + " >/dev/null 2>&1";
}

bool usesContainers(const JobSpec& spec) {
  for (const PoolSpec& pool : spec.pools) {
    if (pool.replica_count > 0 && !pool.container.image_uri.empty()) return true;
  }
  return false;
}

bool checkContainerImages(const JobSpec& spec, std::string* error) {
  if (!usesContainers(spec)) return true;
  if (quietly("podman --version") != 0) {
    *error =
        "the job's pools run in containers (containerSpec) and podman is missing: "
        "apt-get install podman (scripts/setup.sh installs it)";
    return false;
  }
  for (int p = 0; p < kPoolCount; ++p) {
    const PoolSpec& pool = spec.pools[p];
    if (pool.replica_count == 0 || pool.container.image_uri.empty()) continue;
    if (quietly("podman image exists " + shellQuoted(pool.container.image_uri)) != 0) {
      *error = std::string("the ") + poolName(static_cast<PoolKind>(p)) + " pool's image " +
               pool.container.image_uri +
               " is not present locally (reducectl never pulls): build it, or podman pull / "
               "podman load it first";
      return false;
    }
  }
  return true;
}

}  // namespace rd::orch
