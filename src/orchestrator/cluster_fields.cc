// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/cluster_fields.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "orchestrator/machine_types.h"

namespace rd::orch {
namespace {

using spec::Field;
using spec::FieldMap;

constexpr int kMaxAccelerators = 16;
constexpr int64_t kMaxTimeLimitS = int64_t{365} * 24 * 3600;

bool allOf(const std::string& text, bool (*ok)(unsigned char)) {
  return !text.empty() && std::all_of(text.begin(), text.end(), ok);
}

bool isSlurmNameChar(unsigned char c) {
  return std::isalnum(c) != 0 || c == '_' || c == '.' || c == '-';
}

// Options reducectl writes itself: the job's shape, its name, where its output goes.
constexpr const char* kOwnSbatchOptions[] = {
    "--job-name",        "--output",        "--error",  "--ntasks",   "--nodes",
    "--ntasks-per-node", "--cpus-per-task", "--gres",   "--mem",      "--partition",
    "--account",         "--qos",           "--time",   "--parsable", "--wait",
    "--array",           "--het",           "--hetjob", "--chdir",    "--export",
};

std::string readSlurmName(const Field& field, const char* what) {
  std::string text = spec::readNonEmptyText(field, what);
  if (!allOf(text, isSlurmNameChar)) {
    field.fail("'" + text + "' is not a Slurm name: letters, digits, '_', '.' and '-'");
  }
  return text;
}

std::string readGpus(const Field& field) {
  std::string text = spec::readNonEmptyText(field, "a GPU count (2) or TYPE:COUNT (a100:2)");
  size_t colon = text.find(':');
  std::string type = colon == std::string::npos ? "" : text.substr(0, colon);
  std::string count = colon == std::string::npos ? text : text.substr(colon + 1);
  bool type_ok = colon == std::string::npos || allOf(type, isSlurmNameChar);
  bool count_ok = allOf(count, [](unsigned char c) { return std::isdigit(c) != 0; }) &&
                  count.size() < 4 && std::stoi(count) > 0;
  if (!type_ok || !count_ok) {
    field.fail("expected a GPU count per task (2) or TYPE:COUNT (a100:2), got '" + text + "'");
  }
  return text;
}

// Slurm's --mem: a whole number with an optional K, M, G or T (megabytes without one).
std::string readMemory(const Field& field) {
  std::string text = spec::readNonEmptyText(field, "an amount of memory (8G, 512M)");
  std::string digits = text;
  if (std::string("KMGTkmgt").find(text.back()) != std::string::npos) digits.pop_back();
  bool ok = allOf(digits, [](unsigned char c) { return std::isdigit(c) != 0; }) &&
            digits.size() < 10 && std::stoll(digits) > 0;
  if (!ok)
    field.fail("expected memory per node as a number with K, M, G or T (8G), got '" + text + "'");
  std::string out = digits;
  if (digits.size() != text.size()) out += static_cast<char>(std::toupper(text.back()));
  return out;
}

}  // namespace

MachineSpec readMachineSpec(const Field& field) {
  FieldMap map(field, {"machineType", "acceleratorType", "acceleratorCount"}, "a map");
  MachineSpec m;
  m.line = field.mark.line + 1;
  if (auto f = map.get("machineType")) {
    m.machine_type = spec::readNonEmptyText(*f, "a machine type (n1-standard-8)");
    if (!allOf(m.machine_type, [](unsigned char c) {
          return std::islower(c) != 0 || std::isdigit(c) != 0 || c == '-';
        })) {
      f->fail("'" + m.machine_type + "' is not a machine type: lower-case letters, digits, '-'");
    }
    // Refused here, not first by a backend: a typo fails validate and every backend alike.
    if (std::string why; !knownMachineType(m.machine_type, &why)) f->fail(why);
  }
  if (auto f = map.get("acceleratorType")) {
    m.accelerator_type = spec::readNonEmptyText(*f, "an accelerator type (NVIDIA_TESLA_V100)");
    if (!allOf(m.accelerator_type, [](unsigned char c) {
          return std::isupper(c) != 0 || std::isdigit(c) != 0 || c == '_';
        })) {
      f->fail("'" + m.accelerator_type +
              "' is not an accelerator type: upper-case letters, digits, '_' (NVIDIA_L4)");
    }
    if (m.accelerator_type == "ACCELERATOR_TYPE_UNSPECIFIED") m.accelerator_type.clear();
  }
  if (auto f = map.get("acceleratorCount")) {
    m.accelerator_count = static_cast<int>(spec::readInt(*f, 0, kMaxAccelerators));
    if (m.accelerator_count > 0 && m.accelerator_type.empty()) {
      f->fail("acceleratorCount needs an acceleratorType (NVIDIA_TESLA_V100, NVIDIA_L4, ...)");
    }
  }
  return m;
}

DiskSpec readDiskSpec(const Field& field) {
  FieldMap map(field, {"bootDiskType", "bootDiskSizeGb"}, "a map");
  DiskSpec d;
  if (auto f = map.get("bootDiskType")) {
    d.boot_disk_type = spec::readNonEmptyText(*f, "a disk type (pd-ssd, pd-standard)");
    if (!allOf(d.boot_disk_type, [](unsigned char c) {
          return std::islower(c) != 0 || std::isdigit(c) != 0 || c == '-';
        })) {
      f->fail("'" + d.boot_disk_type + "' is not a disk type (pd-ssd, pd-standard, pd-balanced)");
    }
  }
  if (auto f = map.get("bootDiskSizeGb")) {
    d.boot_disk_size_gb = static_cast<int>(spec::readInt(*f, 10, 65536));
  }
  return d;
}

SlurmPoolSpec readSlurmPool(const Field& field, int replica_count) {
  FieldMap map(field, {"nodes", "tasksPerNode", "cpusPerTask", "gpus", "memory", "partition"},
               "a map");
  SlurmPoolSpec s;
  if (auto f = map.get("partition")) s.partition = readSlurmName(*f, "a partition name");
  if (auto f = map.get("nodes")) {
    s.nodes = static_cast<int>(spec::readInt(*f, 1, 100000));
    if (replica_count > 0 && s.nodes > replica_count) {
      f->fail(std::to_string(s.nodes) + " nodes for " + std::to_string(replica_count) +
              " replicas: each node runs at least one replica");
    }
  }
  if (auto f = map.get("tasksPerNode")) {
    s.tasks_per_node = static_cast<int>(spec::readInt(*f, 1, 4096));
    if (s.nodes > 0 && replica_count > 0 && s.nodes * s.tasks_per_node != replica_count) {
      f->fail(std::to_string(s.nodes) + " nodes x " + std::to_string(s.tasks_per_node) +
              " tasks is not the pool's " + std::to_string(replica_count) +
              " replicas (one task per replica)");
    }
  }
  if (auto f = map.get("cpusPerTask"))
    s.cpus_per_task = static_cast<int>(spec::readInt(*f, 1, 4096));
  if (auto f = map.get("gpus")) s.gpus = readGpus(*f);
  if (auto f = map.get("memory")) s.memory = readMemory(*f);
  return s;
}

SlurmJobSpec readSlurmJob(const Field& field) {
  FieldMap map(field, {"partition", "account", "qos", "timeLimit", "sbatchOptions"}, "a map");
  SlurmJobSpec s;
  if (auto f = map.get("partition")) s.partition = readSlurmName(*f, "a partition name");
  if (auto f = map.get("account")) s.account = readSlurmName(*f, "an account name");
  if (auto f = map.get("qos")) s.qos = readSlurmName(*f, "a QoS name");
  if (auto f = map.get("timeLimit")) {
    std::string text = spec::readText(*f, "a duration (\"2h\", \"90m\")");
    if (!parseDuration(text, &s.time_limit_s) || s.time_limit_s <= 0 ||
        s.time_limit_s > kMaxTimeLimitS) {
      f->fail("expected a duration of up to a year such as \"2h\" or \"90m\", got '" + text + "'");
    }
  }
  if (auto f = map.get("sbatchOptions")) {
    std::vector<Field> items = spec::readList(*f, "a list of sbatch options");
    for (const Field& item : items) {
      std::string option = spec::readNonEmptyText(item, "an sbatch option (--exclusive)");
      std::string name = option.substr(0, option.find('='));
      if (name.rfind("--", 0) != 0 || name.size() < 3) {
        item.fail("'" + option + "' is not a long sbatch option (--constraint=ib, --exclusive)");
      }
      // sbatch reads options with getopt_long, which takes any unambiguous prefix of a long
      // option's name: --out=x is --output=x. So a prefix of one of reducectl's own is refused.
      for (const char* own : kOwnSbatchOptions) {
        if (std::string(own).rfind(name, 0) == 0) {
          item.fail(name + (name == own ? "" : " (sbatch reads it as " + std::string(own) + ")") +
                    " is set by reducectl from the spec (pools' slurm fields, the job's slurm " +
                    "fields, displayName)");
        }
      }
      // One option per item: a space would make sbatch read a second option from the same line.
      if (option.find_first_of(" \t\n\r\v\f") != std::string::npos) {
        item.fail("'" + option +
                  "' is more than one word: give each sbatch option as its own "
                  "list item, with its value after '=' (--constraint=ib)");
      }
      s.sbatch_options.push_back(option);
    }
  }
  return s;
}

ReducerPoolRef readReducerPool(const Field& field) {
  FieldMap map(field, {"addresses", "keyFile", "commId"}, "a map");
  ReducerPoolRef pool;
  Field addresses = map.require("addresses", "the shared reducers' host:port");
  for (const Field& item : readList(addresses, "a list of host:port")) {
    std::string address = readNonEmptyText(item, "a host:port");
    size_t colon = address.rfind(':');
    const std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
    const bool digits =
        !port.empty() && port.size() <= 5 &&
        std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    if (colon == 0 || !digits || std::stoi(port) < 1 || std::stoi(port) > 65535) {
      item.fail("'" + address + "' is not host:port (a reducer's address, port 1..65535)");
    }
    pool.addresses.push_back(address);
  }
  if (pool.addresses.empty()) addresses.fail("the list is empty; give the pool's reducers");
  pool.key_file = readNonEmptyText(map.require("keyFile", "the job's key to the pool"),
                                   "the path of the job key (reducectl pool key --out)");
  pool.comm_id = readNonEmptyText(map.require("commId", "the communicator the key admits"),
                                  "the communicator id the key was made for");
  return pool;
}

}  // namespace rd::orch
